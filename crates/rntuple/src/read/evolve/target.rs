//! The requested types: a caller's C++ type names (or records of members), parsed into
//! what the planner matches against the types on disk.

use super::numbers::int_range;
use super::{DefaultValue, ReadAs};
use crate::error::{Error, Result};
use crate::schema::type_name::{parse_type_name, template_arg, CppType, TemplateArg};
use crate::schema::{primitive_data_type, primitive_of_data_type, PrimitiveType, TYPE_NAME_KEY};
use arrow_schema::{DataType, Field};
use std::sync::Arc;

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

/// Each sequence template with its C++ name.
const SEQ_TEMPLATES: [(SeqKind, &str); 6] = [
    (SeqKind::Vector, "std::vector"),
    (SeqKind::RVec, "ROOT::VecOps::RVec"),
    (SeqKind::Set, "std::set"),
    (SeqKind::UnorderedSet, "std::unordered_set"),
    (SeqKind::Multiset, "std::multiset"),
    (SeqKind::UnorderedMultiset, "std::unordered_multiset"),
];

/// Each map template with its C++ name.
const MAP_TEMPLATES: [(MapKind, &str); 4] = [
    (MapKind::Map, "std::map"),
    (MapKind::UnorderedMap, "std::unordered_map"),
    (MapKind::Multimap, "std::multimap"),
    (MapKind::UnorderedMultimap, "std::unordered_multimap"),
];

impl SeqKind {
    /// The template's C++ name (`std::vector`).
    pub(super) fn template(self) -> &'static str {
        SEQ_TEMPLATES
            .iter()
            .find(|(k, _)| *k == self)
            .map_or("std::vector", |(_, name)| name)
    }
}

impl MapKind {
    /// Whether its keys are unique.
    pub(super) fn unique(self) -> bool {
        matches!(self, MapKind::Map | MapKind::UnorderedMap)
    }

    /// The template's C++ name (`std::map`).
    pub(super) fn template(self) -> &'static str {
        MAP_TEMPLATES
            .iter()
            .find(|(k, _)| *k == self)
            .map_or("std::map", |(_, name)| name)
    }
}

/// A requested type, parsed.
#[derive(Debug, Clone)]
pub(super) enum Target {
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
pub(super) struct Want {
    pub(super) name: String,
    pub(super) target: Target,
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
    pub(super) fn parse(read_as: &ReadAs) -> Result<Want> {
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
    if let Some(kind) = seq_kind_of(&t.name) {
        return seq(kind);
    }
    if let Some(kind) = map_kind_of(&t.name) {
        return map(kind);
    }
    Ok(match t.name.as_str() {
        "std::string" => Target::String,
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

/// The sequence template of a type name (`std::set<int>`), if it is one.
pub(super) fn seq_kind_of(type_name: &str) -> Option<SeqKind> {
    let head = type_name.split('<').next()?;
    SEQ_TEMPLATES
        .iter()
        .find(|(_, name)| *name == head)
        .map(|(k, _)| *k)
}

/// The map template of a type name (`std::map<int,float>`), if it is one.
pub(super) fn map_kind_of(type_name: &str) -> Option<MapKind> {
    let head = type_name.split('<').next()?;
    MAP_TEMPLATES
        .iter()
        .find(|(_, name)| *name == head)
        .map(|(k, _)| *k)
}

pub(super) fn is_pair_like(type_name: &str) -> bool {
    type_name.starts_with("std::pair<") || type_name.starts_with("std::tuple<")
}

/// The C++ name of a requested type (empty for a record of members).
pub(super) fn target_name(t: &Target) -> String {
    match t {
        Target::Primitive(p) => p.type_name().to_string(),
        Target::String => "std::string".into(),
        Target::Seq(k, item) => format!("{}<{}>", k.template(), target_name(item)),
        Target::Map(k, key, value) => format!(
            "{}<{},{}>",
            k.template(),
            target_name(key),
            target_name(value)
        ),
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

pub(super) fn with_type_name(field: Field, name: &str) -> Field {
    let mut md = field.metadata().clone();
    md.insert(TYPE_NAME_KEY.to_string(), name.to_string());
    field.with_metadata(md)
}

/// The Arrow type of a requested type, for a member that is not on disk.
pub(super) fn target_data_type(t: &Target, name: &str) -> std::result::Result<DataType, String> {
    Ok(match t {
        Target::Primitive(p) => primitive_data_type(*p),
        Target::String => DataType::LargeUtf8,
        Target::Seq(_, item) => {
            let item_name = template_arg(name, 0);
            DataType::LargeList(Arc::new(with_type_name(
                Field::new("_0", target_data_type(item, &item_name)?, is_optional(item)),
                &item_name,
            )))
        }
        Target::Optional(item) | Target::Atomic(item) => {
            target_data_type(item, &template_arg(name, 0))?
        }
        Target::Array(item, n) => {
            let item_name = template_arg(name, 0);
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
                    let n = template_arg(name, i);
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

pub(super) fn check_default(v: &DefaultValue, dt: &DataType) -> std::result::Result<(), String> {
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
