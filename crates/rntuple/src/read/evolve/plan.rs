//! The plan of a read with types: each output column's conversion, checked against the
//! descriptor before any page is read.

use super::numbers::{number_fit, Fit};
use super::target::{
    check_default, is_pair_like, map_kind_of, seq_kind_of, target_data_type, target_name,
    with_type_name, MapKind, SeqKind, Target, Want,
};
use super::{DefaultValue, OnOverflow, ReadAs, ReadTypes};
use crate::error::{Error, Result};
use crate::schema::type_name::template_arg;
use crate::schema::{primitive_data_type, Descriptor, FieldKind, PrimitiveType};
use arrow_schema::{DataType, Field, FieldRef, Fields, UnionFields};
use std::collections::HashMap;
use std::sync::Arc;

/// How one array is converted.
#[derive(Debug, Clone)]
pub(super) enum Node {
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
pub(super) enum Member {
    Disk(usize, Node),
    Added(Option<DefaultValue>),
}

/// The conversion of one output column: how, and the field it makes.
#[derive(Debug, Clone)]
pub(crate) struct Conversion {
    pub(super) node: Node,
    /// The output column's field.
    pub(crate) field: FieldRef,
    /// The qualified name of the field read, for messages.
    pub(super) path: String,
    pub(super) on_overflow: OnOverflow,
}

/// What [`Planner::convert`] is asked: field `id`, decoded as `field`, read as the type
/// named `want`; `path` is where an added member's default is looked up.
#[derive(Clone, Copy)]
struct Asked<'s> {
    id: u32,
    field: &'s Field,
    want: &'s str,
    path: &'s str,
}

