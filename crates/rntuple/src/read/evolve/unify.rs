//! One type for a field of many files ([`unify`]): numbers promoted by the rule of
//! numbers ([`super::numbers`]: the narrowest type that holds every file's values, else
//! the one that holds the most of them, its reads checked and the files noted),
//! collections of every kind as vectors, records member by member. Each file is then read
//! as that type by the planner ([`super::plan`]), as a caller's `types=` would be.

use super::numbers::{int_range, number_fit, Fit};
use super::target::{map_kind_of, seq_kind_of, MapKind, SeqKind};
use super::ReadAs;
use crate::error::{Error, Result};
use crate::schema::{Descriptor, FieldKind, PrimitiveType, RecordStyle};

/// A field of one file, for [`unify`].
#[derive(Debug, Clone, Copy)]
pub struct FieldOf<'a> {
    /// The file's descriptor.
    pub descriptor: &'a Descriptor,
    /// The field's id in it.
    pub id: u32,
    /// The file, for messages.
    pub file: &'a str,
}

/// The type that reads field `fields` of every file alike: numbers promoted to the
/// narrowest type that holds every file's values (the widest integer of a mix of
/// integers; `double` for a mix of integers and reals; `std::int64_t` for `std::uint64_t`
/// with signed integers, where NumPy gives `float64`), collections of every kind as
/// vectors when the kinds differ, `std::optional` when some file may miss a value,
/// records by member name (members missing in some files read as null). A mix that cannot
/// be read as one type (a string and a number, ...) is an error naming two files and their
/// types. Each file is read as the type by the rule of [`super::ReadTypes::with_type`], so a
/// value that does not read back exactly is found as it is read; [`unification`] also
/// says which files' types may hold such values.
pub fn unify(fields: &[FieldOf<'_>]) -> Result<ReadAs> {
    Ok(unification(fields)?.read_as)
}

/// A field of one file whose values may not all read exactly as the unified type: the
/// promotion is kept, and each value is checked as it is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inexact {
    /// The field (or the part of it: `v._0`), by its qualified name in the file.
    pub field: String,
    /// The file.
    pub file: String,
    /// The type of the values in the file.
    pub from: String,
    /// The type they are read as.
    pub to: String,
}

/// The type that reads a field of many files alike, and the files whose values it may not
/// all hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Unification {
    /// The type every file is read as (see [`unify`]).
    pub read_as: ReadAs,
    /// The files whose type the unified one does not hold in every value.
    pub inexact: Vec<Inexact>,
}

