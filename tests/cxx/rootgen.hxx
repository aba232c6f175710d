// Writes RNTuple test files with ROOT 6.40.  Declared into cling by tests/rootgen.py, after tests/cxx/splitmix.hxx.
//
// All values are a deterministic function of (entry number, field salt), so files can
// be regenerated bit for bit.  Edge values (integer min/max, -0.0, subnormals, FLT_MAX,
// empty strings and collections) recur periodically.
#include <ROOT/RNTupleModel.hxx>
#include <ROOT/RNTupleWriter.hxx>
#include <ROOT/RNTupleWriteOptions.hxx>
#include <ROOT/RField.hxx>
#include <ROOT/RVec.hxx>

#include <array>
#include <bitset>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

namespace rntuple_interop_gen {

struct Rng {
   std::uint64_t s;
   Rng(std::uint64_t entry, std::uint64_t salt) : s(entry * 0x9E3779B97F4A7C15ULL ^ (salt + 1) * 0xD1B54A32D192ED03ULL) {}
   std::uint64_t Next() { return rntuple_testgen::SplitMix64(s); }
   std::uint64_t Below(std::uint64_t n) { return Next() % n; }
};

template <typename T>
T PickInt(std::uint64_t i, std::uint64_t salt)
{
   Rng r(i, salt);
   switch (i % 13) {
   case 0: return std::numeric_limits<T>::min();
   case 1: return std::numeric_limits<T>::max();
   case 2: return T(0);
   case 3: return static_cast<T>(-1);
   case 4: return static_cast<T>(r.Below(200));
   default: return static_cast<T>(r.Next());
   }
}

inline double RandomDouble(Rng &r, int minExp, int maxExp)
{
   const double mant = static_cast<double>(r.Next() >> 11) * 0x1p-53; // [0, 1)
   const int e = minExp + static_cast<int>(r.Below(static_cast<std::uint64_t>(maxExp - minExp + 1)));
   const double sign = (r.Next() & 1) ? -1.0 : 1.0;
   return sign * std::ldexp(1.0 + mant, e);
}

inline float PickFloat(std::uint64_t i, std::uint64_t salt)
{
   Rng r(i, salt);
   switch (i % 17) {
   case 0: return -0.0f;
   case 1: return std::numeric_limits<float>::denorm_min();
   case 2: return -3 * std::numeric_limits<float>::denorm_min();
   case 3: return std::numeric_limits<float>::min();
   case 4: return std::numeric_limits<float>::max();
   case 5: return -std::numeric_limits<float>::max();
   case 6: return 0.0f;
   case 7: return 1.0f / 3.0f;
   case 8: return std::numeric_limits<float>::min() * 0.75f; // subnormal
   default: return static_cast<float>(RandomDouble(r, -30, 30));
   }
}

inline double PickDouble(std::uint64_t i, std::uint64_t salt)
{
   Rng r(i, salt);
   switch (i % 19) {
   case 0: return -0.0;
   case 1: return std::numeric_limits<double>::denorm_min();
   case 2: return -std::numeric_limits<double>::min() / 3.0; // subnormal
   case 3: return std::numeric_limits<double>::min();
   case 4: return std::numeric_limits<double>::max();
   case 5: return -std::numeric_limits<double>::max();
   case 6: return 0.1;
   case 7: return static_cast<double>(i);
   default: return RandomDouble(r, -300, 300);
   }
}

inline std::string PickString(std::uint64_t i, std::uint64_t salt, std::size_t maxLen = 24)
{
   static const char *const kPieces[] = {"a", "b", "c", "x", "y", "z", "0", "7", " ", "_", "\"", "\\",
                                         "\n", "\t", "/", "\xc3\xa9" /* é */, "\xe2\x82\xac" /* € */, "Q"};
   Rng r(i, salt);
   if (i % 7 == 0)
      return "";
   std::size_t n = r.Below(maxLen + 1);
   if (i % 97 == 5)
      n = 150; // occasional long string
   std::string s;
   for (std::size_t k = 0; k < n; ++k)
      s += kPieces[r.Below(sizeof(kPieces) / sizeof(kPieces[0]))];
   return s;
}

inline std::size_t PickLen(std::uint64_t i, std::uint64_t salt, std::size_t maxLen)
{
   if ((i + salt) % 5 == 0)
      return 0; // empty collections regularly
   Rng r(i, salt * 31 + 7);
   return r.Below(maxLen + 1);
}

inline std::vector<float> PickVecFloat(std::uint64_t i, std::uint64_t salt, std::size_t maxLen)
{
   std::vector<float> v(PickLen(i, salt, maxLen));
   for (std::size_t k = 0; k < v.size(); ++k)
      v[k] = PickFloat(i * 8 + k, salt + k);
   return v;
}

inline std::vector<std::vector<std::int32_t>> PickVecVecInt(std::uint64_t i, std::uint64_t salt)
{
   std::vector<std::vector<std::int32_t>> vv(PickLen(i, salt, 4));
   for (std::size_t k = 0; k < vv.size(); ++k) {
      vv[k].resize(PickLen(i * 4 + k, salt + 1, 5));
      for (std::size_t m = 0; m < vv[k].size(); ++m)
         vv[k][m] = PickInt<std::int32_t>(i * 16 + k * 4 + m, salt + 2);
   }
   return vv;
}

inline std::vector<std::string> PickVecString(std::uint64_t i, std::uint64_t salt)
{
   std::vector<std::string> v(PickLen(i, salt, 4));
   for (std::size_t k = 0; k < v.size(); ++k)
      v[k] = PickString(i * 4 + k + 1, salt + k, 8);
   return v;
}

/// The early (initial-model) fields.
struct EarlyFields {
   std::shared_ptr<bool> b;
   std::shared_ptr<char> c;
   std::shared_ptr<std::int8_t> i8;
   std::shared_ptr<std::uint8_t> u8;
   std::shared_ptr<std::int16_t> i16;
   std::shared_ptr<std::uint16_t> u16;
   std::shared_ptr<std::int32_t> i32;
   std::shared_ptr<std::uint32_t> u32;
   std::shared_ptr<std::int64_t> i64;
   std::shared_ptr<std::uint64_t> u64;
   std::shared_ptr<float> f32;
   std::shared_ptr<double> f64;
   std::shared_ptr<std::string> str;
   std::shared_ptr<std::vector<float>> vf;
   std::shared_ptr<std::vector<std::vector<std::int32_t>>> vvi;
   std::shared_ptr<std::vector<std::string>> vs;
   std::shared_ptr<std::array<float, 3>> arr;
   std::shared_ptr<std::optional<double>> opt;
   std::shared_ptr<std::pair<std::int32_t, std::string>> pair;
   std::shared_ptr<std::tuple<std::int16_t, std::string, std::vector<std::int32_t>, double>> tup;
   std::shared_ptr<std::variant<std::int32_t, std::string, double>> var;
   std::shared_ptr<std::map<std::string, float>> map;
   std::shared_ptr<std::set<std::int32_t>> set;
   std::shared_ptr<std::bitset<20>> bits;
   std::shared_ptr<ROOT::RVec<float>> rvec;

