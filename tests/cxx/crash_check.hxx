// ROOT's side of tests/test_crash_recovery.py: reads an RNTuple written by
// tests/crash_writer.py (or copied from one) and checks every value against the
// functions of the entry number that the writer used.
#ifndef RNTUPLE_CRASH_CHECK_HXX
#define RNTUPLE_CRASH_CHECK_HXX
#include <ROOT/RNTupleModel.hxx>
#include <ROOT/RNTupleReader.hxx>
#include <ROOT/RNTupleView.hxx>
#include <ROOT/RNTupleWriter.hxx>

#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace rntuple_crash_check {

// "ENTRIES MISMATCHES FIRST_MISMATCH" (FIRST_MISMATCH -1 if none).
inline std::string Check(const std::string &path)
{
   auto reader = ROOT::RNTupleReader::Open("Events", path);
   auto vi = reader->GetView<std::int64_t>("i");
   auto vx = reader->GetView<double>("x");
   auto vv = reader->GetView<std::vector<float>>("v");
   auto vn = reader->GetView<std::int32_t>("n");
   std::uint64_t bad = 0;
   long long first = -1;
   for (auto e : reader->GetEntryRange()) {
      const auto i = static_cast<std::int64_t>(e);
      const std::uint64_t h = static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull; // wraps
      const double x = static_cast<double>(h >> 11) * 0x1p-53;
      bool ok = vi(e) == i && vx(e) == x && vn(e) == static_cast<std::int32_t>(h >> 40);
      const auto &v = vv(e);
      ok = ok && v.size() == static_cast<std::size_t>(i % 5);
      for (std::size_t k = 0; ok && k < v.size(); ++k)
         ok = v[k] == static_cast<float>(x + static_cast<double>(k));
      if (!ok) {
         ++bad;
         if (first < 0)
            first = static_cast<long long>(e);
      }
   }
   std::ostringstream out;
   out << reader->GetNEntries() << " " << bad << " " << first;
   return out.str();
}

// The cluster groups as "PAGE_LIST_END:ENTRY_END" pairs: the byte after each group's
// page list, and the entry after its last one.
inline std::string Groups(const std::string &path)
{
   auto reader = ROOT::RNTupleReader::Open("Events", path);
   const auto &desc = reader->GetDescriptor();
   std::ostringstream out;
   for (const auto &g : desc.GetClusterGroupIterable()) {
      const auto &loc = g.GetPageListLocator();
      out << loc.GetPosition<std::uint64_t>() + loc.GetNBytesOnStorage() << ":"
          << g.GetMinEntry() + g.GetEntrySpan() << " ";
   }
   return out.str();
}

// Writes ENTRIES entries of tests/crash_writer.py's values with ROOT's own writer,
// committing a cluster (and its cluster group) every CLUSTER entries.
inline void Write(const std::string &path, std::uint64_t entries, std::uint64_t cluster)
{
   auto model = ROOT::RNTupleModel::Create();
   auto fi = model->MakeField<std::int64_t>("i");
   auto fx = model->MakeField<double>("x");
   auto fv = model->MakeField<std::vector<float>>("v");
   auto fn = model->MakeField<std::int32_t>("n");
   auto writer = ROOT::RNTupleWriter::Recreate(std::move(model), "Events", path);
   for (std::uint64_t e = 0; e < entries; ++e) {
      const auto i = static_cast<std::int64_t>(e);
      const std::uint64_t h = static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull;
      *fi = i;
      *fx = static_cast<double>(h >> 11) * 0x1p-53;
      fv->clear();
      for (std::int64_t k = 0; k < i % 5; ++k)
         fv->push_back(static_cast<float>(*fx + static_cast<double>(k)));
      *fn = static_cast<std::int32_t>(h >> 40);
      writer->Fill();
      if ((e + 1) % cluster == 0)
         writer->CommitCluster(true);
   }
}

} // namespace rntuple_crash_check
#endif
