//! Builds the schema description a writer stores in the header: field records with their
//! ids, parent ids, roles, flags and the type names ROOT 6.40 writes, and the column
//! records ROOT picks by default, from C++ type names or from Arrow fields.
//!
//! Fields are numbered depth-first in the order they are added (a field before its
//! subfields), and columns in the order of their fields, as ROOT does.

mod expand;
mod from_arrow;

use super::descriptor::{find_by_path, FieldRole};
use super::kind::PrimitiveType;
use super::type_name::{parse_type_name, CppType};
use crate::encoding::ColumnType;
use crate::error::{Error, Result};
use crate::format::{
    AliasColumnRecord, ColumnRecord, ExtraTypeInfoRecord, FieldRecord, SchemaDescription,
};
use crate::format::{
    COLUMN_FLAG_RANGE, FIELD_FLAG_PROJECTED, FIELD_FLAG_REPETITIVE, FIELD_FLAG_TYPE_CHECKSUM,
};
use arrow_schema::Field;
use from_arrow::{cpp_of, type_hint, ArrowShape};
use std::collections::HashMap;

/// Most alternatives a `std::variant` may have (specification limit).
const MAX_VARIANT_ALTERNATIVES: usize = 125;

/// How columns are chosen when not overridden: ROOT's defaults. When `compressed`, split
/// encodings (SplitInt32, SplitReal64, SplitIndex64, ...), else plain ones; index columns
/// are (Split)Index64; `bool` -> Bit; `std::string` -> (Split)Index64 + Char; `float` ->
/// (Split)Real32; `Double32_t` -> SplitReal32 in both cases; `std::variant` -> Switch;
/// `std::bitset` -> Bit; 8-bit types keep their unsplit column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ColumnDefaults {
    /// Whether the RNTuple is written compressed (ROOT then prefers split encodings).
    pub compressed: bool,
}

impl Default for ColumnDefaults {
    /// ROOT's default: compressed (zstd).
    fn default() -> Self {
        ColumnDefaults { compressed: true }
    }
}

/// One column of a representation chosen by [`SchemaBuilder::set_columns`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ColumnSpec {
    /// The column type.
    pub column_type: ColumnType,
    /// Bits on storage; required for Real32Trunc (10-31) and Real32Quant (1-32), else the
    /// type's fixed width (which may also be given).
    pub bits_on_storage: Option<u16>,
    /// Value range (min, max); required for Real32Quant, refused for other types.
    pub value_range: Option<(f64, f64)>,
}

impl ColumnSpec {
    /// A column of a fixed-width type.
    pub fn new(column_type: ColumnType) -> Self {
        ColumnSpec {
            column_type,
            bits_on_storage: None,
            value_range: None,
        }
    }

    /// A Real32Trunc column keeping `bits` (10-31) bits.
    pub fn truncated(bits: u16) -> Self {
        ColumnSpec {
            column_type: ColumnType::Real32Trunc,
            bits_on_storage: Some(bits),
            value_range: None,
        }
    }

    /// A Real32Quant column of `bits` (1-32) bits over `[min, max]`.
    pub fn quantized(bits: u16, min: f64, max: f64) -> Self {
        ColumnSpec {
            column_type: ColumnType::Real32Quant,
            bits_on_storage: Some(bits),
            value_range: Some((min, max)),
        }
    }
}

/// A user class (or struct) described explicitly: ROOT knows its members from its
/// dictionary, this library from this description.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassSpec {
    /// The class's C++ type name (normalized when registered).
    pub type_name: String,
    /// Data members in declaration order: (name, C++ type name).
    pub members: Vec<(String, String)>,
    /// Base classes in declaration order (stored as subfields `:_0`, `:_1`, ...).
    pub bases: Vec<String>,
    /// The class version ROOT stores as the field's type version (1 for classes without
    /// `ClassDef`).
    pub type_version: u32,
    /// The class's ROOT checksum (`TClass::GetCheckSum()`), stored when given; ROOT
    /// always stores one for classes.
    pub checksum: Option<u32>,
}

