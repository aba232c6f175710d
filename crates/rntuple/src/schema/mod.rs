//! The field tree and the descriptor: fields, columns, clusters, cluster groups, as
//! read from header, footer and page lists; what each field's C++ type means; and the
//! schema builder a writer uses to describe fields the way ROOT does.

mod arrow;
mod builder;
mod descriptor;
mod kind;
pub(crate) mod type_name;
mod value;

pub use arrow::{arrow_field, arrow_field_kept, primitive_data_type, primitive_of_data_type};
pub use builder::{ClassSpec, ColumnDefaults, ColumnSpec, SchemaBuilder};
pub use descriptor::{
    ClusterDescriptor, ClusterGroupDescriptor, ColumnDescriptor, Descriptor, FieldDescriptor,
    FieldRole,
};
pub use kind::{FieldKind, PrimitiveType, RecordStyle};
pub use type_name::{normalize_type_alias, normalize_type_name};
pub use value::{array_value, values_to_array, Value};

/// Metadata key of the C++ type name on every Arrow field the reader produces (and the
/// schema builder honours), so a pair can be told from a struct, a bitset from bools.
pub const TYPE_NAME_KEY: &str = "rntuple.type";