   void Make(ROOT::RNTupleModel &m)
   {
      b = m.MakeField<bool>("b");
      c = m.MakeField<char>("c");
      i8 = m.MakeField<std::int8_t>("i8");
      u8 = m.MakeField<std::uint8_t>("u8");
      i16 = m.MakeField<std::int16_t>("i16");
      u16 = m.MakeField<std::uint16_t>("u16");
      i32 = m.MakeField<std::int32_t>("i32");
      u32 = m.MakeField<std::uint32_t>("u32");
      i64 = m.MakeField<std::int64_t>("i64");
      u64 = m.MakeField<std::uint64_t>("u64");
      f32 = m.MakeField<float>("f32");
      f64 = m.MakeField<double>("f64");
      str = m.MakeField<std::string>("str");
      vf = m.MakeField<std::vector<float>>("vf");
      vvi = m.MakeField<std::vector<std::vector<std::int32_t>>>("vvi");
      vs = m.MakeField<std::vector<std::string>>("vs");
      arr = m.MakeField<std::array<float, 3>>("arr");
      opt = m.MakeField<std::optional<double>>("opt");
      pair = m.MakeField<std::pair<std::int32_t, std::string>>("pair");
      tup = m.MakeField<std::tuple<std::int16_t, std::string, std::vector<std::int32_t>, double>>("tup");
      var = m.MakeField<std::variant<std::int32_t, std::string, double>>("var");
      map = m.MakeField<std::map<std::string, float>>("map");
      set = m.MakeField<std::set<std::int32_t>>("set");
      bits = m.MakeField<std::bitset<20>>("bits");
      rvec = m.MakeField<ROOT::RVec<float>>("rvec");
   }