impl ClassSpec {
    /// A class of version 1 without checksum.
    pub fn new(type_name: &str, members: &[(&str, &str)], bases: &[&str]) -> Self {
        ClassSpec {
            type_name: type_name.to_string(),
            members: members
                .iter()
                .map(|(n, t)| (n.to_string(), t.to_string()))
                .collect(),
            bases: bases.iter().map(|b| b.to_string()).collect(),
            type_version: 1,
            checksum: None,
        }
    }
}

/// What a field's columns hold, to choose defaults and validate overrides.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Slot {
    /// No columns (records, arrays, atomics, enums).
    None,
    /// A fundamental type; `true` for `Double32_t`.
    Primitive(PrimitiveType, bool),
    /// `std::string`: index + Char.
    String,
    /// A collection's index column.
    Index,
    /// A variant's Switch column.
    Switch,
    /// A bitset's Bit column.
    Bitset,
    /// A streamer field's index and Byte columns.
    Streamer,
    /// A projected field (alias columns only).
    Projected,
}

#[derive(Debug, Clone)]
struct Node {
    record: FieldRecord,
    columns: Vec<ColumnSpec>,
    slot: Slot,
    children: Vec<u32>,
    /// For a projected field: the field whose physical columns it shows.
    alias_of: Option<u32>,
}

/// Accumulates fields and columns with correct ids and parent ids; [`finish`] gives the
/// schema description to write.
///
/// [`finish`]: SchemaBuilder::finish
#[derive(Debug, Clone)]
pub struct SchemaBuilder {
    defaults: ColumnDefaults,
    nodes: Vec<Node>,
    top_level: Vec<u32>,
    classes: HashMap<String, ClassSpec>,
    enums: HashMap<String, CppType>,
    nullable_as_optional: bool,
    extra_type_infos: Vec<ExtraTypeInfoRecord>,
}

