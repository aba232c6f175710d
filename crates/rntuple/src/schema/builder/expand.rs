//! Expanding a C++ type into its field and its subfields (depth first): fundamental
//! types, strings, enums, registered classes and the standard templates.

use super::{ClassSpec, SchemaBuilder, Shape, Slot, MAX_VARIANT_ALTERNATIVES};
use crate::error::{Error, Result};
use crate::format::FIELD_FLAG_TYPE_CHECKSUM;
use crate::schema::descriptor::{FieldRole, MAX_FIELD_DEPTH};
use crate::schema::kind::{is_map_template, PrimitiveType};
use crate::schema::type_name::{parse_type_name, CppType};

impl SchemaBuilder {
    /// Expands one field and its subfields (depth first), returning its id.
    pub(super) fn build(
        &mut self,
        name: &str,
        shape: Shape<'_>,
        parent: Option<u32>,
        depth: usize,
    ) -> Result<u32> {
        if depth > MAX_FIELD_DEPTH {
            return Err(Error::InvalidArgument(format!(
                "field \"{name}\" is nested deeper than {MAX_FIELD_DEPTH} levels (a recursive type?)"
            )));
        }
        // An untyped record or collection: no C++ type name.
        let untyped = CppType::plain("");
        let ty = match shape {
            Shape::Cpp(ty) => ty,
            Shape::UntypedRecord(members) => {
                let id = self.push_node(name, &untyped, FieldRole::Record, parent, Slot::None);
                for (m, t) in members {
                    self.build(m, Shape::Cpp(t), Some(id), depth + 1)?;
                }
                return Ok(id);
            }
            Shape::UntypedCollection(members) => {
                let id = self.push_node(name, &untyped, FieldRole::Collection, parent, Slot::Index);
                self.build("_0", Shape::UntypedRecord(members), Some(id), depth + 1)?;
                return Ok(id);
            }
        };
        self.build_cpp(name, ty, parent, depth)
    }

    /// Expands a field of a C++ type: a fundamental type, string or enum; a registered
    /// class; or a standard template.
    fn build_cpp(
        &mut self,
        name: &str,
        ty: &CppType,
        parent: Option<u32>,
        depth: usize,
    ) -> Result<u32> {
        let t = ty.type_name();
        if ty.args.is_empty() {
            if let Some(p) = PrimitiveType::from_type_name(&ty.name) {
                let slot = Slot::Primitive(p, ty.name == "Double32_t");
                return Ok(self.push_node(name, ty, FieldRole::Leaf, parent, slot));
            }
            if ty.name == "std::string" {
                return Ok(self.push_node(name, ty, FieldRole::Leaf, parent, Slot::String));
            }
            if let Some(under) = self.enums.get(&t).cloned() {
                let id = self.push_node(name, ty, FieldRole::Leaf, parent, Slot::None);
                self.build("_0", Shape::Cpp(&under), Some(id), depth + 1)?;
                return Ok(id);
            }
        }
        if let Some(class) = self.classes.get(&t).cloned() {
            return self.build_class(name, ty, &class, parent, depth);
        }
        self.build_template(name, ty, &t, parent, depth)
    }

    /// Expands a field of a registered class: its bases (`:_0`, ...), then its members.
    fn build_class(
        &mut self,
        name: &str,
        ty: &CppType,
        class: &ClassSpec,
        parent: Option<u32>,
        depth: usize,
    ) -> Result<u32> {
        let t = ty.type_name();
        let id = self.push_node(name, ty, FieldRole::Record, parent, Slot::None);
        {
            let rec = &mut self.nodes[id as usize].record;
            rec.type_version = class.type_version;
            if let Some(sum) = class.checksum {
                rec.flags |= FIELD_FLAG_TYPE_CHECKSUM;
                rec.type_checksum = Some(sum);
            }
        }
        for (i, base) in class.bases.iter().enumerate() {
            let bt = parse_type_name(base)?;
            if !self.classes.contains_key(&bt.type_name()) {
                return Err(Error::InvalidArgument(format!(
                    "class \"{t}\": base \"{base}\" is not a registered class"
                )));
            }
            self.build(&format!(":_{i}"), Shape::Cpp(&bt), Some(id), depth + 1)?;
        }
        for (m, mt) in &class.members {
            let mt = parse_type_name(mt)?;
            self.build(m, Shape::Cpp(&mt), Some(id), depth + 1)?;
        }
        Ok(id)
    }

