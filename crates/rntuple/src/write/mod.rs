//! Writing: a model (the header's schema), buffering values into column pages, sealing
//! pages (encode, compress, checksum) in parallel, committing clusters and cluster
//! groups, page lists, footer and the anchor.

mod model;
mod options;
mod root_file;
mod row;
mod shred;
mod size;
mod writer;

pub use model::schema_for_copy;
pub use options::{WriteOptions, DEFAULT_CHECKPOINT_EVERY};
pub use row::EntryWriter;
pub use writer::{BlobSink, RNTupleWriter};
