// More RNTuple test files written with ROOT 6.40: multi-key payloads, several column
// representations per field, streamer fields, sub-directories and more nested types.
// Declared into cling by tests/rootgen.py after tests/cxx/rootgen.hxx (reuses its value pickers).
#include <ROOT/RNTupleModel.hxx>
#include <ROOT/RNTupleWriter.hxx>
#include <ROOT/RNTupleWriteOptions.hxx>
#include <ROOT/RField.hxx>
#include <ROOT/RFieldBase.hxx>

#include <TBufferFile.h>
#include <TClass.h>
#include <TDirectory.h>
#include <TFile.h>
#include <TH1.h>
#include <TObjString.h>

#include <array>
#include <atomic>
#include <cstdint>
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

// ------------------------------------------------------------------ multi-key payloads

/// Values spanning many pages: random doubles do not compress, so pages stay larger than a small max key size.
/// `nPadFields` float fields are added to the initial model (a large header) and again as a late model
/// extension (a large header extension, which lives in the footer).
void WriteMultiKey(const std::string &path, const std::string &name, long long nEntries, int compression,
                   long long maxKeySize, long long maxUnzippedPageSize, int nPadFields)
{
   auto model = ROOT::RNTupleModel::Create();
   auto vd = model->MakeField<std::vector<double>>("vd");
   auto str = model->MakeField<std::string>("str");
   auto i64 = model->MakeField<std::int64_t>("i64");
   std::vector<std::shared_ptr<float>> pads;
   for (int k = 0; k < nPadFields; ++k)
      pads.push_back(model->MakeField<float>("pad_with_a_long_field_name_to_grow_the_header_" + std::to_string(k)));
   ROOT::RNTupleWriteOptions opts;
   opts.SetCompression(static_cast<std::uint32_t>(compression));
   opts.SetApproxZippedClusterSize(4 * 1024 * 1024);
   opts.SetInitialUnzippedPageSize(static_cast<std::size_t>(maxUnzippedPageSize));
   opts.SetMaxUnzippedPageSize(static_cast<std::size_t>(maxUnzippedPageSize));
   opts.SetPageBufferBudget(64 * 1024 * 1024);
   ROOT::Internal::RNTupleWriteOptionsManip::SetMaxKeySize(opts, static_cast<std::uint64_t>(maxKeySize));
   auto writer = ROOT::RNTupleWriter::Recreate(std::move(model), name, path, opts);
   std::vector<std::shared_ptr<double>> latePads;
   for (long long i = 0; i < nEntries; ++i) {
      const auto u = static_cast<std::uint64_t>(i);
      if (i == nEntries / 2) {
         auto updater = writer->CreateModelUpdater();
         updater->BeginUpdate();
         for (int k = 0; k < nPadFields; ++k)
            latePads.push_back(
               updater->MakeField<double>("late_pad_with_a_long_field_name_to_grow_the_footer_" + std::to_string(k)));
         updater->CommitUpdate();
      }
      Rng r(u, 501);
      vd->resize(i % 11 == 0 ? 0 : 10 + r.Below(40));
      for (std::size_t k = 0; k < vd->size(); ++k)
         (*vd)[k] = RandomDouble(r, -60, 60);
      *str = PickString(u, 502, 60);
      *i64 = PickInt<std::int64_t>(u, 503);
      for (int k = 0; k < nPadFields; ++k)
         *pads[k] = PickFloat(u + k, 504);
      for (std::size_t k = 0; k < latePads.size(); ++k)
         *latePads[k] = PickDouble(u + k, 505);
      writer->Fill();
      if ((i + 1) % 700 == 0 && i + 1 < nEntries)
         writer->CommitCluster();
   }
}

// ------------------------------------------------------ several column representations

