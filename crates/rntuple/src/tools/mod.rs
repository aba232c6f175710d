//! Tools above reading and writing: each composes the layers below (container, format,
//! read, write) rather than re-implementing any of them.

pub mod copy;
pub mod recover;

pub use copy::{copy_rntuple, source_compression};
