// Writes the schemas of the writer-layout test (crates/rntuple/tests/root_writer_layout.rs)
// with ROOT 6.40: each stresses one part of the entry-size model of our writer
// (crates/rntuple/src/write/size.rs): variants, optionals and unique_ptrs, bitsets,
// strings, nested collections, records holding collections, a NanoAOD-like mix, other
// containers (maps, sets, RVec, vector<bool>), and non-default column representations.
// Declared into cling by tests/layoutgen.py, after tests/cxx/splitmix.hxx.
//
// The values come from a fixed-seed generator (no <random> distributions, whose output
// the standard leaves to the library), so a file is the same wherever it is written.
// Sizes vary from entry to entry (empty and long strings and collections), so that the
// bytes per entry that decide where a cluster ends vary too.
#include <ROOT/RField.hxx>
#include <ROOT/RNTupleModel.hxx>
#include <ROOT/RNTupleWriteOptions.hxx>
#include <ROOT/RNTupleWriter.hxx>
#include <ROOT/RVec.hxx>

#include <array>
#include <bitset>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

namespace rntuple_layoutgen {

struct Rng {
   std::uint64_t s;
   explicit Rng(std::uint64_t seed) : s(seed) {}
   std::uint64_t Next() { return rntuple_testgen::SplitMix64(s); }
   /// Uniform in [0, n).
   std::uint64_t Below(std::uint64_t n) { return Next() % n; }
   /// Uniform in [0, 1).
   double Real() { return static_cast<double>(Next() >> 11) * 0x1p-53; }
   /// Lower-case letters, 0 to `max` of them.
   std::string Text(std::uint64_t max)
   {
      std::string s(Below(max + 1), 'a');
      for (auto &c : s)
         c = static_cast<char>('a' + Below(26));
      return s;
   }
   template <typename T>
   std::vector<T> Numbers(std::uint64_t max, double scale)
   {
      std::vector<T> v(Below(max + 1));
      for (auto &x : v)
         x = static_cast<T>(Real() * scale);
      return v;
   }
   template <std::size_t N>
   std::bitset<N> Bits()
   {
      std::bitset<N> b;
      for (std::size_t k = 0; k < N; ++k)
         b[k] = Next() & 1;
      return b;
   }
};

ROOT::RNTupleWriteOptions Options(int compression, long cluster, long maxPage, long initialPage)
{
   ROOT::RNTupleWriteOptions options;
   options.SetCompression(compression);
   if (cluster > 0)
      options.SetApproxZippedClusterSize(cluster);
   // The two page sizes must stay ordered while each is set.
   if (initialPage > 0 && maxPage > 0 && initialPage > maxPage) {
      options.SetInitialUnzippedPageSize(initialPage);
      options.SetMaxUnzippedPageSize(maxPage);
   } else {
      if (maxPage > 0)
         options.SetMaxUnzippedPageSize(maxPage);
      if (initialPage > 0)
         options.SetInitialUnzippedPageSize(initialPage);
   }
   return options;
}

using Writer = std::unique_ptr<ROOT::RNTupleWriter>;

Writer Open(std::unique_ptr<ROOT::RNTupleModel> model, const char *path, const ROOT::RNTupleWriteOptions &options)
{
   return ROOT::RNTupleWriter::Recreate(std::move(model), "Events", path, options);
}

void Variant(const char *path, long n, const ROOT::RNTupleWriteOptions &options)
{
   auto model = ROOT::RNTupleModel::Create();
   auto id = model->MakeField<std::uint32_t>("id");
   auto v4 = model->MakeField<std::variant<std::int32_t, float, std::string, std::vector<double>>>("v4");
   auto v2 = model->MakeField<std::variant<double, std::vector<std::int16_t>>>("v2");
   auto v3 = model->MakeField<std::variant<std::uint8_t, std::string, std::vector<std::vector<float>>>>("v3");
   auto writer = Open(std::move(model), path, options);
   Rng r(1);
   for (long i = 0; i < n; ++i) {
      *id = static_cast<std::uint32_t>(i);
      switch (r.Below(4)) {
      case 0: *v4 = static_cast<std::int32_t>(r.Below(1000)); break;
      case 1: *v4 = static_cast<float>(r.Real()); break;
      case 2: *v4 = r.Text(40); break;
      default: *v4 = r.Numbers<double>(8, 100.0);
      }
      if (r.Below(3) != 0)
         *v2 = r.Real();
      else
         *v2 = r.Numbers<std::int16_t>(12, 3000.0);
      switch (r.Below(3)) {
      case 0: *v3 = static_cast<std::uint8_t>(r.Below(256)); break;
      case 1: *v3 = r.Text(3); break;
      default: {
         std::vector<std::vector<float>> vv(r.Below(4));
         for (auto &v : vv)
            v = r.Numbers<float>(5, 10.0);
         *v3 = std::move(vv);
      }
      }
      writer->Fill();
   }
}

void Optional(const char *path, long n, const ROOT::RNTupleWriteOptions &options)
{
   auto model = ROOT::RNTupleModel::Create();
   auto od = model->MakeField<std::optional<double>>("o_d");
   auto of = model->MakeField<std::optional<std::vector<float>>>("o_vf");
   auto os = model->MakeField<std::optional<std::string>>("o_s");
   auto ui = model->MakeField<std::unique_ptr<std::int32_t>>("u_i");
   auto uv = model->MakeField<std::unique_ptr<std::vector<std::int64_t>>>("u_v");
   auto oo = model->MakeField<std::optional<std::pair<float, std::optional<std::int16_t>>>>("o_pair");
   auto writer = Open(std::move(model), path, options);
   Rng r(2);
   for (long i = 0; i < n; ++i) {
      od->reset();
      if (r.Below(3) != 0)
         *od = r.Real();
      of->reset();
      if (r.Below(2) != 0)
         *of = r.Numbers<float>(9, 50.0);
      os->reset();
      if (r.Below(4) != 0)
         *os = r.Text(30);
      ui->reset();
      if (r.Below(2) != 0)
         *ui = std::make_unique<std::int32_t>(static_cast<std::int32_t>(r.Below(100000)));
      uv->reset();
      if (r.Below(5) != 0)
         *uv = std::make_unique<std::vector<std::int64_t>>(r.Numbers<std::int64_t>(6, 1e12));
      oo->reset();
      if (r.Below(3) != 0) {
         std::optional<std::int16_t> inner;
         if (r.Below(2) != 0)
            inner = static_cast<std::int16_t>(r.Below(30000));
         *oo = std::make_pair(static_cast<float>(r.Real()), inner);
      }
      writer->Fill();
   }
}

void Bitset(const char *path, long n, const ROOT::RNTupleWriteOptions &options)
{
   auto model = ROOT::RNTupleModel::Create();
   auto b1 = model->MakeField<std::bitset<1>>("b1");
   auto b7 = model->MakeField<std::bitset<7>>("b7");
   auto b64 = model->MakeField<std::bitset<64>>("b64");
   auto b130 = model->MakeField<std::bitset<130>>("b130");
   auto vb = model->MakeField<std::vector<std::bitset<5>>>("vb");
   auto writer = Open(std::move(model), path, options);
   Rng r(3);
   for (long i = 0; i < n; ++i) {
      *b1 = r.Bits<1>();
      *b7 = r.Bits<7>();
      *b64 = r.Bits<64>();
      *b130 = r.Bits<130>();
      vb->resize(r.Below(4));
      for (auto &b : *vb)
         b = r.Bits<5>();
      writer->Fill();
   }
}

void String(const char *path, long n, const ROOT::RNTupleWriteOptions &options)
{
   auto model = ROOT::RNTupleModel::Create();
   auto s = model->MakeField<std::string>("s");
   auto lng = model->MakeField<std::string>("long");
   auto vs = model->MakeField<std::vector<std::string>>("vs");
   auto tag = model->MakeField<std::string>("tag");
   auto writer = Open(std::move(model), path, options);
   Rng r(4);
   for (long i = 0; i < n; ++i) {
      *s = r.Text(20);
      // Mostly empty, now and then a few hundred characters.
      *lng = r.Below(10) == 0 ? r.Text(600) : std::string();
      vs->resize(r.Below(5));
      for (auto &x : *vs)
         x = r.Text(12);
      *tag = (i % 3) ? "signal" : "bg";
      writer->Fill();
   }
}

void NestedVectors(const char *path, long n, const ROOT::RNTupleWriteOptions &options)
{
   auto model = ROOT::RNTupleModel::Create();
   auto vvf = model->MakeField<std::vector<std::vector<float>>>("vvf");
   auto vvv = model->MakeField<std::vector<std::vector<std::vector<std::int16_t>>>>("vvv");
   auto vvs = model->MakeField<std::vector<std::vector<std::string>>>("vvs");
   auto writer = Open(std::move(model), path, options);
   Rng r(5);
   for (long i = 0; i < n; ++i) {
      vvf->resize(r.Below(6));
      for (auto &v : *vvf)
         v = r.Numbers<float>(7, 100.0);
      vvv->resize(r.Below(4));
      for (auto &vv : *vvv) {
         vv.resize(r.Below(4));
         for (auto &v : vv)
            v = r.Numbers<std::int16_t>(5, 1000.0);
      }
      vvs->resize(r.Below(3));
      for (auto &v : *vvs) {
         v.resize(r.Below(3));
         for (auto &x : v)
            x = r.Text(8);
      }
      writer->Fill();
   }
}

void Records(const char *path, long n, const ROOT::RNTupleWriteOptions &options)
{
   using Hit = std::tuple<double, std::vector<std::uint8_t>, std::string>;
   auto model = ROOT::RNTupleModel::Create();
   auto pair = model->MakeField<std::pair<float, std::vector<std::int32_t>>>("pair");
   auto hits = model->MakeField<std::vector<Hit>>("hits");
   auto arr = model->MakeField<std::array<std::vector<float>, 3>>("arr");
   auto deep = model->MakeField<std::pair<std::vector<std::pair<std::int64_t, std::vector<float>>>, std::string>>("deep");
   auto writer = Open(std::move(model), path, options);
   Rng r(6);
   for (long i = 0; i < n; ++i) {
      pair->first = static_cast<float>(r.Real());
      pair->second = r.Numbers<std::int32_t>(6, 1e6);
      hits->resize(r.Below(5));
      for (auto &h : *hits)
         h = Hit(r.Real(), r.Numbers<std::uint8_t>(10, 255.0), r.Text(6));
      for (auto &a : *arr)
         a = r.Numbers<float>(4, 1.0);
      deep->first.resize(r.Below(4));
      for (auto &d : deep->first)
         d = std::make_pair(static_cast<std::int64_t>(r.Next() >> 1), r.Numbers<float>(3, 2.0));
      deep->second = r.Text(5);
      writer->Fill();
   }
}

void NanoAod(const char *path, long n, const ROOT::RNTupleWriteOptions &options)
{
   auto model = ROOT::RNTupleModel::Create();
   auto run = model->MakeField<std::uint32_t>("run");
   auto lumi = model->MakeField<std::uint32_t>("luminosityBlock");
   auto event = model->MakeField<std::uint64_t>("event");
   auto jetPt = model->MakeField<std::vector<float>>("Jet_pt");
   auto jetEta = model->MakeField<std::vector<float>>("Jet_eta");
   auto jetId = model->MakeField<std::vector<std::uint8_t>>("Jet_jetId");
   auto jetConst = model->MakeField<std::vector<std::vector<std::uint16_t>>>("Jet_constituents");
   auto muons = model->MakeField<std::vector<std::pair<float, std::int32_t>>>("Muon");
   auto met = model->MakeField<float>("MET_pt");
   auto weight = model->MakeField<std::optional<double>>("genWeight");
   auto pdf = model->MakeField<std::vector<float>>("LHEPdfWeight");
   auto hltMu = model->MakeField<bool>("HLT_IsoMu24");
   auto hltEle = model->MakeField<bool>("HLT_Ele32");
   auto flags = model->MakeField<std::bitset<12>>("Flag");
   auto trigger = model->MakeField<std::variant<std::int32_t, std::string>>("TrigObj_id");
   auto dataset = model->MakeField<std::string>("dataset");
   auto writer = Open(std::move(model), path, options);
   Rng r(7);
   for (long i = 0; i < n; ++i) {
      *run = 1 + static_cast<std::uint32_t>(i / 5000);
      *lumi = static_cast<std::uint32_t>(i / 200);
      *event = 100000 + static_cast<std::uint64_t>(i);
      *jetPt = r.Numbers<float>(9, 300.0);
      jetEta->resize(jetPt->size());
      jetId->resize(jetPt->size());
      jetConst->resize(jetPt->size());
      for (std::size_t k = 0; k < jetPt->size(); ++k) {
         (*jetEta)[k] = static_cast<float>(r.Real() * 5.0 - 2.5);
         (*jetId)[k] = static_cast<std::uint8_t>(r.Below(8));
         (*jetConst)[k] = r.Numbers<std::uint16_t>(12, 600.0);
      }
      muons->resize(r.Below(3));
      for (auto &m : *muons)
         m = std::make_pair(static_cast<float>(r.Real() * 80.0), (r.Next() & 1) ? 1 : -1);
      *met = static_cast<float>(r.Real() * 120.0);
      weight->reset();
      if (r.Below(4) != 0)
         *weight = r.Real();
      // The PDF weights of some events only, as in samples with LHE information.
      pdf->clear();
      if (r.Below(8) == 0)
         pdf->resize(101, 1.0f);
      *hltMu = !muons->empty() && muons->front().first > 24.0f;
      *hltEle = (r.Below(5) == 0);
      *flags = r.Bits<12>();
      if (r.Below(2) != 0)
         *trigger = static_cast<std::int32_t>(r.Below(30));
      else
         *trigger = r.Text(10);
      *dataset = (i % 2) ? "TTbar" : "DYJets";
      writer->Fill();
   }
}

void Containers(const char *path, long n, const ROOT::RNTupleWriteOptions &options)
{
   auto model = ROOT::RNTupleModel::Create();
   auto vb = model->MakeField<std::vector<bool>>("vb");
   auto ab = model->MakeField<std::array<bool, 3>>("ab");
   auto rv = model->MakeField<ROOT::RVec<float>>("rv");
   auto vvar = model->MakeField<std::vector<std::variant<std::int32_t, float>>>("vvar");
   auto us = model->MakeField<std::unique_ptr<std::string>>("us");
   auto c = model->MakeField<char>("c");
   auto m = model->MakeField<std::map<std::string, std::int32_t>>("m");
   auto st = model->MakeField<std::set<std::int64_t>>("st");
   auto writer = Open(std::move(model), path, options);
   Rng r(8);
   for (long i = 0; i < n; ++i) {
      vb->resize(r.Below(20));
      for (std::size_t k = 0; k < vb->size(); ++k)
         (*vb)[k] = r.Next() & 1;
      for (auto &b : *ab)
         b = r.Next() & 1;
      const auto floats = r.Numbers<float>(6, 3.0);
      rv->assign(floats.begin(), floats.end());
      vvar->resize(r.Below(4));
      for (auto &v : *vvar) {
         if (r.Below(2) != 0)
            v = static_cast<std::int32_t>(r.Below(9));
         else
            v = static_cast<float>(r.Real());
      }
      us->reset();
      if (r.Below(2) != 0)
         *us = std::make_unique<std::string>(r.Text(9));
      *c = static_cast<char>('a' + r.Below(26));
      m->clear();
      for (auto k = r.Below(4); k > 0; --k)
         (*m)[r.Text(4)] = static_cast<std::int32_t>(r.Below(100));
      st->clear();
      for (auto k = r.Below(5); k > 0; --k)
         st->insert(static_cast<std::int64_t>(r.Below(1000)));
      writer->Fill();
   }
}

/// A field of type T named `name` whose columns are stored as `types`.
template <typename T>
void AddStoredAs(ROOT::RNTupleModel &model, const std::string &name, std::vector<ROOT::ENTupleColumnType> types)
{
   auto field = std::make_unique<ROOT::RField<T>>(name);
   field->SetColumnRepresentatives({std::move(types)});
   model.AddField(std::move(field));
}

void Representations(const char *path, long n, const ROOT::RNTupleWriteOptions &options)
{
   auto model = ROOT::RNTupleModel::Create();
   {
      auto half = std::make_unique<ROOT::RField<float>>("half");
      half->SetHalfPrecision();
      model->AddField(std::move(half));
      auto trunc = std::make_unique<ROOT::RField<float>>("trunc20");
      trunc->SetTruncated(20);
      model->AddField(std::move(trunc));
      auto quant = std::make_unique<ROOT::RField<double>>("quant10");
      quant->SetQuantized(10, {0., 1.});
      model->AddField(std::move(quant));
   }
   using Type = ROOT::ENTupleColumnType;
   AddStoredAs<double>(*model, "d32", {Type::kSplitReal32});
   AddStoredAs<std::vector<float>>(*model, "v_index32", {Type::kSplitIndex32});
   AddStoredAs<std::int64_t>(*model, "i64_unsplit", {Type::kInt64});
   AddStoredAs<std::string>(*model, "s_index32", {Type::kIndex32, Type::kChar});
   auto &entry = model->GetDefaultEntry();
   auto half = entry.GetPtr<float>("half");
   auto trunc = entry.GetPtr<float>("trunc20");
   auto quant = entry.GetPtr<double>("quant10");
   auto d32 = entry.GetPtr<double>("d32");
   auto v = entry.GetPtr<std::vector<float>>("v_index32");
   auto i64 = entry.GetPtr<std::int64_t>("i64_unsplit");
   auto s = entry.GetPtr<std::string>("s_index32");
   auto writer = Open(std::move(model), path, options);
   Rng r(9);
   for (long i = 0; i < n; ++i) {
      *half = static_cast<float>(r.Real());
      *trunc = static_cast<float>(r.Real());
      *quant = r.Real();
      *d32 = r.Real();
      *v = r.Numbers<float>(7, 2.0);
      *i64 = static_cast<std::int64_t>(r.Next() >> 1);
      *s = r.Text(10);
      writer->Fill();
   }
}

/// Writes `n` entries of schema `schema` into RNTuple "Events" of `path`.
void Write(const std::string &schema, const char *path, long n, int compression, long cluster, long maxPage,
           long initialPage)
{
   const auto options = Options(compression, cluster, maxPage, initialPage);
   if (schema == "variant")
      Variant(path, n, options);
   else if (schema == "optional")
      Optional(path, n, options);
   else if (schema == "bitset")
      Bitset(path, n, options);
   else if (schema == "string")
      String(path, n, options);
   else if (schema == "nested_vectors")
      NestedVectors(path, n, options);
   else if (schema == "records")
      Records(path, n, options);
   else if (schema == "nanoaod")
      NanoAod(path, n, options);
   else if (schema == "containers")
      Containers(path, n, options);
   else if (schema == "representations")
      Representations(path, n, options);
   else
      throw std::invalid_argument("unknown layout schema: " + schema);
}

} // namespace rntuple_layoutgen
