// The ROOT side of the TTree -> RNTuple comparisons.  Declared into cling by tests/ttree_oracle.py.
//
// - Render(out, value): a value as ROOT reads it (through RDataFrame, from a TTree or an RNTuple) as JSON:
//   integers as numbers (char / signed char / unsigned char too), bool as true/false, float and double as C99
//   hex strings ("%a"), strings as strings, vectors / RVecs / arrays / collections as lists, classes as objects
//   of their persistent data members in declaration order (base classes' members first, TObject's omitted),
//   walked with TClass / TDataMember / the collection proxy.  TTree and RNTuple render the same way because
//   RDataFrame hands both the same C++ types (up to typedefs and RVec vs std::vector).
// - SchemaJson(path, name): an RNTuple's schema from ROOT's descriptor.
#include <ROOT/RColumnElementBase.hxx>
#include <ROOT/RNTupleDescriptor.hxx>
#include <ROOT/RNTupleReader.hxx>
#include <ROOT/RNTupleSerialize.hxx>
#include <ROOT/RNTupleTypes.hxx>
#include <ROOT/RVec.hxx>

#include <TBaseClass.h>
#include <TBranch.h>
#include <TBranchElement.h>
#include <TFile.h>
#include <TLeaf.h>
#include <TTree.h>
#include <TClass.h>
#include <TDataMember.h>
#include <TDataType.h>
#include <TList.h>
#include <TObject.h>
#include <TClonesArray.h>
#include <TROOT.h>
#include <TString.h>
#include <TVirtualCollectionProxy.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <vector>

