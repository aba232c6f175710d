// ROOT 6.40's RNTupleReader::Show of a range of entries, as text, for tests/test_show.py
// (declared into cling there).
#include <ROOT/RError.hxx>
#include <ROOT/REntry.hxx>
#include <ROOT/RFieldVisitor.hxx>
#include <ROOT/RNTupleDescriptor.hxx>
#include <ROOT/RNTupleModel.hxx>
#include <ROOT/RNTupleReader.hxx>

#include <exception>
#include <memory>
#include <sstream>
#include <string>

namespace rntuple_show {

/// The first line of an exception's message, double quotes made single (it stands inside
/// a quoted string of the output).
inline std::string ErrorText(const std::exception &e)
{
   std::string msg = e.what();
   msg = msg.substr(0, msg.find('\n'));
   for (auto &c : msg) {
      if (c == '"')
         c = '\'';
   }
   return msg;
}

/// What ROOT's `RNTupleReader::Show` prints for entries [start, stop) of RNTuple `name` in
/// `path` (stop < 0: to the end), one entry after the other. Where Show throws for an entry
/// (ROOT 6.40 cannot print a `ROOT::RNTupleCardinality` field: its visitor asks the value
/// for the wrong type), the entry is printed with Show's own loop field by field, a field
/// ROOT cannot print standing as the string `"<ROOT error: MESSAGE>"`, so that the other
/// fields can still be compared.
std::string ShowEntries(const std::string &path, const std::string &name, long long start, long long stop)
{
   // Show's display reader emulates unknown types; so does the field-by-field reader.
   ROOT::RNTupleDescriptor::RCreateModelOptions opts;
   opts.SetEmulateUnknownTypes(true);
   auto reader = ROOT::RNTupleReader::Open(opts, name, path);
   std::unique_ptr<ROOT::RNTupleReader> byField;
   const long long n = static_cast<long long>(reader->GetNEntries());
   if (stop < 0 || stop > n)
      stop = n;
   std::ostringstream out;
   for (long long i = start; i < stop; ++i) {
      std::ostringstream one;
      try {
         reader->Show(i, one);
         out << one.str();
         continue;
      } catch (const std::exception &) {
      }
      if (!byField)
         byField = ROOT::RNTupleReader::Open(opts, name, path);
      byField->LoadEntry(i);
      const auto &entry = byField->GetModel().GetDefaultEntry();
      out << "{";
      bool first = true;
      for (auto value : entry) {
         out << (first ? "\n" : ",\n");
         first = false;
         std::ostringstream field;
         try {
            ROOT::Internal::RPrintValueVisitor visitor(value, field, 1 /* level */);
            value.GetField().AcceptVisitor(visitor);
            out << field.str();
         } catch (const std::exception &e) {
            out << "  \"" << value.GetField().GetFieldName() << "\": \"<ROOT error: " << ErrorText(e) << ">\"";
         }
      }
      out << (first ? "}\n" : "\n}\n");
   }
   return out.str();
}

} // namespace rntuple_show
