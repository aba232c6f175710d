//! The RNTuple writer, the public face of writing: it keeps the schema (header and late
//! model extension), fills entries through its [`Filler`] (shredding, pages, sealing),
//! and records clusters, cluster groups and finally the footer in its [`ClusterBook`];
//! the caller's container writes the anchor it returns.

use super::cluster::ClusterBook;
use super::fill::{FillTarget, Filler};
use super::model::extend_schema;
use super::options::WriteOptions;
use super::sink::BlobSink;
use crate::error::Result;
use crate::format::{Anchor, Header, Locator, PageInfo, SchemaDescription};
use crate::schema::Descriptor;
use arrow_array::RecordBatch;

/// The writer's sink and the clusters committed into it: the target of its filler.
struct Committer<S> {
    sink: S,
    book: ClusterBook,
}

impl<S: BlobSink> BlobSink for Committer<S> {
    fn write_blob(&mut self, payload: &[u8], max_key_size: u64) -> Result<u64> {
        self.sink.write_blob(payload, max_key_size)
    }

    fn write_blob_parts(&mut self, parts: &[&[u8]], max_key_size: u64) -> Result<u64> {
        self.sink.write_blob_parts(parts, max_key_size)
    }

    fn checkpoint(&mut self) -> Result<()> {
        self.sink.checkpoint()
    }
}

impl<S: BlobSink> FillTarget for Committer<S> {
    fn commit_cluster(
        &mut self,
        n_entries: u64,
        pages: Vec<Vec<PageInfo>>,
        options: &WriteOptions,
    ) -> Result<()> {
        self.book
            .commit_cluster(&mut self.sink, n_entries, pages, options)
    }
}

/// Writes one RNTuple into a [`BlobSink`].
pub struct RNTupleWriter<S: BlobSink> {
    committer: Committer<S>,
    options: WriteOptions,
    header: Header,
    /// Fields and columns added after the header (late model extension).
    extension: SchemaDescription,
    /// The entries not yet committed.
    filler: Filler,
}

impl<S: BlobSink> RNTupleWriter<S> {
    /// Starts an RNTuple named `name` with the given schema; writes the header.
    pub fn new(
        mut sink: S,
        name: &str,
        schema: SchemaDescription,
        options: WriteOptions,
    ) -> Result<Self> {
        let (header, filler, book) = Filler::start(&mut sink, name, schema, &options)?;
        Ok(RNTupleWriter {
            committer: Committer { sink, book },
            options,
            header,
            extension: SchemaDescription::default(),
            filler,
        })
    }

    /// The schema as a descriptor (fields and columns, no clusters).
    pub fn descriptor(&self) -> &Descriptor {
        self.filler.descriptor()
    }

    /// Entries written so far.
    pub fn num_entries(&self) -> u64 {
        self.committer.book.num_entries() + self.filler.open_entries()
    }

    /// Adds fields after entries were written (late model extension, as ROOT's model
    /// updater): `extra` is a schema of its own (ids from 0), appended to the current one.
    /// The new fields' entry-level columns are deferred: the entries written so far read
    /// as zero values. Batches written afterwards must carry the new fields too.
    pub fn extend_schema(&mut self, extra: SchemaDescription) -> Result<()> {
        let extended = extend_schema(
            &self.header,
            &self.extension,
            self.filler.descriptor(),
            extra,
            self.num_entries(),
        )?;
        self.filler.extend(extended.descriptor)?;
        for first in extended.first_elements {
            self.committer.book.add_column(first);
        }
        self.extension = extended.extension;
        Ok(())
    }

    /// Appends the entries of `batch`, whose columns are the top-level data fields in
    /// schema order (by name). Clusters are committed as they reach their size.
    ///
    /// The batch is walked twice: once to count what each entry appends to each column
    /// (the slices and the page plan need it before the values exist), once to shred
    /// the values. Counting goes ahead of shredding a window at a time, so that only a
    /// few slices' counts are held.
    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        self.filler.write_batch(&mut self.committer, batch)
    }

    /// Commits the open cluster: seals the last pages, writes them, records the page
    /// locations; commits the cluster group too when a checkpoint is due.
    pub fn commit_cluster(&mut self) -> Result<()> {
        self.filler.commit_cluster(&mut self.committer)
    }

    /// Commits the open cluster group: writes the page list of its clusters.
    pub fn commit_cluster_group(&mut self) -> Result<()> {
        let c = &mut self.committer;
        c.book.commit_cluster_group(&mut c.sink, &self.options)
    }

    /// Links an attribute set (an RNTuple of its own, already written, whose anchor
    /// object lies at `anchor_locator`) into this RNTuple's footer under `name`.
    pub fn link_attribute_set(
        &mut self,
        name: &str,
        schema_version: (u16, u16),
        anchor_locator: Locator,
        anchor_length: u32,
    ) {
        self.committer
            .book
            .link_attribute_set(name, schema_version, anchor_locator, anchor_length);
    }

    /// Commits what is open, writes the footer, and returns the anchor to store.
    pub fn finish(mut self) -> Result<Anchor> {
        self.commit_cluster()?;
        self.commit_cluster_group()?;
        let Committer { mut sink, book } = self.committer;
        book.finish(&mut sink, self.extension, &self.options)
    }
}
