// Writers of the schema-evolution oracle's files (tests/evolution_oracle.py), run with ROOT 6.40
// in a process that loaded the version-1 classes (evolution_classes_v1.hxx).  Every value is
// spelled out here; tests/evolution_oracle.py's cases name the entries that are out of range.
#include <ROOT/RField.hxx>
#include <ROOT/RNTupleModel.hxx>
#include <ROOT/RNTupleWriter.hxx>
#include <ROOT/RVec.hxx>

#include <array>
#include <atomic>
#include <bitset>
#include <cmath>
#include <cstdint>
#include <functional>
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

namespace evolution_oracle {

using I64 = std::numeric_limits<std::int64_t>;
using I32 = std::numeric_limits<std::int32_t>;

/// Writes entries 0..n-1 through `fill(i)`; with `clusterPerEntry` every entry is a cluster of
/// its own (then ROOT's per-page bounds errors hit only the bad entry).
template <typename Fill>
void WriteEntries(std::unique_ptr<ROOT::RNTupleModel> model, const std::string &name, const std::string &path,
                  int n, bool clusterPerEntry, Fill fill)
{
   ROOT::RNTupleWriteOptions opts;
   opts.SetCompression(505);
   auto writer = ROOT::RNTupleWriter::Recreate(std::move(model), name, path, opts);
   for (int i = 0; i < n; ++i) {
      fill(i);
      writer->Fill();
      if (clusterPerEntry && i + 1 < n)
         writer->CommitCluster();
   }
}

/// What fills entry i of each field.
using Setters = std::vector<std::function<void(int)>>;

/// Adds field `name` of type T to `model`, and to `setters` what fills its entry i: `values[i]` (a V, converted
/// to T).
template <typename T, typename V = T>
void AddColumn(ROOT::RNTupleModel &model, Setters &setters, const std::string &name, std::vector<V> values)
{
   auto field = model.MakeField<T>(name);
   setters.emplace_back([field, values = std::move(values)](int i) { *field = static_cast<T>(values[i]); });
}

/// Writes entries 0..n-1 of the fields `setters` fill, as WriteEntries.
inline void WriteColumns(std::unique_ptr<ROOT::RNTupleModel> model, const Setters &setters, const std::string &name,
                         const std::string &path, int n, bool clusterPerEntry)
{
   WriteEntries(std::move(model), name, path, n, clusterPerEntry, [&](int i) {
      for (auto &set : setters)
         set(i);
   });
}

/// 5 entries of every fundamental type (the widening, bool, char and refused conversions).
void WriteScalars(const std::string &path, const std::string &name)
{
   auto model = ROOT::RNTupleModel::Create();
   Setters setters;
   AddColumn<float>(*model, setters, "f32", {1.5f, -0.1f, 3.4e38f, 1e-40f, -0.0f});
   AddColumn<double>(*model, setters, "f64", {0.1, -2.5, 1e10, -0.0, 2.0});
   AddColumn<bool>(*model, setters, "b", {false, true, true, false, true});
   AddColumn<std::int8_t>(*model, setters, "i8", {0, -56, 127, -128, 5});
   AddColumn<std::int16_t>(*model, setters, "i16", {0, -300, 32767, -32768, 7});
   AddColumn<std::int32_t>(*model, setters, "i32", {0, -56, I32::max(), I32::min(), 100000});
   AddColumn<std::int64_t>(*model, setters, "i64", {0, -1, I64::max(), I64::min(), std::int64_t(1) << 40});
   AddColumn<std::uint8_t>(*model, setters, "u8", {0, 200, 255, 1, 7});
   AddColumn<std::uint16_t>(*model, setters, "u16", {0, 65535, 300, 1, 2});
   AddColumn<std::uint32_t>(*model, setters, "u32", {0, 4294967295u, 70000, 1, 2});
   AddColumn<std::uint64_t>(*model, setters, "u64", {0, std::numeric_limits<std::uint64_t>::max(), std::uint64_t(1) << 63, 1, 2});
   AddColumn<char>(*model, setters, "ch", {0, -56, 65, 127, -128});
   AddColumn<E16, std::int16_t>(*model, setters, "e16", {0, 300, -5, 32767, -32768});
   AddColumn<E8, std::uint8_t>(*model, setters, "e8", {0, 200, 255, 1, 7});
   WriteColumns(std::move(model), setters, name, path, 5, false);
}

/// 10 entries per field, each field with exactly the out-of-range entries its case names
/// (tests/evolution_oracle.py); `clusterPerEntry` chooses the layout.
void WriteNarrow(const std::string &path, const std::string &name, bool clusterPerEntry)
{
   const double inf = std::numeric_limits<double>::infinity();
   const double nan = std::numeric_limits<double>::quiet_NaN();
   auto model = ROOT::RNTupleModel::Create();
   Setters setters;
   AddColumn<std::int32_t>(*model, setters, "i32_i8", {1, -128, 127, 0, -1, 5, -5, 200, 3, 2}); // bad: 7
   AddColumn<std::int32_t>(*model, setters, "i32_i16", {40000, 1, -32768, 32767, 0, 2, 3, 4, 5, 6}); // bad: 0
   AddColumn<std::int32_t>(*model, setters, "i32_u32", {0, 5, -1, 7, I32::max(), 1, 2, 3, 4, 5}); // bad: 2
   AddColumn<std::int32_t>(*model, setters, "i32_u64", {3, 0, I32::max(), 1, 2, 3, 4, 5, 6, -7}); // bad: 9
   AddColumn<std::int32_t>(*model, setters, "i32_char", {65, -128, 127, 128, 0, 1, 2, 3, 4, 5}); // bad: 3
   AddColumn<std::int64_t>(*model, setters, "i64_i32", {1, std::int64_t(I32::max()) + 1, I32::min(), I32::max(), 0, 1, 2, 3, 4, 5}); // bad: 1
   AddColumn<std::int64_t>(*model, setters, "i64_u64", {0, 1, 2, 3, I64::max(), 5, -1, 7, 8, 9}); // bad: 6
   AddColumn<std::uint64_t>(*model, setters, "u64_i64", {0, std::uint64_t(I64::max()), std::uint64_t(1) << 63, 1, 2, 3, 4, 5, 6, 7}); // bad: 2
   AddColumn<std::uint64_t>(*model, setters, "u64_u32", {0, 4294967295u, 1, std::uint64_t(1) << 32, 4, 5, 6, 7, 8, 9}); // bad: 3
   AddColumn<std::uint8_t>(*model, setters, "u8_i8", {0, 127, 1, 2, 3, 128, 4, 5, 6, 7}); // bad: 5
   AddColumn<std::uint8_t>(*model, setters, "u8_char", {0, 127, 1, 2, 255, 3, 4, 5, 6, 7}); // bad: 4
   AddColumn<std::int16_t>(*model, setters, "i16_u16", {0, 32767, 1, 2, 3, 4, 5, 6, -1, 7}); // bad: 8
   AddColumn<char>(*model, setters, "char_u8", {0, 127, 65, -1, 1, 2, 3, 4, 5, 6}); // bad: 3
   AddColumn<E16, std::int16_t>(*model, setters, "e16_i8", {1, 300, -128, 127, 0, 1, 2, 3, 4, 5}); // bad: 1
   AddColumn<E16, std::int16_t>(*model, setters, "e16_char", {300, 1, -128, 127, 0, 1, 2, 3, 4, 5}); // bad: 0
   AddColumn<E16, std::int16_t>(*model, setters, "e16_u16", {0, 1, 300, -5, 32767, 1, 2, 3, 4, 5}); // bad: 3
   AddColumn<E16, std::int16_t>(*model, setters, "e16_e8", {0, 255, 300, 1, 2, 3, 4, 5, 6, 7}); // bad: 2
   AddColumn<std::int64_t>(*model, setters, "i64_fits", {0, -1, I32::max(), I32::min(), 7, 8, 9, 10, 11, 12}); // all fit int32
   AddColumn<std::uint16_t>(*model, setters, "u16_fits", {0, 255, 1, 2, 3, 4, 5, 6, 7, 8}); // all fit uint8
   // Every floating-point class that survives double -> float, and 0.1 (precision lost silently).
   AddColumn<double>(*model, setters, "f64_ok", {0.1, nan, inf, -inf, -0.0, 0.0, 1.0, 3.4e38, 1.2e-38, -1e-30});
   AddColumn<double>(*model, setters, "f64_over", {0.5, 1, 2, 3, 3.5e38, 5, 6, 7, 8, 9}); // bad: 4
   AddColumn<double>(*model, setters, "f64_negover", {0.5, -3.5e38, 2, 3, 4, 5, 6, 7, 8, 9}); // bad: 1
   AddColumn<double>(*model, setters, "f64_subnormal", {0.5, 1, 2, 3, 4, 5, 1e-40, 7, 8, 9}); // bad: 6
   AddColumn<double>(*model, setters, "f64_underflow", {0.5, 1, 2, 3, 4, 5, 6, 7, 8, 1e-46}); // bad: 9
   WriteColumns(std::move(model), setters, name, path, 10, clusterPerEntry);
}

/// 4 entries of nullable, collection, pair, tuple, variant and bitset fields.
void WriteCollections(const std::string &path, const std::string &name)
{
   auto model = ROOT::RNTupleModel::Create();
   auto optI32 = model->MakeField<std::optional<std::int32_t>>("opt_i32");
   auto optF32 = model->MakeField<std::optional<float>>("opt_f32");
   auto uptrF32 = model->MakeField<std::unique_ptr<float>>("uptr_f32");
   auto uptrI32 = model->MakeField<std::unique_ptr<std::int32_t>>("uptr_i32");
   auto atomI32 = model->MakeField<std::atomic<std::int32_t>>("atom_i32");
   auto vecF32 = model->MakeField<std::vector<float>>("vec_f32");
   auto vecI32 = model->MakeField<std::vector<std::int32_t>>("vec_i32");
   auto rvecI16 = model->MakeField<ROOT::RVec<std::int16_t>>("rvec_i16");
   auto rvecI32 = model->MakeField<ROOT::RVec<std::int32_t>>("rvec_i32");
   auto arrF32 = model->MakeField<std::array<float, 3>>("arr_f32");
   auto setI32 = model->MakeField<std::set<std::int32_t>>("set_i32");
   auto msetI32 = model->MakeField<std::multiset<std::int32_t>>("mset_i32");
   auto mapIF = model->MakeField<std::map<std::int32_t, float>>("map_if");
   auto vpairIF = model->MakeField<std::vector<std::pair<std::int32_t, float>>>("vpair_if");
   auto pairIF = model->MakeField<std::pair<std::int32_t, float>>("pair_if");
   auto tupIF = model->MakeField<std::tuple<std::int32_t, float>>("tup_if");
   auto varIF = model->MakeField<std::variant<std::int32_t, float>>("var_if");
   auto bits8 = model->MakeField<std::bitset<8>>("bits8");

   const std::optional<std::int32_t> vOptI32[] = {5, std::nullopt, -3, std::nullopt};
   const std::optional<float> vOptF32[] = {std::nullopt, 0.5f, 1e-3f, std::nullopt};
   const std::optional<float> vUptrF32[] = {1.5f, std::nullopt, std::nullopt, -2.25f};
   const std::optional<std::int32_t> vUptrI32[] = {std::nullopt, 7, std::nullopt, -1};
   const std::vector<float> vVecF32[] = {{}, {1.5f}, {0.1f, -2.f}, {3.f, 4.f, 5.f}};
   const std::vector<std::int32_t> vVecI32[] = {{3, 1, 3, 2}, {}, {-5}, {7, 7}};
   const std::vector<std::int16_t> vRvecI16[] = {{1, 2}, {}, {-3}, {4, 4, -32768}};
   const std::vector<std::int32_t> vRvecI32[] = {{9, -9, 9}, {0}, {}, {2147483647, 1}};
   const std::array<float, 3> vArrF32[] = {{0.f, 1.f, 2.f}, {-0.5f, 0.1f, 3e38f}, {1e-3f, 2.f, 3.f}, {7.f, 8.f, 9.f}};
   const std::set<std::int32_t> vSetI32[] = {{}, {5, 1, -2}, {3}, {20, 10}};
   const std::multiset<std::int32_t> vMsetI32[] = {{2, 2, 1}, {}, {5}, {-1, -1}};
   const std::map<std::int32_t, float> vMapIF[] = {{}, {{1, 0.5f}, {-3, 2.f}}, {{7, 0.1f}}, {{2, -1.f}, {3, -2.f}, {4, -3.f}}};
   const std::vector<std::pair<std::int32_t, float>> vVpairIF[] = {
      {{1, 0.5f}, {1, 0.25f}}, {}, {{3, 1.f}}, {{2, 2.f}, {1, 1.f}, {2, 3.f}}};
   const std::pair<std::int32_t, float> vPairIF[] = {{1, 0.5f}, {-2, 0.1f}, {2147483647, -1e30f}, {0, -0.f}};
   const std::tuple<std::int32_t, float> vTupIF[] = {{-1, 1.5f}, {2, 0.1f}, {-2147483647 - 1, 1e-40f}, {3, 3.f}};
   const std::variant<std::int32_t, float> vVarIF[] = {std::int32_t(5), 0.5f, std::int32_t(-1), -2.5f};
   const unsigned long vBits8[] = {0x00, 0xA5, 0xFF, 0x01};
   WriteEntries(std::move(model), name, path, 4, false, [&](int i) {
      *optI32 = vOptI32[i];
      *optF32 = vOptF32[i];
      *uptrF32 = vUptrF32[i] ? std::make_unique<float>(*vUptrF32[i]) : nullptr;
      *uptrI32 = vUptrI32[i] ? std::make_unique<std::int32_t>(*vUptrI32[i]) : nullptr;
      atomI32->store(i % 2 ? -(i + 1) : i + 1);
      *vecF32 = vVecF32[i];
      *vecI32 = vVecI32[i];
      *rvecI16 = ROOT::RVec<std::int16_t>(vRvecI16[i].begin(), vRvecI16[i].end());
      *rvecI32 = ROOT::RVec<std::int32_t>(vRvecI32[i].begin(), vRvecI32[i].end());
      *arrF32 = vArrF32[i];
      *setI32 = vSetI32[i];
      *msetI32 = vMsetI32[i];
      *mapIF = vMapIF[i];
      *vpairIF = vVpairIF[i];
      *pairIF = vPairIF[i];
      *tupIF = vTupIF[i];
      *varIF = vVarIF[i];
      *bits8 = std::bitset<8>(vBits8[i]);
   });
}

/// 4 entries of the version-1 classes, plus a streamer field; `clusterPerEntry` as WriteNarrow.
void WriteClasses(const std::string &path, const std::string &name, bool clusterPerEntry)
{
   auto model = ROOT::RNTupleModel::Create();
   auto evo = model->MakeField<Evo>("evo");
   auto remove = model->MakeField<EvoRemove>("remove");
   auto add = model->MakeField<EvoAdd>("add");
   auto reorder = model->MakeField<EvoReorder>("reorder");
   auto widen = model->MakeField<EvoWiden>("widen");
   auto narrow = model->MakeField<EvoNarrow>("narrow");
   auto f2i = model->MakeField<EvoFloatToInt>("to_int");
   auto basesRemoved = model->MakeField<EvoBasesRemoved>("bases_removed");
   auto baseAdded = model->MakeField<EvoBaseAdded>("base_added");
   auto ren = model->MakeField<Ren1>("ren");
   model->AddField(std::make_unique<ROOT::RStreamerField>("st", "EvoStreamed"));
   auto st = model->GetDefaultEntry().GetPtr<EvoStreamed>("st");

   const std::int32_t va[] = {1, -2, I32::max(), 0};
   const float vb[] = {0.5f, -0.1f, 1e30f, -0.f};
   const std::int64_t vn[] = {5, -32768, 100000, 32767};  // 100000 (entry 2) is out of int16's range
   WriteEntries(std::move(model), name, path, 4, clusterPerEntry, [&](int i) {
      *evo = Evo{va[i], vb[i], 9 - i};
      *remove = EvoRemove{va[i], vb[i], 100 + i};
      *add = EvoAdd{va[i]};
      *reorder = EvoReorder{va[i], vb[i], 0.25 * i - 1e300 * (i == 3)};
      *widen = EvoWiden{va[i], vb[i], EvoInner{static_cast<std::int16_t>(-32768 + i), -vb[i]}};
      *narrow = EvoNarrow{vn[i], 10 * i};
      *f2i = EvoFloatToInt{vb[i]};
      basesRemoved->base_x = 40 + i;
      basesRemoved->d = 50 + i;
      *baseAdded = EvoBaseAdded{60 + i};
      *ren = Ren1{70 + i};
      st->k = i;
      st->v.assign(static_cast<std::size_t>(i), 0.5f * i);
      st->s = std::string(static_cast<std::size_t>(i), 'x');
   });
}

} // namespace evolution_oracle
