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

    fn write_located(&mut self, parts: &[&[u8]], max_key_size: u64) -> Result<Vec<Locator>> {
        self.sink.write_located(parts, max_key_size)
    }

    fn recovers(&self) -> bool {
        self.sink.recovers()
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

    /// Entries of the clusters committed so far.
    pub fn committed_entries(&self) -> u64 {
        self.committer.book.num_entries()
    }

    /// Clusters committed so far.
    pub fn num_clusters(&self) -> u64 {
        self.committer.book.num_clusters()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{ColumnDefaults, SchemaBuilder};
    use arrow_array::builder::{Float32Builder, Int32Builder, LargeListBuilder};
    use arrow_array::{ArrayRef, RecordBatch};
    use std::sync::Arc;

    /// Three vectors of equal lengths per entry (as NanoAOD's `Jet_pt`, `Jet_eta`, ...),
    /// one of other lengths, and a scalar; lengths and values from a fixed sequence.
    fn sibling_vectors(n: usize) -> RecordBatch {
        let mut state = 7u64;
        let mut next = move |m: u64| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) % m
        };
        let mut siblings: Vec<_> = (0..3)
            .map(|_| LargeListBuilder::new(Float32Builder::new()))
            .collect();
        let mut other = LargeListBuilder::new(Float32Builder::new());
        let mut scalar = Int32Builder::new();
        for i in 0..n {
            let len = next(9);
            for list in &mut siblings {
                for _ in 0..len {
                    list.values().append_value(next(1000) as f32);
                }
                list.append(true);
            }
            for _ in 0..next(5) {
                other.values().append_value(next(100) as f32);
            }
            other.append(true);
            scalar.append_value(i as i32);
        }
        let mut columns: Vec<(String, ArrayRef)> = siblings
            .into_iter()
            .enumerate()
            .map(|(k, mut b)| (format!("Jet_{k}"), Arc::new(b.finish()) as ArrayRef))
            .collect();
        columns.push(("Muon_pt".into(), Arc::new(other.finish())));
        columns.push(("event".into(), Arc::new(scalar.finish())));
        RecordBatch::try_from_iter(columns).unwrap()
    }

    /// The bytes written for `batch` (handed over in slices of 777 entries, so that
    /// pages span several appended chunks), and how many sealing jobs took copies.
    fn write(
        batch: &RecordBatch,
        options: &WriteOptions,
        seal_every_page: bool,
    ) -> (Vec<u8>, usize) {
        let mut builder = SchemaBuilder::new(ColumnDefaults { compressed: true });
        for f in batch.schema().fields() {
            builder.add_arrow_field(f).unwrap();
        }
        let mut sink: Vec<u8> = Vec::new();
        let mut writer =
            RNTupleWriter::new(&mut sink, "t", builder.finish(), options.clone()).unwrap();
        if seal_every_page {
            writer.filler.seal_every_page();
        }
        let mut start = 0;
        while start < batch.num_rows() {
            let len = 777.min(batch.num_rows() - start);
            writer.write_batch(&batch.slice(start, len)).unwrap();
            start += len;
        }
        let copied = writer.filler.copied_jobs();
        writer.finish().unwrap();
        (sink, copied)
    }

    /// Offset pages equal to another column's are sealed once and copied, and the file is
    /// byte for byte the one written when every page is sealed (with and without
    /// same-page merging, in runs and in one run per cluster, several clusters).
    #[test]
    fn offsets_equal_to_another_columns_are_sealed_once_into_the_same_file() {
        let batch = sibling_vectors(20_000);
        let base = WriteOptions::builder()
            .initial_page_size(64)
            .page_size(4096)
            .cluster_size(48 << 10);
        for (merging, run) in [(true, Some(8192)), (true, None), (false, Some(8192))] {
            let options = base
                .clone()
                .same_page_merging(merging)
                .page_run_size(run)
                .build()
                .unwrap();
            let (copied, copies) = write(&batch, &options, false);
            let (sealed, none) = write(&batch, &options, true);
            assert_eq!(none, 0);
            // Two of the three siblings copy the first, in every round that seals pages.
            assert!(copies >= 2 && copies % 2 == 0, "{copies} copies");
            assert!(
                copied == sealed,
                "merging {merging}, runs {run:?}: the files differ"
            );
        }
    }
}