/// Fields with several column representations; cluster k writes representation (k + offset) % n.
void WriteMultiRep(const std::string &path, const std::string &name, long long nEntries, long long clusterEvery,
                   int compression)
{
   using CT = ROOT::ENTupleColumnType;
   auto model = ROOT::RNTupleModel::Create();

   auto fPx = ROOT::RFieldBase::Create("px", "float").Unwrap();
   fPx->SetColumnRepresentatives({{CT::kReal32}, {CT::kReal16}, {CT::kSplitReal32}});
   model->AddField(std::move(fPx));

   auto fD = ROOT::RFieldBase::Create("d", "double").Unwrap();
   fD->SetColumnRepresentatives({{CT::kSplitReal64}, {CT::kReal32}, {CT::kReal64}, {CT::kReal16}});
   model->AddField(std::move(fD));

   auto fI = ROOT::RFieldBase::Create("i32", "std::int32_t").Unwrap();
   fI->SetColumnRepresentatives({{CT::kSplitInt32}, {CT::kInt32}});
   model->AddField(std::move(fI));

   auto fStr = ROOT::RFieldBase::Create("str", "std::string").Unwrap();
   fStr->SetColumnRepresentatives({{CT::kIndex32, CT::kChar}, {CT::kSplitIndex64, CT::kChar}});
   model->AddField(std::move(fStr));

   auto fVec = ROOT::RFieldBase::Create("vec", "std::vector<float>").Unwrap();
   fVec->SetColumnRepresentatives({{CT::kIndex32}, {CT::kSplitIndex64}, {CT::kIndex64}, {CT::kSplitIndex32}});
   fVec->GetMutableSubfields()[0]->SetColumnRepresentatives({{CT::kSplitReal32}, {CT::kReal16}});
   model->AddField(std::move(fVec));

   auto fOpt = ROOT::RFieldBase::Create("opt", "std::optional<double>").Unwrap();
   fOpt->SetColumnRepresentatives({{CT::kSplitIndex64}, {CT::kIndex32}});
   model->AddField(std::move(fOpt));

   auto &entry = model->GetDefaultEntry();
   auto px = entry.GetPtr<float>("px");
   auto d = entry.GetPtr<double>("d");
   auto i32 = entry.GetPtr<std::int32_t>("i32");
   auto str = entry.GetPtr<std::string>("str");
   auto vec = entry.GetPtr<std::vector<float>>("vec");
   auto opt = entry.GetPtr<std::optional<double>>("opt");

   ROOT::RNTupleWriteOptions opts;
   opts.SetCompression(static_cast<std::uint32_t>(compression));
   opts.SetInitialUnzippedPageSize(32);
   opts.SetMaxUnzippedPageSize(256);
   auto writer = ROOT::RNTupleWriter::Recreate(std::move(model), name, path, opts);

   struct Switch {
      const char *field;
      int nReps;
      int offset;
   };
   const Switch switches[] = {{"px", 3, 0}, {"d", 4, 1}, {"i32", 2, 0}, {"str", 2, 1},
                              {"vec", 4, 0}, {"vec._0", 2, 1}, {"opt", 2, 0}};
   auto applyCluster = [&](long long k) {
      for (const auto &s : switches) {
         auto &field = const_cast<ROOT::RFieldBase &>(writer->GetModel().GetConstField(s.field));
         ROOT::Internal::RFieldRepresentationModifier::SetPrimaryColumnRepresentation(
            field, static_cast<std::uint16_t>((k + s.offset) % s.nReps));
      }
   };
   applyCluster(0);
   long long cluster = 0;
   for (long long i = 0; i < nEntries; ++i) {
      const auto u = static_cast<std::uint64_t>(i);
      // Mostly values in half precision's range; each cluster reads back whatever its representation stores.
      *px = PickFloat(u, 601);
      if (!std::isfinite(*px) || std::fabs(*px) > 60000.f || std::fabs(*px) < 1e-4f)
         *px = static_cast<float>(static_cast<int>(u % 2001) - 1000) / 8.f;
      Rng rd(u, 602);
      *d = (u % 3 == 0) ? static_cast<double>(static_cast<int>(u % 999) - 500) / 4.0 : RandomDouble(rd, -10, 10);
      *i32 = PickInt<std::int32_t>(u, 603);
      *str = PickString(u, 604, 12);
      vec->resize(PickLen(u, 605, 5));
      for (std::size_t k = 0; k < vec->size(); ++k)
         (*vec)[k] = static_cast<float>(static_cast<int>((u * 7 + k) % 4001) - 2000) / 16.f;
      if (u % 4 == 1)
         opt->reset();
      else
         *opt = PickDouble(u, 606);
      writer->Fill();
      if ((i + 1) % clusterEvery == 0 && i + 1 < nEntries) {
         writer->CommitCluster(cluster % 3 == 2);
         ++cluster;
         applyCluster(cluster);
      }
   }
}