impl Planner<'_> {
    /// The refusal of what `a` asks, for the reason `why`.
    fn refuse(&self, a: Asked<'_>, why: &str) -> Result<(Node, Field)> {
        Err(refuse(self.desc, a.id, a.want, why))
    }
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
        let a = Asked {
            id,
            field,
            want,
            path,
        };
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
                self.optional_from_optional(a, inner, child)
            }
            (Target::Optional(inner), _) => self.optional_from_value(a, inner),
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
                self.seq_from_list(a, kind_to, item, child)
            }
            (Target::Seq(SeqKind::Vector | SeqKind::RVec, item), FieldKind::Optional(child)) => {
                self.seq_from_optional(a, item, child)
            }
            (Target::Seq(SeqKind::Vector | SeqKind::RVec, item), FieldKind::Array(child, _)) => {
                self.seq_from_array(a, item, child)
            }
            (Target::Seq(kind_to, item), FieldKind::Map(pair)) => {
                self.seq_from_map(a, kind_to, item, pair)
            }
            (Target::Map(kind_to, kt, vt), FieldKind::Map(pair)) => {
                self.map_from_map(a, kind_to, kt, vt, pair)
            }
            (Target::Map(kind_to, kt, vt), FieldKind::List(child)) => {
                self.map_from_list(a, kind_to, kt, vt, child)
            }
            (Target::Array(item, n), FieldKind::Array(child, m)) => {
                self.array_from_array(a, item, n, child, m)
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
            ) => self.tuple_from_record(a, parts, children),
            (Target::Members(members), FieldKind::Record(_, _)) => {
                self.members_from_record(a, members)
            }
            (Target::Variant(alts), FieldKind::Variant(children)) => {
                self.variant_from_variant(a, alts, children)
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

    /// An optional read as an optional.
    fn optional_from_optional(
        &self,
        a: Asked<'_>,
        inner: &Target,
        child: &u32,
    ) -> Result<(Node, Field)> {
        let inner_name = template_arg(a.want, 0);
        let plain = Field::new(a.field.name(), a.field.data_type().clone(), false)
            .with_metadata(a.field.metadata().clone());
        let (node, out) = self.convert(*child, &plain, inner, &inner_name, a.path)?;
        Ok((node, with_type_name(out.with_nullable(true), a.want)))
    }

    /// A value that is always there read as an optional.
    fn optional_from_value(&self, a: Asked<'_>, inner: &Target) -> Result<(Node, Field)> {
        // Always present: the value itself, made nullable.
        let (node, out) = self.convert(a.id, a.field, inner, &template_arg(a.want, 0), a.path)?;
        Ok((
            Node::Nullable(Box::new(node)),
            with_type_name(out.with_nullable(true), a.want),
        ))
    }

    /// A collection read as a sequence.
    fn seq_from_list(
        &self,
        a: Asked<'_>,
        kind_to: &SeqKind,
        item: &Target,
        child: &u32,
    ) -> Result<(Node, Field)> {
        let disk_name = self.desc.field(a.id).type_name();
        let from = seq_kind_of(disk_name);
        if matches!(kind_to, SeqKind::Set | SeqKind::UnorderedSet)
            && !matches!(from, Some(SeqKind::Set | SeqKind::UnorderedSet))
        {
            return self.refuse(a, "a set reads only from a set (its items must be unique)");
        }
        let DataType::LargeList(item_field) = a.field.data_type() else {
            return self.refuse(a, "unexpected storage");
        };
        let (node, out_item) =
            self.convert(*child, item_field, item, &template_arg(a.want, 0), a.path)?;
        let sort = *kind_to == SeqKind::Multiset
            && from != Some(SeqKind::Multiset)
            && from != Some(SeqKind::Set);
        Ok(list_of(
            a.field,
            Node::List(Box::new(node), sort),
            out_item,
            a.want,
        ))
    }

    /// An optional read as a vector of zero or one item.
    fn seq_from_optional(&self, a: Asked<'_>, item: &Target, child: &u32) -> Result<(Node, Field)> {
        let plain = Field::new(a.field.name(), a.field.data_type().clone(), false)
            .with_metadata(a.field.metadata().clone());
        let item_name = template_arg(a.want, 0);
        let (node, out_item) = self.convert(*child, &plain, item, &item_name, a.path)?;
        let out_item = out_item.with_name("_0");
        let dt = DataType::LargeList(Arc::new(out_item));
        Ok((
            Node::OptionalToList(Box::new(node)),
            rebuilt(a.field, dt, a.want).with_nullable(false),
        ))
    }

    /// A fixed-size array read as a vector.
    fn seq_from_array(&self, a: Asked<'_>, item: &Target, child: &u32) -> Result<(Node, Field)> {
        let DataType::FixedSizeList(item_field, _) = a.field.data_type() else {
            return self.refuse(a, "unexpected storage");
        };
        let (node, out_item) =
            self.convert(*child, item_field, item, &template_arg(a.want, 0), a.path)?;
        let dt = DataType::LargeList(Arc::new(out_item));
        Ok((
            Node::ArrayToList(Box::new(node)),
            rebuilt(a.field, dt, a.want),
        ))
    }

    /// A map read as a sequence of its pairs (vector, RVec, set or multiset of pairs).
    fn seq_from_map(
        &self,
        a: Asked<'_>,
        kind_to: &SeqKind,
        item: &Target,
        pair: &u32,
    ) -> Result<(Node, Field)> {
        // A map as a sequence of its pairs (vector, RVec, set or multiset of pairs).
        let _ = kind_to;
        let DataType::Map(entries, _) = a.field.data_type() else {
            return self.refuse(a, "unexpected storage");
        };
        let Target::Tuple(_, parts) = item else {
            return self.refuse(a, "a map reads as a collection of pairs or 2-tuples only");
        };
        let [kt, vt] = parts.as_slice() else {
            return self.refuse(a, "a map's items are pairs: 2 members");
        };
        let (k, v) = self.pair_children(*pair)?;
        let DataType::Struct(kv) = entries.data_type() else {
            return self.refuse(a, "unexpected storage");
        };
        let item_name = template_arg(a.want, 0);
        let (kn, kf) = self.convert(k, &kv[0], kt, &template_arg(&item_name, 0), a.path)?;
        let (vn, vf) = self.convert(v, &kv[1], vt, &template_arg(&item_name, 1), a.path)?;
        let pair_field = with_type_name(
            Field::new(
                "_0",
                DataType::Struct(Fields::from(vec![kf.with_name("_0"), vf.with_name("_1")])),
                false,
            ),
            &item_name,
        );
        let dt = DataType::LargeList(Arc::new(pair_field));
        Ok((
            Node::MapToList(Box::new(kn), Box::new(vn)),
            rebuilt(a.field, dt, a.want),
        ))
    }

    /// A map read as a map.
    fn map_from_map(
        &self,
        a: Asked<'_>,
        kind_to: &MapKind,
        kt: &Target,
        vt: &Target,
        pair: &u32,
    ) -> Result<(Node, Field)> {
        let disk_name = self.desc.field(a.id).type_name();
        let from_unique = matches!(
            map_kind_of(disk_name),
            Some(MapKind::Map | MapKind::UnorderedMap)
        );
        if kind_to.unique() && !from_unique {
            return self.refuse(a, "a map reads only from a map with unique keys");
        }
        let DataType::Map(entries, sorted) = a.field.data_type() else {
            return self.refuse(a, "unexpected storage");
        };
        let DataType::Struct(kv) = entries.data_type() else {
            return self.refuse(a, "unexpected storage");
        };
        let (k, v) = self.pair_children(*pair)?;
        let (kn, kf) = self.convert(k, &kv[0], kt, &template_arg(a.want, 0), a.path)?;
        let (vn, vf) = self.convert(v, &kv[1], vt, &template_arg(a.want, 1), a.path)?;
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
            rebuilt(a.field, dt, a.want),
        ))
    }

    /// A collection of pairs read as a multimap.
    fn map_from_list(
        &self,
        a: Asked<'_>,
        kind_to: &MapKind,
        kt: &Target,
        vt: &Target,
        child: &u32,
    ) -> Result<(Node, Field)> {
        if kind_to.unique() {
            return self.refuse(a, "a map reads only from a map with unique keys");
        }
        let DataType::LargeList(item_field) = a.field.data_type() else {
            return self.refuse(a, "unexpected storage");
        };
        let (FieldKind::Record(_, parts), DataType::Struct(kv)) =
            (self.desc.field_kind(*child), item_field.data_type())
        else {
            return self.refuse(a, "a multimap reads only from a collection of pairs");
        };
        let (true, [k, v]) = (
            is_pair_like(self.desc.field(*child).type_name()),
            parts.as_slice(),
        ) else {
            return self.refuse(a, "a multimap reads only from a collection of pairs");
        };
        let (kn, kf) = self.convert(*k, &kv[0], kt, &template_arg(a.want, 0), a.path)?;
        let (vn, vf) = self.convert(*v, &kv[1], vt, &template_arg(a.want, 1), a.path)?;
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
                template_arg(a.want, 0),
                template_arg(a.want, 1)
            ),
        );
        let sort = *kind_to == MapKind::Multimap;
        let dt = DataType::Map(Arc::new(entries), false);
        Ok((
            Node::ListToMap(Box::new(kn), Box::new(vn), sort),
            rebuilt(a.field, dt, a.want),
        ))
    }

    /// A fixed-size array read as one of other items.
    fn array_from_array(
        &self,
        a: Asked<'_>,
        item: &Target,
        n: &u64,
        child: &u32,
        m: &u64,
    ) -> Result<(Node, Field)> {
        if n != m {
            return self.refuse(a, &format!("it holds {m} items, not {n}"));
        }
        let DataType::FixedSizeList(item_field, size) = a.field.data_type() else {
            return self.refuse(a, "unexpected storage");
        };
        let (node, out_item) =
            self.convert(*child, item_field, item, &template_arg(a.want, 0), a.path)?;
        let dt = DataType::FixedSizeList(Arc::new(out_item), *size);
        Ok((Node::Array(Box::new(node)), rebuilt(a.field, dt, a.want)))
    }

    /// A pair or tuple read as a pair or tuple of other members.
    fn tuple_from_record(
        &self,
        a: Asked<'_>,
        parts: &[Target],
        children: &[u32],
    ) -> Result<(Node, Field)> {
        if parts.len() != children.len() {
            return self.refuse(
                a,
                &format!("it has {} members, not {}", children.len(), parts.len()),
            );
        }
        let DataType::Struct(fields) = a.field.data_type() else {
            return self.refuse(a, "unexpected storage");
        };
        let mut members = Vec::new();
        let mut out = Vec::new();
        for (i, ((part, &c), f)) in parts.iter().zip(children).zip(fields.iter()).enumerate() {
            let (node, of) = self.convert(c, f, part, &template_arg(a.want, i), a.path)?;
            members.push(Member::Disk(i, node));
            out.push(of.with_name(f.name()));
        }
        Ok((
            Node::Record(members),
            rebuilt(a.field, DataType::Struct(Fields::from(out)), a.want),
        ))
    }

    /// A record read member by member, by name: members on disk and not asked for left out, members asked for and not on disk added (null, or their default).
    fn members_from_record(
        &self,
        a: Asked<'_>,
        members: &[(String, Target)],
    ) -> Result<(Node, Field)> {
        let disk_name = self.desc.field(a.id).type_name();
        let DataType::Struct(fields) = a.field.data_type() else {
            return self.refuse(a, "unexpected storage");
        };
        let mut plan = Vec::new();
        let mut out = Vec::new();
        for (name, t) in members {
            let member_path = format!("{}.{name}", a.path);
            let member_want = target_name(t);
            match fields.iter().position(|f| f.name() == name) {
                Some(i) => {
                    let child = self.member_id(a.id, name)?;
                    let (node, of) = if member_want.is_empty() && !matches!(t, Target::Members(_)) {
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
                        .map_err(|why| refuse_member(self.desc, a.id, name, &why))?;
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
        let name = if a.want.is_empty() { disk_name } else { a.want };
        Ok((
            Node::Record(plan),
            rebuilt(a.field, DataType::Struct(Fields::from(out)), name),
        ))
    }

    /// A variant read as one of other alternatives.
    fn variant_from_variant(
        &self,
        a: Asked<'_>,
        alts: &[Target],
        children: &[u32],
    ) -> Result<(Node, Field)> {
        if alts.len() != children.len() {
            return self.refuse(
                a,
                &format!("it has {} alternatives, not {}", children.len(), alts.len()),
            );
        }
        let DataType::Union(fields, mode) = a.field.data_type() else {
            return self.refuse(a, "unexpected storage");
        };
        let mut nodes = Vec::new();
        let mut out = Vec::new();
        for (i, ((alt, &c), (_, f))) in alts.iter().zip(children).zip(fields.iter()).enumerate() {
            let (node, of) = self.convert(c, f, alt, &template_arg(a.want, i), a.path)?;
            nodes.push(node);
            out.push(of.with_nullable(true).with_name(f.name()));
        }
        let ids: Vec<i8> = fields.iter().map(|(i, _)| i).collect();
        let dt = DataType::Union(UnionFields::try_new(ids, out)?, *mode);
        Ok((Node::Union(nodes), rebuilt(a.field, dt, a.want)))
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

fn refuse_member(desc: &Descriptor, record: u32, member: &str, why: &str) -> Error {
    Error::IncompatibleType(format!(
        "member \"{member}\" added to record \"{}\": {why}",
        desc.qualified_name(record)
    ))
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
