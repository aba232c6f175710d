// Join fixtures and ROOT 6.40's RNTupleProcessor as the join oracle, JIT-compiled by
// cling from tests/test_join.py. Writers take the values as vectors; a cluster is
// committed every `cluster_every` entries (0: one cluster). The readers return one value
// per entry of the processor, NaN where the requested field has no value.

#include <ROOT/RNTupleModel.hxx>
#include <ROOT/RNTupleProcessor.hxx>
#include <ROOT/RNTupleWriter.hxx>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace joingen {

template <typename Run, typename Event>
void write_keys(const std::string &path, const std::string &name, const std::vector<Run> &run,
                const std::vector<Event> &event, const std::vector<float> &value, const std::string &value_name,
                int cluster_every)
{
   auto model = ROOT::RNTupleModel::Create();
   auto r = model->MakeField<Run>("run");
   auto e = model->MakeField<Event>("event");
   auto v = model->MakeField<float>(value_name);
   auto writer = ROOT::RNTupleWriter::Recreate(std::move(model), name, path);
   for (std::size_t i = 0; i < run.size(); ++i) {
      *r = run[i];
      *e = event[i];
      *v = value[i];
      writer->Fill();
      if (cluster_every > 0 && (i + 1) % cluster_every == 0)
         writer->CommitCluster();
   }
}

void write_i32(const std::string &path, const std::string &name, const std::vector<std::int32_t> &run,
               const std::vector<std::int32_t> &event, const std::vector<float> &value,
               const std::string &value_name, int cluster_every)
{
   write_keys(path, name, run, event, value, value_name, cluster_every);
}

void write_i64(const std::string &path, const std::string &name, const std::vector<std::int64_t> &run,
               const std::vector<std::int64_t> &event, const std::vector<float> &value,
               const std::string &value_name, int cluster_every)
{
   write_keys(path, name, run, event, value, value_name, cluster_every);
}

void write_u64(const std::string &path, const std::string &name, const std::vector<std::uint64_t> &run,
               const std::vector<std::uint32_t> &event, const std::vector<float> &value,
               const std::string &value_name, int cluster_every)
{
   write_keys(path, name, run, event, value, value_name, cluster_every);
}

void write_float(const std::string &path, const std::string &name, const std::vector<float> &value,
                 const std::string &value_name)
{
   auto model = ROOT::RNTupleModel::Create();
   auto v = model->MakeField<float>(value_name);
   auto writer = ROOT::RNTupleWriter::Recreate(std::move(model), name, path);
   for (float x : value) {
      *v = x;
      writer->Fill();
   }
}

using ROOT::Experimental::RNTupleOpenSpec;
using ROOT::Experimental::RNTupleProcessor;

std::unique_ptr<RNTupleProcessor> side(const std::vector<std::string> &files, const std::string &name)
{
   std::vector<RNTupleOpenSpec> specs;
   for (const auto &f : files)
      specs.emplace_back(name, f);
   if (specs.size() == 1)
      return RNTupleProcessor::Create(specs[0]);
   return RNTupleProcessor::CreateChain(specs);
}

std::vector<double> collect(RNTupleProcessor &proc, const std::vector<std::string> &fields)
{
   std::vector<ROOT::Experimental::RNTupleProcessorOptionalPtr<float>> ptrs;
   for (const auto &f : fields)
      ptrs.push_back(proc.RequestField<float>(f));
   std::vector<double> out;
   for (auto idx : proc) {
      (void)idx;
      for (auto &p : ptrs)
         out.push_back(p.HasValue() ? double(*p.GetPtr()) : NAN);
   }
   return out;
}

// join(primary, aux on keys): per primary entry, the values of `fields` in turn.
std::vector<double> join(const std::vector<std::string> &primary, const std::string &primary_name,
                         const std::vector<std::string> &aux, const std::string &aux_name,
                         const std::vector<std::string> &keys, const std::vector<std::string> &fields)
{
   auto proc = RNTupleProcessor::CreateJoin(side(primary, primary_name), side(aux, aux_name), keys);
   return collect(*proc, fields);
}

// join(join(primary, aux on keys), aux2 on keys2).
std::vector<double> join2(const std::vector<std::string> &primary, const std::string &primary_name,
                          const std::vector<std::string> &aux, const std::string &aux_name,
                          const std::vector<std::string> &keys, const std::vector<std::string> &aux2,
                          const std::string &aux2_name, const std::vector<std::string> &keys2,
                          const std::vector<std::string> &fields)
{
   auto inner = RNTupleProcessor::CreateJoin(side(primary, primary_name), side(aux, aux_name), keys);
   auto proc = RNTupleProcessor::CreateJoin(std::move(inner), side(aux2, aux2_name), keys2);
   return collect(*proc, fields);
}

} // namespace joingen
