//! Schema evolution on read: a field read as another C++ type than the one it was
//! written with, by ROOT's rules (`tree/ntuple/doc/SchemaEvolution.md`, as ROOT 6.40
//! behaves). A read is planned in two steps, as ROOT does: [`plan`] checks, before any
//! page is read, that each requested type can be read from the type on disk (a refusal
//! names both types); [`Conversion::apply`] converts the arrays decoded as they are on
//! disk, checking every value that may not fit (integer narrowing and sign changes,
//! `double` to `float`, integers to reals that cannot hold them all), and names the
//! field, the entry and the value of one that does not (ROOT fails the whole page), or
//! makes it null when asked ([`OnOverflow::Mask`]).
//!
//! One rule decides how a number reads as another, whoever chose the type (a caller's
//! `types=`, or [`super::unify`] over many files): [`number_fit`]. A conversion that holds every
//! value is done; one that may not is done with a check of every value (an integer read
//! as a real must read back exactly: `2**62 + 1` is no `double`); the others are refused
//! before anything is read. ROOT 6.40 refuses integers read as reals; this reader reads
//! them, checked, so that files of integers and of reals can be read as one type.
//! The decoding itself is unchanged: conversions work on its Arrow arrays.

use crate::encoding::f64_to_f32;
use crate::error::{Error, Result};
use crate::schema::type_name::{parse_type_name, CppType, TemplateArg};
use crate::schema::{
    primitive_data_type, primitive_of_data_type, Descriptor, FieldKind, PrimitiveType,
    TYPE_NAME_KEY,
};
use arrow_array::builder::BooleanBufferBuilder;
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::{
    new_null_array, Array, ArrayRef, BooleanArray, FixedSizeListArray, LargeListArray, MapArray,
    PrimitiveArray, StructArray, UInt64Array, UnionArray,
};
use arrow_buffer::{BooleanBuffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, FieldRef, Fields, UnionFields};
use std::collections::HashMap;
use std::sync::Arc;

/// The type a field is read as.
#[derive(Debug, Clone, PartialEq)]
pub enum ReadAs {
    /// A C++ type name, spelled as ROOT spells it (`double`, `std::int64_t`, `int`,
    /// `std::vector<float>`, `std::optional<std::int32_t>`, ...). NumPy's names of the
    /// fundamental types (`float64`, `int32`, ...) are taken too.
    Type(String),
    /// A record read member by member, matched by name, in this order: members on disk
    /// and not listed are left out; listed members that are not on disk are added, null
    /// (or the default given for them).
    Record(Vec<(String, ReadAs)>),
    /// The type on disk, unchanged (what [`super::unify`] gives for fields alike in every file).
    AsOnDisk,
}

/// What a read does with a value that does not fit the type asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnOverflow {
    /// Fail, naming the field, the entry and the value.
    #[default]
    Raise,
    /// Read the value as null (the field becomes nullable).
    Mask,
}

/// A value for a record member that is not on disk.
#[derive(Debug, Clone, PartialEq)]
pub enum DefaultValue {
    /// `true` or `false`.
    Bool(bool),
    /// A whole number.
    Int(i128),
    /// A real number.
    Float(f64),
    /// A string.
    Text(String),
}

/// The types fields are read as (see [`RNTupleReader::projection_as`](super::RNTupleReader::projection_as)).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadTypes {
    /// Each field path's type.
    types: Vec<(String, ReadAs)>,
    defaults: Vec<(String, DefaultValue)>,
    on_overflow: OnOverflow,
}

impl ReadTypes {
    /// No conversion: every field as it is on disk.
    pub fn new() -> ReadTypes {
        ReadTypes::default()
    }

    /// Field `path` (a top-level field, or a member path such as `evo.a`, `Jet._0.pt`)
    /// read as `read_as`.
    pub fn with_type(mut self, path: impl Into<String>, read_as: ReadAs) -> ReadTypes {
        self.types.push((path.into(), read_as));
        self
    }

    /// The value of an added record member (`evo.c`) in every entry, instead of null.
    pub fn with_default(mut self, path: impl Into<String>, value: DefaultValue) -> ReadTypes {
        self.defaults.push((path.into(), value));
        self
    }

    /// What to do with a value that does not fit.
    pub fn on_overflow(mut self, on_overflow: OnOverflow) -> ReadTypes {
        self.on_overflow = on_overflow;
        self
    }

    /// Whether nothing is converted.
    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }
}

// --- the requested types --------------------------------------------------------------

/// A sequence template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum SeqKind {
    Vector,
    RVec,
    Set,
    UnorderedSet,
    Multiset,
    UnorderedMultiset,
}

/// A map template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum MapKind {
    Map,
    UnorderedMap,
    Multimap,
    UnorderedMultimap,
}

impl MapKind {
    pub(super) fn unique(self) -> bool {
        matches!(self, MapKind::Map | MapKind::UnorderedMap)
    }
}

/// A requested type, parsed.
#[derive(Debug, Clone)]
enum Target {
    Primitive(PrimitiveType),
    String,
    Seq(SeqKind, Box<Target>),
    Map(MapKind, Box<Target>, Box<Target>),
    Optional(Box<Target>),
    Array(Box<Target>, u64),
    Bitset(u64),
    /// A pair (`true`) or tuple.
    Tuple(bool, Vec<Target>),
    Variant(Vec<Target>),
    Atomic(Box<Target>),
    /// A class or enum, by name.
    Named,
    /// Members by name.
    Members(Vec<(String, Target)>),
    /// As on disk.
    Keep,
}

/// A requested type with its normalized C++ name (empty for a record of members).
#[derive(Debug, Clone)]
struct Want {
    name: String,
    target: Target,
}

/// NumPy's names of the fundamental types, as C++ names.
fn numpy_alias(name: &str) -> Option<&'static str> {
    Some(match name.trim() {
        "float32" => "float",
        "float64" => "double",
        "int8" => "std::int8_t",
        "uint8" => "std::uint8_t",
        "int16" => "std::int16_t",
        "uint16" => "std::uint16_t",
        "int32" => "std::int32_t",
        "uint32" => "std::uint32_t",
        "int64" => "std::int64_t",
        "uint64" => "std::uint64_t",
        _ => return None,
    })
}

impl Want {
    fn parse(read_as: &ReadAs) -> Result<Want> {
        match read_as {
            ReadAs::Type(text) => {
                let text = numpy_alias(text).unwrap_or(text);
                let parsed = parse_type_name(text)?;
                Ok(Want {
                    name: parsed.type_name(),
                    target: target_of(&parsed)?,
                })
            }
            ReadAs::AsOnDisk => Ok(Want {
                name: String::new(),
                target: Target::Keep,
            }),
            ReadAs::Record(members) => {
                let mut seen = std::collections::HashSet::new();
                let mut out = Vec::with_capacity(members.len());
                for (name, m) in members {
                    if !seen.insert(name.as_str()) {
                        return Err(Error::InvalidArgument(format!(
                            "record member \"{name}\" is given twice"
                        )));
                    }
                    out.push((name.clone(), Want::parse(m)?));
                }
                Ok(Want {
                    name: String::new(),
                    target: Target::Members(out.into_iter().map(|(n, w)| (n, w.target)).collect()),
                })
            }
        }
    }
}

fn target_of(t: &CppType) -> Result<Target> {
    let arg = |i: usize| -> Result<Target> { target_of(t.type_arg(i)?) };
    let arity = |n: usize| -> Result<()> {
        if t.args.len() == n {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!(
                "type \"{}\" takes {n} template argument{}",
                t.type_name(),
                if n == 1 { "" } else { "s" }
            )))
        }
    };
    if let Some(p) = PrimitiveType::from_type_name(&t.name) {
        if t.args.is_empty() {
            return Ok(Target::Primitive(p));
        }
    }
    let seq = |kind| -> Result<Target> {
        arity(1)?;
        Ok(Target::Seq(kind, Box::new(arg(0)?)))
    };
    let map = |kind| -> Result<Target> {
        arity(2)?;
        Ok(Target::Map(kind, Box::new(arg(0)?), Box::new(arg(1)?)))
    };
    Ok(match t.name.as_str() {
        "std::string" => Target::String,
        "std::vector" => seq(SeqKind::Vector)?,
        "ROOT::VecOps::RVec" => seq(SeqKind::RVec)?,
        "std::set" => seq(SeqKind::Set)?,
        "std::unordered_set" => seq(SeqKind::UnorderedSet)?,
        "std::multiset" => seq(SeqKind::Multiset)?,
        "std::unordered_multiset" => seq(SeqKind::UnorderedMultiset)?,
        "std::map" => map(MapKind::Map)?,
        "std::unordered_map" => map(MapKind::UnorderedMap)?,
        "std::multimap" => map(MapKind::Multimap)?,
        "std::unordered_multimap" => map(MapKind::UnorderedMultimap)?,
        "std::optional" | "std::unique_ptr" => {
            arity(1)?;
            Target::Optional(Box::new(arg(0)?))
        }
        "std::atomic" => {
            arity(1)?;
            Target::Atomic(Box::new(arg(0)?))
        }
        "std::array" => {
            arity(2)?;
            Target::Array(Box::new(arg(0)?), t.int_arg(1)?)
        }
        "std::bitset" => {
            arity(1)?;
            Target::Bitset(t.int_arg(0)?)
        }
        "std::pair" => {
            arity(2)?;
            Target::Tuple(true, vec![arg(0)?, arg(1)?])
        }
        "std::tuple" => Target::Tuple(
            false,
            t.type_args()?
                .into_iter()
                .map(target_of)
                .collect::<Result<_>>()?,
        ),
        "std::variant" => Target::Variant(
            t.type_args()?
                .into_iter()
                .map(target_of)
                .collect::<Result<_>>()?,
        ),
        _ if t.args.iter().all(|a| matches!(a, TemplateArg::Type(_))) => Target::Named,
        _ => Target::Named,
    })
}

