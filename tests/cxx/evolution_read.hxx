// ROOT 6.40's reading of the schema-evolution oracle's files (tests/evolution_oracle.py), run in
// a process that loaded the version-2 classes (evolution_classes_v2.hxx).  Declared after
// tests/cxx/rootdump.hxx, whose JSON helpers it uses.
//
// A value renders as plain JSON: integers (char, std::byte, enums too) as numbers, bool as
// true/false, float/double as C99 hex strings ("%a"), std::string as a string, collections,
// arrays, pairs and tuples as lists, maps and multimaps as lists of [key, value], optional and
// unique_ptr as null or the value, variants as the active value, atomics as the value, bitsets as
// "0101..." (most significant bit first), classes as objects of their members (bases ":_0", ...),
// streamer fields as {"bytes": the bytes TClass::Streamer writes, "object": the object's members}.
#include <ROOT/RField.hxx>
#include <ROOT/RNTupleModel.hxx>
#include <ROOT/RNTupleReader.hxx>
#include <ROOT/RNTupleView.hxx>

#include <TBufferFile.h>
#include <TClass.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>

namespace evolution_oracle {

using rntuple_interop::JsonString;
using rntuple_interop::Split;

void RenderValue(std::string &out, const ROOT::RFieldBase &f, const void *p)
{
   const std::string &t = f.GetTypeName();
   if (t == "bool") { out += *static_cast<const bool *>(p) ? "true" : "false"; return; }
   if (rntuple_interop::RenderCommon(out, f, p, RenderValue))
      return;
   if (dynamic_cast<const ROOT::RStreamerField *>(&f)) {
      // {"bytes": what TClass::Streamer writes (RStreamerField's storage), "object": the
      // object's members, rendered through a class field of the same type}.
      out += "{\"bytes\":";
      rntuple_interop::RenderStreamedBytes(out, t, p, "evolution_oracle");
      out += ",\"object\":";
      static std::map<std::string, std::unique_ptr<ROOT::RFieldBase>> classFields;
      auto &classField = classFields[t];
      if (!classField)
         classField = ROOT::RFieldBase::Create("object", t).Unwrap();
      if (!dynamic_cast<const ROOT::RClassField *>(classField.get()))
         throw std::runtime_error("evolution_oracle: no class field for streamer field type '" + t + "'");
      RenderValue(out, *classField, p);
      out += '}';
      return;
   }
   if (dynamic_cast<const ROOT::RRecordField *>(&f) && !dynamic_cast<const ROOT::RPairField *>(&f) &&
       !dynamic_cast<const ROOT::RTupleField *>(&f)) {
      // A record that is no pair or tuple: by member name (ROOT's untyped records).
      rntuple_interop::RenderMembers(out, f, p, RenderValue);
      return;
   }
   if (dynamic_cast<const ROOT::RClassField *>(&f)) {
      rntuple_interop::RenderMembers(out, f, p, RenderValue);
      return;
   }
   if (dynamic_cast<const ROOT::RArrayAsRVecField *>(&f)) {
      // Its SplitValue fails in 6.40 ("type mismatch ... got std::uint8_t"): walk the RVec
      // (begin pointer, then the 32-bit size) with the item field instead.
      const auto &item = *f.GetConstSubfields().at(0);
      const auto *begin = *static_cast<const unsigned char *const *>(p);
      std::int32_t size = 0;
      std::memcpy(&size, static_cast<const unsigned char *>(p) + sizeof(void *), sizeof(size));
      out += '[';
      for (std::int32_t k = 0; k < size; ++k) {
         if (k)
            out += ',';
         RenderValue(out, item, begin + static_cast<std::size_t>(k) * item.GetValueSize());
      }
      out += ']';
      return;
   }
   // Maps are collections of pairs: lists of [key, value] (duplicates of a multimap kept).
   if (dynamic_cast<const ROOT::RPairField *>(&f) || dynamic_cast<const ROOT::RTupleField *>(&f) ||
       dynamic_cast<const ROOT::RVectorField *>(&f) || dynamic_cast<const ROOT::RRVecField *>(&f) ||
       dynamic_cast<const ROOT::RArrayField *>(&f) || dynamic_cast<const ROOT::RProxiedCollectionField *>(&f) ||
       dynamic_cast<const ROOT::RField<std::vector<bool>> *>(&f) || dynamic_cast<const ROOT::RArrayAsVectorField *>(&f)) {
      rntuple_interop::RenderItems(out, f, p, RenderValue);
      return;
   }
   throw std::runtime_error("evolution_oracle: cannot render type '" + t + "' (field '" + f.GetFieldName() + "')");
}

/// An exception's message without ROOT's "At:" stack part, as one line.
inline std::string Message(const std::exception &e)
{
   std::string text = e.what();
   const auto at = text.find("\nAt:");
   if (at != std::string::npos)
      text.resize(at);
   std::string out;
   bool space = false;
   for (char c : text) {
      if (c == '\n' || c == '\t' || c == ' ') {
         space = !out.empty();
         continue;
      }
      if (space)
         out += ' ';
      space = false;
      out += c;
   }
   return out;
}

/// {"opened": false, "error": message}: ROOT refused to open the field, with exception `e`.
inline std::string NotOpened(const std::exception &e)
{
   std::string out = "{\"opened\":false,\"error\":";
   JsonString(out, Message(e));
   return out + "}";
}

/// {"opened": true, "entries": [...]}: for each of `n` entries, {"value": V} where `read(i, V)` renders entry i
/// into V, or {"error": message} where it throws.
template <typename Read>
std::string Entries(std::uint64_t n, Read read)
{
   std::string out = "{\"opened\":true,\"entries\":[";
   for (std::uint64_t i = 0; i < n; ++i) {
      if (i)
         out += ',';
      std::string value;
      try {
         read(i, value);
         out += "{\"value\":" + value + "}";
      } catch (const std::exception &e) {
         out += "{\"error\":";
         JsonString(out, Message(e));
         out += '}';
      }
   }
   return out + "]}";
}

/// ROOT's path V: `reader->GetView(fieldPath, nullptr, typeName)` (field substitutions
/// allowed), then `view(i)` for every entry of the field's range.  JSON:
/// {"opened": true, "entries": [{"value": V} | {"error": message}, ...]} or
/// {"opened": false, "error": message} when ROOT refuses the type.
std::string ReadView(const std::string &path, const std::string &ntuple, const std::string &fieldPath,
                     const std::string &typeName)
{
   auto reader = ROOT::RNTupleReader::Open(ntuple, path);
   std::unique_ptr<ROOT::RNTupleView<void>> view;
   try {
      view = std::make_unique<ROOT::RNTupleView<void>>(reader->GetView(fieldPath, nullptr, typeName));
   } catch (const std::exception &e) {
      return NotOpened(e);
   }
   view->EmplaceNew();
   return Entries(reader->GetNEntries(), [&](std::uint64_t i, std::string &value) {
      (*view)(i);
      RenderValue(value, view->GetField(), view->GetValue().GetPtr<void>().get());
   });
}

/// ROOT's path M: a model of one field `fieldName` of `typeName`, `RNTupleReader::Open(model, ...)`,
/// then `LoadEntry` for every entry.  JSON as ReadView.  (A field the file lacks aborts ROOT 6.40.)
std::string ReadModel(const std::string &path, const std::string &ntuple, const std::string &fieldName,
                      const std::string &typeName)
{
   std::unique_ptr<ROOT::RNTupleReader> reader;
   try {
      auto model = ROOT::RNTupleModel::Create();
      model->AddField(ROOT::RFieldBase::Create(fieldName, typeName).Unwrap());
      reader = ROOT::RNTupleReader::Open(std::move(model), ntuple, path);
   } catch (const std::exception &e) {
      return NotOpened(e);
   }
   auto entry = reader->GetModel().CreateEntry();
   return Entries(reader->GetNEntries(), [&](std::uint64_t i, std::string &value) {
      reader->LoadEntry(i, *entry);
      for (auto &v : *entry)
         RenderValue(value, v.GetField(), v.GetPtr<void>().get());
   });
}

/// The on-disk type name of (sub)field `fieldPath`, as ROOT's descriptor spells it.
std::string OnDiskType(const std::string &path, const std::string &ntuple, const std::string &fieldPath)
{
   auto reader = ROOT::RNTupleReader::Open(ntuple, path);
   const auto &desc = reader->GetDescriptor();
   const auto id = desc.FindFieldId(fieldPath);
   if (id == ROOT::kInvalidDescriptorId)
      return "";
   return desc.GetFieldDescriptor(id).GetTypeName();
}

/// Where every page of the RNTuple is: a JSON list of [offset, bytes on storage] (a copy of
/// the file with these bytes overwritten shows whether a reader touched any page).
std::string PageLocations(const std::string &path, const std::string &ntuple)
{
   auto reader = ROOT::RNTupleReader::Open(ntuple, path);
   const auto &desc = reader->GetDescriptor();
   std::string out = "[";
   bool first = true;
   for (const auto &cluster : desc.GetClusterIterable()) {
      for (const auto &column : desc.GetColumnIterable()) {
         const auto id = column.GetPhysicalId();
         if (column.IsAliasColumn() || !cluster.ContainsColumn(id))
            continue;
         for (const auto &info : cluster.GetPageRange(id).GetPageInfos()) {
            const auto &locator = info.GetLocator();
            if (locator.GetType() != ROOT::RNTupleLocator::kTypeFile)
               continue;
            if (!first)
               out += ',';
            first = false;
            out += "[" + std::to_string(locator.GetPosition<std::uint64_t>()) + "," +
                   std::to_string(locator.GetNBytesOnStorage()) + "]";
         }
      }
   }
   return out + "]";
}

} // namespace evolution_oracle
