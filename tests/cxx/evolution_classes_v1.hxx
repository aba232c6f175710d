// Version 1 of the classes of the schema-evolution oracle (tests/evolution_oracle.py): the
// classes the files are WRITTEN with.  Version 2 (evolution_classes_v2.hxx) is what they are
// read as, in another process.  Compiled with ACLiC (one dictionary library per version).
#ifndef RNTUPLE_EVOLUTION_CLASSES_V1
#define RNTUPLE_EVOLUTION_CLASSES_V1
#include <cstdint>
#include <string>
#include <vector>

enum E16 : std::int16_t { kE16Zero = 0 };
enum E8 : std::uint8_t { kE8Zero = 0 };

/// The API's example: `a` widened, `gone` removed, `c` added (v2), members reordered.
struct Evo {
   std::int32_t a = 0;
   float b = 0;
   std::int32_t gone = 0;
};
struct EvoRemove {
   std::int32_t a = 0;
   float b = 0;
   std::int32_t gone = 0;
};
struct EvoAdd {
   std::int32_t a = 0;
};
struct EvoReorder {
   std::int32_t a = 0;
   float b = 0;
   double d = 0;
};
struct EvoInner {
   std::int16_t x = 0;
   float y = 0;
};
struct EvoWiden {
   std::int32_t a = 0;
   float b = 0;
   EvoInner in;
};
struct EvoNarrow {
   std::int64_t n = 0;
   std::int32_t k = 0;
};
struct EvoFloatToInt {
   float f = 0;
};
struct EvoBase {
   std::int32_t base_x = 0;
};
struct EvoBasesRemoved : EvoBase {
   std::int32_t d = 0;
};
struct EvoBaseAdded {
   std::int32_t p = 0;
};
struct Ren1 {
   std::int32_t a = 0;
};
/// Written as a streamer field (RStreamerField); the same in both versions.
struct EvoStreamed {
   std::int32_t k = 0;
   std::vector<float> v;
   std::string s;
};
#endif