   void Set(std::uint64_t i)
   {
      *b = Rng(i, 1).Next() & 1;
      *c = static_cast<char>(i % 11 == 0 ? 127 : Rng(i, 2).Below(128)); // ASCII only: char signedness is ABI-specific
      *i8 = PickInt<std::int8_t>(i, 3);
      *u8 = PickInt<std::uint8_t>(i, 4);
      *i16 = PickInt<std::int16_t>(i, 5);
      *u16 = PickInt<std::uint16_t>(i, 6);
      *i32 = PickInt<std::int32_t>(i, 7);
      *u32 = PickInt<std::uint32_t>(i, 8);
      *i64 = PickInt<std::int64_t>(i, 9);
      *u64 = PickInt<std::uint64_t>(i, 10);
      *f32 = PickFloat(i, 11);
      *f64 = PickDouble(i, 12);
      *str = PickString(i, 13);
      *vf = PickVecFloat(i, 14, 8);
      *vvi = PickVecVecInt(i, 15);
      *vs = PickVecString(i, 16);
      *arr = {PickFloat(i, 17), PickFloat(i + 1, 18), PickFloat(i + 2, 19)};
      if (Rng(i, 20).Below(3) == 0)
         opt->reset();
      else
         *opt = PickDouble(i, 21);
      *pair = {PickInt<std::int32_t>(i, 22), PickString(i + 3, 23, 6)};
      std::vector<std::int32_t> tv(PickLen(i, 24, 3));
      for (std::size_t k = 0; k < tv.size(); ++k)
         tv[k] = PickInt<std::int32_t>(i * 3 + k, 25);
      *tup = {PickInt<std::int16_t>(i, 26), PickString(i, 27, 5), tv, PickDouble(i, 28)};
      switch (Rng(i, 29).Below(3)) {
      case 0: *var = PickInt<std::int32_t>(i, 30); break;
      case 1: *var = PickString(i, 31, 6); break;
      default: *var = PickDouble(i, 32); break;
      }
      map->clear();
      for (std::size_t k = 0, n = PickLen(i, 33, 5); k < n; ++k)
         (*map)[PickString(i * 5 + k + 1, 34, 4)] = PickFloat(i * 5 + k, 35);
      set->clear();
      for (std::size_t k = 0, n = PickLen(i, 36, 6); k < n; ++k)
         set->insert(PickInt<std::int32_t>(i * 6 + k, 37));
      *bits = std::bitset<20>(Rng(i, 38).Next() & (i % 9 == 0 ? 0xFFFFFULL : 0xFFFFFFFFULL));
      auto rv = PickVecFloat(i, 39, 6);
      *rvec = ROOT::RVec<float>(rv.begin(), rv.end());
   }
};

/// Fields added by the first late model extension.
struct LateFields1 {
   std::shared_ptr<std::int64_t> i64;
   std::shared_ptr<std::vector<float>> vf;
   std::shared_ptr<std::string> str;
   std::shared_ptr<std::vector<std::vector<std::int32_t>>> vvi;
   std::shared_ptr<std::optional<double>> opt;
   void Make(ROOT::RNTupleModel::RUpdater &u)
   {
      i64 = u.MakeField<std::int64_t>("late_i64");
      vf = u.MakeField<std::vector<float>>("late_vf");
      str = u.MakeField<std::string>("late_str");
      vvi = u.MakeField<std::vector<std::vector<std::int32_t>>>("late_vvi");
      opt = u.MakeField<std::optional<double>>("late_opt");
   }
   void Set(std::uint64_t i)
   {
      *i64 = PickInt<std::int64_t>(i, 101);
      *vf = PickVecFloat(i, 102, 7);
      *str = PickString(i, 103);
      *vvi = PickVecVecInt(i, 104);
      if (i % 3 == 0)
         opt->reset();
      else
         *opt = PickDouble(i, 105);
   }
};

/// Fields added by the second late model extension.
struct LateFields2 {
   std::shared_ptr<float> f32;
   std::shared_ptr<std::map<std::string, float>> map;
   std::shared_ptr<std::variant<std::int32_t, std::string, double>> var;
   void Make(ROOT::RNTupleModel::RUpdater &u)
   {
      f32 = u.MakeField<float>("late2_f32");
      map = u.MakeField<std::map<std::string, float>>("late2_map");
      var = u.MakeField<std::variant<std::int32_t, std::string, double>>("late2_var");
   }
   void Set(std::uint64_t i)
   {
      *f32 = PickFloat(i, 201);
      map->clear();
      for (std::size_t k = 0, n = PickLen(i, 202, 3); k < n; ++k)
         (*map)[PickString(i * 3 + k + 1, 203, 3)] = PickFloat(i * 3 + k, 204);
      if (i % 2)
         *var = PickString(i, 205, 4);
      else
         *var = PickDouble(i, 206);
   }
};

/// Write `nEntries` entries of the all-types schema.
///
/// - `groupEvery` > 0: call CommitCluster(true) (commit cluster + cluster group) every that many entries.
/// - `clusterEvery` > 0: additionally call CommitCluster() every that many entries (besides size-based clusters).
/// - `extend1At`/`extend2At` >= 0: at that entry number, extend the model with LateFields1/LateFields2.
///   `extend2At` is preceded by CommitCluster(true), `extend1At` happens mid-cluster.
void WriteAllTypes(const std::string &path, const std::string &name, long long nEntries, int compression,
                   long long approxZippedClusterSize, long long maxUnzippedPageSize,
                   long long initialUnzippedPageSize, bool pageChecksums, long long groupEvery, long long clusterEvery,
                   long long extend1At, long long extend2At)
{
   auto model = ROOT::RNTupleModel::Create();
   EarlyFields early;
   early.Make(*model);
   ROOT::RNTupleWriteOptions opts;
   opts.SetCompression(static_cast<std::uint32_t>(compression));
   opts.SetApproxZippedClusterSize(static_cast<std::size_t>(approxZippedClusterSize));
   // Initial first: the max may not go below the current initial size (default 256).
   opts.SetInitialUnzippedPageSize(static_cast<std::size_t>(initialUnzippedPageSize));
   opts.SetMaxUnzippedPageSize(static_cast<std::size_t>(maxUnzippedPageSize));
   opts.SetEnablePageChecksums(pageChecksums);
   auto writer = ROOT::RNTupleWriter::Recreate(std::move(model), name, path, opts);

   LateFields1 late1;
   LateFields2 late2;
   bool has1 = false, has2 = false;
   for (long long i = 0; i < nEntries; ++i) {
      if (i == extend1At) {
         auto updater = writer->CreateModelUpdater();
         updater->BeginUpdate();
         late1.Make(*updater);
         updater->CommitUpdate();
         has1 = true;
      }
      if (i == extend2At) {
         writer->CommitCluster(true);
         auto updater = writer->CreateModelUpdater();
         updater->BeginUpdate();
         late2.Make(*updater);
         updater->CommitUpdate();
         has2 = true;
      }
      const auto u = static_cast<std::uint64_t>(i);
      early.Set(u);
      if (has1)
         late1.Set(u);
      if (has2)
         late2.Set(u);
      writer->Fill();
      if (groupEvery > 0 && (i + 1) % groupEvery == 0 && i + 1 < nEntries)
         writer->CommitCluster(true);
      else if (clusterEvery > 0 && (i + 1) % clusterEvery == 0)
         writer->CommitCluster();
   }
}

} // namespace rntuple_interop_gen
