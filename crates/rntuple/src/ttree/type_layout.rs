//! The layouts of the values that `TBranchElement` baskets hold in ROOT's object
//! streaming ([`Streamed`]), resolved from the file's streamer infos by a
//! [`TypeResolver`]; [`super::value_decode`] decodes bytes by them.
//!
//! The layouts, all big-endian:
//! * a fundamental is its bytes; `Double32_t`/`Float16_t` are packed ([`RealPacking`]);
//! * a string (`std::string`, `TString`) is a one-byte length (or 255 and a four-byte
//!   length) and the characters;
//! * a collection (`std::vector`, the sets and maps, ordered or not, unique or multi) is
//!   an i32 count and the items, a map's items being `std::pair`s (whose members, `first`
//!   and `second`, ROOT streams member-wise in an unsplit map: every key, then every
//!   value);
//! * a `std::bitset<N>` is streamed as an STL collection of `bool`s (ROOT's
//!   `kSTLbitset`): an i32 count (N) and one byte (0 or 1) per bit, bit 0 first;
//! * an object is its members (bases first, in streamer-info order); a `std::array<T,N>`
//!   is an object of class `array<T,N>` whose one member `_M_elems` is a fixed array of N
//!   values (so a collection item or a pair's member comes with its header, byte count,
//!   version 0 and checksum), but a class member declared `std::array<T,N>` is described
//!   by its class's streamer info as a plain fixed array (`T x[N]`);
//! * "with header": a vector, string or object that is a class member or a whole branch
//!   value starts with a byte count and a class version (and, for version 0, the class
//!   checksum); items inside a vector and the members of a top-level unsplit object's own
//!   level go without.

use super::streamer_info_parse::{StreamerElement, StreamerInfo};
use super::values::{LeafType, RealPacking};
use crate::error::{Error, Result};
use crate::schema::type_name::split_template_args;
use std::collections::HashMap;
use std::sync::Arc;

/// How one value is streamed.
#[derive(Debug, Clone, PartialEq)]
pub enum Streamed {
    /// A fundamental type.
    Prim(LeafType),
    /// `std::string`.
    String,
    /// `TString`: the same characters, streamed by its own streamer without a header
    /// anywhere (a class member, a collection item, member-wise); RNTuple stores it as a
    /// `std::string` at the top level and in collections, and a class holding one only
    /// whole (ROOT: "TString cannot be stored natively").
    TString,
    /// A collection of items: `std::vector<T>`, a set, or a map (whose items are
    /// `std::pair` objects).
    Vector(Collection, Box<Streamed>),
    /// A fixed-size array (`T x[N]`, or a class member declared `std::array<T,N>`, which
    /// the streamer info describes as such), dimensions flattened; streamed as its values,
    /// never behind a header. (A `std::array` named by a type, as a collection's item, is
    /// an [`Object`](Self::Object) of [`ClassKind::StdArray`].)
    Array(Box<Streamed>, usize),
    /// `std::bitset<N>` (N bits): streamed as an STL collection of N `bool`s, stored by
    /// RNTuple as a `std::bitset<N>` field (one bit column).
    Bitset(usize),
    /// An object of a class.
    Object(Arc<ClassLayout>),
    /// A counted C array member (`T *x; //[n]`): the values' type and the index (among
    /// its class's members) of the earlier integer member holding the length; streamed
    /// as a byte saying whether the array follows, then its values. RNTuple has no field
    /// for it (its class is stored whole); decoded, it is a list.
    Counted(LeafType, usize),
}

/// The STL collections ROOT streams as a count and the items, and RNTuple stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collection {
    /// `std::vector`.
    Vector,
    /// `std::set`.
    Set,
    /// `std::multiset`.
    MultiSet,
    /// `std::unordered_set`.
    UnorderedSet,
    /// `std::unordered_multiset`.
    UnorderedMultiSet,
    /// `std::map` (items: `std::pair<const K, V>`).
    Map,
    /// `std::multimap`.
    MultiMap,
    /// `std::unordered_map`.
    UnorderedMap,
    /// `std::unordered_multimap`.
    UnorderedMultiMap,
}

impl Collection {
    /// The collection named by a template (`vector`, `set`, `map`, ... with or without
    /// `std::`).
    fn of_template(name: &str) -> Option<Collection> {
        Some(match name.strip_prefix("std::").unwrap_or(name) {
            "vector" => Collection::Vector,
            "set" => Collection::Set,
            "multiset" => Collection::MultiSet,
            "unordered_set" => Collection::UnorderedSet,
            "unordered_multiset" => Collection::UnorderedMultiSet,
            "map" => Collection::Map,
            "multimap" => Collection::MultiMap,
            "unordered_map" => Collection::UnorderedMap,
            "unordered_multimap" => Collection::UnorderedMultiMap,
            _ => return None,
        })
    }

