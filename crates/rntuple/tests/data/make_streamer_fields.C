// Regenerates streamer_fields.root with ROOT 6.40: `root -l -b -q make_streamer_fields.C`.
// RNTuple "t", 3 entries: p4 (TLorentzVector) and vp4 (std::vector<TLorentzVector>), both
// streamer fields (RStreamerField; ROOT cannot store TLorentzVector natively).
#include <ROOT/RField.hxx>
#include <ROOT/RNTupleModel.hxx>
#include <ROOT/RNTupleWriter.hxx>
#include <TLorentzVector.h>

void make_streamer_fields()
{
   auto model = ROOT::RNTupleModel::Create();
   model->AddField(std::make_unique<ROOT::RStreamerField>("p4", "TLorentzVector"));
   model->AddField(std::make_unique<ROOT::RStreamerField>("vp4", "std::vector<TLorentzVector>"));
   auto writer = ROOT::RNTupleWriter::Recreate(std::move(model), "t", "streamer_fields.root");
   auto p4 = writer->GetModel().GetDefaultEntry().GetPtr<TLorentzVector>("p4");
   auto vp4 = writer->GetModel().GetDefaultEntry().GetPtr<std::vector<TLorentzVector>>("vp4");
   for (int i = 0; i < 3; i++) {
      p4->SetPxPyPzE(i, 2 * i, 3 * i, 4 * i + 1);
      vp4->clear();
      for (int j = 0; j < i; j++)
         vp4->push_back(TLorentzVector(j, j + 1, j + 2, j + 10));
      writer->Fill();
   }
}