// -------------------------------------------------------------------- streamer fields

/// The histogram written for entry `i` (deterministic).
inline void FillHisto(TH1F &h, std::uint64_t i)
{
   if (!h.GetSumw2N())
      h.Sumw2(true); // weighted fills would switch it on anyway: make the state independent of history
   h.Reset();
   h.SetName(("h" + std::to_string(i)).c_str());
   h.SetTitle(PickString(i, 701, 10).c_str());
   Rng r(i, 702);
   const std::size_t n = (i % 5 == 0) ? 0 : r.Below(50);
   for (std::size_t k = 0; k < n; ++k)
      h.Fill(RandomDouble(r, -3, 3), static_cast<double>(r.Below(5)));
}

/// RStreamerField `h` (TH1F) and `s` (TObjString), plus an ordinary field, written for `nEntries` entries.
void WriteStreamer(const std::string &path, const std::string &name, long long nEntries, int compression)
{
   auto model = ROOT::RNTupleModel::Create();
   model->AddField(std::make_unique<ROOT::RStreamerField>("h", "TH1F"));
   model->AddField(std::make_unique<ROOT::RStreamerField>("s", "TObjString"));
   auto n = model->MakeField<std::int32_t>("n");
   auto h = model->GetDefaultEntry().GetPtr<TH1F>("h");
   auto s = model->GetDefaultEntry().GetPtr<TObjString>("s");
   ROOT::RNTupleWriteOptions opts;
   opts.SetCompression(static_cast<std::uint32_t>(compression));
   opts.SetInitialUnzippedPageSize(64);
   opts.SetMaxUnzippedPageSize(4096);
   auto writer = ROOT::RNTupleWriter::Recreate(std::move(model), name, path, opts);
   TH1::AddDirectory(false);
   h->SetBins(20, -5., 5.);
   for (long long i = 0; i < nEntries; ++i) {
      const auto u = static_cast<std::uint64_t>(i);
      FillHisto(*h, u);
      s->SetString(PickString(u, 703, 30).c_str());
      *n = static_cast<std::int32_t>(i);
      writer->Fill();
      if ((i + 1) % 40 == 0 && i + 1 < nEntries)
         writer->CommitCluster();
   }
}

/// The bytes `TClass::Streamer` writes for the objects of entry `i` of WriteStreamer (as RStreamerField stores
/// them), as a JSON object {"h": [...], "s": [...]}.
std::string ExpectedStreamerBytes(long long i)
{
   TH1::AddDirectory(false);
   TH1F h; // as RStreamerField::ConstructValue (TClass::New) and WriteStreamer set it up
   h.SetBins(20, -5., 5.);
   FillHisto(h, static_cast<std::uint64_t>(i));
   TObjString s(PickString(static_cast<std::uint64_t>(i), 703, 30).c_str());
   std::string out = "{";
   const std::pair<const char *, std::pair<TClass *, void *>> objs[] = {{"h", {TH1F::Class(), &h}},
                                                                        {"s", {TObjString::Class(), &s}}};
   bool firstObj = true;
   for (const auto &[key, clObj] : objs) {
      TBufferFile buf(TBuffer::kWrite);
      clObj.first->Streamer(clObj.second, buf);
      if (!firstObj)
         out += ',';
      firstObj = false;
      out += '"';
      out += key;
      out += "\":[";
      for (Int_t k = 0; k < buf.Length(); ++k) {
         if (k)
            out += ',';
         out += std::to_string(static_cast<unsigned char>(buf.Buffer()[k]));
      }
      out += ']';
   }
   out += '}';
   return out;
}