    /// The collection a C++ type name is (`vector<TFoo>`, `std::map<int,float>`), if any.
    pub fn of_type_name(name: &str) -> Option<Collection> {
        let (template, _) = name.trim().split_once('<')?;
        Collection::of_template(template.trim())
    }

    /// The C++ template (`std::set`).
    pub fn template(self) -> &'static str {
        match self {
            Collection::Vector => "std::vector",
            Collection::Set => "std::set",
            Collection::MultiSet => "std::multiset",
            Collection::UnorderedSet => "std::unordered_set",
            Collection::UnorderedMultiSet => "std::unordered_multiset",
            Collection::Map => "std::map",
            Collection::MultiMap => "std::multimap",
            Collection::UnorderedMap => "std::unordered_map",
            Collection::UnorderedMultiMap => "std::unordered_multimap",
        }
    }

    /// Whether the items are key-value pairs.
    pub fn is_map(self) -> bool {
        matches!(
            self,
            Collection::Map
                | Collection::MultiMap
                | Collection::UnorderedMap
                | Collection::UnorderedMultiMap
        )
    }
}

/// A class's streamed layout, from its streamer info.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassLayout {
    /// The class name.
    pub name: String,
    /// The class version (`-1` when the class has no `ClassDef`: ROOT then writes version
    /// 0 and the checksum).
    pub version: i32,
    /// The class's checksum.
    pub checksum: u32,
    /// Base classes, in order (streamed first).
    pub bases: Vec<Arc<ClassLayout>>,
    /// Data members in order.
    pub members: Vec<(String, Streamed)>,
    /// What kind of class: an ordinary one, a `std::pair` or `TObject`.
    pub kind: ClassKind,
}

/// The classes the streamed layout treats apart from ordinary ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClassKind {
    /// A class streamed by its streamer info.
    Class,
    /// A `std::pair` (members `first` and `second`): an RNTuple `std::pair` field, not a
    /// class of its own.
    Pair,
    /// `TObject` (members `fUniqueID` and `fBits`), streamed by its own streamer: a bare
    /// version, the two members, and a process id when the object is referenced. RNTuple
    /// stores it as ROOT 6.40's `TObject` field, `fBits` without the bits that say how the
    /// object was allocated ([`TOBJECT_ALLOCATION_BITS`]).
    TObject,
    /// A `std::array<T,N>` named by its type (a collection's item, a pair's member, a
    /// whole branch): ROOT streams it as an object of class `array<T,N>` with one member,
    /// `_M_elems`, a fixed array of N values. RNTuple stores it as a `std::array<T,N>`
    /// field, not a class of its own.
    StdArray,
}

/// `TObject::fBits`' `kIsOnHeap` and `kNotDeleted`: how the object in memory was
/// allocated, which ROOT's RNTuple `TObject` field leaves out (a TTree keeps them).
pub const TOBJECT_ALLOCATION_BITS: u32 = 0x0300_0000;

/// `TObject::fBits`' `kIsReferenced`: a process id follows the bits in the stream; ROOT's
/// RNTuple refuses such objects.
pub(super) const TOBJECT_IS_REFERENCED: u32 = 0x0000_0010;

/// `TObject`'s class version.
const TOBJECT_VERSION: i32 = 1;

/// `TObject`'s checksum (`TClass::GetCheckSum`), which ROOT 6.40 records for its RNTuple
/// `TObject` field.
const TOBJECT_CHECKSUM: u32 = 2_417_737_773;

impl ClassLayout {
    /// The layout of `std::pair<first, second>` (ROOT streams a pair as its two members;
    /// the version and checksum in a stream are read from it, not from here).
    fn pair(first: Streamed, second: Streamed) -> ClassLayout {
        ClassLayout {
            name: format!("pair<{},{}>", first.cpp_type(), second.cpp_type()),
            version: -1,
            checksum: 0,
            bases: Vec::new(),
            members: vec![("first".to_string(), first), ("second".to_string(), second)],
            kind: ClassKind::Pair,
        }
    }

    /// Whether the class is `TObject` or derives from it.
    pub fn derives_from_tobject(&self) -> bool {
        self.kind == ClassKind::TObject || self.bases.iter().any(|b| b.derives_from_tobject())
    }

