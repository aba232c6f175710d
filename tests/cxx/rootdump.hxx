// Renders an RNTuple as ROOT 6.40 reads it, as JSON per
// ../shared/conformance/README.md (beside the repository).  Declared into cling by tests/rootdump.py.
#include <ROOT/RNTupleReader.hxx>
#include <ROOT/RNTupleAttrReading.hxx>
#include <ROOT/RNTupleView.hxx>
#include <ROOT/RColumnElementBase.hxx>
#include <ROOT/RNTupleDescriptor.hxx>
#include <ROOT/RNTupleModel.hxx>
#include <ROOT/REntry.hxx>
#include <ROOT/RField.hxx>

#include <TBufferFile.h>
#include <TClass.h>
#include <TH1.h>
#include <TObjString.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace rntuple_interop {

inline void JsonString(std::string &out, const std::string &s)
{
   out += '"';
   for (unsigned char c : s) {
      switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
         if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof(buf), "\\u%04x", c);
            out += buf;
         } else {
            out += static_cast<char>(c);
         }
      }
   }
   out += '"';
}

inline void HexFloat(std::string &out, double v)
{
   char buf[64];
   std::snprintf(buf, sizeof(buf), "\"%a\"", v);
   out += buf;
}

template <typename T>
inline void Int(std::string &out, const void *p)
{
   T v;
   std::memcpy(&v, p, sizeof(T));
   out += std::to_string(v);
}

inline std::vector<ROOT::RFieldBase::RValue> Split(const ROOT::RFieldBase &f, const void *p)
{
   // Non-owning shared_ptr (aliasing constructor with an empty owner).
   std::shared_ptr<void> alias(std::shared_ptr<void>(), const_cast<void *>(p));
   auto value = const_cast<ROOT::RFieldBase &>(f).BindValue(alias);
   return f.SplitValue(value);
}

