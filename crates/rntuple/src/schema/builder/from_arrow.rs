//! The C++ types of Arrow fields: each Arrow type with its `rntuple.type` hint (a
//! class, an enum, a map or sequence template, `Double32_t`, ...) as the C++ type the
//! builder expands; classes and enums named by hints are registered on the way.

use super::{is_builtin, ClassSpec, ColumnSpec, SchemaBuilder};
use crate::encoding::ColumnType;
use crate::error::{Error, Result};
use crate::schema::descriptor::MAX_FIELD_DEPTH;
use crate::schema::kind::is_map_template;
use crate::schema::type_name::{parse_type_name, CppType, TemplateArg};
use crate::schema::TYPE_NAME_KEY;
use arrow_schema::{DataType, Field, Fields};

impl SchemaBuilder {
    /// The C++ type of an Arrow type; `path` is the subfield path being converted and
    /// `overrides` collects column overrides (Real16 for Float16) by subfield path.
    pub(super) fn arrow_type(
        &mut self,
        name: &str,
        dt: &DataType,
        hint: Option<CppType>,
        path: &mut Vec<usize>,
        overrides: &mut Vec<(Vec<usize>, ColumnSpec)>,
        depth: usize,
    ) -> Result<ArrowShape> {
        if depth > MAX_FIELD_DEPTH {
            return Err(Error::InvalidArgument(format!(
                "Arrow field \"{name}\" is nested too deeply"
            )));
        }
        let unsupported = || {
            Error::Unsupported(format!(
                "Arrow field \"{name}\": no RNTuple type for Arrow type {dt}"
            ))
        };
        let hint_name = hint.as_ref().map(|h| h.name.clone()).unwrap_or_default();
        // Wrappers whose Arrow type is their item's: optional, unique_ptr, atomic.
        if let Some(h) = &hint {
            if matches!(
                h.name.as_str(),
                "std::optional" | "std::unique_ptr" | "std::atomic"
            ) && h.args.len() == 1
            {
                let inner_hint = h.type_arg(0)?.clone();
                path.push(0);
                let inner = self.arrow_type(name, dt, Some(inner_hint), path, overrides, depth + 1);
                path.pop();
                let inner = cpp_of(inner?, name)?;
                return Ok(ArrowShape::Cpp(CppType::template(&h.name, vec![inner])));
            }
            if h.name == "ROOT::RNTupleCardinality" {
                return Err(Error::InvalidArgument(format!(
                    "Arrow field \"{name}\" is a cardinality: add it with add_projected_field"
                )));
            }
        }
        let primitive = |p: &str| Ok(ArrowShape::Cpp(CppType::plain(p)));
        let is_int = matches!(
            dt,
            DataType::Int8
                | DataType::Int16
                | DataType::Int32
                | DataType::Int64
                | DataType::UInt8
                | DataType::UInt16
                | DataType::UInt32
                | DataType::UInt64
        );
        if let Some(h) = &hint {
            if is_int && h.args.is_empty() && !is_builtin(&h.name) {
                let t = h.type_name();
                if !self.enums.contains_key(&t) {
                    let under = match dt {
                        DataType::Int8 => "std::int8_t",
                        DataType::Int16 => "std::int16_t",
                        DataType::Int32 => "std::int32_t",
                        DataType::Int64 => "std::int64_t",
                        DataType::UInt8 => "std::uint8_t",
                        DataType::UInt16 => "std::uint16_t",
                        DataType::UInt32 => "std::uint32_t",
                        _ => "std::uint64_t",
                    };
                    self.register_enum(&t, under)?;
                }
                return Ok(ArrowShape::Cpp(h.clone()));
            }
        }
        match dt {
            DataType::Boolean => primitive("bool"),
            DataType::Int8 if hint_name == "char" => primitive("char"),
            DataType::Int8 => primitive("std::int8_t"),
            DataType::UInt8 if hint_name == "std::byte" => primitive("std::byte"),
            DataType::UInt8 => primitive("std::uint8_t"),
            DataType::Int16 => primitive("std::int16_t"),
            DataType::UInt16 => primitive("std::uint16_t"),
            DataType::Int32 => primitive("std::int32_t"),
            DataType::UInt32 => primitive("std::uint32_t"),
            DataType::Int64 => primitive("std::int64_t"),
            DataType::UInt64 => primitive("std::uint64_t"),
            DataType::Float16 => {
                overrides.push((path.clone(), ColumnSpec::new(ColumnType::Real16)));
                primitive("float")
            }
            DataType::Float32 => primitive("float"),
            DataType::Float64 if hint_name == "Double32_t" => primitive("Double32_t"),
            DataType::Float64 => primitive("double"),
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => primitive("std::string"),
            DataType::List(item)
            | DataType::LargeList(item)
            | DataType::ListView(item)
            | DataType::LargeListView(item) => {
                let head = match hint_name.as_str() {
                    "std::vector"
                    | "ROOT::VecOps::RVec"
                    | "std::set"
                    | "std::multiset"
                    | "std::unordered_set"
                    | "std::unordered_multiset" => hint_name.as_str(),
                    _ => "std::vector",
                };
                let item_hint = type_hint(item)?.or_else(|| hint_arg(&hint, 0));
                let inner = self.arrow_child(item, item_hint, 0, path, overrides, depth)?;
                Ok(ArrowShape::Cpp(CppType::template(head, vec![inner])))
            }
            DataType::FixedSizeList(item, n) => {
                let n = u64::try_from(*n).map_err(|_| unsupported())?;
                self.arrow_fixed_size_list(item, n, &hint, path, overrides, depth)?
                    .ok_or_else(unsupported)
            }
            DataType::Map(entries, _) => self
                .arrow_map(entries, &hint, path, overrides, depth)?
                .ok_or_else(unsupported),
            DataType::Union(fields, _) => {
                let mut alts = Vec::new();
                for (i, (_, f)) in fields.iter().enumerate() {
                    let h = type_hint(f)?.or_else(|| hint_arg(&hint, i));
                    alts.push(self.arrow_child(f, h, i, path, overrides, depth)?);
                }
                Ok(ArrowShape::Cpp(CppType::template("std::variant", alts)))
            }
            DataType::Struct(children) => self.arrow_struct(children, hint, path, overrides, depth),
            _ => Err(unsupported()),
        }
    }