    /// Whether the class has no `ClassDef` (ROOT then streams version 0 and the class
    /// checksum): its streamer info records version 1 (or none) and it does not derive
    /// from `TObject` (which needs a `ClassDef`).
    pub fn without_class_def(&self) -> bool {
        (self.version == 1 && !self.derives_from_tobject()) || self.version < 1
    }

    /// The layout of `std::array<T,N>` named by its type: ROOT's class `array<T,N>` with
    /// its one member `_M_elems`, the N values (the version and checksum in a stream are
    /// read from it, not from here).
    fn std_array(item: Streamed, n: usize) -> ClassLayout {
        ClassLayout {
            name: format!("array<{},{n}>", item.cpp_type()),
            version: -1,
            checksum: 0,
            bases: Vec::new(),
            members: vec![("_M_elems".to_string(), Streamed::Array(Box::new(item), n))],
            kind: ClassKind::StdArray,
        }
    }

    /// The layout of `TObject`.
    fn tobject() -> ClassLayout {
        ClassLayout {
            name: "TObject".to_string(),
            version: TOBJECT_VERSION,
            checksum: TOBJECT_CHECKSUM,
            bases: Vec::new(),
            members: vec![
                ("fUniqueID".to_string(), Streamed::Prim(LeafType::UInt)),
                ("fBits".to_string(), Streamed::Prim(LeafType::UInt)),
            ],
            kind: ClassKind::TObject,
        }
    }
}

impl Streamed {
    /// The C++ type of the RNTuple field for it (as ROOT's importer names it).
    pub fn cpp_type(&self) -> String {
        match self {
            Streamed::Prim(t) => t.cpp_type().to_string(),
            Streamed::String | Streamed::TString => "std::string".to_string(),
            Streamed::Vector(kind, item) => match (kind.is_map(), item.as_ref()) {
                (true, Streamed::Object(pair)) if pair.members.len() == 2 => format!(
                    "{}<{},{}>",
                    kind.template(),
                    pair.members[0].1.cpp_type(),
                    pair.members[1].1.cpp_type()
                ),
                _ => format!("{}<{}>", kind.template(), item.cpp_type()),
            },
            Streamed::Array(item, n) => format!("std::array<{},{n}>", item.cpp_type()),
            Streamed::Bitset(n) => format!("std::bitset<{n}>"),
            Streamed::Counted(t, _) => format!("std::vector<{}>", t.cpp_type()),
            Streamed::Object(c) if c.kind == ClassKind::StdArray && c.members.len() == 1 => {
                c.members[0].1.cpp_type()
            }
            Streamed::Object(c) if c.kind == ClassKind::Pair && c.members.len() == 2 => format!(
                "std::pair<{},{}>",
                c.members[0].1.cpp_type(),
                c.members[1].1.cpp_type()
            ),
            Streamed::Object(c) => c.name.clone(),
        }
    }

    /// Every class used, depth-first (members before the classes holding them).
    pub fn classes(&self, out: &mut Vec<Arc<ClassLayout>>) {
        match self {
            Streamed::Vector(_, item) | Streamed::Array(item, _) => item.classes(out),
            Streamed::Object(c) if matches!(c.kind, ClassKind::Pair | ClassKind::StdArray) => {
                for (_, m) in &c.members {
                    m.classes(out);
                }
            }
            Streamed::Object(c) => {
                for b in &c.bases {
                    Streamed::Object(b.clone()).classes(out);
                }
                for (_, m) in &c.members {
                    m.classes(out);
                }
                if !out.iter().any(|o| o.name == c.name) {
                    out.push(c.clone());
                }
            }
            Streamed::Prim(_)
            | Streamed::String
            | Streamed::TString
            | Streamed::Bitset(_)
            | Streamed::Counted(..) => {}
        }
    }
}

/// ROOT classes with a streamer of their own (`TClass::CanSplit()` is false), which ROOT
/// 6.40's RNTuple stores only whole, in a streamer field ("cannot be stored natively").
const CUSTOM_STREAMER_CLASSES: &[&str] = &[
    "TVector2",
    "TVector3",
    "TLorentzVector",
    "TArrayC",
    "TArrayS",
    "TArrayI",
    "TArrayL",
    "TArrayL64",
    "TArrayF",
    "TArrayD",
    "TDatime",
    "TRef",
    "TRefArray",
    "TObjArray",
    "TClonesArray",
    "TList",
    "THashList",
    "TMap",
    "TGraph",
];