// --- the plan ---------------------------------------------------------------------------

/// How one array is converted.
#[derive(Debug, Clone)]
enum Node {
    /// Unchanged.
    Same,
    /// Integers, bools or reals to the primitive `to`.
    Number(PrimitiveType),
    /// Nullable from now on (`std::optional<T>` of a `T`).
    Nullable(Box<Node>),
    /// A list's items converted (and sorted per list for an ordered multiset).
    List(Box<Node>, bool),
    /// A nullable value as a list of zero or one item.
    OptionalToList(Box<Node>),
    /// A fixed-size list as a list.
    ArrayToList(Box<Node>),
    /// A fixed-size list's items converted.
    Array(Box<Node>),
    /// A map as a list of pairs.
    MapToList(Box<Node>, Box<Node>),
    /// A list of pairs as a map (sorted by key for an ordered multimap).
    ListToMap(Box<Node>, Box<Node>, bool),
    /// A map's keys and values converted.
    Map(Box<Node>, Box<Node>),
    /// Record members: each taken from a member on disk (by its index) or added.
    Record(Vec<Member>),
    /// A variant's alternatives converted.
    Union(Vec<Node>),
}

#[derive(Debug, Clone)]
enum Member {
    Disk(usize, Node),
    Added(Option<DefaultValue>),
}

/// The conversion of one output column: how, and the field it makes.
#[derive(Debug, Clone)]
pub(crate) struct Conversion {
    node: Node,
    /// The output column's field.
    pub(crate) field: FieldRef,
    /// The qualified name of the field read, for messages.
    path: String,
    on_overflow: OnOverflow,
}

/// What the planner needs at each field.
struct Planner<'a> {
    desc: &'a Descriptor,
    /// Requested types by field id.
    wanted: HashMap<u32, Want>,
    /// Defaults by the qualified path of an added member (`evo.c`).
    defaults: HashMap<String, DefaultValue>,
    on_overflow: OnOverflow,
    /// Defaults used, to report those that named nothing.
    used_defaults: std::cell::RefCell<std::collections::HashSet<String>>,
}