/// A type to expand: a C++ type, or an untyped record / collection with explicit members.
enum Shape<'a> {
    Cpp(&'a CppType),
    UntypedRecord(&'a [(String, CppType)]),
    UntypedCollection(&'a [(String, CppType)]),
}

impl SchemaBuilder {
    /// An empty schema whose columns follow `defaults` unless overridden.
    pub fn new(defaults: ColumnDefaults) -> Self {
        SchemaBuilder {
            defaults,
            nodes: Vec::new(),
            top_level: Vec::new(),
            classes: HashMap::new(),
            enums: HashMap::new(),
            nullable_as_optional: false,
            extra_type_infos: Vec::new(),
        }
    }

    /// Makes [`add_arrow_field`](SchemaBuilder::add_arrow_field) map every nullable Arrow
    /// field (top level or nested) to `std::optional` of its type, unless its type name
    /// already is an optional or `std::unique_ptr`. Off by default, because most Arrow
    /// producers mark every field nullable; callers that know which fields really hold
    /// nulls (a data frame front end) mark only those nullable and turn this on.
    pub fn nullable_as_optional(mut self, on: bool) -> Self {
        self.nullable_as_optional = on;
        self
    }

    /// Adds a top-level field from a C++ type name as ROOT writes it (normalized on the
    /// way), expanding the subfield tree and columns as ROOT 6.40 does. User classes and
    /// enums must be registered first ([`register_class`], [`register_enum`]). Returns
    /// the field id.
    ///
    /// [`register_class`]: SchemaBuilder::register_class
    /// [`register_enum`]: SchemaBuilder::register_enum
    pub fn add_cpp_field(&mut self, name: &str, type_name: &str) -> Result<u32> {
        let ty = parse_type_name(type_name)?;
        self.add_top_level(name, Shape::Cpp(&ty))
    }

    /// Adds a top-level streamer field (ROOT's `RStreamerField`, role 4): each value is
    /// an object of `type_name` as ROOT's streamer serializes it, stored in an index and a
    /// Byte column; `type_version` and `checksum` are its class's (`TClass`). The classes'
    /// streamer infos belong in the extra type information
    /// ([`add_extra_type_info`](SchemaBuilder::add_extra_type_info)). Returns the field id.
    pub fn add_streamer_field(
        &mut self,
        name: &str,
        type_name: &str,
        type_version: u32,
        checksum: u32,
    ) -> Result<u32> {
        self.check_top_level_name(name)?;
        let ty = parse_type_name(type_name)?;
        let id = self.push_node(name, &ty, FieldRole::Streamer, None, Slot::Streamer);
        let rec = &mut self.nodes[id as usize].record;
        rec.type_version = type_version;
        rec.flags |= FIELD_FLAG_TYPE_CHECKSUM;
        rec.type_checksum = Some(checksum);
        // A streamer field names its class as ROOT does, without alias.
        rec.type_alias = String::new();
        self.top_level.push(id);
        Ok(id)
    }

    /// Adds an extra type information record (e.g. the streamer infos of the classes
    /// that streamer fields store, content id 1); one per content id and type.
    pub fn add_extra_type_info(&mut self, record: ExtraTypeInfoRecord) {
        self.extra_type_infos.retain(|r| {
            (r.content_id, r.type_version, &r.type_name)
                != (record.content_id, record.type_version, &record.type_name)
        });
        self.extra_type_infos.push(record);
    }

    /// Registers a user class so that fields of its type (also nested, e.g. in
    /// `std::vector<MyClass>`) can be built. Member types are checked when used.
    pub fn register_class(&mut self, mut spec: ClassSpec) -> Result<()> {
        let ty = parse_type_name(&spec.type_name)?;
        spec.type_name = ty.type_name();
        if is_builtin(&ty.name) {
            return Err(Error::InvalidArgument(format!(
                "\"{}\" is a supported type, not a user class",
                spec.type_name
            )));
        }
        for (i, (m, _)) in spec.members.iter().enumerate() {
            check_name(m)?;
            if spec.members[..i].iter().any(|(other, _)| other == m) {
                return Err(Error::InvalidArgument(format!(
                    "class \"{}\" has two members named \"{m}\"",
                    spec.type_name
                )));
            }
        }
        self.enums.remove(&spec.type_name);
        self.classes.insert(spec.type_name.clone(), spec);
        Ok(())
    }

    /// Registers an enum with its underlying integer type (e.g. `short`).
    pub fn register_enum(&mut self, type_name: &str, underlying: &str) -> Result<()> {
        let ty = parse_type_name(type_name)?;
        let under = parse_type_name(underlying)?;
        let is_integer = matches!(
            PrimitiveType::from_type_name(&under.type_name()),
            Some(
                PrimitiveType::Int8
                    | PrimitiveType::UInt8
                    | PrimitiveType::Int16
                    | PrimitiveType::UInt16
                    | PrimitiveType::Int32
                    | PrimitiveType::UInt32
                    | PrimitiveType::Int64
                    | PrimitiveType::UInt64
            )
        );
        if !is_integer || !under.args.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "enum \"{type_name}\": underlying type \"{underlying}\" is not an integer type"
            )));
        }
        if is_builtin(&ty.name) {
            return Err(Error::InvalidArgument(format!(
                "\"{type_name}\" is a supported type, not an enum"
            )));
        }
        self.classes.remove(&ty.type_name());
        self.enums.insert(ty.type_name(), under);
        Ok(())
    }

    /// Registers user class `type_name` (version 1, no checksum) and adds a top-level field
    /// of it. For the class version and ROOT checksum use [`register_class`].
    ///
    /// [`register_class`]: SchemaBuilder::register_class
    pub fn add_record(
        &mut self,
        name: &str,
        type_name: &str,
        members: &[(&str, &str)],
        bases: &[&str],
    ) -> Result<u32> {
        self.register_class(ClassSpec::new(type_name, members, bases))?;
        self.add_cpp_field(name, type_name)
    }

    /// Registers enum `type_name` with its underlying integer type and adds a top-level
    /// field of it.
    pub fn add_enum(&mut self, name: &str, type_name: &str, underlying: &str) -> Result<u32> {
        self.register_enum(type_name, underlying)?;
        self.add_cpp_field(name, type_name)
    }

    /// Adds an untyped record (empty type name) with the given members (name, C++ type).
    pub fn add_untyped_record(&mut self, name: &str, members: &[(&str, &str)]) -> Result<u32> {
        let members = parse_members(members)?;
        self.add_top_level(name, Shape::UntypedRecord(&members))
    }

    /// Adds an untyped collection (empty type name, an index column) whose item `_0` is an
    /// untyped record with the given members.
    pub fn add_untyped_collection(&mut self, name: &str, members: &[(&str, &str)]) -> Result<u32> {
        let members = parse_members(members)?;
        self.add_top_level(name, Shape::UntypedCollection(&members))
    }

    /// Adds a top-level field for an Arrow field: the C++ type follows from the Arrow type,
    /// refined by the `rntuple.type` metadata entry where present (on the field and its
    /// children), so Arrow fields produced by the reader map back to the same C++ type.
    /// Structs named by a class type unknown to the builder register that class from their
    /// children (version 1, no checksum); integers named by an unknown type register an
    /// enum. Float16 becomes `float` stored as Real16. Nullability alone does not make a
    /// field optional: only a `std::optional`/`std::unique_ptr` type name does.
    pub fn add_arrow_field(&mut self, field: &Field) -> Result<u32> {
        let mut overrides = Vec::new();
        let hint = type_hint(field)?;
        if let Some(members) = self.untyped_collection_members(field, &hint)? {
            return self.add_top_level(field.name(), Shape::UntypedCollection(&members));
        }
        let ty = if self.wraps_in_optional(field, &hint) {
            let inner = self.arrow_type(
                field.name(),
                field.data_type(),
                hint,
                &mut vec![0],
                &mut overrides,
                1,
            )?;
            let inner = cpp_of(inner, field.name())?;
            ArrowShape::Cpp(CppType::template("std::optional", vec![inner]))
        } else {
            self.arrow_type(
                field.name(),
                field.data_type(),
                hint,
                &mut Vec::new(),
                &mut overrides,
                0,
            )?
        };
        let id = match &ty {
            ArrowShape::Cpp(t) => self.add_top_level(field.name(), Shape::Cpp(t))?,
            ArrowShape::Untyped(m) => self.add_top_level(field.name(), Shape::UntypedRecord(m))?,
        };
        for (path, spec) in overrides {
            let mut cur = id;
            for i in path {
                cur = *self.nodes[cur as usize]
                    .children
                    .get(i)
                    .ok_or_else(|| Error::InvalidArgument("internal: bad subfield path".into()))?;
            }
            self.set_columns(cur, &[spec])?;
        }
        Ok(id)
    }

    /// Overrides the column types of field `id` (one representation), e.g. Real16 or
    /// Real32Quant with bits and range, validated against the types the specification
    /// allows writing for the field's C++ type.
    pub fn set_columns(&mut self, id: u32, columns: &[ColumnSpec]) -> Result<()> {
        let node = self
            .nodes
            .get(id as usize)
            .ok_or_else(|| Error::InvalidArgument(format!("no field with id {id}")))?;
        let what = format!(
            "field \"{}\" of type \"{}\"",
            node.record.name, node.record.type_name
        );
        let allowed: &[&[ColumnType]] = allowed_columns(node.slot);
        if columns.len() != allowed.len() {
            return Err(Error::InvalidArgument(format!(
                "{what} takes {} column(s), {} given",
                allowed.len(),
                columns.len()
            )));
        }
        for (spec, ok) in columns.iter().zip(allowed) {
            if !ok.contains(&spec.column_type) {
                return Err(Error::InvalidArgument(format!(
                    "{what} cannot be written as {} (allowed: {})",
                    spec.column_type,
                    ok.iter().map(|t| t.name()).collect::<Vec<_>>().join(", ")
                )));
            }
            check_spec(spec, &what)?;
        }
        self.nodes[id as usize].columns = columns.to_vec();
        Ok(())
    }

    /// Adds a projected field `name` of `type_name` showing the field at `source_path`
    /// (dotted, e.g. `pair._0`) through alias columns; its subfields show the source's
    /// subfields of the same relative path (`name._0` shows `source_path._0`). A
    /// `ROOT::RNTupleCardinality<std::uint32_t>` / `<std::uint64_t>` shows the size of
    /// the collection at `source_path`.
    pub fn add_projected_field(
        &mut self,
        name: &str,
        type_name: &str,
        source_path: &str,
    ) -> Result<u32> {
        let prefix_len = name.len();
        self.add_projected_field_mapped(name, type_name, &|p: &str| {
            format!("{source_path}{}", p.get(prefix_len..).unwrap_or(""))
        })
    }

    /// Adds a projected field whose field and subfields show the fields `mapping` names:
    /// it receives dotted projected paths (`name`, `name._0`, ...) and returns source
    /// paths, like ROOT's mapping function (e.g. `std::vector<float>` `v` from
    /// `std::vector<std::pair<int,float>>` `vp` by mapping `v` to `vp` and `v._0` to
    /// `vp._0._1`). Leaves must show leaves of the same C++ type, collections must show
    /// collections (their index column), records and arrays fields of the same shape.
    pub fn add_projected_field_mapped(
        &mut self,
        name: &str,
        type_name: &str,
        mapping: &dyn Fn(&str) -> String,
    ) -> Result<u32> {
        let ty = parse_type_name(type_name)?;
        if ty.name == "ROOT::RNTupleCardinality" {
            let size = ty.type_arg(0)?.type_name();
            if ty.args.len() != 1 || (size != "std::uint32_t" && size != "std::uint64_t") {
                return Err(Error::InvalidArgument(format!(
                    "\"{}\": cardinality must be of std::uint32_t or std::uint64_t",
                    ty.type_name()
                )));
            }
            let source_path = mapping(name);
            let source = self.find_field(&source_path).ok_or_else(|| {
                Error::InvalidArgument(format!("projection source \"{source_path}\" not found"))
            })?;
            if self.nodes[source as usize].slot != Slot::Index {
                return Err(Error::InvalidArgument(format!(
                    "cardinality \"{name}\": source \"{source_path}\" is not a collection"
                )));
            }
            self.check_top_level_name(name)?;
            let id = self.push_node(name, &ty, FieldRole::Leaf, None, Slot::Projected);
            let rec = &mut self.nodes[id as usize].record;
            rec.flags |= FIELD_FLAG_PROJECTED;
            rec.source_field_id = Some(source);
            self.nodes[id as usize].alias_of = Some(source);
            self.top_level.push(id);
            return Ok(id);
        }
        let mark = self.nodes.len();
        let n_top = self.top_level.len();
        let id = self.add_top_level(name, Shape::Cpp(&ty))?;
        if let Err(e) = self.project(id, name, mapping) {
            self.nodes.truncate(mark);
            self.top_level.truncate(n_top);
            return Err(e);
        }
        Ok(id)
    }

    /// The field id at a dotted path (`a.b._0`), among the fields added so far.
    pub fn find_field(&self, path: &str) -> Option<u32> {
        find_by_path(
            path,
            &self.top_level,
            |id| self.nodes[id as usize].record.name.as_str(),
            |id| &self.nodes[id as usize].children,
        )
    }

    /// The field records so far, by id.
    pub fn fields(&self) -> Vec<&FieldRecord> {
        self.nodes.iter().map(|n| &n.record).collect()
    }

    /// The schema description: field records by id, physical columns in field order,
    /// alias columns of the projected fields.
    pub fn finish(self) -> SchemaDescription {
        let mut columns = Vec::new();
        let mut first_column = Vec::with_capacity(self.nodes.len());
        for (id, node) in self.nodes.iter().enumerate() {
            // Field ids are u32 by construction (push_node); a field has at most two
            // columns, so the column count is bounded by memory as the fields are.
            #[allow(clippy::cast_possible_truncation)]
            let (id, first) = (id as u32, columns.len() as u32);
            first_column.push(first);
            for spec in &node.columns {
                columns.push(ColumnRecord {
                    column_type: spec.column_type.as_u16(),
                    bits_on_storage: spec
                        .bits_on_storage
                        .unwrap_or_else(|| spec.column_type.default_bits()),
                    field_id: id,
                    flags: if spec.value_range.is_some() {
                        COLUMN_FLAG_RANGE
                    } else {
                        0
                    },
                    representation_index: 0,
                    first_element_index: None,
                    value_range: spec.value_range,
                });
            }
        }
        let mut alias_columns = Vec::new();
        for (id, node) in self.nodes.iter().enumerate() {
            if let Some(src) = node.alias_of {
                let first = first_column[src as usize];
                // A u32 field id (push_node) and a field's column count (at most two).
                #[allow(clippy::cast_possible_truncation)]
                let (id, n) = (id as u32, self.nodes[src as usize].columns.len() as u32);
                for k in 0..n {
                    alias_columns.push(AliasColumnRecord {
                        physical_column_id: first + k,
                        field_id: id,
                    });
                }
            }
        }
        SchemaDescription {
            fields: self.nodes.into_iter().map(|n| n.record).collect(),
            columns,
            alias_columns,
            extra_type_infos: self.extra_type_infos,
        }
    }

    fn check_top_level_name(&self, name: &str) -> Result<()> {
        check_name(name)?;
        if self
            .top_level
            .iter()
            .any(|&id| self.nodes[id as usize].record.name == name)
        {
            return Err(Error::InvalidArgument(format!(
                "a top-level field named \"{name}\" exists already"
            )));
        }
        Ok(())
    }

    fn add_top_level(&mut self, name: &str, shape: Shape<'_>) -> Result<u32> {
        self.check_top_level_name(name)?;
        let mark = self.nodes.len();
        match self.build(name, shape, None, 0) {
            Ok(id) => {
                self.top_level.push(id);
                Ok(id)
            }
            Err(e) => {
                self.nodes.truncate(mark);
                Err(e)
            }
        }
    }

    /// Appends the record of a fixed-size field of `n` items (`std::array`, `std::bitset`).
    fn push_repetitive(
        &mut self,
        name: &str,
        ty: &CppType,
        parent: Option<u32>,
        slot: Slot,
        n: u64,
    ) -> u32 {
        let id = self.push_node(name, ty, FieldRole::Leaf, parent, slot);
        let rec = &mut self.nodes[id as usize].record;
        rec.flags |= FIELD_FLAG_REPETITIVE;
        rec.array_size = Some(n);
        id
    }

    /// Appends a field record; top-level fields name themselves as parent.
    fn push_node(
        &mut self,
        name: &str,
        ty: &CppType,
        role: FieldRole,
        parent: Option<u32>,
        slot: Slot,
    ) -> u32 {
        // Bounded by memory: 2^32 nodes of well over 100 bytes each cannot be held.
        #[allow(clippy::cast_possible_truncation)]
        let id = self.nodes.len() as u32;
        let columns = self.default_columns(slot);
        self.nodes.push(Node {
            record: FieldRecord {
                parent_id: parent.unwrap_or(id),
                role: role.code(),
                name: name.to_string(),
                type_name: ty.type_name(),
                type_alias: ty.type_alias(),
                ..Default::default()
            },
            columns,
            slot,
            children: Vec::new(),
            alias_of: None,
        });
        if let Some(p) = parent {
            self.nodes[p as usize].children.push(id);
        }
        id
    }

    fn default_columns(&self, slot: Slot) -> Vec<ColumnSpec> {
        let split = self.defaults.compressed;
        let pick = |s: ColumnType, p: ColumnType| ColumnSpec::new(if split { s } else { p });
        let index = pick(ColumnType::SplitIndex64, ColumnType::Index64);
        use ColumnType as C;
        match slot {
            Slot::None | Slot::Projected => Vec::new(),
            Slot::String => vec![index, ColumnSpec::new(C::Char)],
            Slot::Index => vec![index],
            Slot::Switch => vec![ColumnSpec::new(C::Switch)],
            Slot::Bitset => vec![ColumnSpec::new(C::Bit)],
            Slot::Streamer => vec![index, ColumnSpec::new(C::Byte)],
            Slot::Primitive(_, true) => vec![ColumnSpec::new(C::SplitReal32)],
            Slot::Primitive(p, false) => vec![match p {
                PrimitiveType::Bool => ColumnSpec::new(C::Bit),
                PrimitiveType::Char => ColumnSpec::new(C::Char),
                PrimitiveType::Byte => ColumnSpec::new(C::Byte),
                PrimitiveType::Int8 => ColumnSpec::new(C::Int8),
                PrimitiveType::UInt8 => ColumnSpec::new(C::UInt8),
                PrimitiveType::Int16 => pick(C::SplitInt16, C::Int16),
                PrimitiveType::UInt16 => pick(C::SplitUInt16, C::UInt16),
                PrimitiveType::Int32 => pick(C::SplitInt32, C::Int32),
                PrimitiveType::UInt32 => pick(C::SplitUInt32, C::UInt32),
                PrimitiveType::Int64 => pick(C::SplitInt64, C::Int64),
                PrimitiveType::UInt64 => pick(C::SplitUInt64, C::UInt64),
                PrimitiveType::Float32 => pick(C::SplitReal32, C::Real32),
                PrimitiveType::Float64 => pick(C::SplitReal64, C::Real64),
            }],
        }
    }

    /// Turns the freshly built subtree at `id` (dotted path `path`) into a projection.
    fn project(&mut self, id: u32, path: &str, mapping: &dyn Fn(&str) -> String) -> Result<()> {
        let source_path = mapping(path);
        let source = self
            .find_field(&source_path)
            .filter(|&s| s < id)
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "projection source \"{source_path}\" of \"{path}\" not found"
                ))
            })?;
        let (p, s) = (&self.nodes[id as usize], &self.nodes[source as usize]);
        let compatible = match (p.slot, s.slot) {
            (_, Slot::Projected) => false,
            // Records, arrays, atomics, enums: the same shape.
            (Slot::None, Slot::None) => {
                p.record.role == s.record.role
                    && p.record.array_size == s.record.array_size
                    && p.children.len() == s.children.len()
            }
            // Collections of any kind share the index column.
            (Slot::Index, Slot::Index) => true,
            (a, b) => a == b && p.record.array_size == s.record.array_size,
        };
        if !compatible {
            return Err(Error::InvalidArgument(format!(
                "projected field \"{path}\" of type \"{}\" cannot show \"{source_path}\" of type \"{}\"",
                p.record.type_name, s.record.type_name
            )));
        }
        let children: Vec<(u32, String)> = p
            .children
            .iter()
            .map(|&c| (c, format!("{path}.{}", self.nodes[c as usize].record.name)))
            .collect();
        let node = &mut self.nodes[id as usize];
        node.record.flags |= FIELD_FLAG_PROJECTED;
        node.record.source_field_id = Some(source);
        node.columns.clear();
        node.slot = Slot::Projected;
        node.alias_of = Some(source);
        for (c, cpath) in children {
            self.project(c, &cpath, mapping)?;
        }
        Ok(())
    }
}

