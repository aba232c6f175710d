#!/usr/bin/env python3
"""Writes the ROOT ground truth for the schema builder's tests (tests/schema_builder.rs).

For each entry of FIELDS / PROJECTED / the user types below, ROOT 6.40 creates the field
from its type name exactly as a user would (RFieldBase::Create), and writes an RNTuple with
no entries: only its header matters. One file uses ROOT's default compression (zstd, 505),
the other none (0), since ROOT picks different default column types for each.

It also writes schema_builder.fields.tsv, the list of what was asked of ROOT, which the
Rust test reads to ask the same of our builder:
    field<TAB>name<TAB>type as given
    projected<TAB>name<TAB>type<TAB>source path
    class<TAB>type<TAB>member:type;member:type<TAB>base,base<TAB>class version<TAB>checksum
    enum<TAB>type<TAB>underlying type

Usage: make_schema_builder.py OUTPUT_DIR
"""
import os
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))

# User types, declared to Cling (interpreted classes are enough for RNTuple's class fields).
CLASSES = [
    ("SBBase", [("b", "int")], []),
    ("SBUser", [("x", "float"), ("v", "std::vector<int>"), ("s", "std::string")], ["SBBase"]),
    ("SBInner", [("d", "double"), ("c", "SBColor")], []),
    ("SBOuter", [("inner", "SBInner"), ("many", "std::vector<SBInner>"), ("arr", "std::array<short,2>")], []),
]
ENUMS = [("SBColor", "short"), ("SBPlain", "unsigned int")]

FIELDS = [
    # fundamentals, ROOT's spellings and others that normalize to them
    ("f_bool", "bool"), ("f_char", "char"), ("f_byte", "std::byte"),
    ("f_i8", "std::int8_t"), ("f_u8", "std::uint8_t"), ("f_i16", "std::int16_t"),
    ("f_u16", "std::uint16_t"), ("f_i32", "std::int32_t"), ("f_u32", "std::uint32_t"),
    ("f_i64", "std::int64_t"), ("f_u64", "std::uint64_t"),
    ("f_float", "float"), ("f_double", "double"), ("f_d32", "Double32_t"),
    ("n_int", "int"), ("n_uint", "unsigned int"), ("n_short", "short"),
    ("n_ushort", "unsigned short"), ("n_long", "long"), ("n_ulong", "unsigned long"),
    ("n_ll", "long long"), ("n_ull", "unsigned long long"), ("n_schar", "signed char"),
    ("n_uchar", "unsigned char"), ("n_int_t", "Int_t"), ("n_float_t", "Float_t"),
    ("n_long64", "Long64_t"), ("n_ulong64", "ULong64_t"), ("n_bool_t", "Bool_t"),
    ("n_int32", "int32_t"), ("n_uint64", "uint64_t"),
    ("f_string", "std::string"), ("n_string", "string"),
    # collections
    ("vec_f", "std::vector<float>"), ("vec_int", "std::vector<int>"),
    ("vec_spaces", "std::vector< unsigned  int >"), ("vec_bool", "std::vector<bool>"),
    ("vec_str", "std::vector<std::string>"), ("vec_vec", "std::vector<std::vector<double>>"),
    ("vec_d32", "std::vector<Double32_t>"),
    ("rvec_f", "ROOT::VecOps::RVec<float>"), ("rvec_short", "ROOT::RVec<short>"),
    ("rvec_rvec", "ROOT::RVec<ROOT::RVec<std::int64_t>>"),
    ("arr_f", "std::array<float,3>"), ("arr_arr", "std::array<std::array<char,2>,4>"),
    ("arr_str", "std::array<std::string,2>"), ("vec_arr", "std::vector<std::array<std::uint16_t,5>>"),
    ("bits5", "std::bitset<5>"), ("bits100", "std::bitset<100>"),
    ("atomic_i", "std::atomic<int>"), ("atomic_d", "std::atomic<double>"),
    ("opt_f", "std::optional<float>"), ("opt_str", "std::optional<std::string>"),
    ("opt_vec", "std::optional<std::vector<int>>"),
    ("uptr_i", "std::unique_ptr<std::int64_t>"), ("uptr_vec", "std::unique_ptr<std::vector<float>>"),
    ("var", "std::variant<int,float,std::string>"),
    ("var_nested", "std::variant<std::vector<int>,std::pair<int,char>>"),
    ("pair", "std::pair<int,float>"), ("pair_nested", "std::pair<std::string,std::vector<double>>"),
    ("tup", "std::tuple<int,float,std::string>"), ("tup1", "std::tuple<char>"),
    ("set_i", "std::set<int>"), ("mset_f", "std::multiset<float>"),
    ("uset_str", "std::unordered_set<std::string>"), ("umset_u", "std::unordered_multiset<std::uint64_t>"),
    ("set_pair", "std::set<std::pair<int,int>>"),
    ("map", "std::map<std::string,int>"), ("mmap", "std::multimap<int,std::vector<float>>"),
    ("umap", "std::unordered_map<std::string,float>"),
    ("ummap", "std::unordered_multimap<std::string,double>"),
    ("map_map", "std::map<int,std::map<int,bool>>"),
    # user types
    ("user", "SBUser"), ("outer", "SBOuter"), ("color", "SBColor"), ("plain", "SBPlain"),
    ("vec_user", "std::vector<SBUser>"), ("opt_color", "std::optional<SBColor>"),
    ("pair_user", "std::pair<SBInner,std::vector<SBColor>>"),
]