/// ROOT classes whose own streamer streams them as their streamer info says (it calls
/// `ReadClassBuffer`/`WriteClassBuffer` for the versions ROOT 6 writes).
const STREAMED_BY_INFO: &[&str] = &["TVector2", "TVector3", "TLorentzVector"];

impl Streamed {
    /// Whether objects of class `name`, streamed by the class's own streamer, follow its
    /// streamer info (ROOT's vectors do; a user's custom streamer need not).
    pub fn streams_by_its_info(name: &str) -> bool {
        STREAMED_BY_INFO.contains(&name)
    }

    /// Whether ROOT 6.40's RNTuple stores values of this type as fields of their own
    /// (classes, collections, fundamentals), rather than only whole, in a streamer field:
    /// a class with a streamer of its own (`TLorentzVector`, ...) is not.
    pub fn is_native(&self) -> bool {
        match self {
            Streamed::Prim(_) | Streamed::String | Streamed::TString | Streamed::Bitset(_) => true,
            Streamed::Counted(..) => false,
            Streamed::Vector(_, item) | Streamed::Array(item, _) => item.is_native(),
            Streamed::Object(c) => {
                !(c.kind == ClassKind::Class
                    && (CUSTOM_STREAMER_CLASSES.contains(&c.name.as_str())
                        || c.name.starts_with("TMatrixT")
                        || c.name.starts_with("TVectorT")))
                    && c.bases
                        .iter()
                        .all(|b| Streamed::Object(b.clone()).is_native())
                    // A pair or a std::array is no class of ROOT's RNTuple: its TString
                    // becomes a std::string.
                    && c.members.iter().all(|(_, m)| {
                        if matches!(c.kind, ClassKind::Pair | ClassKind::StdArray) {
                            m.is_native()
                        } else {
                            m.is_native_member()
                        }
                    })
            }
        }
    }

    /// Whether a class member of this type has a field type in ROOT 6.40's RNTuple: as
    /// [`is_native`](Self::is_native), but a `TString` anywhere in it has none.
    fn is_native_member(&self) -> bool {
        match self {
            Streamed::TString => false,
            Streamed::Vector(_, item) | Streamed::Array(item, _) => item.is_native_member(),
            other => other.is_native(),
        }
    }
}

/// Deepest nesting of types resolved (a hostile streamer info must not recurse forever).
const MAX_DEPTH: usize = 32;

/// Resolves type names and classes through the file's streamer infos.
#[derive(Debug, Default)]
pub struct TypeResolver {
    infos: HashMap<String, StreamerInfo>,
    done: HashMap<String, Arc<ClassLayout>>,
}

/// The names in a C++ type name that may be classes: `map<int,TFoo*>` gives `map`,
/// `int`, `TFoo`.
fn class_names_in(type_name: &str) -> impl Iterator<Item = &str> {
    type_name
        .split(['<', '>', ',', '*', '&', ' '])
        .map(str::trim)
        .filter(|t| !t.is_empty() && *t != "const")
}

/// The numeric type of a fundamental C++/ROOT type name.
fn fundamental(name: &str) -> Option<LeafType> {
    Some(match name {
        "bool" | "Bool_t" => LeafType::Bool,
        "char" | "Char_t" | "signed char" => LeafType::Char,
        "unsigned char" | "UChar_t" | "Byte_t" | "uint8_t" | "std::uint8_t" => LeafType::UChar,
        "short" | "Short_t" | "int16_t" | "std::int16_t" => LeafType::Short,
        "unsigned short" | "UShort_t" | "uint16_t" | "std::uint16_t" => LeafType::UShort,
        "int" | "Int_t" | "int32_t" | "std::int32_t" => LeafType::Int,
        "unsigned int" | "unsigned" | "UInt_t" | "uint32_t" | "std::uint32_t" => LeafType::UInt,
        "long" | "Long_t" | "long long" | "Long64_t" | "int64_t" | "std::int64_t" => {
            LeafType::Long64
        }
        "unsigned long" | "ULong_t" | "unsigned long long" | "ULong64_t" | "uint64_t"
        | "std::uint64_t" => LeafType::ULong64,
        "float" | "Float_t" => LeafType::Float,
        "double" | "Double_t" => LeafType::Double,
        "Double32_t" => LeafType::Double32(RealPacking::Float),
        "Float16_t" => LeafType::Float16(RealPacking::Truncated(12)),
        _ => return None,
    })
}