/// The conversions of a projection's columns (`None`: read as on disk), checked against
/// the descriptor before anything is read. `columns` are the output columns' field ids and
/// Arrow fields as decoded.
pub(crate) fn plan(
    desc: &Descriptor,
    columns: &[(u32, FieldRef)],
    types: &ReadTypes,
    no_field: impl Fn(&str) -> Error,
) -> Result<Vec<Option<Conversion>>> {
    let mut wanted = HashMap::new();
    for (path, read_as) in &types.types {
        if *read_as == ReadAs::AsOnDisk {
            continue;
        }
        let id = desc.find_field(path).ok_or_else(|| no_field(path))?;
        let want = Want::parse(read_as).map_err(|e| match e {
            Error::InvalidArgument(m) => {
                Error::InvalidArgument(format!("the type asked for field \"{path}\": {m}"))
            }
            other => other,
        })?;
        if wanted.insert(id, want).is_some() {
            return Err(Error::InvalidArgument(format!(
                "field \"{path}\" is given two types"
            )));
        }
    }
    // A type for a field and another for a field below it: the outer one decides.
    for &id in wanted.keys() {
        let mut up = desc.field(id).parent;
        while let Some(p) = up {
            if wanted.contains_key(&p) {
                return Err(Error::InvalidArgument(format!(
                    "types are given for field \"{}\" and for \"{}\" inside it: give one",
                    desc.qualified_name(p),
                    desc.qualified_name(id)
                )));
            }
            up = desc.field(p).parent;
        }
    }
    let planner = Planner {
        desc,
        wanted,
        defaults: types.defaults.iter().cloned().collect(),
        on_overflow: types.on_overflow,
        used_defaults: Default::default(),
    };
    let out = columns
        .iter()
        .map(|(id, field)| {
            if !planner.touches(*id) {
                return Ok(None);
            }
            let (node, out_field) = planner.field(*id, field)?;
            Ok(match node {
                Node::Same => None,
                node => Some(Conversion {
                    node,
                    field: Arc::new(out_field),
                    path: desc.qualified_name(*id),
                    on_overflow: types.on_overflow,
                }),
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let used = planner.used_defaults.borrow();
    // A default of a record this read does not hold is not checked here (a read of other
    // fields, or a file of a chain that reads none of this one).
    let read = |path: &str| {
        let record = path.rsplit_once('.').map_or(path, |(head, _)| head);
        let mut at = desc.find_field(record);
        while let Some(id) = at {
            if columns.iter().any(|(c, _)| *c == id) {
                return true;
            }
            at = desc.field(id).parent;
        }
        // A record that is not there at all: a mistake, named below.
        desc.find_field(record).is_none()
    };
    if let Some((path, _)) = types
        .defaults
        .iter()
        .find(|(p, _)| !used.contains(p) && read(p))
    {
        return Err(Error::InvalidArgument(format!(
            "a default is given for \"{path}\", which is not a member added by the types asked for"
        )));
    }
    Ok(out)
}

fn with_type_name(field: Field, name: &str) -> Field {
    let mut md = field.metadata().clone();
    md.insert(TYPE_NAME_KEY.to_string(), name.to_string());
    field.with_metadata(md)
}

fn refuse(desc: &Descriptor, id: u32, want: &str, why: &str) -> Error {
    let on_disk = desc.field(id).type_name();
    Error::IncompatibleType(format!(
        "field \"{}\" of type \"{on_disk}\" cannot be read as \"{want}\"{}{why}",
        desc.qualified_name(id),
        if why.is_empty() { "" } else { ": " }
    ))
}

impl Planner<'_> {
    /// Whether field `id` or one below it has a requested type.
    fn touches(&self, id: u32) -> bool {
        self.wanted.keys().any(|&w| {
            let mut cur = Some(w);
            while let Some(c) = cur {
                if c == id {
                    return true;
                }
                cur = self.desc.field(c).parent;
            }
            false
        })
    }

    /// Field `id` (decoded as `field`) as requested, or as on disk with the requested
    /// types below it.
    fn field(&self, id: u32, field: &Field) -> Result<(Node, Field)> {
        if let Some(want) = self.wanted.get(&id) {
            let path = self.desc.qualified_name(id);
            return self
                .convert(id, field, &want.target, &want.name, &path)
                .map_err(|e| match e {
                    // A part refused: say which field and types were asked for, too.
                    Error::IncompatibleType(m) => {
                        let disk = self.desc.field(id).type_name();
                        let asked = if want.name.is_empty() {
                            "its members as given"
                        } else {
                            &want.name
                        };
                        let head = format!(
                            "field \"{path}\" of type \"{disk}\" cannot be read as \"{asked}\""
                        );
                        if m.starts_with(&head) {
                            return Error::IncompatibleType(m);
                        }
                        // The same field refused as a part of the type asked (the T of an
                        // optional<T>): its reason alone.
                        let same =
                            format!("field \"{path}\" of type \"{disk}\" cannot be read as ");
                        let reason = match m.strip_prefix(&same).and_then(|r| r.split_once("\": "))
                        {
                            Some((_, why)) => why.to_string(),
                            None if m.starts_with(&same) => String::new(),
                            None => m,
                        };
                        Error::IncompatibleType(if reason.is_empty() {
                            head
                        } else {
                            format!("{head}: {reason}")
                        })
                    }
                    other => other,
                });
        }
        if !self.touches(id) {
            return Ok((Node::Same, field.clone()));
        }
        let d = self.desc;
        let name = d.field(id).type_name().to_string();
        // As on disk, with the requested types below: the same kind, its parts planned.
        let same = |t: Target| Want {
            name: name.clone(),
            target: t,
        };
        let kind = d.field_kind(id);
        match kind {
            FieldKind::Record(_, _)
            | FieldKind::List(_)
            | FieldKind::Optional(_)
            | FieldKind::Array(..)
            | FieldKind::Map(_)
            | FieldKind::Variant(_)
            | FieldKind::Wrapper(_) => self.structural(id, field, &same(Target::Named)),
            _ => Ok((Node::Same, field.clone())),
        }
    }

    /// The parts of field `id` as on disk, each planned (`want` is the field's own type).
    fn structural(&self, id: u32, field: &Field, want: &Want) -> Result<(Node, Field)> {
        let d = self.desc;
        match (d.field_kind(id), field.data_type()) {
            (FieldKind::List(child), DataType::LargeList(item)) => {
                let (node, item) = self.field(child, item)?;
                Ok(list_of(
                    field,
                    Node::List(Box::new(node), false),
                    item,
                    &want.name,
                ))
            }
            (FieldKind::Optional(child) | FieldKind::Wrapper(child), _) => {
                let inner = Field::new(field.name(), field.data_type().clone(), false)
                    .with_metadata(field.metadata().clone());
                let (node, out) = self.field(child, &inner)?;
                Ok((
                    node,
                    with_type_name(out.with_nullable(field.is_nullable()), &want.name)
                        .with_name(field.name()),
                ))
            }
            (FieldKind::Array(child, _), DataType::FixedSizeList(item, n)) => {
                let (node, item) = self.field(child, item)?;
                let dt = DataType::FixedSizeList(Arc::new(item), *n);
                Ok((Node::Array(Box::new(node)), rebuilt(field, dt, &want.name)))
            }
            (FieldKind::Map(pair), DataType::Map(entries, sorted)) => {
                let (k, v) = self.pair_children(pair)?;
                let DataType::Struct(kv) = entries.data_type() else {
                    return Ok((Node::Same, field.clone()));
                };
                let (kn, kf) = self.field(k, &kv[0])?;
                let (vn, vf) = self.field(v, &kv[1])?;
                let entries = Field::new(
                    entries.name(),
                    DataType::Struct(Fields::from(vec![kf, vf])),
                    false,
                )
                .with_metadata(entries.metadata().clone());
                let dt = DataType::Map(Arc::new(entries), *sorted);
                Ok((
                    Node::Map(Box::new(kn), Box::new(vn)),
                    rebuilt(field, dt, &want.name),
                ))
            }
            (FieldKind::Record(..), DataType::Struct(fields)) => {
                let mut members = Vec::with_capacity(fields.len());
                let mut out = Vec::with_capacity(fields.len());
                for (i, f) in fields.iter().enumerate() {
                    let child = self.member_id(id, f.name())?;
                    let (node, of) = self.field(child, f)?;
                    members.push(Member::Disk(i, node));
                    out.push(of);
                }
                let dt = DataType::Struct(Fields::from(out));
                Ok((Node::Record(members), rebuilt(field, dt, &want.name)))
            }
            (FieldKind::Variant(children), DataType::Union(alts, mode)) => {
                let mut nodes = Vec::new();
                let mut out = Vec::new();
                for ((_, f), &c) in alts.iter().zip(&children) {
                    let (node, of) = self.field(c, f)?;
                    nodes.push(node);
                    out.push(of.with_nullable(true));
                }
                let ids: Vec<i8> = alts.iter().map(|(i, _)| i).collect();
                let dt = DataType::Union(UnionFields::try_new(ids, out)?, *mode);
                Ok((Node::Union(nodes), rebuilt(field, dt, &want.name)))
            }
            _ => Ok((Node::Same, field.clone())),
        }
    }

    fn pair_children(&self, pair: u32) -> Result<(u32, u32)> {
        match self.desc.field(pair).children.as_slice() {
            [k, v] => Ok((*k, *v)),
            _ => Err(Error::corrupt(
                "schema",
                format!(
                    "map item \"{}\" is not a pair",
                    self.desc.qualified_name(pair)
                ),
            )),
        }
    }

    fn member_id(&self, record: u32, name: &str) -> Result<u32> {
        self.desc
            .field(record)
            .children
            .iter()
            .copied()
            .find(|&c| self.desc.field(c).name() == name)
            .ok_or_else(|| {
                Error::corrupt(
                    "schema",
                    format!(
                        "record \"{}\" has no member \"{name}\"",
                        self.desc.qualified_name(record)
                    ),
                )
            })
    }

    /// Field `id`, decoded as `field`, read as `target` (named `want` in messages);
    /// `path` is where an added member's default is looked up.
    fn convert(
        &self,
        id: u32,
        field: &Field,
        target: &Target,
        want: &str,
        path: &str,
    ) -> Result<(Node, Field)> {
        let d = self.desc;
        let disk_name = d.field(id).type_name();
        let kind = d.field_kind(id);
        let refuse = |why: &str| Err(refuse(d, id, want, why));
        if let Target::Keep = target {
            return Ok((Node::Same, field.clone()));
        }
        // The same type: nothing to do (a class by name included).
        if !want.is_empty() && want == disk_name && !matches!(target, Target::Members(_)) {
            return Ok((Node::Same, field.clone()));
        }
        // std::atomic<T> reads as T, and T as std::atomic<T>.
        if let Target::Atomic(inner) = target {
            let inner_name = want
                .strip_prefix("std::atomic<")
                .and_then(|s| s.strip_suffix('>'))
                .unwrap_or(want);
            let (node, out) = self.convert(id, field, inner, inner_name, path)?;
            return Ok((node, with_type_name(out, want)));
        }
        if let FieldKind::Wrapper(child) = kind {
            let inner = Field::new(field.name(), field.data_type().clone(), false)
                .with_metadata(field.metadata().clone());
            if !disk_name.starts_with("std::atomic<") {
                // An enum: its integer, as a number or bool by the rules of numbers (not
                // as another enum, whose integer type only a dictionary would tell).
                match target {
                    Target::Primitive(p) if *p != PrimitiveType::Byte => {}
                    Target::Optional(_) => {}
                    Target::Named => {
                        return refuse(
                            "an enum or class type other than the one on disk is unknown here \
                             (ask for its underlying integer type, e.g. \"std::int16_t\")",
                        )
                    }
                    _ => return refuse("an enum reads only as a number or bool"),
                }
            }
            let (node, out) = self.convert(child, &inner, target, want, path)?;
            let nullable = out.is_nullable() || field.is_nullable();
            return Ok((node, out.with_nullable(nullable).with_name(field.name())));
        }
        match (target, &kind) {
            (Target::Optional(inner), FieldKind::Optional(child)) => {
                let inner_name = template_arg_name(want);
                let plain = Field::new(field.name(), field.data_type().clone(), false)
                    .with_metadata(field.metadata().clone());
                let (node, out) = self.convert(*child, &plain, inner, &inner_name, path)?;
                Ok((node, with_type_name(out.with_nullable(true), want)))
            }
            (Target::Optional(inner), _) => {
                // Always present: the value itself, made nullable.
                let (node, out) = self.convert(id, field, inner, &template_arg_name(want), path)?;
                Ok((
                    Node::Nullable(Box::new(node)),
                    with_type_name(out.with_nullable(true), want),
                ))
            }
            (_, FieldKind::Optional(_)) if !matches!(target, Target::Seq(..)) => refuse(
                "a value that may be missing cannot be read as one that is always there \
                 (ask for std::optional or a vector)",
            ),
            (Target::Primitive(to), FieldKind::Primitive(from)) => {
                self.number(id, field, *from, *to, want)
            }
            (Target::Primitive(to), FieldKind::Cardinality(wide)) => {
                let from = if *wide {
                    PrimitiveType::UInt64
                } else {
                    PrimitiveType::UInt32
                };
                self.number(id, field, from, *to, want)
            }
            (Target::String, FieldKind::String) => {
                Ok((Node::Same, with_type_name(field.clone(), want)))
            }
            (Target::Seq(kind_to, item), FieldKind::List(child)) => {
                let from = seq_kind_of(disk_name);
                if matches!(kind_to, SeqKind::Set | SeqKind::UnorderedSet)
                    && !matches!(from, Some(SeqKind::Set | SeqKind::UnorderedSet))
                {
                    return refuse("a set reads only from a set (its items must be unique)");
                }
                let DataType::LargeList(item_field) = field.data_type() else {
                    return refuse("unexpected storage");
                };
                let (node, out_item) =
                    self.convert(*child, item_field, item, &template_arg_name(want), path)?;
                let sort = *kind_to == SeqKind::Multiset
                    && from != Some(SeqKind::Multiset)
                    && from != Some(SeqKind::Set);
                Ok(list_of(
                    field,
                    Node::List(Box::new(node), sort),
                    out_item,
                    want,
                ))
            }
            (Target::Seq(SeqKind::Vector | SeqKind::RVec, item), FieldKind::Optional(child)) => {
                let plain = Field::new(field.name(), field.data_type().clone(), false)
                    .with_metadata(field.metadata().clone());
                let item_name = template_arg_name(want);
                let (node, out_item) = self.convert(*child, &plain, item, &item_name, path)?;
                let out_item = out_item.with_name("_0");
                let dt = DataType::LargeList(Arc::new(out_item));
                Ok((
                    Node::OptionalToList(Box::new(node)),
                    rebuilt(field, dt, want).with_nullable(false),
                ))
            }
            (Target::Seq(SeqKind::Vector | SeqKind::RVec, item), FieldKind::Array(child, _)) => {
                let DataType::FixedSizeList(item_field, _) = field.data_type() else {
                    return refuse("unexpected storage");
                };
                let (node, out_item) =
                    self.convert(*child, item_field, item, &template_arg_name(want), path)?;
                let dt = DataType::LargeList(Arc::new(out_item));
                Ok((Node::ArrayToList(Box::new(node)), rebuilt(field, dt, want)))
            }
            (Target::Seq(kind_to, item), FieldKind::Map(pair)) => {
                // A map as a sequence of its pairs (vector, RVec, set or multiset of pairs).
                let _ = kind_to;
                let DataType::Map(entries, _) = field.data_type() else {
                    return refuse("unexpected storage");
                };
                let Target::Tuple(_, parts) = item.as_ref() else {
                    return refuse("a map reads as a collection of pairs or 2-tuples only");
                };
                let [kt, vt] = parts.as_slice() else {
                    return refuse("a map's items are pairs: 2 members");
                };
                let (k, v) = self.pair_children(*pair)?;
                let DataType::Struct(kv) = entries.data_type() else {
                    return refuse("unexpected storage");
                };
                let item_name = template_arg_name(want);
                let (kn, kf) =
                    self.convert(k, &kv[0], kt, &template_arg_at(&item_name, 0), path)?;
                let (vn, vf) =
                    self.convert(v, &kv[1], vt, &template_arg_at(&item_name, 1), path)?;
                let pair_field = with_type_name(
                    Field::new(
                        "_0",
                        DataType::Struct(Fields::from(vec![
                            kf.with_name("_0"),
                            vf.with_name("_1"),
                        ])),
                        false,
                    ),
                    &item_name,
                );
                let dt = DataType::LargeList(Arc::new(pair_field));
                Ok((
                    Node::MapToList(Box::new(kn), Box::new(vn)),
                    rebuilt(field, dt, want),
                ))
            }
            (Target::Map(kind_to, kt, vt), FieldKind::Map(pair)) => {
                let from_unique = matches!(
                    map_kind_of(disk_name),
                    Some(MapKind::Map | MapKind::UnorderedMap)
                );
                if kind_to.unique() && !from_unique {
                    return refuse("a map reads only from a map with unique keys");
                }
                let DataType::Map(entries, sorted) = field.data_type() else {
                    return refuse("unexpected storage");
                };
                let DataType::Struct(kv) = entries.data_type() else {
                    return refuse("unexpected storage");
                };
                let (k, v) = self.pair_children(*pair)?;
                let (kn, kf) = self.convert(k, &kv[0], kt, &template_arg_at(want, 0), path)?;
                let (vn, vf) = self.convert(v, &kv[1], vt, &template_arg_at(want, 1), path)?;
                let entries = Field::new(
                    entries.name(),
                    DataType::Struct(Fields::from(vec![
                        kf.with_name("key"),
                        vf.with_name("value"),
                    ])),
                    false,
                )
                .with_metadata(entries.metadata().clone());
                let dt = DataType::Map(Arc::new(entries), *sorted);
                Ok((
                    Node::Map(Box::new(kn), Box::new(vn)),
                    rebuilt(field, dt, want),
                ))
            }
            (Target::Map(kind_to, kt, vt), FieldKind::List(child)) => {
                if kind_to.unique() {
                    return refuse("a map reads only from a map with unique keys");
                }
                let DataType::LargeList(item_field) = field.data_type() else {
                    return refuse("unexpected storage");
                };
                let (FieldKind::Record(_, parts), DataType::Struct(kv)) =
                    (d.field_kind(*child), item_field.data_type())
                else {
                    return refuse("a multimap reads only from a collection of pairs");
                };
                let (true, [k, v]) = (is_pair_like(d.field(*child).type_name()), parts.as_slice())
                else {
                    return refuse("a multimap reads only from a collection of pairs");
                };
                let (kn, kf) = self.convert(*k, &kv[0], kt, &template_arg_at(want, 0), path)?;
                let (vn, vf) = self.convert(*v, &kv[1], vt, &template_arg_at(want, 1), path)?;
                let entries = with_type_name(
                    Field::new(
                        "entries",
                        DataType::Struct(Fields::from(vec![
                            kf.with_name("key").with_nullable(false),
                            vf.with_name("value"),
                        ])),
                        false,
                    ),
                    &format!(
                        "std::pair<{},{}>",
                        template_arg_at(want, 0),
                        template_arg_at(want, 1)
                    ),
                );
                let sort = *kind_to == MapKind::Multimap;
                let dt = DataType::Map(Arc::new(entries), false);
                Ok((
                    Node::ListToMap(Box::new(kn), Box::new(vn), sort),
                    rebuilt(field, dt, want),
                ))
            }
            (Target::Array(item, n), FieldKind::Array(child, m)) => {
                if n != m {
                    return refuse(&format!("it holds {m} items, not {n}"));
                }
                let DataType::FixedSizeList(item_field, size) = field.data_type() else {
                    return refuse("unexpected storage");
                };
                let (node, out_item) =
                    self.convert(*child, item_field, item, &template_arg_name(want), path)?;
                let dt = DataType::FixedSizeList(Arc::new(out_item), *size);
                Ok((Node::Array(Box::new(node)), rebuilt(field, dt, want)))
            }
            (Target::Bitset(n), FieldKind::Bitset(m)) if n == m => {
                Ok((Node::Same, with_type_name(field.clone(), want)))
            }
            (
                Target::Tuple(_, parts),
                FieldKind::Record(
                    crate::schema::RecordStyle::Pair | crate::schema::RecordStyle::Tuple,
                    children,
                ),
            ) => {
                if parts.len() != children.len() {
                    return refuse(&format!(
                        "it has {} members, not {}",
                        children.len(),
                        parts.len()
                    ));
                }
                let DataType::Struct(fields) = field.data_type() else {
                    return refuse("unexpected storage");
                };
                let mut members = Vec::new();
                let mut out = Vec::new();
                for (i, ((part, &c), f)) in
                    parts.iter().zip(children).zip(fields.iter()).enumerate()
                {
                    let (node, of) = self.convert(c, f, part, &template_arg_at(want, i), path)?;
                    members.push(Member::Disk(i, node));
                    out.push(of.with_name(f.name()));
                }
                Ok((
                    Node::Record(members),
                    rebuilt(field, DataType::Struct(Fields::from(out)), want),
                ))
            }
            (Target::Members(members), FieldKind::Record(_, _)) => {
                let DataType::Struct(fields) = field.data_type() else {
                    return refuse("unexpected storage");
                };
                let mut plan = Vec::new();
                let mut out = Vec::new();
                for (name, t) in members {
                    let member_path = format!("{path}.{name}");
                    let member_want = target_name(t);
                    match fields.iter().position(|f| f.name() == name) {
                        Some(i) => {
                            let child = self.member_id(id, name)?;
                            let (node, of) =
                                if member_want.is_empty() && !matches!(t, Target::Members(_)) {
                                    (Node::Same, fields[i].as_ref().clone())
                                } else {
                                    self.convert(child, &fields[i], t, &member_want, &member_path)?
                                };
                            plan.push(Member::Disk(i, node));
                            out.push(of.with_name(name));
                        }
                        None => {
                            let default = self.defaults.get(&member_path).cloned();
                            if default.is_some() {
                                self.used_defaults.borrow_mut().insert(member_path.clone());
                            }
                            let dt = target_data_type(t, &member_want)
                                .map_err(|why| refuse_member(d, id, name, &why))?;
                            if let Some(v) = &default {
                                check_default(v, &dt).map_err(|why| {
                                    Error::InvalidArgument(format!(
                                        "the default of \"{member_path}\": {why}"
                                    ))
                                })?;
                            }
                            plan.push(Member::Added(default.clone()));
                            out.push(with_type_name(
                                Field::new(name, dt, default.is_none()),
                                &member_want,
                            ));
                        }
                    }
                }
                let name = if want.is_empty() { disk_name } else { want };
                Ok((
                    Node::Record(plan),
                    rebuilt(field, DataType::Struct(Fields::from(out)), name),
                ))
            }
            (Target::Variant(alts), FieldKind::Variant(children)) => {
                if alts.len() != children.len() {
                    return refuse(&format!(
                        "it has {} alternatives, not {}",
                        children.len(),
                        alts.len()
                    ));
                }
                let DataType::Union(fields, mode) = field.data_type() else {
                    return refuse("unexpected storage");
                };
                let mut nodes = Vec::new();
                let mut out = Vec::new();
                for (i, ((alt, &c), (_, f))) in
                    alts.iter().zip(children).zip(fields.iter()).enumerate()
                {
                    let (node, of) = self.convert(c, f, alt, &template_arg_at(want, i), path)?;
                    nodes.push(node);
                    out.push(of.with_nullable(true).with_name(f.name()));
                }
                let ids: Vec<i8> = fields.iter().map(|(i, _)| i).collect();
                let dt = DataType::Union(UnionFields::try_new(ids, out)?, *mode);
                Ok((Node::Union(nodes), rebuilt(field, dt, want)))
            }
            (Target::Named, FieldKind::Record(..)) => {
                refuse("a class reads only as itself (by the same name) or member by member")
            }
            (Target::Named, FieldKind::Streamer) => {
                refuse("a streamer field reads only as its own class")
            }
            (Target::Seq(..), FieldKind::Primitive(_) | FieldKind::String)
            | (Target::Map(..), FieldKind::Primitive(_) | FieldKind::String) => {
                refuse("a single value cannot be read as a collection")
            }
            (
                Target::Primitive(_) | Target::String,
                FieldKind::List(_)
                | FieldKind::Map(_)
                | FieldKind::Array(..)
                | FieldKind::Bitset(_),
            ) => refuse("a collection cannot be read as a single value"),
            _ => refuse(""),
        }
    }

    /// A number read as another.
    fn number(
        &self,
        id: u32,
        field: &Field,
        from: PrimitiveType,
        to: PrimitiveType,
        want: &str,
    ) -> Result<(Node, Field)> {
        let refuse = |why: &str| Err(refuse(self.desc, id, want, why));
        let out = |nullable: bool| {
            with_type_name(
                Field::new(field.name(), primitive_data_type(to), nullable),
                want,
            )
        };
        let masked = self.on_overflow == OnOverflow::Mask;
        match number_fit(from, to) {
            Fit::Always => Ok((Node::Number(to), out(field.is_nullable()))),
            Fit::PerValue => Ok((Node::Number(to), out(field.is_nullable() || masked))),
            Fit::Refused(why) => refuse(why),
        }
    }
}

/// How every value of one number type reads as another ([`number_fit`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fit {
    /// Every value reads (widening; any integer as `bool`, nonzero as true, as ROOT).
    Always,
    /// Some values may not: each is checked as it is read (integer narrowing and sign
    /// changes, `double` to `float`, an integer to a real too narrow to hold them all).
    PerValue,
    /// Refused before anything is read, for the reason given.
    Refused(&'static str),
}

/// The one rule of numbers, for a caller's `types=` and for [`super::unified`] alike: how the
/// values of `from` read as `to`. Checked per value: an integer out of `to`'s range; a
/// `double` whose floating-point class changes as a `float` (ROOT's check: precision
/// may be lost, as ROOT reads it); an integer that does not read back exactly as the
/// real asked for (ROOT 6.40 refuses every integer as a real; uproot and NumPy promote
/// silently, losing digits past 2**53).
pub(super) fn number_fit(from: PrimitiveType, to: PrimitiveType) -> Fit {
    use PrimitiveType::*;
    let integral_or_bool = |p: PrimitiveType| is_integral(p) || p == Bool;
    if from == to || (matches!(from, Char | Int8) && matches!(to, Char | Int8)) {
        return Fit::Always;
    }
    if from == Byte || to == Byte {
        return Fit::Refused("std::byte reads only from std::byte");
    }
    match (from, to) {
        (f, Bool) if integral_or_bool(f) => Fit::Always,
        (f, t) if integral_or_bool(f) && is_integral(t) => {
            if fits_always(f, t) {
                Fit::Always
            } else {
                Fit::PerValue
            }
        }
        (Float32 | Float64, Float64) => Fit::Always,
        (Float64, Float32) => Fit::PerValue,
        (f, Float32 | Float64) if integral_or_bool(f) => {
            if exact_in_real(f, to) {
                Fit::Always
            } else {
                Fit::PerValue
            }
        }
        (Float32 | Float64, _) => Fit::Refused("a real number is not read as an integer or bool"),
        _ => Fit::Refused(""),
    }
}

/// Whether every integer of `from` is exactly a value of the real type `to` (its
/// significand holds 24 bits for `float`, 53 for `double`).
fn exact_in_real(from: PrimitiveType, to: PrimitiveType) -> bool {
    let bits = if to == PrimitiveType::Float32 { 24 } else { 53 };
    let (lo, hi) = int_range(from);
    -(1i128 << bits) <= lo && hi <= 1i128 << bits
}

fn refuse_member(desc: &Descriptor, record: u32, member: &str, why: &str) -> Error {
    Error::IncompatibleType(format!(
        "member \"{member}\" added to record \"{}\": {why}",
        desc.qualified_name(record)
    ))
}

fn is_integral(p: PrimitiveType) -> bool {
    use PrimitiveType::*;
    matches!(
        p,
        Char | Int8 | UInt8 | Int16 | UInt16 | Int32 | UInt32 | Int64 | UInt64
    )
}

/// The range of an integral type (bool: 0..=1).
pub(super) fn int_range(p: PrimitiveType) -> (i128, i128) {
    use PrimitiveType::*;
    match p {
        Bool => (0, 1),
        Char | Int8 => (i8::MIN.into(), i8::MAX.into()),
        UInt8 | Byte => (0, u8::MAX.into()),
        Int16 => (i16::MIN.into(), i16::MAX.into()),
        UInt16 => (0, u16::MAX.into()),
        Int32 => (i32::MIN.into(), i32::MAX.into()),
        UInt32 => (0, u32::MAX.into()),
        Int64 => (i64::MIN.into(), i64::MAX.into()),
        UInt64 | Float32 | Float64 => (0, u64::MAX.into()),
    }
}

/// Whether every value of `from` fits `to`.
fn fits_always(from: PrimitiveType, to: PrimitiveType) -> bool {
    let (a, b) = int_range(from);
    let (c, d) = int_range(to);
    c <= a && b <= d
}

pub(super) fn seq_kind_of(type_name: &str) -> Option<SeqKind> {
    let head = type_name.split('<').next()?;
    Some(match head {
        "std::vector" => SeqKind::Vector,
        "ROOT::VecOps::RVec" => SeqKind::RVec,
        "std::set" => SeqKind::Set,
        "std::unordered_set" => SeqKind::UnorderedSet,
        "std::multiset" => SeqKind::Multiset,
        "std::unordered_multiset" => SeqKind::UnorderedMultiset,
        _ => return None,
    })
}

pub(super) fn map_kind_of(type_name: &str) -> Option<MapKind> {
    Some(match type_name.split('<').next()? {
        "std::map" => MapKind::Map,
        "std::unordered_map" => MapKind::UnorderedMap,
        "std::multimap" => MapKind::Multimap,
        "std::unordered_multimap" => MapKind::UnorderedMultimap,
        _ => return None,
    })
}

fn is_pair_like(type_name: &str) -> bool {
    type_name.starts_with("std::pair<") || type_name.starts_with("std::tuple<")
}

/// The C++ name of a requested type (empty for a record of members).
fn target_name(t: &Target) -> String {
    match t {
        Target::Primitive(p) => p.type_name().to_string(),
        Target::String => "std::string".into(),
        Target::Seq(k, item) => {
            let head = match k {
                SeqKind::Vector => "std::vector",
                SeqKind::RVec => "ROOT::VecOps::RVec",
                SeqKind::Set => "std::set",
                SeqKind::UnorderedSet => "std::unordered_set",
                SeqKind::Multiset => "std::multiset",
                SeqKind::UnorderedMultiset => "std::unordered_multiset",
            };
            format!("{head}<{}>", target_name(item))
        }
        Target::Map(k, key, value) => {
            let head = match k {
                MapKind::Map => "std::map",
                MapKind::UnorderedMap => "std::unordered_map",
                MapKind::Multimap => "std::multimap",
                MapKind::UnorderedMultimap => "std::unordered_multimap",
            };
            format!("{head}<{},{}>", target_name(key), target_name(value))
        }
        Target::Optional(item) => format!("std::optional<{}>", target_name(item)),
        Target::Atomic(item) => format!("std::atomic<{}>", target_name(item)),
        Target::Array(item, n) => format!("std::array<{},{n}>", target_name(item)),
        Target::Bitset(n) => format!("std::bitset<{n}>"),
        Target::Tuple(pair, parts) => format!(
            "{}<{}>",
            if *pair { "std::pair" } else { "std::tuple" },
            parts.iter().map(target_name).collect::<Vec<_>>().join(",")
        ),
        Target::Variant(parts) => format!(
            "std::variant<{}>",
            parts.iter().map(target_name).collect::<Vec<_>>().join(",")
        ),
        Target::Named | Target::Members(_) | Target::Keep => String::new(),
    }
}

/// The `i`-th template argument's text of a normalized type name (empty if none).
fn template_arg_at(type_name: &str, i: usize) -> String {
    let Some(open) = type_name.find('<') else {
        return String::new();
    };
    let inner = &type_name[open + 1..type_name.len().saturating_sub(1)];
    let mut depth = 0usize;
    let mut start = 0usize;
    let mut k = 0usize;
    for (pos, c) in inner.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                if k == i {
                    return inner[start..pos].to_string();
                }
                k += 1;
                start = pos + 1;
            }
            _ => {}
        }
    }
    if k == i {
        inner[start..].to_string()
    } else {
        String::new()
    }
}