/// [`unify`], with the files whose values the unified type may not all hold (an
/// `std::int64_t` file in a mix with reals, read as `double`; an `std::uint64_t` file
/// read as `std::int64_t`): for a caller to warn before reading.
pub fn unification(fields: &[FieldOf<'_>]) -> Result<Unification> {
    let mut inexact = Vec::new();
    let read_as = to_read_as(unify_at(fields, true, &mut inexact)?);
    Ok(Unification { read_as, inexact })
}

enum Unified {
    /// Alike in every file, with no type name to spell it (an untyped record).
    Same,
    Name(String),
    Members(Vec<(String, Unified)>),
}

fn to_read_as(u: Unified) -> ReadAs {
    match u {
        Unified::Same => ReadAs::AsOnDisk,
        Unified::Name(n) => ReadAs::Type(n),
        Unified::Members(m) => {
            ReadAs::Record(m.into_iter().map(|(n, u)| (n, to_read_as(u))).collect())
        }
    }
}

fn unify_error(fields: &[FieldOf<'_>], why: &str) -> Error {
    let first = fields[0];
    let other = fields
        .iter()
        .find(|f| {
            f.descriptor.field(f.id).type_name() != first.descriptor.field(first.id).type_name()
        })
        .unwrap_or(&fields[fields.len() - 1]);
    Error::IncompatibleType(format!(
        "field \"{}\" is \"{}\" in {} and \"{}\" in {}: {why}; ask for one type with types=",
        first.descriptor.qualified_name(first.id),
        first.descriptor.field(first.id).type_name(),
        first.file,
        other.descriptor.field(other.id).type_name(),
        other.file
    ))
}

/// The field below a wrapper (`std::atomic<T>`, an enum), or itself.
fn unwrapped(f: FieldOf<'_>) -> FieldOf<'_> {
    let mut f = f;
    while let FieldKind::Wrapper(child) = f.descriptor.field_kind(f.id) {
        f.id = child;
    }
    f
}

/// Whether the members of records (by name and order) are the same in every file, down
/// the whole field tree.
fn same_tree(a: FieldOf<'_>, b: FieldOf<'_>) -> bool {
    let (fa, fb) = (a.descriptor.field(a.id), b.descriptor.field(b.id));
    fa.type_name() == fb.type_name()
        && fa.children.len() == fb.children.len()
        && fa.children.iter().zip(&fb.children).all(|(&x, &y)| {
            a.descriptor.field(x).name() == b.descriptor.field(y).name()
                && same_tree(FieldOf { id: x, ..a }, FieldOf { id: y, ..b })
        })
}

/// The one type that reads `fields` (one field of several files): the same type where
/// they are alike, else by kind (numbers, optionals, sequences, maps, tuples and
/// variants, records); the files whose values it may not hold are noted.
fn unify_at(
    fields: &[FieldOf<'_>],
    records_by_members: bool,
    notes: &mut Vec<Inexact>,
) -> Result<Unified> {
    let first = fields[0];
    let first_name = first.descriptor.field(first.id).type_name();
    if fields.iter().all(|&f| same_tree(first, f)) {
        return Ok(if first_name.is_empty() {
            Unified::Same
        } else {
            Unified::Name(first_name.to_string())
        });
    }
    let kinds: Vec<FieldKind> = fields
        .iter()
        .map(|f| f.descriptor.field_kind(unwrapped(*f).id))
        .collect();
    if let Some(number) = unify_numbers(fields, &kinds, notes) {
        return Ok(number);
    }
    if kinds.iter().all(|k| matches!(k, FieldKind::String)) {
        return Ok(Unified::Name("std::string".into()));
    }
    let steps: [Step; 4] = [
        unify_optionals,
        unify_sequences,
        unify_maps,
        unify_tuples_and_variants,
    ];
    for step in steps {
        if let Some(unified) = step(fields, &kinds, notes)? {
            return Ok(unified);
        }
    }
    if kinds.iter().all(|k| matches!(k, FieldKind::Record(..))) {
        return unify_records(fields, records_by_members, notes);
    }
    Err(unify_error(fields, "no one type reads both"))
}

/// A step of [`unify_at`]: the one type of `fields` (of kinds `kinds`, below their
/// wrappers) if they are all of the kinds it unifies, else `None`.
type Step = fn(&[FieldOf<'_>], &[FieldKind], &mut Vec<Inexact>) -> Result<Option<Unified>>;

/// The part of each field (`pick` of its kind), if every field has one.
fn parts_of<'a>(
    fields: &[FieldOf<'a>],
    kinds: &[FieldKind],
    pick: impl Fn(&FieldKind) -> Option<u32>,
) -> Option<Vec<FieldOf<'a>>> {
    fields
        .iter()
        .zip(kinds)
        .map(|(f, k)| {
            pick(k).map(|id| FieldOf {
                id,
                ..unwrapped(*f)
            })
        })
        .collect()
}

/// Numbers: the type that holds them all ([`promote`]), each file whose values it may
/// not hold noted.
fn unify_numbers(
    fields: &[FieldOf<'_>],
    kinds: &[FieldKind],
    notes: &mut Vec<Inexact>,
) -> Option<Unified> {
    let numbers: Vec<PrimitiveType> = kinds
        .iter()
        .map(|k| match k {
            FieldKind::Primitive(p) if *p != PrimitiveType::Byte => Some(*p),
            FieldKind::Cardinality(true) => Some(PrimitiveType::UInt64),
            FieldKind::Cardinality(false) => Some(PrimitiveType::UInt32),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let to = promote(&numbers);
    for (f, &from) in fields.iter().zip(&numbers) {
        if number_fit(from, to) != Fit::Always {
            let f = unwrapped(*f);
            notes.push(Inexact {
                field: f.descriptor.qualified_name(f.id),
                file: f.file.to_string(),
                from: f.descriptor.field(f.id).type_name().to_string(),
                to: to.type_name().to_string(),
            });
        }
    }
    Some(Unified::Name(to.type_name().to_string()))
}

/// Some files may miss a value: an optional of the values unified.
fn unify_optionals(
    fields: &[FieldOf<'_>],
    kinds: &[FieldKind],
    notes: &mut Vec<Inexact>,
) -> Result<Option<Unified>> {
    let optional_or_plain = kinds.iter().any(|k| matches!(k, FieldKind::Optional(_)))
        && kinds.iter().all(|k| {
            !matches!(
                k,
                FieldKind::List(_) | FieldKind::Map(_) | FieldKind::Array(..)
            )
        });
    if !optional_or_plain {
        return Ok(None);
    }
    let inner: Vec<FieldOf<'_>> = fields
        .iter()
        .zip(kinds)
        .map(|(f, k)| match k {
            FieldKind::Optional(c) => FieldOf {
                id: *c,
                ..unwrapped(*f)
            },
            _ => *f,
        })
        .collect();
    let item = name_of(unify_at(&inner, false, notes)?, &inner)?;
    Ok(Some(Unified::Name(format!("std::optional<{item}>"))))
}

/// Sequences of any kind (and optionals, read as lists of 0 or 1): arrays of one size
/// stay arrays, sequences of one template keep it, the others are vectors.
fn unify_sequences(
    fields: &[FieldOf<'_>],
    kinds: &[FieldKind],
    notes: &mut Vec<Inexact>,
) -> Result<Option<Unified>> {
    let Some(items) = parts_of(fields, kinds, |k| match k {
        FieldKind::List(c) | FieldKind::Optional(c) => Some(*c),
        FieldKind::Array(c, _) => Some(*c),
        _ => None,
    }) else {
        return Ok(None);
    };
    let arrays: Vec<u64> = kinds
        .iter()
        .filter_map(|k| match k {
            FieldKind::Array(_, n) => Some(*n),
            _ => None,
        })
        .collect();
    let item = name_of(unify_at(&items, false, notes)?, &items)?;
    if arrays.len() == kinds.len() && arrays.iter().all(|&n| n == arrays[0]) {
        return Ok(Some(Unified::Name(format!(
            "std::array<{item},{}>",
            arrays[0]
        ))));
    }
    let templates: Vec<Option<SeqKind>> = fields
        .iter()
        .map(|f| seq_kind_of(unwrapped(*f).descriptor.field(unwrapped(*f).id).type_name()))
        .collect();
    let head = match templates[0] {
        Some(t) if templates.iter().all(|x| *x == Some(t)) => t.template(),
        _ => SeqKind::Vector.template(),
    };
    Ok(Some(Unified::Name(format!("{head}<{item}>"))))
}

/// Maps: keys and values unified; a map of unique keys if every file's keys are.
fn unify_maps(
    fields: &[FieldOf<'_>],
    kinds: &[FieldKind],
    notes: &mut Vec<Inexact>,
) -> Result<Option<Unified>> {
    let Some(pairs) = parts_of(fields, kinds, |k| match k {
        FieldKind::Map(c) => Some(*c),
        _ => None,
    }) else {
        return Ok(None);
    };
    let member = |i: usize| -> Option<Vec<FieldOf<'_>>> {
        pairs
            .iter()
            .map(|p| {
                p.descriptor
                    .field(p.id)
                    .children
                    .get(i)
                    .map(|&id| FieldOf { id, ..*p })
            })
            .collect()
    };
    let (Some(keys), Some(values)) = (member(0), member(1)) else {
        return Err(unify_error(fields, "a map whose items are not pairs"));
    };
    let k = name_of(unify_at(&keys, false, notes)?, &keys)?;
    let v = name_of(unify_at(&values, false, notes)?, &values)?;
    let map_kinds: Vec<Option<MapKind>> = fields
        .iter()
        .map(|f| map_kind_of(unwrapped(*f).descriptor.field(unwrapped(*f).id).type_name()))
        .collect();
    let head = if map_kinds.iter().all(|m| m.is_some_and(MapKind::unique)) {
        if map_kinds.iter().all(|m| *m == map_kinds[0])
            && map_kinds[0] == Some(MapKind::UnorderedMap)
        {
            MapKind::UnorderedMap.template()
        } else {
            MapKind::Map.template()
        }
    } else {
        MapKind::Multimap.template()
    };
    Ok(Some(Unified::Name(format!("{head}<{k},{v}>"))))
}

/// Pairs and tuples of the same arity; variants of as many alternatives.
fn unify_tuples_and_variants(
    fields: &[FieldOf<'_>],
    kinds: &[FieldKind],
    notes: &mut Vec<Inexact>,
) -> Result<Option<Unified>> {
    let positional = |k: &FieldKind| match k {
        FieldKind::Record(RecordStyle::Pair | RecordStyle::Tuple, c) => Some(c.clone()),
        _ => None,
    };
    if let Some(parts) = kinds.iter().map(positional).collect::<Option<Vec<_>>>() {
        let names = unify_positions(fields, &parts, "tuples of different sizes", notes)?;
        let pairs = kinds
            .iter()
            .all(|k| matches!(k, FieldKind::Record(RecordStyle::Pair, _)));
        let head = if pairs { "std::pair" } else { "std::tuple" };
        return Ok(Some(Unified::Name(format!("{head}<{}>", names.join(",")))));
    }
    let Some(alts) = kinds
        .iter()
        .map(|k| match k {
            FieldKind::Variant(c) => Some(c.clone()),
            _ => None,
        })
        .collect::<Option<Vec<_>>>()
    else {
        return Ok(None);
    };
    let names = unify_positions(fields, &alts, "variants of different alternatives", notes)?;
    Ok(Some(Unified::Name(format!(
        "std::variant<{}>",
        names.join(",")
    ))))
}

/// Records: members by name, in the order they are first seen (only where a record's
/// members may differ: not inside a collection or another type).
fn unify_records(
    fields: &[FieldOf<'_>],
    records_by_members: bool,
    notes: &mut Vec<Inexact>,
) -> Result<Unified> {
    if !records_by_members {
        return Err(unify_error(
            fields,
            "records whose members differ inside a collection or another type",
        ));
    }
    let mut order: Vec<String> = Vec::new();
    for f in fields {
        for &c in &f.descriptor.field(f.id).children {
            let name = f.descriptor.field(c).name().to_string();
            if !order.contains(&name) {
                order.push(name);
            }
        }
    }
    let mut members = Vec::new();
    for name in order {
        let having: Vec<FieldOf<'_>> = fields
            .iter()
            .filter_map(|f| {
                f.descriptor
                    .field(f.id)
                    .children
                    .iter()
                    .find(|&&c| f.descriptor.field(c).name() == name)
                    .map(|&id| FieldOf { id, ..*f })
            })
            .collect();
        let member = unify_at(&having, true, notes)?;
        // A member some files lack is null there: optional in every file, so that
        // all read to the same (nullable) type.
        let member = match member {
            Unified::Name(n) if having.len() < fields.len() && !n.starts_with("std::optional<") => {
                Unified::Name(format!("std::optional<{n}>"))
            }
            other => other,
        };
        members.push((name, member));
    }
    Ok(Unified::Members(members))
}

/// The unified C++ names of the parts at each position (a tuple's members, a variant's
/// alternatives): `parts` holds each file's part ids, which must be as many.
fn unify_positions(
    fields: &[FieldOf<'_>],
    parts: &[Vec<u32>],
    differ: &str,
    notes: &mut Vec<Inexact>,
) -> Result<Vec<String>> {
    let n = parts[0].len();
    if parts.iter().any(|p| p.len() != n) {
        return Err(unify_error(fields, differ));
    }
    (0..n)
        .map(|i| {
            let at: Vec<FieldOf<'_>> = fields
                .iter()
                .zip(parts)
                .map(|(f, p)| FieldOf {
                    id: p[i],
                    ..unwrapped(*f)
                })
                .collect();
            name_of(unify_at(&at, false, notes)?, &at)
        })
        .collect()
}

/// A unified type that must have a C++ name (inside a collection, an optional, ...).
fn name_of(u: Unified, fields: &[FieldOf<'_>]) -> Result<String> {
    match u {
        Unified::Name(n) => Ok(n),
        Unified::Same | Unified::Members(_) => Err(unify_error(
            fields,
            "records whose members differ inside a collection or another type",
        )),
    }
}

/// The type every number of `types` promotes to: the narrowest that holds them all, else
/// the one that holds the most of them exactly (`double` for integers and reals,
/// `std::int64_t` for signed integers and `std::uint64_t`), whose reads are checked.
fn promote(types: &[PrimitiveType]) -> PrimitiveType {
    use PrimitiveType::*;
    let reals = types.iter().any(|t| matches!(t, Float32 | Float64));
    let ints = types.iter().any(|t| !matches!(t, Float32 | Float64));
    if reals {
        return if ints || types.contains(&Float64) {
            Float64
        } else {
            Float32
        };
    }
    if types.iter().all(|&t| t == types[0]) {
        return types[0];
    }
    let (lo, hi) = types.iter().fold((0i128, 0i128), |(lo, hi), &t| {
        let (a, b) = int_range(t);
        (lo.min(a), hi.max(b))
    });
    let candidates = if lo < 0 {
        [Int8, Int16, Int32, Int64]
    } else {
        [UInt8, UInt16, UInt32, UInt64]
    };
    candidates
        .into_iter()
        .find(|&c| {
            let (a, b) = int_range(c);
            a <= lo && hi <= b
        })
        .unwrap_or(Int64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_promote_to_the_type_that_holds_them() {
        use PrimitiveType::*;
        assert_eq!(promote(&[Float32, Float64]), Float64);
        assert_eq!(promote(&[Int32, Int64]), Int64);
        assert_eq!(promote(&[UInt8, Int8]), Int16);
        assert_eq!(promote(&[UInt32, Int32]), Int64);
        assert_eq!(promote(&[Int32, Float32]), Float64);
        assert_eq!(promote(&[Bool, UInt8]), UInt8);
        assert_eq!(promote(&[Bool, Bool]), Bool);
        assert_eq!(promote(&[Char, Char]), Char);
        assert_eq!(promote(&[Float32, Float32]), Float32);
        // No type holds both: the one that holds the most of them, its reads checked.
        assert_eq!(promote(&[UInt64, Int64]), Int64);
        assert_eq!(promote(&[UInt64, Int8]), Int64);
        assert_eq!(promote(&[Int64, Float32]), Float64);
    }
}