    /// A fixed-size list of `n` items: a bitset (of bools, by its hint) or an array;
    /// `None` for a bitset of other items.
    fn arrow_fixed_size_list(
        &mut self,
        item: &Field,
        n: u64,
        hint: &Option<CppType>,
        path: &mut Vec<usize>,
        overrides: &mut Vec<(Vec<usize>, ColumnSpec)>,
        depth: usize,
    ) -> Result<Option<ArrowShape>> {
        if hint.as_ref().is_some_and(|h| h.name == "std::bitset") {
            if item.data_type() != &DataType::Boolean {
                return Ok(None);
            }
            return Ok(Some(ArrowShape::Cpp(CppType {
                name: "std::bitset".into(),
                args: vec![TemplateArg::Int(n)],
            })));
        }
        let item_hint = type_hint(item)?.or_else(|| hint_arg(hint, 0));
        let inner = self.arrow_child(item, item_hint, 0, path, overrides, depth)?;
        Ok(Some(ArrowShape::Cpp(CppType {
            name: "std::array".into(),
            args: vec![TemplateArg::Type(inner), TemplateArg::Int(n)],
        })))
    }

    /// A map (of the hint's map template, else `std::map`); `None` for entries that are
    /// not key-value records.
    fn arrow_map(
        &mut self,
        entries: &Field,
        hint: &Option<CppType>,
        path: &mut Vec<usize>,
        overrides: &mut Vec<(Vec<usize>, ColumnSpec)>,
        depth: usize,
    ) -> Result<Option<ArrowShape>> {
        let DataType::Struct(kv) = entries.data_type() else {
            return Ok(None);
        };
        let [k, v] = kv.iter().collect::<Vec<_>>()[..] else {
            return Ok(None);
        };
        let head = match hint {
            Some(h) if is_map_template(&h.name) => h.name.as_str(),
            _ => "std::map",
        };
        path.push(0);
        let key = type_hint(k)?.or_else(|| hint_arg(hint, 0));
        let vh = type_hint(v)?.or_else(|| hint_arg(hint, 1));
        let kv = self
            .arrow_child(k, key, 0, path, overrides, depth + 1)
            .and_then(|key| {
                let value = self.arrow_child(v, vh, 1, path, overrides, depth + 1)?;
                Ok(vec![key, value])
            });
        path.pop();
        Ok(Some(ArrowShape::Cpp(CppType::template(head, kv?))))
    }

    /// A struct: a pair or tuple, a class (registered from its members when it is not
    /// yet), or an untyped record.
    fn arrow_struct(
        &mut self,
        children: &Fields,
        hint: Option<CppType>,
        path: &mut Vec<usize>,
        overrides: &mut Vec<(Vec<usize>, ColumnSpec)>,
        depth: usize,
    ) -> Result<ArrowShape> {
        let positional = hint
            .as_ref()
            .is_some_and(|h| matches!(h.name.as_str(), "std::pair" | "std::tuple"));
        let mut converted = Vec::new();
        for (i, f) in children.iter().enumerate() {
            let h = type_hint(f)?.or_else(|| positional.then(|| hint_arg(&hint, i)).flatten());
            converted.push((
                f.name().clone(),
                self.arrow_child(f, h, i, path, overrides, depth)?,
            ));
        }
        match hint {
            Some(h) if h.name == "std::pair" || h.name == "std::tuple" => Ok(ArrowShape::Cpp(
                CppType::template(&h.name, converted.into_iter().map(|(_, t)| t).collect()),
            )),
            Some(h) if !h.name.is_empty() => {
                let t = h.type_name();
                if !self.classes.contains_key(&t) {
                    let mut spec = ClassSpec::new(&t, &[], &[]);
                    for (n, ct) in converted {
                        if n.starts_with(":_") {
                            spec.bases.push(ct.type_name());
                        } else {
                            spec.members.push((n, ct.type_name()));
                        }
                    }
                    self.register_class(spec)?;
                }
                Ok(ArrowShape::Cpp(h))
            }
            _ => Ok(ArrowShape::Untyped(converted)),
        }
    }