fn template_arg_name(type_name: &str) -> String {
    template_arg_at(type_name, 0)
}

/// `field` with another data type and C++ type name.
fn rebuilt(field: &Field, data_type: DataType, type_name: &str) -> Field {
    with_type_name(
        Field::new(field.name(), data_type, field.is_nullable())
            .with_metadata(field.metadata().clone()),
        type_name,
    )
}

fn list_of(field: &Field, node: Node, item: Field, type_name: &str) -> (Node, Field) {
    let dt = DataType::LargeList(Arc::new(item));
    (node, rebuilt(field, dt, type_name))
}

/// The Arrow type of a requested type, for a member that is not on disk.
fn target_data_type(t: &Target, name: &str) -> std::result::Result<DataType, String> {
    Ok(match t {
        Target::Primitive(p) => primitive_data_type(*p),
        Target::String => DataType::LargeUtf8,
        Target::Seq(_, item) => {
            let item_name = template_arg_name(name);
            DataType::LargeList(Arc::new(with_type_name(
                Field::new("_0", target_data_type(item, &item_name)?, is_optional(item)),
                &item_name,
            )))
        }
        Target::Optional(item) | Target::Atomic(item) => {
            target_data_type(item, &template_arg_name(name))?
        }
        Target::Array(item, n) => {
            let item_name = template_arg_name(name);
            let n = i32::try_from(*n).map_err(|_| format!("array size {n} is too large"))?;
            DataType::FixedSizeList(
                Arc::new(with_type_name(
                    Field::new("_0", target_data_type(item, &item_name)?, is_optional(item)),
                    &item_name,
                )),
                n,
            )
        }
        Target::Bitset(n) => {
            let n = i32::try_from(*n).map_err(|_| format!("bitset size {n} is too large"))?;
            DataType::FixedSizeList(Arc::new(Field::new("_0", DataType::Boolean, false)), n)
        }
        Target::Tuple(_, parts) => DataType::Struct(
            parts
                .iter()
                .enumerate()
                .map(|(i, p)| {
                    let n = template_arg_at(name, i);
                    Ok(with_type_name(
                        Field::new(format!("_{i}"), target_data_type(p, &n)?, is_optional(p)),
                        &n,
                    ))
                })
                .collect::<std::result::Result<Vec<_>, String>>()?
                .into(),
        ),
        Target::Members(members) => DataType::Struct(
            members
                .iter()
                .map(|(n, p)| {
                    let tn = target_name(p);
                    Ok(with_type_name(
                        Field::new(n, target_data_type(p, &tn)?, true),
                        &tn,
                    ))
                })
                .collect::<std::result::Result<Vec<_>, String>>()?
                .into(),
        ),
        Target::Map(..) | Target::Variant(_) => {
            return Err(format!(
                "a missing member of type \"{name}\" cannot be made here"
            ))
        }
        Target::Named | Target::Keep => {
            return Err(format!(
                "type \"{name}\" is not known here: give the member's type as a C++ \
                 fundamental or standard type, or as a record of members"
            ))
        }
    })
}