/// The numeric type of a streamer element type code (1-19).
fn from_code(code: i32, title: &str) -> Option<LeafType> {
    Some(match code {
        1 => LeafType::Char,
        2 => LeafType::Short,
        3 | 6 => LeafType::Int,
        4 | 16 => LeafType::Long64,
        5 => LeafType::Float,
        8 => LeafType::Double,
        9 => LeafType::Double32(RealPacking::from_title(title, 0)),
        11 => LeafType::UChar,
        12 => LeafType::UShort,
        13 | 15 => LeafType::UInt,
        14 | 17 => LeafType::ULong64,
        18 => LeafType::Bool,
        19 => LeafType::Float16(RealPacking::from_title(title, 12)),
        _ => return None,
    })
}

impl TypeResolver {
    /// A resolver over the file's streamer infos.
    pub fn new(infos: Vec<StreamerInfo>) -> TypeResolver {
        let mut map = HashMap::new();
        for i in infos {
            // Several versions of a class: the first listed is the one written last.
            map.entry(i.class_name.clone()).or_insert(i);
        }
        TypeResolver {
            infos: map,
            done: HashMap::new(),
        }
    }

    /// The streamed type of C++ type `name` (`vector<float>`, `string`, `MyClass`, ...).
    pub fn type_of(&mut self, name: &str) -> Result<Streamed> {
        self.resolve(name, 0)
    }

    /// The streamer info of class `name`, if the file has one.
    pub fn info(&self, name: &str) -> Option<&StreamerInfo> {
        self.infos.get(name)
    }

    /// The streamer infos of every class the file describes that values of C++ type
    /// `name` involve: the classes it names (template arguments too), their bases and the
    /// classes of their members, recursively; in the order first met.
    pub fn streamer_infos_of(&self, name: &str) -> Vec<StreamerInfo> {
        let mut out: Vec<StreamerInfo> = Vec::new();
        let mut todo = vec![name.to_string()];
        while let Some(type_name) = todo.pop() {
            for class in class_names_in(&type_name) {
                // TObject streams itself (no streamer info): ROOT records none for it.
                let Some(info) = self.infos.get(class).filter(|_| class != "TObject") else {
                    continue;
                };
                if out.iter().any(|o| o.class_name == info.class_name) {
                    continue;
                }
                out.push(info.clone());
                // Members in reverse, so that the first member's classes come next.
                for e in info.elements.iter().rev() {
                    todo.push(e.type_name.clone());
                    if e.element_class == "TStreamerBase" {
                        todo.push(e.name.clone());
                    }
                }
            }
        }
        out
    }

