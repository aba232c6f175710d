//! Writing: a model (the header's schema), buffering values into column pages, sealing
//! pages (encode, compress, checksum) in parallel, committing clusters and cluster
//! groups, page lists, footer and the anchor.
//!
//! [`RNTupleWriter`] (`writer`) is the public face; each of its jobs has a module:
//! `sink` (where payloads go), `fill` (a filler: the entries not yet committed, from
//! batches to sealed pages), `page_plan` (ROOT's page-size policy), `size` (what each
//! entry appends to each column), `shred` (Arrow arrays into column values), `sealing`
//! (pages sealed on the thread pool and written in runs) and `cluster` (a filler's
//! cluster size; committed clusters, cluster groups, footer and anchor). [`SharedFile`]
//! writes several RNTuples into one file, filled in turns. [`ParallelWriter`]
//! (`parallel`) fills one RNTuple from several threads, a [`FillContext`] (a filler of
//! its own) per thread. [`PageCopyWriter`] (`page_copy`) writes pages that arrive
//! sealed, as merging copies them. [`ObjectSink`] (`object_sink`) stores each blob as an
//! object of ROOT's S3 layout, with object locators, and its JSON anchor last.
//! [`DaosSink`] (`daos_sink`) stages the blobs and writes ROOT's DAOS layout when the
//! anchor comes.

mod cluster;
mod daos_sink;
mod entry_counts;
mod fill;
mod model;
mod object_sink;
mod options;
mod page_copy;
mod page_plan;
mod parallel;
mod row;
mod sealing;
mod shared_file;
mod shred;
mod sink;
mod writer;

pub use daos_sink::{
    daos_mapping, parse_daos_mapping, DaosSink, DaosSinkOptions, DaosWriteSummary, FindReplaced,
    STAGED_IN_MEMORY,
};
pub(crate) use model::extend_schema;
pub use model::{schema_for_copy, schema_for_page_copy};
pub(crate) use object_sink::delete_all as delete_objects;
pub use object_sink::{open_target as open_object_target, ObjectSink, ObjectWriteSummary};
pub use options::{WriteOptions, WriteOptionsBuilder, DEFAULT_CHECKPOINT_EVERY};
pub use page_copy::{
    PageCopyWriter, SharedBuffer, StoredBytes, StoredCluster, StoredColumn, StoredPage,
};
pub use parallel::{FillContext, ParallelWriter};
pub use row::EntryWriter;
pub use shared_file::{SharedFile, SharedSink};
pub use sink::{BlobSink, RNTupleOutput};
pub use writer::RNTupleWriter;

/// Pseudo-random numbers below `m` from a fixed seed (xorshift), for tests that need
/// varied but reproducible data.
#[cfg(test)]
pub(crate) fn pseudo_random(seed: u64) -> impl FnMut(u64) -> u64 {
    let mut x = seed | 1;
    move |m| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x % m.max(1)
    }
}