fn is_optional(t: &Target) -> bool {
    matches!(t, Target::Optional(_))
}

fn check_default(v: &DefaultValue, dt: &DataType) -> std::result::Result<(), String> {
    let ok = match (v, dt) {
        (DefaultValue::Bool(_), DataType::Boolean) => true,
        (DefaultValue::Int(i), dt) if dt.is_integer() => {
            let p = primitive_of_data_type(dt).ok_or("not a number")?;
            let (lo, hi) = int_range(p);
            if !(lo..=hi).contains(i) {
                return Err(format!("{i} does not fit {dt}"));
            }
            true
        }
        (DefaultValue::Int(_) | DefaultValue::Float(_), DataType::Float32 | DataType::Float64) => {
            true
        }
        (DefaultValue::Text(_), DataType::LargeUtf8) => true,
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("{v:?} is not a value of Arrow type {dt}"))
    }
}

// --- applying a plan --------------------------------------------------------------------

/// Where a value is: the field, the first entry of the batch, and the lists above it, to
/// turn the index of a bad value into its entry.
#[derive(Clone)]
struct Place<'a> {
    path: &'a str,
    first_entry: u64,
    levels: Vec<Level>,
    mask: bool,
}

#[derive(Clone)]
enum Level {
    Offsets(Vec<i64>),
    Fixed(usize),
    /// The parent of each item (a variant's alternative: its values' rows).
    Parents(Vec<usize>),
}