    fn resolve(&mut self, name: &str, depth: usize) -> Result<Streamed> {
        if depth > MAX_DEPTH {
            return Err(Error::Unsupported(format!(
                "type \"{name}\" nests deeper than {MAX_DEPTH} levels"
            )));
        }
        let name = name.trim().trim_start_matches("const ").trim();
        if let Some(t) = fundamental(name) {
            return Ok(Streamed::Prim(t));
        }
        if matches!(name, "string" | "std::string") {
            return Ok(Streamed::String);
        }
        if name == "TString" {
            return Ok(Streamed::TString);
        }
        let bare = name.strip_prefix("std::").unwrap_or(name);
        if let Some((template, inner)) = bare
            .split_once('<')
            .and_then(|(t, rest)| Some((t.trim(), rest.strip_suffix('>')?)))
        {
            let args = split_template_args(inner);
            if let Some(kind) = Collection::of_template(template) {
                let arg = |i: usize| {
                    args.get(i).copied().ok_or_else(|| {
                        Error::Unsupported(format!("type \"{name}\": too few template arguments"))
                    })
                };
                let item = if kind.is_map() {
                    let key = self.resolve(arg(0)?, depth + 1)?;
                    let value = self.resolve(arg(1)?, depth + 1)?;
                    Streamed::Object(Arc::new(ClassLayout::pair(key, value)))
                } else {
                    self.resolve(arg(0)?, depth + 1)?
                };
                return Ok(Streamed::Vector(kind, Box::new(item)));
            }
            if template == "pair" && args.len() == 2 {
                let first = self.resolve(args[0], depth + 1)?;
                let second = self.resolve(args[1], depth + 1)?;
                return Ok(Streamed::Object(Arc::new(ClassLayout::pair(first, second))));
            }
        }
        if let Some(inner) = bare
            .strip_prefix("array<")
            .and_then(|r| r.strip_suffix('>'))
        {
            let args = split_template_args(inner);
            let n = args
                .get(1)
                .and_then(|n| n.trim().parse::<usize>().ok())
                .filter(|&n| n > 0 && args.len() == 2)
                .ok_or_else(|| Error::Unsupported(format!("array type \"{name}\"")))?;
            let item = self.resolve(args[0], depth + 1)?;
            return Ok(Streamed::Object(Arc::new(ClassLayout::std_array(item, n))));
        }
        if let Some(inner) = bare
            .strip_prefix("bitset<")
            .and_then(|r| r.strip_suffix('>'))
        {
            let n = inner
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| Error::Unsupported(format!("bitset type \"{name}\"")))?;
            return Ok(Streamed::Bitset(n));
        }
        if name.contains('<') || name.ends_with('*') {
            return Err(Error::Unsupported(format!(
                "type \"{name}\" (only std::vector, the sets and maps, std::pair, std::array, \
                 std::bitset, strings, fundamentals and classes described in the file are \
                 converted)"
            )));
        }
        Ok(Streamed::Object(self.class(name, depth)?))
    }

    /// The layout of class `name`.
    pub fn class(&mut self, name: &str, depth: usize) -> Result<Arc<ClassLayout>> {
        if let Some(c) = self.done.get(name) {
            return Ok(c.clone());
        }
        if name == "TObject" {
            let layout = Arc::new(ClassLayout::tobject());
            self.done.insert(name.to_string(), layout.clone());
            return Ok(layout);
        }
        let info = self.infos.get(name).cloned().ok_or_else(|| {
            Error::Unsupported(format!(
                "class \"{name}\": the file holds no streamer info describing it"
            ))
        })?;
        let mut bases = Vec::new();
        let mut members = Vec::new();
        for e in &info.elements {
            if e.element_class == "TStreamerBase" {
                bases.push(self.class(&e.name, depth + 1)?);
                continue;
            }
            if e.element_class == "TStreamerBasicPointer" {
                members.push((e.name.clone(), counted_member(name, e, &members)?));
                continue;
            }
            members.push((e.name.clone(), self.member(name, e, depth + 1)?));
        }
        let layout = Arc::new(ClassLayout {
            name: name.to_string(),
            version: info.class_version,
            checksum: info.checksum,
            bases,
            members,
            kind: ClassKind::Class,
        });
        self.done.insert(name.to_string(), layout.clone());
        Ok(layout)
    }

    fn member(&mut self, class: &str, e: &StreamerElement, depth: usize) -> Result<Streamed> {
        let unsupported = || {
            Error::Unsupported(format!(
                "member \"{}\" of class \"{class}\" (type {}, {}) cannot be converted",
                e.name, e.type_name, e.element_class
            ))
        };
        let array = |s: Streamed| -> Result<Streamed> {
            match usize::try_from(e.array_length) {
                Ok(0) => Ok(s),
                Ok(n) => Ok(Streamed::Array(Box::new(s), n)),
                Err(_) => Err(Error::corrupt(
                    format!("streamer info of class \"{class}\""),
                    format!("member \"{}\" has a negative length", e.name),
                )),
            }
        };
        match e.element_class.as_str() {
            "TStreamerBasicType" => {
                let code = if (21..40).contains(&e.type_code) {
                    e.type_code - 20
                } else {
                    e.type_code
                };
                // ROOT stores `bool` members as kUChar (11) in old files; it means kBool.
                let code = if code == 11 && matches!(e.type_name.as_str(), "Bool_t" | "bool") {
                    18
                } else {
                    code
                };
                let t = from_code(code, &e.title).ok_or_else(unsupported)?;
                array(Streamed::Prim(t))
            }
            "TStreamerString" => array(Streamed::TString),
            "TStreamerSTLstring" => Ok(Streamed::String),
            "TStreamerSTL" => self.resolve(&e.type_name, depth),
            "TStreamerObjectAny" | "TStreamerObject" => {
                let t = self.resolve(&e.type_name, depth)?;
                array(t)
            }
            _ => Err(unsupported()),
        }
    }
}

