// Version 2 of the classes of the schema-evolution oracle (tests/evolution_oracle.py): what the
// files written with version 1 (evolution_classes_v1.hxx) are READ as, in another process.
#ifndef RNTUPLE_EVOLUTION_CLASSES_V2
#define RNTUPLE_EVOLUTION_CLASSES_V2
#include <cstdint>
#include <string>
#include <vector>

enum E16 : std::int16_t { kE16Zero = 0 };
enum E8 : std::uint8_t { kE8Zero = 0 };

struct Evo {
   std::int64_t a = 0;  // widened
   std::int32_t c = 7;  // added: ROOT takes the default constructor's value
   double b = 0;        // widened, after c
};                      // `gone` removed
struct EvoRemove {
   std::int32_t a = 0;
   float b = 0;
};
struct EvoAdd {
   std::int32_t a = 0;
   std::int32_t c = 7;
};
struct EvoReorder {
   double d = 0;
   std::int32_t a = 0;
   float b = 0;
};
struct EvoInner {
   std::int64_t x = 0;
   double y = 0;
};
struct EvoWiden {
   std::int64_t a = 0;
   double b = 0;
   EvoInner in;
};
struct EvoNarrow {
   std::int16_t n = 0;  // narrowed from int64: bounds checked
   std::int32_t k = 0;
};
struct EvoFloatToInt {
   std::int32_t f = 0;  // float -> int: refused
};
struct EvoBasesRemoved {
   std::int32_t d = 0;
};
struct EvoNewBase {
   std::int32_t nb = 3;
};
struct EvoBaseAdded : EvoNewBase {
   std::int32_t p = 0;
};
struct Ren2 {  // Ren1 renamed: refused
   std::int32_t a = 0;
};
struct EvoStreamed {
   std::int32_t k = 0;
   std::vector<float> v;
   std::string s;
};
#endif