impl Place<'_> {
    fn entry_of(&self, mut index: usize) -> u64 {
        for level in self.levels.iter().rev() {
            index = match level {
                // The list whose range holds the item: the last start at or before it.
                Level::Offsets(o) => o.partition_point(|&x| x <= index as i64).saturating_sub(1),
                Level::Fixed(n) => index / (*n).max(1),
                Level::Parents(p) => p.get(index).copied().unwrap_or(index),
            };
        }
        self.first_entry + index as u64
    }

    fn below(&self, level: Level) -> Place<'_> {
        let mut levels = self.levels.clone();
        levels.push(level);
        Place {
            path: self.path,
            first_entry: self.first_entry,
            levels,
            mask: self.mask,
        }
    }

    fn inexact(&self, index: usize, value: String, read_as: f64, target: &str) -> Error {
        Error::Inexact {
            field: self.path.to_string(),
            entry: self.entry_of(index),
            value,
            target: target.to_string(),
            read_as: format!("{read_as:?}"),
        }
    }

    fn out_of_range(&self, index: usize, value: String, target: &str) -> Error {
        Error::OutOfRange {
            field: self.path.to_string(),
            entry: self.entry_of(index),
            value,
            target: target.to_string(),
        }
    }
}

impl Conversion {
    /// The column `array` (decoded as on disk, its first row entry `first_entry`) as
    /// the type asked for.
    pub(crate) fn apply(&self, array: &ArrayRef, first_entry: u64) -> Result<ArrayRef> {
        let place = Place {
            path: &self.path,
            first_entry,
            levels: Vec::new(),
            mask: self.on_overflow == OnOverflow::Mask,
        };
        apply(&self.node, array, &self.field, &place)
    }
}

fn offsets_vec(o: &OffsetBuffer<i64>) -> Vec<i64> {
    o.iter().copied().collect()
}

fn apply(node: &Node, array: &ArrayRef, out: &Field, place: &Place<'_>) -> Result<ArrayRef> {
    let mismatch = || {
        Error::corrupt(
            "schema evolution",
            format!(
                "field \"{}\": decoded array of type {} does not match the plan",
                place.path,
                array.data_type()
            ),
        )
    };
    Ok(match node {
        Node::Same => array.clone(),
        Node::Number(to) => convert_number(array, *to, out, place)?,
        Node::Nullable(inner) => apply(inner, array, out, place)?,
        Node::List(item, sort) => {
            let list = array.as_list_opt::<i64>().ok_or_else(mismatch)?;
            let DataType::LargeList(item_field) = out.data_type() else {
                return Err(mismatch());
            };
            let below = place.below(Level::Offsets(offsets_vec(list.offsets())));
            let mut values = apply(item, list.values(), item_field, &below)?;
            if *sort {
                values = sort_within(list.offsets(), &values, None)?;
            }
            Arc::new(LargeListArray::try_new(
                item_field.clone(),
                list.offsets().clone(),
                values,
                list.nulls().cloned(),
            )?)
        }
        Node::OptionalToList(item) => {
            let DataType::LargeList(item_field) = out.data_type() else {
                return Err(mismatch());
            };
            let n = array.len();
            let mut offsets = Vec::with_capacity(n + 1);
            let mut take = Vec::new();
            offsets.push(0i64);
            for i in 0..n {
                if array.is_valid(i) {
                    take.push(i as u64);
                }
                offsets.push(take.len() as i64);
            }
            let present =
                arrow_select::take::take(array.as_ref(), &UInt64Array::from(take.clone()), None)?;
            let present = strip_nulls(&present)?;
            let below = place.below(Level::Offsets(offsets.clone()));
            let values = apply(item, &present, item_field, &below)?;
            Arc::new(LargeListArray::try_new(
                item_field.clone(),
                OffsetBuffer::new(ScalarBuffer::from(offsets)),
                values,
                None,
            )?)
        }
        Node::ArrayToList(item) => {
            let fixed = array.as_fixed_size_list_opt().ok_or_else(mismatch)?;
            let DataType::LargeList(item_field) = out.data_type() else {
                return Err(mismatch());
            };
            let size = fixed.value_length() as usize;
            let n = fixed.len();
            let values = fixed.values().slice(fixed.offset() * size, n * size);
            let below = place.below(Level::Fixed(size));
            let values = apply(item, &values, item_field, &below)?;
            let offsets: Vec<i64> = (0..=n).map(|i| (i * size) as i64).collect();
            Arc::new(LargeListArray::try_new(
                item_field.clone(),
                OffsetBuffer::new(ScalarBuffer::from(offsets)),
                values,
                fixed.nulls().cloned(),
            )?)
        }
        Node::Array(item) => {
            let fixed = array.as_fixed_size_list_opt().ok_or_else(mismatch)?;
            let DataType::FixedSizeList(item_field, size) = out.data_type() else {
                return Err(mismatch());
            };
            let n = fixed.len();
            let s = *size as usize;
            let values = fixed.values().slice(fixed.offset() * s, n * s);
            let values = apply(item, &values, item_field, &place.below(Level::Fixed(s)))?;
            Arc::new(FixedSizeListArray::try_new(
                item_field.clone(),
                *size,
                values,
                fixed.nulls().cloned(),
            )?)
        }
        Node::MapToList(k, v) => {
            let map = array.as_map_opt().ok_or_else(mismatch)?;
            let DataType::LargeList(pair_field) = out.data_type() else {
                return Err(mismatch());
            };
            let DataType::Struct(parts) = pair_field.data_type() else {
                return Err(mismatch());
            };
            let offsets: Vec<i64> = map.offsets().iter().map(|&o| i64::from(o)).collect();
            let below = place.below(Level::Offsets(offsets.clone()));
            let entries = map.entries();
            let keys = apply(k, entries.column(0), &parts[0], &below)?;
            let values = apply(v, entries.column(1), &parts[1], &below)?;
            let pairs = StructArray::try_new(parts.clone(), vec![keys, values], None)?;
            Arc::new(LargeListArray::try_new(
                pair_field.clone(),
                OffsetBuffer::new(ScalarBuffer::from(offsets)),
                Arc::new(pairs),
                map.nulls().cloned(),
            )?)
        }
        Node::ListToMap(k, v, sort) => {
            let list = array.as_list_opt::<i64>().ok_or_else(mismatch)?;
            let DataType::Map(entries_field, sorted) = out.data_type() else {
                return Err(mismatch());
            };
            let DataType::Struct(parts) = entries_field.data_type() else {
                return Err(mismatch());
            };
            let pairs = list.values().as_struct_opt().ok_or_else(mismatch)?;
            let below = place.below(Level::Offsets(offsets_vec(list.offsets())));
            let keys = apply(k, pairs.column(0), &parts[0], &below)?;
            let values = apply(v, pairs.column(1), &parts[1], &below)?;
            let mut entries: ArrayRef = Arc::new(StructArray::try_new(
                parts.clone(),
                vec![keys.clone(), values],
                None,
            )?);
            if *sort {
                entries = sort_within(list.offsets(), &entries, Some(&keys))?;
            }
            let offsets = list
                .offsets()
                .iter()
                .map(|&o| i32::try_from(o))
                .collect::<std::result::Result<Vec<i32>, _>>()
                .map_err(|_| {
                    Error::Unsupported(format!(
                        "field \"{}\": a map of more than 2^31 items in one batch",
                        place.path
                    ))
                })?;
            Arc::new(MapArray::try_new(
                entries_field.clone(),
                OffsetBuffer::new(ScalarBuffer::from(offsets)),
                entries.as_struct().clone(),
                list.nulls().cloned(),
                *sorted,
            )?)
        }
        Node::Map(k, v) => {
            let map = array.as_map_opt().ok_or_else(mismatch)?;
            let DataType::Map(entries_field, sorted) = out.data_type() else {
                return Err(mismatch());
            };
            let DataType::Struct(parts) = entries_field.data_type() else {
                return Err(mismatch());
            };
            let offsets: Vec<i64> = map.offsets().iter().map(|&o| i64::from(o)).collect();
            let below = place.below(Level::Offsets(offsets));
            let entries = map.entries();
            let keys = apply(k, entries.column(0), &parts[0], &below)?;
            let values = apply(v, entries.column(1), &parts[1], &below)?;
            let entries = StructArray::try_new(parts.clone(), vec![keys, values], None)?;
            Arc::new(MapArray::try_new(
                entries_field.clone(),
                map.offsets().clone(),
                entries,
                map.nulls().cloned(),
                *sorted,
            )?)
        }
        Node::Record(members) => {
            let record = array.as_struct_opt().ok_or_else(mismatch)?;
            let DataType::Struct(fields) = out.data_type() else {
                return Err(mismatch());
            };
            let n = record.len();
            let mut columns = Vec::with_capacity(members.len());
            for (m, f) in members.iter().zip(fields.iter()) {
                columns.push(match m {
                    Member::Disk(i, node) => {
                        let mut member_place = place.clone();
                        let path = format!("{}.{}", place.path, f.name());
                        member_place.path = &path;
                        apply(node, record.column(*i), f, &member_place)?
                    }
                    Member::Added(None) => new_null_array(f.data_type(), n),
                    Member::Added(Some(v)) => filled(v, f.data_type(), n)?,
                });
            }
            Arc::new(StructArray::try_new_with_length(
                fields.clone(),
                columns,
                record.nulls().cloned(),
                n,
            )?)
        }
        Node::Union(alts) => {
            let union = array
                .as_any()
                .downcast_ref::<UnionArray>()
                .ok_or_else(mismatch)?;
            let DataType::Union(fields, _) = out.data_type() else {
                return Err(mismatch());
            };
            let mut children = Vec::new();
            for ((type_id, f), node) in fields.iter().zip(alts) {
                // The row of each value of this alternative, for messages.
                let mut parents = vec![0usize; union.child(type_id).len()];
                if let Some(offsets) = union.offsets() {
                    for (row, (&t, &o)) in union.type_ids().iter().zip(offsets.iter()).enumerate() {
                        if let Some(slot) = usize::try_from(o).ok().and_then(|o| parents.get_mut(o))
                        {
                            if t == type_id {
                                *slot = row;
                            }
                        }
                    }
                }
                let below = place.below(Level::Parents(parents));
                children.push(apply(node, union.child(type_id), f, &below)?);
            }
            let offsets = union.offsets().cloned();
            Arc::new(UnionArray::try_new(
                fields.clone(),
                union.type_ids().clone(),
                offsets,
                children,
            )?)
        }
    })
}