/// A counted C array member of class `class` (`TStreamerBasicPointer`: type code 40 + the
/// values' code), its length held by an earlier integer member.
fn counted_member(
    class: &str,
    e: &StreamerElement,
    members: &[(String, Streamed)],
) -> Result<Streamed> {
    let t = from_code(e.type_code - 40, &e.title).ok_or_else(|| {
        Error::Unsupported(format!(
            "member \"{}\" of class \"{class}\": a counted array of type code {}",
            e.name, e.type_code
        ))
    })?;
    let count = members
        .iter()
        .position(|(n, ty)| {
            *n == e.count_name
                && matches!(
                    ty,
                    Streamed::Prim(
                        LeafType::Char
                            | LeafType::UChar
                            | LeafType::Short
                            | LeafType::UShort
                            | LeafType::Int
                            | LeafType::UInt
                            | LeafType::Long64
                            | LeafType::ULong64
                    )
                )
        })
        .ok_or_else(|| {
            Error::Unsupported(format!(
                "member \"{}\" of class \"{class}\": its length \"{}\" is no earlier integer \
                 member",
                e.name, e.count_name
            ))
        })?;
    Ok(Streamed::Counted(t, count))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::encoding::ColumnValues;
    use crate::ttree::value_decode::{Builder, StreamCursor};

    fn cpp(name: &str) -> String {
        TypeResolver::new(Vec::new())
            .type_of(name)
            .unwrap()
            .cpp_type()
    }

    #[test]
    fn stl_collections_and_pairs_resolve_to_their_rntuple_types() {
        assert_eq!(cpp("set<int>"), "std::set<std::int32_t>");
        assert_eq!(cpp("std::multiset<short>"), "std::multiset<std::int16_t>");
        assert_eq!(
            cpp("unordered_set<int>"),
            "std::unordered_set<std::int32_t>"
        );
        assert_eq!(
            cpp("unordered_multiset<double>"),
            "std::unordered_multiset<double>"
        );
        assert_eq!(cpp("map<int,float>"), "std::map<std::int32_t,float>");
        assert_eq!(
            cpp("multimap<int,double>"),
            "std::multimap<std::int32_t,double>"
        );
        assert_eq!(
            cpp("unordered_map<string,vector<float> >"),
            "std::unordered_map<std::string,std::vector<float>>"
        );
        assert_eq!(
            cpp("unordered_multimap<int,int>"),
            "std::unordered_multimap<std::int32_t,std::int32_t>"
        );
        assert_eq!(cpp("pair<int,float>"), "std::pair<std::int32_t,float>");
        assert_eq!(
            cpp("vector<set<map<int,pair<float,string> > > >"),
            "std::vector<std::set<std::map<std::int32_t,std::pair<float,std::string>>>>"
        );
    }

    #[test]
    fn a_map_holds_pairs_which_are_no_classes_of_their_own() {
        let t = TypeResolver::new(Vec::new())
            .type_of("map<int,set<short> >")
            .unwrap();
        let Streamed::Vector(Collection::Map, item) = &t else {
            panic!("{t:?}");
        };
        let Streamed::Object(pair) = item.as_ref() else {
            panic!("{item:?}");
        };
        assert_eq!(pair.kind, ClassKind::Pair);
        let names: Vec<&str> = pair.members.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["first", "second"]);
        let mut classes = Vec::new();
        t.classes(&mut classes);
        assert!(classes.is_empty(), "{classes:?}");
    }

    #[test]
    fn a_tobject_streams_version_id_and_bits_without_its_allocation_bits() {
        let t = TypeResolver::new(Vec::new()).type_of("TObject").unwrap();
        let mut out = Builder::new(&t);
        // Version 1, fUniqueID 7, fBits kIsOnHeap | kNotDeleted | bit 14.
        let bytes = [0, 1, 0, 0, 0, 7, 0x03, 0, 0x40, 0];
        let mut cursor = StreamCursor::new(&bytes);
        cursor.decode(&t, &mut out, true).unwrap();
        assert_eq!(cursor.remaining(), 0);
        let Builder::Struct(members, 1) = &out else {
            panic!("{out:?}");
        };
        let values: Vec<_> = members
            .iter()
            .map(|m| match m {
                Builder::Prim(_, ColumnValues::U32(v)) => v.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(values, [vec![7], vec![0x4000]]);
        // Referenced (kIsReferenced): a process id would follow; refused as ROOT does.
        let referenced = [0, 1, 0, 0, 0, 7, 0x03, 0, 0, 0x10, 0, 1];
        let err = StreamCursor::new(&referenced)
            .decode(&t, &mut Builder::new(&t), true)
            .unwrap_err();
        assert!(err.to_string().contains("referenced TObject"), "{err}");
    }

    /// Class `C { int fN; short *fSlice; //[fN]  double fE; }`, version 2.
    pub(in crate::ttree) fn counted_class() -> TypeResolver {
        let mut slice = StreamerElement::basic("fSlice", 42, 8, "short*");
        slice.element_class = "TStreamerBasicPointer".to_string();
        slice.count_name = "fN".to_string();
        TypeResolver::new(vec![StreamerInfo {
            class_name: "C".to_string(),
            checksum: 7,
            class_version: 2,
            elements: vec![
                StreamerElement::basic("fN", 3, 4, "int"),
                slice,
                StreamerElement::basic("fE", 8, 8, "double"),
            ],
        }])
    }

    /// Two objects of [`counted_class`]'s `C`: fN 3, the values 5, -6 and 7, fE 1.5;
    /// then fN `second_n` but a null pointer (flag 0), so no values, and fE 2.5.
    pub(in crate::ttree) fn counted_objects(second_n: i32) -> Vec<u8> {
        let mut bytes = vec![0x40, 0, 0, 21, 0, 2]; // byte count 21, version 2
        bytes.extend(3i32.to_be_bytes());
        bytes.push(1);
        for v in [5i16, -6, 7] {
            bytes.extend(v.to_be_bytes());
        }
        bytes.extend(1.5f64.to_be_bytes());
        bytes.extend([0x40, 0, 0, 15, 0, 2]);
        bytes.extend(second_n.to_be_bytes());
        bytes.push(0);
        bytes.extend(2.5f64.to_be_bytes());
        bytes
    }

    fn lists_of(b: &Builder) -> (Vec<i64>, Vec<i16>) {
        let Builder::List(offsets, items) = b else {
            panic!("{b:?}");
        };
        let Builder::Prim(_, ColumnValues::I16(v)) = items.as_ref() else {
            panic!("{items:?}");
        };
        (offsets.clone(), v.clone())
    }

    #[test]
    fn counted_arrays_take_their_length_from_the_earlier_member() {
        let t = counted_class().type_of("C").unwrap();
        assert!(!t.is_native());
        // The second object: fN 2 but a null pointer: no values.
        let bytes = counted_objects(2);
        let mut out = Builder::new(&t);
        let mut cursor = StreamCursor::new(&bytes);
        cursor.decode(&t, &mut out, true).unwrap();
        cursor.decode(&t, &mut out, true).unwrap();
        assert_eq!(cursor.remaining(), 0);
        let Builder::Struct(members, 2) = &out else {
            panic!("{out:?}");
        };
        assert_eq!(lists_of(&members[1]), (vec![0, 3, 3], vec![5, -6, 7]));
        // A length past the bytes is an error, not a read past the end.
        let mut bad = bytes[..21].to_vec();
        bad[9] = 100;
        let err = StreamCursor::new(&bad)
            .decode(&t, &mut Builder::new(&t), true)
            .unwrap_err();
        assert!(matches!(err, Error::Corrupt { .. }), "{err}");
    }

    #[test]
    fn counted_arrays_member_wise_take_each_items_length() {
        let t = counted_class().type_of("vector<C>").unwrap();
        // Member-wise: version with 0x4000, items' version 2, count 2, every fN, then each
        // item's flag and values, then every fE.
        let mut body = vec![0, 2];
        body.extend(2i32.to_be_bytes());
        body.extend(1i32.to_be_bytes());
        body.extend(2i32.to_be_bytes());
        body.push(1);
        body.extend(9i16.to_be_bytes());
        body.push(1);
        body.extend(10i16.to_be_bytes());
        body.extend(11i16.to_be_bytes());
        body.extend(0.5f64.to_be_bytes());
        body.extend(0.25f64.to_be_bytes());
        let mut bytes = (0x4000_0000u32 | (body.len() as u32 + 2))
            .to_be_bytes()
            .to_vec();
        bytes.extend([0x40, 6]);
        bytes.extend(body);
        let mut out = Builder::new(&t);
        let mut cursor = StreamCursor::new(&bytes);
        cursor.decode(&t, &mut out, true).unwrap();
        assert_eq!(cursor.remaining(), 0);
        let Builder::List(_, items) = &out else {
            panic!("{out:?}");
        };
        let Builder::Struct(members, 2) = items.as_ref() else {
            panic!("{items:?}");
        };
        assert_eq!(lists_of(&members[1]), (vec![0, 1, 3], vec![9, 10, 11]));
    }

    #[test]
    fn other_templates_and_bad_arguments_are_refused() {
        for name in ["list<int>", "deque<float>", "map<int>", "shared_ptr<int>"] {
            let err = TypeResolver::new(Vec::new()).type_of(name).unwrap_err();
            assert!(matches!(err, Error::Unsupported(_)), "{name}: {err}");
        }
    }
}