fn parse_members(members: &[(&str, &str)]) -> Result<Vec<(String, CppType)>> {
    let mut out: Vec<(String, CppType)> = Vec::new();
    for (n, t) in members {
        check_name(n)?;
        if out.iter().any(|(m, _)| m == n) {
            return Err(Error::InvalidArgument(format!("two members named \"{n}\"")));
        }
        out.push((n.to_string(), parse_type_name(t)?));
    }
    Ok(out)
}

/// Field names must be non-empty and free of dots (the path separator).
fn check_name(name: &str) -> Result<()> {
    if name.is_empty() || name.contains('.') {
        return Err(Error::InvalidArgument(format!(
            "invalid field name \"{name}\" (empty or containing '.')"
        )));
    }
    Ok(())
}

/// Whether a normalized name is one of the types this builder knows by itself.
fn is_builtin(name: &str) -> bool {
    PrimitiveType::from_type_name(name).is_some()
        || name.starts_with("std::")
        || name.starts_with("ROOT::VecOps::")
        || name.starts_with("ROOT::RNTupleCardinality")
}

/// The column types the specification allows writing, per column, for a field.
fn allowed_columns(slot: Slot) -> &'static [&'static [ColumnType]] {
    use ColumnType as C;
    const INDEX: &[ColumnType] = &[C::Index64, C::SplitIndex64, C::Index32, C::SplitIndex32];
    const REAL64: &[ColumnType] = &[
        C::SplitReal64,
        C::Real64,
        C::SplitReal32,
        C::Real32,
        C::Real16,
        C::SplitReal16,
        C::Real32Trunc,
        C::Real32Quant,
    ];
    // A float's column types are a double's but for the two 64-bit ones.
    const REAL32: &[ColumnType] = REAL64.split_at(2).1;
    match slot {
        Slot::None | Slot::Projected => &[],
        Slot::String => &[INDEX, &[C::Char]],
        Slot::Index => &[INDEX],
        Slot::Switch => &[&[C::Switch]],
        Slot::Bitset => &[&[C::Bit]],
        Slot::Streamer => &[INDEX, &[C::Byte]],
        Slot::Primitive(p, _) => match p {
            PrimitiveType::Bool => &[&[C::Bit]],
            PrimitiveType::Byte => &[&[C::Byte]],
            PrimitiveType::Char => &[&[C::Char]],
            PrimitiveType::Int8 => &[&[C::Int8]],
            PrimitiveType::UInt8 => &[&[C::UInt8]],
            PrimitiveType::Int16 => &[&[C::SplitInt16, C::Int16]],
            PrimitiveType::UInt16 => &[&[C::SplitUInt16, C::UInt16]],
            PrimitiveType::Int32 => &[&[C::SplitInt32, C::Int32]],
            PrimitiveType::UInt32 => &[&[C::SplitUInt32, C::UInt32]],
            PrimitiveType::Int64 => &[&[C::SplitInt64, C::Int64]],
            PrimitiveType::UInt64 => &[&[C::SplitUInt64, C::UInt64]],
            PrimitiveType::Float32 => &[REAL32],
            PrimitiveType::Float64 => &[REAL64],
        },
    }
}