PROJECTED = [
    ("card32", "ROOT::RNTupleCardinality<std::uint32_t>", "vec_f"),
    ("card64", "ROOT::RNTupleCardinality<std::uint64_t>", "map"),
    ("alias_f", "float", "f_float"),
    ("alias_vec", "std::vector<float>", "vec_f"),
    ("alias_inner", "std::int32_t", "pair._0"),
]


def declare():
    import ROOT

    code = []
    for name, underlying in ENUMS:
        code.append(f"enum {'class ' if name == 'SBColor' else ''}{name} : {underlying} {{ k{name}A, k{name}B }};")
    for name, members, bases in CLASSES:
        b = (" : " + ", ".join("public " + x for x in bases)) if bases else ""
        body = " ".join(f"{t} {m};" for m, t in members)
        code.append(f"struct {name}{b} {{ {body} }};")
    ROOT.gInterpreter.Declare("#include <array>\n#include <bitset>\n#include <variant>\n#include <optional>\n"
                              "#include <atomic>\n#include <set>\n#include <map>\n#include <unordered_set>\n"
                              "#include <unordered_map>\n#include <tuple>\n#include <memory>\n" + "\n".join(code))
    # Cling builds the collection proxy of some map instantiations only once the type is used.
    for i, (_, type_name) in enumerate(FIELDS):
        if "map<" in type_name:
            ROOT.gInterpreter.Declare(f"{type_name} sb_instantiate_{i};")
    return ROOT


def write(ROOT, path, compression):
    model = ROOT.RNTupleModel.Create()
    for name, type_name in FIELDS:
        model.AddField(ROOT.RFieldBase.Create(name, type_name).Unwrap())
    for name, type_name, source in PROJECTED:
        def mapping(path, name=name, source=source):
            return source + str(path)[len(name):]
        model.AddProjectedField(ROOT.RFieldBase.Create(name, type_name).Unwrap(), mapping)
    opts = ROOT.RNTupleWriteOptions()
    opts.SetCompression(compression)
    writer = ROOT.RNTupleWriter.Recreate(model, "schema", path, opts)
    del writer


def main():
    ROOT = declare()
    write(ROOT, os.path.join(OUT, "schema_builder.zstd.root"), 505)
    write(ROOT, os.path.join(OUT, "schema_builder.none.root"), 0)
    with open(os.path.join(OUT, "schema_builder.fields.tsv"), "w") as f:
        for name, underlying in ENUMS:
            f.write(f"enum\t{name}\t{underlying}\n")
        for name, members, bases in CLASSES:
            # ROOT stores the class version and TClass checksum; our builder takes them as given.
            cl = ROOT.TClass.GetClass(name)
            f.write(f"class\t{name}\t{';'.join(m + ':' + t for m, t in members)}\t{','.join(bases)}"
                    f"\t{cl.GetClassVersion()}\t{cl.GetCheckSum()}\n")
        for name, type_name in FIELDS:
            f.write(f"field\t{name}\t{type_name}\n")
        for name, type_name, source in PROJECTED:
            f.write(f"projected\t{name}\t{type_name}\t{source}\n")


if __name__ == "__main__":
    main()