    /// Expands a field of a standard template (collections, maps, arrays, bitsets,
    /// atomics, variants, pairs and tuples); `t` is its type name.
    fn build_template(
        &mut self,
        name: &str,
        ty: &CppType,
        t: &str,
        parent: Option<u32>,
        depth: usize,
    ) -> Result<u32> {
        let n_args = |n: usize| -> Result<()> {
            if ty.args.len() == n {
                Ok(())
            } else {
                Err(Error::InvalidArgument(format!(
                    "type \"{t}\" needs {n} template argument(s)"
                )))
            }
        };
        // A field of one subfield, `_0`, of type `item`.
        let with_item = |this: &mut Self, role, slot, item: &CppType| -> Result<u32> {
            let id = this.push_node(name, ty, role, parent, slot);
            this.build("_0", Shape::Cpp(item), Some(id), depth + 1)?;
            Ok(id)
        };
        match ty.name.as_str() {
            "std::vector"
            | "ROOT::VecOps::RVec"
            | "std::set"
            | "std::multiset"
            | "std::unordered_set"
            | "std::unordered_multiset"
            | "std::optional"
            | "std::unique_ptr" => {
                n_args(1)?;
                let item = ty.type_arg(0)?.clone();
                with_item(self, FieldRole::Collection, Slot::Index, &item)
            }
            map if is_map_template(map) => {
                n_args(2)?;
                let pair = CppType::template(
                    "std::pair",
                    vec![ty.type_arg(0)?.clone(), ty.type_arg(1)?.clone()],
                );
                with_item(self, FieldRole::Collection, Slot::Index, &pair)
            }
            "std::array" => {
                n_args(2)?;
                let item = ty.type_arg(0)?.clone();
                let n = ty.int_arg(1)?;
                if n == 0 {
                    return Err(Error::InvalidArgument(format!(
                        "type \"{t}\": arrays need at least one element"
                    )));
                }
                let id = self.push_repetitive(name, ty, parent, Slot::None, n);
                self.build("_0", Shape::Cpp(&item), Some(id), depth + 1)?;
                Ok(id)
            }
            "std::bitset" => {
                n_args(1)?;
                let n = ty.int_arg(0)?;
                if n == 0 {
                    return Err(Error::InvalidArgument(format!(
                        "type \"{t}\": bitsets need at least one bit"
                    )));
                }
                Ok(self.push_repetitive(name, ty, parent, Slot::Bitset, n))
            }
            "std::atomic" => {
                n_args(1)?;
                let item = ty.type_arg(0)?.clone();
                with_item(self, FieldRole::Leaf, Slot::None, &item)
            }
            "std::variant" | "std::pair" | "std::tuple" => {
                let items: Vec<CppType> = ty.type_args()?.into_iter().cloned().collect();
                let (role, slot) = match ty.name.as_str() {
                    "std::variant" => {
                        if items.is_empty() || items.len() > MAX_VARIANT_ALTERNATIVES {
                            return Err(Error::InvalidArgument(format!(
                                "type \"{t}\": variants take 1 to {MAX_VARIANT_ALTERNATIVES} alternatives"
                            )));
                        }
                        (FieldRole::Variant, Slot::Switch)
                    }
                    "std::pair" => {
                        n_args(2)?;
                        (FieldRole::Record, Slot::None)
                    }
                    _ => {
                        if items.is_empty() {
                            return Err(Error::InvalidArgument(format!(
                                "type \"{t}\": empty tuples are not supported"
                            )));
                        }
                        (FieldRole::Record, Slot::None)
                    }
                };
                let id = self.push_node(name, ty, role, parent, slot);
                for (i, item) in items.iter().enumerate() {
                    self.build(&format!("_{i}"), Shape::Cpp(item), Some(id), depth + 1)?;
                }
                Ok(id)
            }
            "ROOT::RNTupleCardinality" => Err(Error::InvalidArgument(format!(
                "field \"{name}\": \"{t}\" is only valid as a projected field (add_projected_field)"
            ))),
            _ => Err(Error::Unsupported(format!(
                "field \"{name}\": unknown type \"{t}\" (register user classes and enums first)"
            ))),
        }
    }
}