/// Checks bits on storage and value range of one column spec.
fn check_spec(spec: &ColumnSpec, what: &str) -> Result<()> {
    let t = spec.column_type;
    let bits = spec.bits_on_storage;
    match t.fixed_bits() {
        Some(w) => {
            if bits.is_some_and(|b| b != w) {
                return Err(Error::InvalidArgument(format!(
                    "{what}: column type {t} has {w} bits on storage"
                )));
            }
        }
        None => {
            let b = bits.ok_or_else(|| {
                Error::InvalidArgument(format!("{what}: column type {t} needs bits on storage"))
            })?;
            t.validate_bits(b)
                .map_err(|_| Error::InvalidArgument(format!("{what}: {b} bits invalid for {t}")))?;
        }
    }
    match (t, spec.value_range) {
        (ColumnType::Real32Quant, Some((min, max))) => {
            if !(min.is_finite() && max.is_finite() && min < max) {
                return Err(Error::InvalidArgument(format!(
                    "{what}: value range [{min}, {max}] must be finite with min < max"
                )));
            }
        }
        (ColumnType::Real32Quant, None) => {
            return Err(Error::InvalidArgument(format!(
                "{what}: Real32Quant needs a value range"
            )))
        }
        (_, Some(_)) => {
            return Err(Error::InvalidArgument(format!(
                "{what}: only Real32Quant columns take a value range"
            )))
        }
        (_, None) => {}
    }
    Ok(())
}