inline std::size_t RoundUp(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

/// Renders the value of field `f` at `p` as JSON: this file's Render, or the schema-evolution oracle's RenderValue
/// (tests/cxx/evolution_read.hxx), which share the helpers below.
using Renderer = void (*)(std::string &out, const ROOT::RFieldBase &f, const void *p);

/// The items of the collection, pair or tuple `f` at `p`, as a JSON list of what `render` makes of each.
inline void RenderItems(std::string &out, const ROOT::RFieldBase &f, const void *p, Renderer render)
{
   out += '[';
   bool first = true;
   for (auto &item : Split(f, p)) {
      if (!first)
         out += ',';
      first = false;
      render(out, item.GetField(), item.GetPtr<void>().get());
   }
   out += ']';
}

/// The members of the record or class `f` at `p`, as a JSON object keyed by member name.
inline void RenderMembers(std::string &out, const ROOT::RFieldBase &f, const void *p, Renderer render)
{
   out += '{';
   bool first = true;
   for (auto &m : Split(f, p)) {
      if (!first)
         out += ',';
      first = false;
      JsonString(out, m.GetField().GetFieldName());
      out += ':';
      render(out, m.GetField(), m.GetPtr<void>().get());
   }
   out += '}';
}

/// The bytes TClass::Streamer writes for the object of type `t` at `p` (what RStreamerField stores, cf.
/// RStreamerField::AppendImpl), as a JSON list of numbers; `who` names the caller in errors.
inline void RenderStreamedBytes(std::string &out, const std::string &t, const void *p, const char *who)
{
   TClass *cl = TClass::GetClass(t.c_str());
   if (!cl)
      throw std::runtime_error(std::string(who) + ": no TClass for streamer field type '" + t + "'");
   TBufferFile buf(TBuffer::kWrite);
   cl->Streamer(const_cast<void *>(p), buf);
   out += '[';
   for (Int_t k = 0; k < buf.Length(); ++k) {
      if (k)
         out += ',';
      out += std::to_string(static_cast<unsigned char>(buf.Buffer()[k]));
   }
   out += ']';
}

/// A value that both renderers render alike, by type name or field class: integers (char, std::byte too) as
/// numbers, float and double as C99 hex strings, std::string as a string, bitsets as "0101..." (most significant
/// bit first), variants as the active value (null if none), optionals and unique_ptr as null or the value, enums
/// as their integer, atomics as the value.  False (nothing rendered) for any other field, bool included (the
/// renderers spell it differently).
inline bool RenderCommon(std::string &out, const ROOT::RFieldBase &f, const void *p, Renderer render)
{
   const std::string &t = f.GetTypeName();
   if (t == "char") { out += std::to_string(static_cast<int>(*static_cast<const char *>(p))); return true; }
   if (t == "std::byte") { out += std::to_string(static_cast<int>(*static_cast<const unsigned char *>(p))); return true; }
   if (t == "std::int8_t") { out += std::to_string(static_cast<int>(*static_cast<const std::int8_t *>(p))); return true; }
   if (t == "std::uint8_t") { out += std::to_string(static_cast<int>(*static_cast<const std::uint8_t *>(p))); return true; }
   if (t == "std::int16_t") { Int<std::int16_t>(out, p); return true; }
   if (t == "std::uint16_t") { Int<std::uint16_t>(out, p); return true; }
   if (t == "std::int32_t") { Int<std::int32_t>(out, p); return true; }
   if (t == "std::uint32_t") { Int<std::uint32_t>(out, p); return true; }
   if (t == "std::int64_t") { Int<std::int64_t>(out, p); return true; }
   if (t == "std::uint64_t") { Int<std::uint64_t>(out, p); return true; }
   if (t == "float") { HexFloat(out, static_cast<double>(*static_cast<const float *>(p))); return true; }
   if (t == "double") { HexFloat(out, *static_cast<const double *>(p)); return true; }
   if (t == "std::string") { JsonString(out, *static_cast<const std::string *>(p)); return true; }

   if (auto bf = dynamic_cast<const ROOT::RBitsetField *>(&f)) {
      const std::size_t n = bf->GetN();
      const auto *words = static_cast<const unsigned long *>(p);
      const std::size_t bitsPerWord = sizeof(unsigned long) * 8;
      out += '"';
      for (std::size_t i = n; i-- > 0;)
         out += ((words[i / bitsPerWord] >> (i % bitsPerWord)) & 1UL) ? '1' : '0';
      out += '"';
      return true;
   }
   if (dynamic_cast<const ROOT::RVariantField *>(&f)) {
      // std::variant's index() through the field's own layout: the tag follows the largest
      // alternative, at the alignment of the most aligned one (as RVariantField lays it out).
      auto subs = f.GetConstSubfields();
      std::size_t maxSize = 1, maxAlign = 1;
      for (auto s : subs) {
         maxSize = std::max(maxSize, s->GetValueSize());
         maxAlign = std::max(maxAlign, s->GetAlignment());
      }
      const std::size_t tagOffset = (maxSize < maxAlign) ? maxAlign : RoundUp(maxSize, maxAlign);
      const std::uint8_t tag = static_cast<const unsigned char *>(p)[tagOffset];
      if (tag >= subs.size())
         out += "null";
      else
         render(out, *subs[tag], p);
      return true;
   }
   if (dynamic_cast<const ROOT::RNullableField *>(&f)) {
      auto items = Split(f, p);
      if (items.empty())
         out += "null";
      else
         render(out, items[0].GetField(), items[0].GetPtr<void>().get());
      return true;
   }
   if (dynamic_cast<const ROOT::REnumField *>(&f)) {
      render(out, *f.GetConstSubfields().at(0), p);
      return true;
   }
   if (dynamic_cast<const ROOT::RAtomicField *>(&f)) {
      auto items = Split(f, p);
      render(out, items.at(0).GetField(), items.at(0).GetPtr<void>().get());
      return true;
   }
   return false;
}

void Render(std::string &out, const ROOT::RFieldBase &f, const void *p)
{
   const std::string &t = f.GetTypeName();
   // bool as 1 or 0; cardinality fields as their integer.
   if (t == "bool") { out += (*static_cast<const bool *>(p) ? "1" : "0"); return; }
   if (RenderCommon(out, f, p, Render))
      return;
   if (t == "ROOT::RNTupleCardinality<std::uint32_t>") { Int<std::uint32_t>(out, p); return; }
   if (t == "ROOT::RNTupleCardinality<std::uint64_t>") { Int<std::uint64_t>(out, p); return; }

   if (dynamic_cast<const ROOT::RStreamerField *>(&f)) {
      RenderStreamedBytes(out, t, p, "rootdump");
      return;
   }
   if (dynamic_cast<const ROOT::RMapField *>(&f)) {
      out += '{';
      bool first = true;
      for (auto &kv : Split(f, p)) {
         if (!first)
            out += ',';
         first = false;
         auto members = Split(kv.GetField(), kv.GetPtr<void>().get());
         if (members.size() != 2)
            throw std::runtime_error("map item is not a pair");
         // Keys: a value that renders as a JSON string (std::string, floats in hex) is
         // the key as is; any other value (integers) is keyed by its JSON text.
         std::string key;
         Render(key, members[0].GetField(), members[0].GetPtr<void>().get());
         if (!key.empty() && key.front() == '"')
            out += key;
         else
            JsonString(out, key);
         out += ':';
         Render(out, members[1].GetField(), members[1].GetPtr<void>().get());
      }
      out += '}';
      return;
   }
   if (dynamic_cast<const ROOT::RPairField *>(&f) || dynamic_cast<const ROOT::RTupleField *>(&f)) {
      RenderItems(out, f, p, Render);
      return;
   }
   if (dynamic_cast<const ROOT::RRecordField *>(&f) || dynamic_cast<const ROOT::RClassField *>(&f)) {
      RenderMembers(out, f, p, Render);
      return;
   }
   if (dynamic_cast<const ROOT::RVectorField *>(&f) || dynamic_cast<const ROOT::RRVecField *>(&f) ||
       dynamic_cast<const ROOT::RArrayField *>(&f) || dynamic_cast<const ROOT::RProxiedCollectionField *>(&f) ||
       dynamic_cast<const ROOT::RField<std::vector<bool>> *>(&f) || dynamic_cast<const ROOT::RArrayAsRVecField *>(&f) ||
       dynamic_cast<const ROOT::RArrayAsVectorField *>(&f)) {
      RenderItems(out, f, p, Render);
      return;
   }
   throw std::runtime_error("rootdump: unsupported field type '" + t + "' (field '" + f.GetFieldName() + "')");
}

/// The name, type and alias of field `fd`, as the JSON members "name", "type" and "alias".
inline void FieldNamesJson(std::string &out, const ROOT::RFieldDescriptor &fd)
{
   out += "\"name\":";
   JsonString(out, fd.GetFieldName());
   out += ",\"type\":";
   JsonString(out, fd.GetTypeName());
   out += ",\"alias\":";
   JsonString(out, fd.GetTypeAlias());
}

/// The value range of column `cd` as the JSON list [min, max] (hex floats), or null if it has none.
inline void ValueRangeJson(std::string &out, const ROOT::RColumnDescriptor &cd)
{
   if (auto range = cd.GetValueRange()) {
      out += '[';
      HexFloat(out, range->fMin);
      out += ',';
      HexFloat(out, range->fMax);
      out += ']';
   } else {
      out += "null";
   }
}

/// Deserialize streamed bytes of class `className` (as stored by RStreamerField) with ROOT and summarise the
/// object as JSON: TH1 -> {"name","title","nbins","entries","contents":[hex per bin incl. under/overflow]},
/// TObjString -> {"string"}.
std::string DescribeStreamed(const std::string &className, const std::vector<unsigned char> &bytes)
{
   TH1::AddDirectory(false);
   TClass *cl = TClass::GetClass(className.c_str());
   if (!cl)
      throw std::runtime_error("no TClass for " + className);
   std::vector<char> data(bytes.begin(), bytes.end());
   TBufferFile buf(TBuffer::kRead, static_cast<Int_t>(data.size()), data.data(), false);
   void *obj = cl->New();
   cl->Streamer(obj, buf);
   std::string out = "{";
   if (cl->InheritsFrom(TH1::Class())) {
      auto *h = static_cast<TH1 *>(cl->DynamicCast(TH1::Class(), obj));
      out += "\"name\":";
      JsonString(out, h->GetName());
      out += ",\"title\":";
      JsonString(out, h->GetTitle());
      out += ",\"nbins\":" + std::to_string(h->GetNbinsX()) + ",\"entries\":";
      HexFloat(out, h->GetEntries());
      out += ",\"contents\":[";
      for (int b = 0; b <= h->GetNbinsX() + 1; ++b) {
         if (b)
            out += ',';
         HexFloat(out, h->GetBinContent(b));
      }
      out += ']';
   } else if (cl == TObjString::Class()) {
      out += "\"string\":";
      JsonString(out, static_cast<TObjString *>(obj)->GetString().Data());
   } else {
      cl->Destructor(obj);
      throw std::runtime_error("DescribeStreamed: unsupported class " + className);
   }
   out += ",\"consumed\":" + std::to_string(buf.Length()) + "}";
   cl->Destructor(obj);
   return out;
}

/// Render entries [start, stop) of RNTuple `name` in `path` (stop < 0: up to the end) as a JSON list.
std::string DumpJson(const std::string &path, const std::string &name, long long start = 0, long long stop = -1,
                     bool emulateUnknownTypes = true)
{
   ROOT::RNTupleDescriptor::RCreateModelOptions opts;
   opts.SetEmulateUnknownTypes(emulateUnknownTypes);
   auto reader = ROOT::RNTupleReader::Open(opts, name, path);
   const long long n = static_cast<long long>(reader->GetNEntries());
   if (stop < 0 || stop > n)
      stop = n;
   if (start < 0)
      start = 0;
   auto entry = reader->GetModel().CreateEntry();
   std::string out = "[";
   for (long long i = start; i < stop; ++i) {
      reader->LoadEntry(i, *entry);
      if (i != start)
         out += ",\n";
      out += '{';
      bool first = true;
      for (auto &v : *entry) {
         if (!first)
            out += ',';
         first = false;
         JsonString(out, v.GetField().GetFieldName());
         out += ':';
         Render(out, v.GetField(), v.GetPtr<void>().get());
      }
      out += '}';
   }
   out += "]\n";
   return out;
}

/// The schema of RNTuple `name` in `path` from ROOT's descriptor (no model is built, so this works for types
/// ROOT cannot read yet): a JSON list of every field, depth first, each
/// {"name", "type", "alias", "structure" (ROOT::ENTupleStructure as a number), "repetitions", "projected",
/// "columns": [[type name, representation index, bits on storage, [min, max] or null], ...],
/// "children": [{"name", "type"}, ...]}.
std::string SchemaJson(const std::string &path, const std::string &name)
{
   auto reader = ROOT::RNTupleReader::Open(name, path);
   const auto &desc = reader->GetDescriptor();
   std::string out = "[";
   bool firstField = true;
   std::vector<ROOT::DescriptorId_t> todo{desc.GetFieldZeroId()};
   while (!todo.empty()) {
      const auto id = todo.back();
      todo.pop_back();
      const auto &fd = desc.GetFieldDescriptor(id);
      std::vector<ROOT::DescriptorId_t> children;
      for (const auto &child : desc.GetFieldIterable(fd))
         children.push_back(child.GetId());
      if (id != desc.GetFieldZeroId()) {
         if (!firstField)
            out += ",\n";
         firstField = false;
         out += '{';
         FieldNamesJson(out, fd);
         out += ",\"structure\":" + std::to_string(static_cast<int>(fd.GetStructure()));
         out += ",\"repetitions\":" + std::to_string(fd.GetNRepetitions());
         out += ",\"projected\":" + std::string(fd.IsProjectedField() ? "true" : "false");
         // Columns as [type, representation index, bits on storage, value range or null], in column order.
         out += ",\"columns\":[";
         bool firstColumn = true;
         for (const auto &cd : desc.GetColumnIterable(fd)) {
            if (!firstColumn)
               out += ',';
            firstColumn = false;
            out += '[';
            JsonString(out, ROOT::Internal::RColumnElementBase::GetColumnTypeName(cd.GetType()));
            out += ',' + std::to_string(cd.GetRepresentationIndex()) + ',' + std::to_string(cd.GetBitsOnStorage()) + ',';
            ValueRangeJson(out, cd);
            out += ']';
         }
         out += "],\"children\":[";
         for (std::size_t k = 0; k < children.size(); ++k) {
            const auto &cd = desc.GetFieldDescriptor(children[k]);
            if (k)
               out += ',';
            out += "{\"name\":";
            JsonString(out, cd.GetFieldName());
            out += ",\"type\":";
            JsonString(out, cd.GetTypeName());
            out += '}';
         }
         out += "]}";
      }
      for (auto it = children.rbegin(); it != children.rend(); ++it)
         todo.push_back(*it);
   }
   out += "]\n";
   return out;
}

/// The attribute set `setName` linked to RNTuple `name` in `path`, as ROOT's attribute API reads it: a JSON list
/// in the order RNTupleAttrSetReader::GetAttributes() gives, each {"Value": v, "Range": [first, last]}, where v is
/// the single attribute field's value (an object keyed by field name if there are several) and an empty range
/// renders as null.
std::string DumpAttributesJson(const std::string &path, const std::string &name, const std::string &setName)
{
   auto reader = ROOT::RNTupleReader::Open(name, path);
   auto attrs = reader->OpenAttributeSet(setName);
   auto entry = attrs->CreateEntry();
   std::string out = "[";
   bool first = true;
   for (auto idx : attrs->GetAttributes()) {
      const auto range = attrs->LoadEntry(idx, *entry);
      if (!first)
         out += ",\n";
      first = false;
      std::vector<std::pair<std::string, std::string>> values;
      for (auto &v : *entry) {
         std::string text;
         Render(text, v.GetField(), v.GetPtr<void>().get());
         values.emplace_back(v.GetField().GetFieldName(), text);
      }
      out += "{\"Value\":";
      if (values.size() == 1) {
         out += values[0].second;
      } else {
         out += '{';
         for (std::size_t k = 0; k < values.size(); ++k) {
            if (k)
               out += ',';
            JsonString(out, values[k].first);
            out += ':' + values[k].second;
         }
         out += '}';
      }
      out += ",\"Range\":";
      if (auto fl = range.GetFirstLast())
         out += "[" + std::to_string(fl->first) + "," + std::to_string(fl->second) + "]";
      else
         out += "null";
      out += '}';
   }
   out += "]\n";
   return out;
}

} // namespace rntuple_interop