namespace ttree_oracle {

// JSON strings and hex floats as tests/cxx/rootdump.hxx writes them (declared first).
using rntuple_interop::HexFloat;
using rntuple_interop::JsonString;

inline void JsonString(std::string &out, const char *s, std::size_t n)
{
   rntuple_interop::JsonString(out, std::string(s, n));
}

/// A fundamental value at `p` of ROOT data type `t`.
inline void RenderBasic(std::string &out, const void *p, int t)
{
   switch (t) {
   case kChar_t: out += std::to_string(static_cast<int>(*static_cast<const Char_t *>(p))); return;
   case kUChar_t: out += std::to_string(static_cast<int>(*static_cast<const UChar_t *>(p))); return;
   case kShort_t: out += std::to_string(*static_cast<const Short_t *>(p)); return;
   case kUShort_t: out += std::to_string(*static_cast<const UShort_t *>(p)); return;
   case kInt_t: out += std::to_string(*static_cast<const Int_t *>(p)); return;
   case kUInt_t: out += std::to_string(*static_cast<const UInt_t *>(p)); return;
   case kLong_t: out += std::to_string(*static_cast<const Long_t *>(p)); return;
   case kULong_t: out += std::to_string(*static_cast<const ULong_t *>(p)); return;
   case kLong64_t: out += std::to_string(*static_cast<const Long64_t *>(p)); return;
   case kULong64_t: out += std::to_string(*static_cast<const ULong64_t *>(p)); return;
   case kBool_t: out += (*static_cast<const bool *>(p) ? "true" : "false"); return;
   case kFloat_t:
   case kFloat16_t: HexFloat(out, *static_cast<const float *>(p)); return;
   case kDouble_t:
   case kDouble32_t: HexFloat(out, *static_cast<const double *>(p)); return;
   default: throw std::runtime_error("ttree_oracle: unsupported data type " + std::to_string(t));
   }
}

void RenderObject(std::string &out, const void *p, TClass *cl);

/// The members of class `cl` of the object at `p`, as `"name":value` pairs (no braces), bases first.
inline void RenderMembers(std::string &out, const char *p, TClass *cl, bool &first)
{
   for (auto *base : TRangeDynCast<TBaseClass>(cl->GetListOfBases())) {
      TClass *bcl = base->GetClassPointer();
      if (!bcl)
         continue;
      if (bcl == TObject::Class()) {
         // Its persistent members; fBits without kIsOnHeap and kNotDeleted (how this copy was allocated).
         const auto *obj = reinterpret_cast<const TObject *>(p + base->GetDelta());
         if (!first)
            out += ',';
         first = false;
         out += "\"fUniqueID\":" + std::to_string(obj->GetUniqueID());
         out += ",\"fBits\":" + std::to_string(obj->TestBits(~UInt_t(TObject::kIsOnHeap | TObject::kNotDeleted)));
         continue;
      }
      RenderMembers(out, p + base->GetDelta(), bcl, first);
   }
   for (auto *dm : TRangeDynCast<TDataMember>(cl->GetListOfDataMembers())) {
      if ((dm->Property() & kIsStatic) || !dm->IsPersistent())
         continue;
      if (!first)
         out += ',';
      first = false;
      JsonString(out, dm->GetName());
      out += ':';
      const char *addr = p + dm->GetOffset();
      if (dm->IsaPointer()) {
         // A counted C array (`T *x; //[n]`): its n values; other pointers are not compared.
         const char *countName = dm->GetArrayIndex();
         TDataMember *countMember = countName && *countName ? cl->GetDataMember(countName) : nullptr;
         if (!countMember || !dm->IsBasic()) {
            out += "null";
            continue;
         }
         const Int_t n = *reinterpret_cast<const Int_t *>(p + countMember->GetOffset());
         const char *values = *reinterpret_cast<const char *const *>(addr);
         const int type = dm->GetDataType()->GetType();
         out += '[';
         for (Int_t k = 0; values && k < n; ++k) {
            if (k)
               out += ',';
            RenderBasic(out, values + k * dm->GetDataType()->Size(), type);
         }
         out += ']';
         continue;
      }
      std::size_t n = 1;
      for (int d = 0; d < dm->GetArrayDim(); ++d)
         n *= dm->GetMaxIndex(d);
      const bool isArray = dm->GetArrayDim() > 0;
      TClass *mcl = nullptr;
      int basicType = -1;
      std::size_t size = dm->GetUnitSize();
      if (dm->IsBasic() || dm->IsEnum()) {
         basicType = dm->IsEnum() ? kInt_t : dm->GetDataType()->GetType();
      } else {
         mcl = TClass::GetClass(dm->GetTypeName());
         if (!mcl)
            throw std::runtime_error(std::string("ttree_oracle: no TClass for member type ") + dm->GetTypeName());
         size = mcl->Size();
      }
      if (isArray)
         out += '[';
      for (std::size_t k = 0; k < n; ++k) {
         if (k)
            out += ',';
         if (mcl)
            RenderObject(out, addr + k * size, mcl);
         else
            RenderBasic(out, addr + k * size, basicType);
      }
      if (isArray)
         out += ']';
   }
}

/// An object of class `cl` at `p`: strings, collections (through the collection proxy) and classes.
void RenderObject(std::string &out, const void *p, TClass *cl)
{
   const std::string name = cl->GetName();
   if (name == "string" || name == "std::string") {
      JsonString(out, *static_cast<const std::string *>(p));
      return;
   }
   if (cl == TString::Class()) {
      const auto *s = static_cast<const TString *>(p);
      JsonString(out, s->Data(), s->Length());
      return;
   }
   if (cl->InheritsFrom(TClonesArray::Class())) {
      // A TClonesArray: the list of its objects.
      const auto *ca = static_cast<const TClonesArray *>(p);
      out += '[';
      for (Int_t k = 0; k < ca->GetEntriesFast(); ++k) {
         if (k)
            out += ',';
         const TObject *item = ca->UncheckedAt(k);
         RenderObject(out, item, item->IsA());
      }
      out += ']';
      return;
   }
   if (auto *proxy = cl->GetCollectionProxy()) {
      TVirtualCollectionProxy::TPushPop guard(proxy, const_cast<void *>(p));
      const UInt_t n = proxy->Size();
      TClass *vcl = proxy->GetValueClass();
      const int vtype = proxy->GetType();
      out += '[';
      for (UInt_t k = 0; k < n; ++k) {
         if (k)
            out += ',';
         const void *item = proxy->At(k);
         if (vcl)
            RenderObject(out, item, vcl);
         else
            RenderBasic(out, item, vtype);
      }
      out += ']';
      return;
   }
   out += '{';
   bool first = true;
   RenderMembers(out, static_cast<const char *>(p), cl, first);
   out += '}';
}

template <typename T, typename = void>
struct IsIterable : std::false_type {};
template <typename T>
struct IsIterable<T, std::void_t<decltype(std::declval<const T &>().begin()), typename T::value_type>>
   : std::true_type {};

template <typename T>
struct IsCardinality : std::false_type {};
template <typename T>
struct IsCardinality<ROOT::RNTupleCardinality<T>> : std::true_type {};

/// A value of C++ type T as RDataFrame hands it over.
template <typename T>
void Render(std::string &out, const T &v)
{
   if constexpr (std::is_same_v<T, bool>) {
      out += v ? "true" : "false";
   } else if constexpr (std::is_same_v<T, char> || std::is_same_v<T, signed char> ||
                        std::is_same_v<T, unsigned char>) {
      out += std::to_string(static_cast<int>(v));
   } else if constexpr (std::is_integral_v<T>) {
      out += std::to_string(v);
   } else if constexpr (std::is_floating_point_v<T>) {
      HexFloat(out, static_cast<double>(v));
   } else if constexpr (std::is_same_v<T, std::string>) {
      JsonString(out, v);
   } else if constexpr (std::is_same_v<T, TString>) {
      JsonString(out, v.Data(), v.Length());
   } else if constexpr (IsCardinality<T>::value) {
      out += std::to_string(static_cast<std::uint64_t>(v));
   } else if constexpr (IsIterable<T>::value) {
      out += '[';
      bool first = true;
      for (auto it = v.begin(); it != v.end(); ++it) {
         if (!first)
            out += ',';
         first = false;
         const typename T::value_type item = *it; // (std::vector<bool>'s proxy reference -> bool)
         Render(out, item);
      }
      out += ']';
   } else {
      TClass *cl = TClass::GetClass(typeid(T));
      if (!cl)
         throw std::runtime_error(std::string("ttree_oracle: no TClass for ") + typeid(T).name());
      RenderObject(out, &v, cl);
   }
}

/// A C string read by RDataFrame from a /C leaf (an RVec of its characters, NUL terminated) as a JSON string.
template <typename T>
void RenderCString(std::string &out, const T &chars)
{
   std::size_t n = 0;
   while (n < chars.size() && chars[n] != 0)
      ++n;
   JsonString(out, reinterpret_cast<const char *>(chars.data()), n);
}

/// Entries [start, stop) of a single-leaf array branch of a TTree read with TBranch::GetEntry (for leaf-count
/// arrays RDataFrame cannot read: a UChar_t / Char_t count leaf makes TTreeReader fail and crash), as a JSON list
/// of lists.
std::string LeafArrayJson(const std::string &path, const std::string &treeName, const std::string &branchName,
                          long long start, long long stop)
{
   std::unique_ptr<TFile> f(TFile::Open(path.c_str()));
   if (!f || f->IsZombie())
      throw std::runtime_error("cannot open " + path);
   auto *tree = f->Get<TTree>(treeName.c_str());
   if (!tree)
      throw std::runtime_error("no TTree " + treeName + " in " + path);
   auto *branch = tree->GetBranch(branchName.c_str());
   if (!branch)
      throw std::runtime_error("no branch " + branchName);
   auto *leaf = static_cast<TLeaf *>(branch->GetListOfLeaves()->At(0));
   auto *countBranch = leaf->GetLeafCount() ? leaf->GetLeafCount()->GetBranch() : nullptr;
   TDataType *dt = gROOT->GetType(leaf->GetTypeName());
   if (!dt)
      throw std::runtime_error(std::string("unknown leaf type ") + leaf->GetTypeName());
   const int type = dt->GetType();
   const int size = leaf->GetLenType();
   const long long n = tree->GetEntries();
   if (stop < 0 || stop > n)
      stop = n;
   std::string out = "[";
   for (long long i = start; i < stop; ++i) {
      if (countBranch)
         countBranch->GetEntry(i);
      branch->GetEntry(i);
      if (i != start)
         out += ',';
      out += '[';
      const char *p = static_cast<const char *>(leaf->GetValuePointer());
      for (int k = 0; k < leaf->GetLen(); ++k) {
         if (k)
            out += ',';
         RenderBasic(out, p + k * size, type);
      }
      out += ']';
   }
   out += ']';
   return out;
}

/// Entries [start, stop) of a top-level streamer field (which RDataFrame does not offer as a column) read with
/// RNTupleReader::LoadEntry, each object rendered through its TClass, as a JSON list.
std::string StreamerFieldJson(const std::string &path, const std::string &ntupleName, const std::string &fieldName,
                              long long start, long long stop)
{
   auto reader = ROOT::RNTupleReader::Open(ntupleName, path);
   const auto &desc = reader->GetDescriptor();
   const auto &fd = desc.GetFieldDescriptor(desc.FindFieldId(fieldName));
   TClass *cl = TClass::GetClass(fd.GetTypeName().c_str());
   if (!cl)
      throw std::runtime_error("ttree_oracle: no TClass for streamer field type " + fd.GetTypeName());
   auto value = reader->GetModel().GetDefaultEntry().GetPtr<void>(fieldName);
   const long long n = reader->GetNEntries();
   if (stop < 0 || stop > n)
      stop = n;
   std::string out = "[";
   for (long long i = start; i < stop; ++i) {
      reader->LoadEntry(i);
      if (i != start)
         out += ',';
      RenderObject(out, value.get(), cl);
   }
   out += ']';
   return out;
}

/// ROOT's reading of TTree object branch `branchName` (a TBranchElement of a class or an STL
/// collection of classes, split or not) through `TBranch::GetEntry` into an object of its class,
/// rendered as a streamer field's objects are: for the branches RDataFrame cannot read (a split
/// collection of a class with collection members: TTreeReader throws std::bad_array_new_length).
std::string TTreeObjectJson(const std::string &path, const std::string &treeName, const std::string &branchName,
                            long long start, long long stop)
{
   std::unique_ptr<TFile> f(TFile::Open(path.c_str()));
   if (!f || f->IsZombie())
      throw std::runtime_error("ttree_oracle: cannot open " + path);
   auto *t = f->Get<TTree>(treeName.c_str());
   if (!t)
      throw std::runtime_error("ttree_oracle: no TTree " + treeName);
   auto *b = dynamic_cast<TBranchElement *>(t->GetBranch(branchName.c_str()));
   if (!b)
      throw std::runtime_error("ttree_oracle: no TBranchElement " + branchName);
   TClass *cl = TClass::GetClass(b->GetClassName());
   if (!cl)
      throw std::runtime_error(std::string("ttree_oracle: no TClass for ") + b->GetClassName());
   void *obj = cl->New();
   b->SetAddress(&obj);
   const long long n = t->GetEntries();
   if (stop < 0 || stop > n)
      stop = n;
   std::string out = "[";
   for (long long i = start; i < stop; ++i) {
      if (b->GetEntry(i) < 0)
         throw std::runtime_error("ttree_oracle: cannot read entry " + std::to_string(i) + " of " + branchName);
      if (i != start)
         out += ',';
      RenderObject(out, obj, cl);
   }
   out += ']';
   b->ResetAddress();
   cl->Destructor(obj);
   return out;
}

inline const char *RoleName(ROOT::ENTupleStructure s)
{
   switch (s) {
   case ROOT::ENTupleStructure::kPlain: return "Plain";
   case ROOT::ENTupleStructure::kCollection: return "Collection";
   case ROOT::ENTupleStructure::kRecord: return "Record";
   case ROOT::ENTupleStructure::kVariant: return "Variant";
   case ROOT::ENTupleStructure::kStreamer: return "Streamer";
   default: return "Unknown";
   }
}

inline void FieldJson(std::string &out, const ROOT::RNTupleDescriptor &desc, const ROOT::RFieldDescriptor &fd)
{
   out += '{';
   rntuple_interop::FieldNamesJson(out, fd);
   out += ",\"role\":\"";
   out += RoleName(fd.GetStructure());
   out += "\",\"type_version\":" + std::to_string(fd.GetTypeVersion());
   out += ",\"field_version\":" + std::to_string(fd.GetFieldVersion());
   out += ",\"type_checksum\":";
   out += fd.GetTypeChecksum() ? std::to_string(*fd.GetTypeChecksum()) : std::string("null");
   out += ",\"repetitions\":" + std::to_string(fd.GetNRepetitions());
   out += ",\"projected\":";
   out += fd.IsProjectedField() ? "true" : "false";
   out += ",\"projection_source\":";
   if (fd.IsProjectedField())
      JsonString(out, desc.GetQualifiedFieldName(fd.GetProjectionSourceId()));
   else
      out += "null";
   out += ",\"columns\":[";
   bool first = true;
   for (const auto &cd : desc.GetColumnIterable(fd)) {
      if (!first)
         out += ',';
      first = false;
      out += "{\"type\":";
      JsonString(out, ROOT::Internal::RColumnElementBase::GetColumnTypeName(cd.GetType()));
      out += ",\"bits\":" + std::to_string(cd.GetBitsOnStorage());
      out += ",\"range\":";
      rntuple_interop::ValueRangeJson(out, cd);
      out += ",\"representation\":" + std::to_string(cd.GetRepresentationIndex());
      out += ",\"index\":" + std::to_string(cd.GetIndex());
      out += '}';
   }
   out += "],\"subfields\":[";
   first = true;
   for (const auto &child : desc.GetFieldIterable(fd)) {
      if (!first)
         out += ',';
      first = false;
      FieldJson(out, desc, child);
   }
   out += "]}";
}

/// The schema of RNTuple `name` in `path`: {"fields": [...top-level fields in order, recursively...]}.
/// The classes of the streamer infos an RNTuple's extra type information carries (ROOT's own parsing of them),
/// as a JSON list of names.
std::string StreamerInfosJson(const std::string &path, const std::string &name)
{
   auto reader = ROOT::RNTupleReader::Open(name, path);
   std::string out = "[";
   bool first = true;
   for (const auto &x : reader->GetDescriptor().GetExtraTypeInfoIterable()) {
      if (x.GetContentId() != ROOT::EExtraTypeInfoIds::kStreamerInfo)
         continue;
      auto infos = ROOT::Internal::RNTupleSerializer::DeserializeStreamerInfos(x.GetContent()).Unwrap();
      for (const auto &[number, info] : infos) {
         if (!first)
            out += ',';
         first = false;
         JsonString(out, info->GetName());
      }
   }
   out += ']';
   return out;
}

std::string SchemaJson(const std::string &path, const std::string &name)
{
   auto reader = ROOT::RNTupleReader::Open(name, path);
   const auto &desc = reader->GetDescriptor();
   std::string out = "{\"fields\":[";
   bool first = true;
   for (const auto &fd : desc.GetTopLevelFields()) {
      if (!first)
         out += ",\n";
      first = false;
      FieldJson(out, desc, fd);
   }
   out += "]}\n";
   return out;
}

/// Storage facts of RNTuple `name` in `path`: entries, clusters, cluster groups, entries per cluster (min, max),
/// the compression settings of the pages, the number of pages and their element counts and unzipped sizes
/// (min, max over all pages), and whether pages carry checksums.
std::string StorageJson(const std::string &path, const std::string &name)
{
   auto reader = ROOT::RNTupleReader::Open(name, path);
   const auto &desc = reader->GetDescriptor();
   std::vector<int> compressions;
   std::uint64_t nPages = 0, minElems = ~0ULL, maxElems = 0, minBytes = ~0ULL, maxBytes = 0, maxOnStorage = 0;
   std::uint64_t minCluster = ~0ULL, maxCluster = 0, checksummed = 0;
   for (const auto &cluster : desc.GetClusterIterable()) {
      minCluster = std::min<std::uint64_t>(minCluster, cluster.GetNEntries());
      maxCluster = std::max<std::uint64_t>(maxCluster, cluster.GetNEntries());
      for (const auto &col : desc.GetColumnIterable()) {
         if (col.IsAliasColumn() || !cluster.ContainsColumn(col.GetPhysicalId()))
            continue;
         const auto &range = cluster.GetColumnRange(col.GetPhysicalId());
         if (range.IsSuppressed())
            continue;
         if (auto c = range.GetCompressionSettings()) {
            if (std::find(compressions.begin(), compressions.end(), *c) == compressions.end())
               compressions.push_back(*c);
         }
         const auto elemBits = col.GetBitsOnStorage();
         for (const auto &info : cluster.GetPageRange(col.GetPhysicalId()).GetPageInfos()) {
            ++nPages;
            const std::uint64_t n = info.GetNElements();
            minElems = std::min(minElems, n);
            maxElems = std::max(maxElems, n);
            const std::uint64_t bytes = (n * elemBits + 7) / 8;
            minBytes = std::min(minBytes, bytes);
            maxBytes = std::max(maxBytes, bytes);
            maxOnStorage = std::max<std::uint64_t>(maxOnStorage, info.GetLocator().GetNBytesOnStorage());
            checksummed += info.HasChecksum();
         }
      }
   }
   std::sort(compressions.begin(), compressions.end());
   std::string out = "{\"entries\":" + std::to_string(desc.GetNEntries());
   out += ",\"clusters\":" + std::to_string(desc.GetNClusters());
   out += ",\"cluster_groups\":" + std::to_string(desc.GetNClusterGroups());
   out += ",\"cluster_entries\":[" + std::to_string(minCluster) + "," + std::to_string(maxCluster) + "]";
   out += ",\"compression\":[";
   for (std::size_t k = 0; k < compressions.size(); ++k)
      out += (k ? "," : "") + std::to_string(compressions[k]);
   out += "],\"pages\":" + std::to_string(nPages);
   out += ",\"page_elements\":[" + std::to_string(minElems) + "," + std::to_string(maxElems) + "]";
   out += ",\"page_unzipped_bytes\":[" + std::to_string(minBytes) + "," + std::to_string(maxBytes) + "]";
   out += ",\"max_page_bytes_on_storage\":" + std::to_string(maxOnStorage);
   out += ",\"pages_with_checksum\":" + std::to_string(checksummed);
   out += ",\"header_bytes\":" + std::to_string(desc.GetOnDiskHeaderSize());
   out += ",\"footer_bytes\":" + std::to_string(desc.GetOnDiskFooterSize());
   out += "}\n";
   return out;
}

} // namespace ttree_oracle