// ---------------------------------------------------------------------- sub-directories

/// RNTuple `a/b/<name>` (in TFile directory a/b) and `<topName>` at the top level.
void WriteSubdir(const std::string &path, const std::string &name, const std::string &topName, long long nEntries)
{
   std::unique_ptr<TFile> file(TFile::Open(path.c_str(), "RECREATE"));
   auto *dir = file->mkdir("a/b");
   {
      auto model = ROOT::RNTupleModel::Create();
      auto x = model->MakeField<std::int32_t>("x");
      auto vs = model->MakeField<std::vector<std::string>>("vs");
      auto writer = ROOT::RNTupleWriter::Append(std::move(model), name, *dir);
      for (long long i = 0; i < nEntries; ++i) {
         *x = PickInt<std::int32_t>(static_cast<std::uint64_t>(i), 801);
         *vs = PickVecString(static_cast<std::uint64_t>(i), 802);
         writer->Fill();
      }
   }
   {
      auto model = ROOT::RNTupleModel::Create();
      auto y = model->MakeField<double>("y");
      auto writer = ROOT::RNTupleWriter::Append(std::move(model), topName, *file);
      for (long long i = 0; i < nEntries / 2 + 1; ++i) {
         *y = PickDouble(static_cast<std::uint64_t>(i), 803);
         writer->Fill();
      }
   }
   file->Close();
}

// ---------------------------------------------------------------------- nested types

inline float InRange(std::uint64_t i, std::uint64_t salt, float lo, float hi)
{
   Rng r(i, salt);
   return lo + (hi - lo) * static_cast<float>(r.Next() >> 40) * 0x1p-24f;
}