/// `array` without a validity bitmap (its values at nulls kept as they are).
fn strip_nulls(array: &ArrayRef) -> Result<ArrayRef> {
    if array.null_count() == 0 {
        return Ok(array.clone());
    }
    let data = array.to_data().into_builder().nulls(None).build()?;
    Ok(arrow_array::make_array(data))
}

/// An array of `n` copies of `v`.
fn filled(v: &DefaultValue, dt: &DataType, n: usize) -> Result<ArrayRef> {
    let bad = || Error::InvalidArgument(format!("default {v:?} is not a {dt}"));
    Ok(match (v, dt) {
        (DefaultValue::Bool(b), DataType::Boolean) => Arc::new(BooleanArray::from(vec![*b; n])),
        (DefaultValue::Int(i), dt) if dt.is_integer() => {
            let to = primitive_of_data_type(dt).ok_or_else(bad)?;
            ints_to(&vec![*i; n], to, None)?
        }
        (DefaultValue::Int(i), DataType::Float32) => {
            Arc::new(PrimitiveArray::<Float32Type>::from(vec![*i as f32; n]))
        }
        (DefaultValue::Int(i), DataType::Float64) => {
            Arc::new(PrimitiveArray::<Float64Type>::from(vec![*i as f64; n]))
        }
        (DefaultValue::Float(x), DataType::Float32) => {
            Arc::new(PrimitiveArray::<Float32Type>::from(vec![f64_to_f32(*x); n]))
        }
        (DefaultValue::Float(x), DataType::Float64) => {
            Arc::new(PrimitiveArray::<Float64Type>::from(vec![*x; n]))
        }
        (DefaultValue::Text(s), DataType::LargeUtf8) => {
            Arc::new(arrow_array::LargeStringArray::from(vec![s.as_str(); n]))
        }
        _ => return Err(bad()),
    })
}

/// The values of an integer or bool array, widened.
fn int_values(array: &dyn Array) -> Option<Vec<i128>> {
    macro_rules! widen {
        ($t:ty) => {
            array
                .as_primitive_opt::<$t>()
                .map(|a| a.values().iter().map(|&v| v as i128).collect())
        };
    }
    match array.data_type() {
        DataType::Boolean => {
            let b = array.as_boolean_opt()?;
            Some((0..b.len()).map(|i| i128::from(b.value(i))).collect())
        }
        DataType::Int8 => widen!(Int8Type),
        DataType::UInt8 => widen!(UInt8Type),
        DataType::Int16 => widen!(Int16Type),
        DataType::UInt16 => widen!(UInt16Type),
        DataType::Int32 => widen!(Int32Type),
        DataType::UInt32 => widen!(UInt32Type),
        DataType::Int64 => widen!(Int64Type),
        DataType::UInt64 => widen!(UInt64Type),
        _ => None,
    }
}

fn real_values(array: &dyn Array) -> Option<Vec<f64>> {
    match array.data_type() {
        DataType::Float32 => array
            .as_primitive_opt::<Float32Type>()
            .map(|a| a.values().iter().map(|&v| f64::from(v)).collect()),
        DataType::Float64 => array
            .as_primitive_opt::<Float64Type>()
            .map(|a| a.values().to_vec()),
        _ => None,
    }
}

/// Integers as an array of `to`, with validity `nulls`.
fn ints_to(values: &[i128], to: PrimitiveType, nulls: Option<NullBuffer>) -> Result<ArrayRef> {
    use PrimitiveType::*;
    macro_rules! narrow {
        ($t:ty, $n:ty) => {
            // Every value was checked to fit (or is masked: its slot is null).
            Arc::new(PrimitiveArray::<$t>::new(
                values
                    .iter()
                    .map(|&v| <$n>::try_from(v).unwrap_or_default())
                    .collect::<Vec<$n>>()
                    .into(),
                nulls,
            )) as ArrayRef
        };
    }
    Ok(match to {
        Bool => Arc::new(BooleanArray::new(
            BooleanBuffer::collect_bool(values.len(), |i| values[i] != 0),
            nulls,
        )),
        Char | Int8 => narrow!(Int8Type, i8),
        UInt8 | Byte => narrow!(UInt8Type, u8),
        Int16 => narrow!(Int16Type, i16),
        UInt16 => narrow!(UInt16Type, u16),
        Int32 => narrow!(Int32Type, i32),
        UInt32 => narrow!(UInt32Type, u32),
        Int64 => narrow!(Int64Type, i64),
        UInt64 => narrow!(UInt64Type, u64),
        Float32 => Arc::new(PrimitiveArray::<Float32Type>::new(
            values
                .iter()
                .map(|&v| v as f32)
                .collect::<Vec<f32>>()
                .into(),
            nulls,
        )),
        Float64 => Arc::new(PrimitiveArray::<Float64Type>::new(
            values
                .iter()
                .map(|&v| v as f64)
                .collect::<Vec<f64>>()
                .into(),
            nulls,
        )),
    })
}

/// Integers as reals of type `to`, each checked to read back exactly (masked, or the
/// first that does not is an error naming it and what it would read as).
fn ints_to_real(
    array: &dyn Array,
    ints: &[i128],
    to: PrimitiveType,
    target: &str,
    place: &Place<'_>,
) -> Result<ArrayRef> {
    // What each value reads as, as the real type rounds it; exact when it reads back
    // (the cast back saturates: a rounded value past the integer range never equals it).
    #[allow(clippy::cast_possible_truncation)]
    let read_as = |v: i128| -> (f64, bool) {
        if to == PrimitiveType::Float32 {
            let r = v as f32;
            (f64::from(r), r as i128 == v)
        } else {
            let r = v as f64;
            (r, r as i128 == v)
        }
    };
    let bad: Vec<usize> = (0..ints.len())
        .filter(|&i| !array.is_null(i) && !read_as(ints[i]).1)
        .collect();
    if let (Some(&first), false) = (bad.first(), place.mask) {
        return Err(place.inexact(
            first,
            ints[first].to_string(),
            read_as(ints[first]).0,
            target,
        ));
    }
    let nulls = validity(array, &bad, |i| ints[i].to_string(), target, place)?;
    ints_to(ints, to, nulls)
}