    /// Converts the Arrow child at subfield index `i` (a typed C++ type is required).
    fn arrow_child(
        &mut self,
        f: &Field,
        hint: Option<CppType>,
        i: usize,
        path: &mut Vec<usize>,
        overrides: &mut Vec<(Vec<usize>, ColumnSpec)>,
        depth: usize,
    ) -> Result<CppType> {
        path.push(i);
        let r = if self.wraps_in_optional(f, &hint) {
            path.push(0);
            let inner = self.arrow_type(f.name(), f.data_type(), hint, path, overrides, depth + 2);
            path.pop();
            inner
                .and_then(|t| cpp_of(t, f.name()))
                .map(|t| ArrowShape::Cpp(CppType::template("std::optional", vec![t])))
        } else {
            self.arrow_type(f.name(), f.data_type(), hint, path, overrides, depth + 1)
        };
        path.pop();
        cpp_of(r?, f.name())
    }

    /// The members of a top-level Arrow list of structs without C++ type names (a data
    /// frame's collection of records, as NanoAOD's `Jet` of `pt`, `eta`, ...), which ROOT
    /// stores as an untyped collection of an untyped record; `None` for other fields.
    pub(super) fn untyped_collection_members(
        &mut self,
        field: &Field,
        hint: &Option<CppType>,
    ) -> Result<Option<Vec<(String, CppType)>>> {
        let untyped = |h: &Option<CppType>| h.as_ref().is_none_or(|h| h.name.is_empty());
        if !untyped(hint) || (self.nullable_as_optional && field.is_nullable()) {
            return Ok(None);
        }
        let (DataType::List(item) | DataType::LargeList(item)) = field.data_type() else {
            return Ok(None);
        };
        let DataType::Struct(children) = item.data_type() else {
            return Ok(None);
        };
        if !untyped(&type_hint(item)?) || (self.nullable_as_optional && item.is_nullable()) {
            return Ok(None);
        }
        let mut members = Vec::new();
        for (i, f) in children.iter().enumerate() {
            let h = type_hint(f)?;
            let t = self.arrow_child(f, h, i, &mut Vec::new(), &mut Vec::new(), 1)?;
            members.push((f.name().clone(), t));
        }
        Ok(Some(members))
    }

    /// Whether a nullable Arrow field becomes `std::optional` of its type (see
    /// [`SchemaBuilder::nullable_as_optional`]).
    pub(super) fn wraps_in_optional(&self, f: &Field, hint: &Option<CppType>) -> bool {
        self.nullable_as_optional
            && f.is_nullable()
            && !hint
                .as_ref()
                .is_some_and(|h| matches!(h.name.as_str(), "std::optional" | "std::unique_ptr"))
    }
}

/// The C++ shape of an Arrow type: a C++ type, or an untyped record of members.
pub(super) enum ArrowShape {
    /// A C++ type.
    Cpp(CppType),
    /// An untyped record of members.
    Untyped(Vec<(String, CppType)>),
}

/// The C++ type of an Arrow shape; an untyped record is refused (allowed only at top
/// level).
pub(super) fn cpp_of(shape: ArrowShape, name: &str) -> Result<CppType> {
    match shape {
        ArrowShape::Cpp(t) => Ok(t),
        ArrowShape::Untyped(_) => Err(Error::Unsupported(format!(
            "Arrow field \"{name}\": a struct without a C++ type name is only supported at top level"
        ))),
    }
}

/// The parsed `rntuple.type` metadata of an Arrow field; `Some("")` parses to an empty name
/// (untyped record).
pub(super) fn type_hint(field: &Field) -> Result<Option<CppType>> {
    match field.metadata().get(TYPE_NAME_KEY) {
        None => Ok(None),
        Some(t) if t.is_empty() => Ok(Some(CppType::plain(""))),
        Some(t) => parse_type_name(t).map(Some),
    }
}

/// The `i`-th template argument of a hint, if any.
fn hint_arg(hint: &Option<CppType>, i: usize) -> Option<CppType> {
    hint.as_ref().and_then(|h| h.type_arg(i).ok()).cloned()
}