void WriteNested(const std::string &path, const std::string &name, long long nEntries, int compression)
{
   auto model = ROOT::RNTupleModel::Create();
   auto aa = model->MakeField<std::array<std::array<float, 2>, 3>>("aa");
   model->AddField(ROOT::RFieldBase::Create("carr", "std::int16_t[4]").Unwrap());
   auto apair = model->MakeField<std::array<std::pair<std::int32_t, float>, 2>>("apair");
   auto vb = model->MakeField<std::vector<bool>>("vb");
   auto uvf = model->MakeField<std::unique_ptr<std::vector<float>>>("uvf");
   auto ostr = model->MakeField<std::optional<std::string>>("ostr");
   auto vvar = model->MakeField<std::vector<std::variant<std::int32_t, std::string>>>("vvar");
   auto varv = model->MakeField<std::variant<std::vector<std::int32_t>, float>>("varv");
   auto mis = model->MakeField<std::map<std::int32_t, std::string>>("mis");
   auto mdd = model->MakeField<std::map<double, double>>("mdd");
   auto mll = model->MakeField<std::map<std::int64_t, std::int64_t>>("mll");
   auto vmsv = model->MakeField<std::vector<std::map<std::string, std::vector<float>>>>("vmsv");
   auto sets = model->MakeField<std::set<std::string>>("sets");
   auto tup1 = model->MakeField<std::tuple<std::int8_t>>("tup1");
   auto tupn = model->MakeField<std::tuple<std::optional<std::int32_t>, std::vector<std::pair<std::string, double>>>>(
      "tupn");
   auto at = model->MakeField<std::atomic<std::int32_t>>("at");
   auto vf = model->MakeField<std::vector<float>>("vf");
   auto f = model->MakeField<float>("f");

   auto d32 = std::make_unique<ROOT::RField<double>>("d32");
   d32->SetDouble32();
   model->AddField(std::move(d32));
   model->AddField(ROOT::RFieldBase::Create("d32alias", "Double32_t").Unwrap());
   auto f16 = std::make_unique<ROOT::RField<float>>("f16");
   f16->SetHalfPrecision();
   model->AddField(std::move(f16));
   auto ftr = std::make_unique<ROOT::RField<float>>("ftr");
   ftr->SetTruncated(20);
   model->AddField(std::move(ftr));
   auto fq = std::make_unique<ROOT::RField<float>>("fq");
   fq->SetQuantized(16, {-1.f, 1.f});
   model->AddField(std::move(fq));
   auto d16 = std::make_unique<ROOT::RField<double>>("d16");
   d16->SetHalfPrecision();
   model->AddField(std::move(d16));
   auto dtr = std::make_unique<ROOT::RField<double>>("dtr");
   dtr->SetTruncated(14);
   model->AddField(std::move(dtr));
   auto dq = std::make_unique<ROOT::RField<double>>("dq");
   dq->SetQuantized(20, {-100., 100.});
   model->AddField(std::move(dq));
   auto vh = ROOT::RFieldBase::Create("vh", "std::vector<float>").Unwrap();
   static_cast<ROOT::RField<float> *>(vh->GetMutableSubfields()[0])->SetHalfPrecision();
   model->AddField(std::move(vh));

   model->AddProjectedField(std::make_unique<ROOT::RField<ROOT::RNTupleCardinality<std::uint64_t>>>("nvf64"),
                            [](const std::string &) { return "vf"; });
   model->AddProjectedField(std::make_unique<ROOT::RField<ROOT::RNTupleCardinality<std::uint32_t>>>("nvvar32"),
                            [](const std::string &) { return "vvar"; });
   model->AddProjectedField(std::make_unique<ROOT::RField<float>>("fproj"), [](const std::string &) { return "f"; });
   model->AddProjectedField(std::make_unique<ROOT::RField<std::vector<float>>>("vfproj"),
                            [](const std::string &n) { return n == "vfproj" ? "vf" : "vf._0"; });

   auto &entry = model->GetDefaultEntry();
   auto carr = static_cast<std::int16_t *>(entry.GetPtr<void>("carr").get());
   auto d32p = entry.GetPtr<double>("d32");
   auto d32a = entry.GetPtr<double>("d32alias");
   auto f16p = entry.GetPtr<float>("f16");
   auto ftrp = entry.GetPtr<float>("ftr");
   auto fqp = entry.GetPtr<float>("fq");
   auto d16p = entry.GetPtr<double>("d16");
   auto dtrp = entry.GetPtr<double>("dtr");
   auto dqp = entry.GetPtr<double>("dq");
   auto vhp = entry.GetPtr<std::vector<float>>("vh");

   ROOT::RNTupleWriteOptions opts;
   opts.SetCompression(static_cast<std::uint32_t>(compression));
   opts.SetInitialUnzippedPageSize(32);
   opts.SetMaxUnzippedPageSize(512);
   opts.SetApproxZippedClusterSize(16 * 1024);
   auto writer = ROOT::RNTupleWriter::Recreate(std::move(model), name, path, opts);
   for (long long i = 0; i < nEntries; ++i) {
      const auto u = static_cast<std::uint64_t>(i);
      for (std::size_t a = 0; a < 3; ++a)
         for (std::size_t b = 0; b < 2; ++b)
            (*aa)[a][b] = PickFloat(u * 6 + a * 2 + b, 901);
      for (std::size_t k = 0; k < 4; ++k)
         carr[k] = PickInt<std::int16_t>(u * 4 + k, 902);
      for (std::size_t k = 0; k < 2; ++k)
         (*apair)[k] = {PickInt<std::int32_t>(u * 2 + k, 903), PickFloat(u * 2 + k, 904)};
      vb->resize(PickLen(u, 905, 70));
      for (std::size_t k = 0; k < vb->size(); ++k)
         (*vb)[k] = Rng(u * 97 + k, 906).Next() & 1;
      if (u % 3 == 0)
         uvf->reset();
      else
         *uvf = std::make_unique<std::vector<float>>(PickVecFloat(u, 907, 5));
      if (u % 4 == 0)
         ostr->reset();
      else
         *ostr = PickString(u, 908, 10);
      vvar->resize(PickLen(u, 909, 4));
      for (std::size_t k = 0; k < vvar->size(); ++k) {
         if ((u + k) % 2)
            (*vvar)[k] = PickString(u * 4 + k + 1, 910, 6);
         else
            (*vvar)[k] = PickInt<std::int32_t>(u * 4 + k, 911);
      }
      if (u % 3 == 0) {
         std::vector<std::int32_t> v(PickLen(u, 912, 4));
         for (std::size_t k = 0; k < v.size(); ++k)
            v[k] = PickInt<std::int32_t>(u * 4 + k, 913);
         *varv = v;
      } else {
         *varv = PickFloat(u, 914);
      }
      mis->clear();
      for (std::size_t k = 0, n = PickLen(u, 915, 4); k < n; ++k)
         (*mis)[PickInt<std::int32_t>(u * 4 + k, 916)] = PickString(u * 4 + k + 1, 917, 5);
      mdd->clear();
      for (std::size_t k = 0, n = PickLen(u, 918, 3); k < n; ++k)
         (*mdd)[static_cast<double>(static_cast<int>((u * 3 + k) % 50) - 25) / 4.] = PickDouble(u + k, 919);
      mll->clear();
      for (std::size_t k = 0, n = PickLen(u, 943, 3); k < n; ++k)
         (*mll)[PickInt<std::int64_t>(u * 3 + k, 944)] = PickInt<std::int64_t>(u + k, 945);
      vmsv->resize(PickLen(u, 920, 3));
      for (std::size_t k = 0; k < vmsv->size(); ++k) {
         auto &m = (*vmsv)[k];
         m.clear();
         for (std::size_t j = 0, n = PickLen(u * 3 + k, 921, 3); j < n; ++j)
            m[PickString(u * 9 + k * 3 + j + 1, 922, 4)] = PickVecFloat(u * 9 + k * 3 + j, 923, 3);
      }
      sets->clear();
      for (std::size_t k = 0, n = PickLen(u, 924, 5); k < n; ++k)
         sets->insert(PickString(u * 5 + k + 1, 925, 4));
      *tup1 = {PickInt<std::int8_t>(u, 926)};
      std::vector<std::pair<std::string, double>> tv(PickLen(u, 927, 3));
      for (std::size_t k = 0; k < tv.size(); ++k)
         tv[k] = {PickString(u * 3 + k + 1, 928, 4), PickDouble(u * 3 + k, 929)};
      std::optional<std::int32_t> to;
      if (u % 2)
         to = PickInt<std::int32_t>(u, 930);
      *tupn = {to, tv};
      at->store(PickInt<std::int32_t>(u, 931));
      *vf = PickVecFloat(u, 932, 6);
      *f = PickFloat(u, 933);
      *d32p = PickDouble(u, 934);
      Rng rd32(u, 935);
      *d32a = RandomDouble(rd32, -20, 20);
      *f16p = PickFloat(u, 936);
      *ftrp = PickFloat(u, 937);
      *fqp = InRange(u, 938, -1.f, 1.f);
      *d16p = PickDouble(u, 939);
      *dtrp = PickDouble(u, 940);
      *dqp = static_cast<double>(InRange(u, 941, -100.f, 100.f));
      *vhp = PickVecFloat(u, 942, 4);
      writer->Fill();
   }
}

} // namespace rntuple_interop_gen