/// A `double` as a `float`, if the float keeps its class (ROOT's check: no overflow to
/// infinity, no underflow to zero, no normal number made subnormal).
fn narrow_real(x: f64) -> Option<f32> {
    let f = f64_to_f32(x);
    let fine = x.is_nan()
        || x.is_infinite()
        || x == 0.0
        || (f.is_finite() && f != 0.0 && !(x.is_normal() && f.is_subnormal()));
    fine.then_some(f)
}

/// Masks the values `bad` says (or fails on the first), and returns the validity.
fn validity(
    array: &dyn Array,
    bad: &[usize],
    show: impl Fn(usize) -> String,
    target: &str,
    place: &Place<'_>,
) -> Result<Option<NullBuffer>> {
    if bad.is_empty() {
        return Ok(array.nulls().cloned());
    }
    if !place.mask {
        return Err(place.out_of_range(bad[0], show(bad[0]), target));
    }
    let mut valid = BooleanBufferBuilder::new(array.len());
    valid.append_n(array.len(), true);
    if let Some(n) = array.nulls() {
        for i in 0..array.len() {
            if n.is_null(i) {
                valid.set_bit(i, false);
            }
        }
    }
    for &i in bad {
        valid.set_bit(i, false);
    }
    Ok(Some(NullBuffer::new(valid.finish())))
}

fn convert_number(
    array: &ArrayRef,
    to: PrimitiveType,
    out: &Field,
    place: &Place<'_>,
) -> Result<ArrayRef> {
    let target = out
        .metadata()
        .get(TYPE_NAME_KEY)
        .cloned()
        .unwrap_or_else(|| out.data_type().to_string());
    let is_null = |i: usize| array.is_null(i);
    if let Some(ints) = int_values(array.as_ref()) {
        if matches!(to, PrimitiveType::Float32 | PrimitiveType::Float64) {
            return ints_to_real(array.as_ref(), &ints, to, &target, place);
        }
        if to == PrimitiveType::Bool {
            return ints_to(&ints, to, array.nulls().cloned());
        }
        let (lo, hi) = int_range(to);
        let bad: Vec<usize> = (0..ints.len())
            .filter(|&i| !is_null(i) && !(lo..=hi).contains(&ints[i]))
            .collect();
        let nulls = validity(
            array.as_ref(),
            &bad,
            |i| ints[i].to_string(),
            &target,
            place,
        )?;
        let clamped: Vec<i128> = if bad.is_empty() {
            ints
        } else {
            ints.iter().map(|&v| v.clamp(lo, hi)).collect()
        };
        return ints_to(&clamped, to, nulls);
    }
    if let Some(reals) = real_values(array.as_ref()) {
        return Ok(match to {
            PrimitiveType::Float64 => Arc::new(PrimitiveArray::<Float64Type>::new(
                reals.into(),
                array.nulls().cloned(),
            )),
            PrimitiveType::Float32 => {
                let narrowed: Vec<Option<f32>> = reals.iter().map(|&x| narrow_real(x)).collect();
                let bad: Vec<usize> = (0..reals.len())
                    .filter(|&i| !is_null(i) && narrowed[i].is_none())
                    .collect();
                let nulls = validity(
                    array.as_ref(),
                    &bad,
                    |i| format!("{:e}", reals[i]),
                    &target,
                    place,
                )?;
                Arc::new(PrimitiveArray::<Float32Type>::new(
                    narrowed
                        .iter()
                        .map(|v| v.unwrap_or(0.0))
                        .collect::<Vec<f32>>()
                        .into(),
                    nulls,
                ))
            }
            _ => {
                return Err(Error::corrupt(
                    "schema evolution",
                    format!(
                        "field \"{}\": a real number planned as an integer",
                        place.path
                    ),
                ))
            }
        });
    }
    Err(Error::corrupt(
        "schema evolution",
        format!(
            "field \"{}\": {} values cannot be converted to numbers",
            place.path,
            array.data_type()
        ),
    ))
}

/// The items of each list (`offsets` into `values`) sorted by `keys` (the values
/// themselves by default), stably: an ordered multiset or multimap.
fn sort_within(
    offsets: &OffsetBuffer<i64>,
    values: &ArrayRef,
    keys: Option<&ArrayRef>,
) -> Result<ArrayRef> {
    let keys = keys.unwrap_or(values);
    #[derive(PartialEq, PartialOrd)]
    enum Key<'a> {
        Int(i128),
        Real(f64),
        Text(&'a str),
    }
    let ints = int_values(keys.as_ref());
    let reals = real_values(keys.as_ref());
    let texts = keys.as_string_opt::<i64>();
    let key = |i: usize| -> Option<Key<'_>> {
        if let Some(v) = &ints {
            return Some(Key::Int(v[i]));
        }
        if let Some(v) = &reals {
            return Some(Key::Real(v[i]));
        }
        texts.map(|t| Key::Text(t.value(i)))
    };
    if keys.is_empty() || key(0).is_none() {
        // Items without an order here (records, lists): kept as they are.
        return Ok(values.clone());
    }
    let mut order: Vec<u64> = Vec::with_capacity(values.len());
    for w in offsets.windows(2) {
        let a = usize::try_from(w[0]).unwrap_or(0);
        let b = usize::try_from(w[1]).unwrap_or(a);
        let mut idx: Vec<usize> = (a..b).collect();
        idx.sort_by(|&x, &y| {
            key(x)
                .partial_cmp(&key(y))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        order.extend(idx.into_iter().map(|i| i as u64));
    }
    let first = offsets
        .first()
        .and_then(|&o| usize::try_from(o).ok())
        .unwrap_or(0);
    let sorted = arrow_select::take::take(values.as_ref(), &UInt64Array::from(order), None)?;
    // The items before the first list (a sliced array) are not referenced: rebase.
    if first == 0 {
        return Ok(sorted);
    }
    let mut padded = vec![values.slice(0, first)];
    padded.push(sorted);
    let refs: Vec<&dyn Array> = padded.iter().map(|a| a.as_ref()).collect();
    Ok(arrow_select::concat::concat(&refs)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_rule_for_numbers() {
        use PrimitiveType::*;
        // Every value reads: widenings, and integers a real holds exactly.
        for (from, to) in [
            (Int32, Int64),
            (UInt32, Int64),
            (Float32, Float64),
            (Int32, Float64),
            (UInt32, Float64),
            (Int16, Float32),
            (Bool, Float64),
            (Int64, Bool),
        ] {
            assert_eq!(number_fit(from, to), Fit::Always, "{from:?} -> {to:?}");
        }
        // Some values may not: each is checked as it is read.
        for (from, to) in [
            (Int64, Int32),
            (UInt64, Int64),
            (Int64, UInt64),
            (Float64, Float32),
            (Int64, Float64),
            (UInt64, Float64),
            (Int32, Float32),
        ] {
            assert_eq!(number_fit(from, to), Fit::PerValue, "{from:?} -> {to:?}");
        }
        for (from, to) in [(Float64, Int64), (Float32, Bool), (Byte, UInt8)] {
            assert!(
                matches!(number_fit(from, to), Fit::Refused(_)),
                "{from:?} -> {to:?}"
            );
        }
    }

    #[test]
    fn doubles_keep_their_class_as_floats() {
        assert_eq!(narrow_real(0.1), Some(0.1f32));
        assert_eq!(narrow_real(-0.0).map(f32::is_sign_negative), Some(true));
        assert!(narrow_real(f64::NAN).is_some_and(f32::is_nan));
        assert_eq!(narrow_real(f64::INFINITY), Some(f32::INFINITY));
        assert_eq!(narrow_real(3.5e38), None, "overflow to infinity");
        assert_eq!(narrow_real(1e-40), None, "normal made subnormal");
        assert_eq!(narrow_real(1e-46), None, "underflow to zero");
        assert_eq!(narrow_real(f64::from(f32::MAX)), Some(f32::MAX));
    }

    #[test]
    fn template_arguments_split_at_the_top_level() {
        let t = "std::map<std::int32_t,std::pair<float,double>>";
        assert_eq!(template_arg_at(t, 0), "std::int32_t");
        assert_eq!(template_arg_at(t, 1), "std::pair<float,double>");
        assert_eq!(template_arg_at(t, 2), "");
        assert_eq!(template_arg_at("double", 0), "");
    }

    #[test]
    fn an_entry_is_found_through_lists() {
        let place = Place {
            path: "v",
            first_entry: 100,
            levels: vec![Level::Offsets(vec![0, 2, 2, 5]), Level::Fixed(3)],
            mask: false,
        };
        // Item 7 of arrays of 3: array 2, in list 1..? offsets [0,2,2,5]: array 2 is in
        // list 2 (items 2..5), entry 102.
        assert_eq!(place.entry_of(7), 102);
        assert_eq!(place.entry_of(0), 100);
        assert_eq!(place.entry_of(5), 100);
    }

    #[test]
    fn a_variant_value_is_found_at_its_row() {
        let place = Place {
            path: "var",
            first_entry: 10,
            levels: vec![Level::Parents(vec![1, 4, 6])],
            mask: false,
        };
        assert_eq!(place.entry_of(2), 16);
        assert_eq!(place.entry_of(0), 11);
    }

    #[test]
    fn integer_ranges_decide_what_may_overflow() {
        use PrimitiveType::*;
        assert!(fits_always(Int8, Int16));
        assert!(fits_always(UInt8, Int32));
        assert!(!fits_always(Int32, UInt32));
        assert!(!fits_always(UInt64, Int64));
        assert!(fits_always(Bool, UInt8));
    }
}
