//! The field tree and the descriptor: fields, columns, clusters, cluster groups, as
//! read from header, footer and page lists; and what each field's C++ type means.

mod descriptor;
mod kind;

pub use descriptor::{
    ClusterDescriptor, ClusterGroupDescriptor, ColumnDescriptor, Descriptor, FieldDescriptor,
    FieldRole,
};
pub use kind::{FieldKind, PrimitiveType, RecordStyle};
