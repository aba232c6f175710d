//! Writing an RNTuple whose pages arrive sealed (merging): the header, then cluster by
//! cluster the stored bytes of each column's pages, copied as they are (checksums
//! included), page lists, footer. Nothing is encoded or compressed here; the caller
//! hands over pages sealed for the columns' encodings and says how each column range
//! is compressed.

use super::cluster::{new_header, ClusterBook, FORMAT_VERSION};
use super::model::extend_schema;
use super::options::WriteOptions;
use super::sink::BlobSink;
use crate::error::{Error, Result};
use crate::format::{
    Anchor, Footer, Header, Locator, PageInfo, SchemaDescription, PAGE_CHECKSUM_BYTES,
};
use crate::schema::Descriptor;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

/// A buffer read from another file, shared by the pages read with it (whatever holds
/// it: a vector, or a reader's pooled buffer that goes back to its pool when the last
/// page is dropped).
pub type SharedBuffer = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// The stored bytes of a page (its checksum included): a slice of a buffer read from
/// another file, shared by the pages read with it, or bytes of its own.
#[derive(Clone)]
pub enum StoredBytes {
    /// Bytes `range` of a shared buffer.
    Shared(SharedBuffer, Range<usize>),
    /// A buffer of its own (a page sealed again, or a zero page).
    Owned(Vec<u8>),
}

impl StoredBytes {
    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        match self {
            StoredBytes::Shared(buffer, range) => {
                (**buffer).as_ref().get(range.clone()).unwrap_or_default()
            }
            StoredBytes::Owned(bytes) => bytes,
        }
    }
}

impl std::fmt::Debug for StoredBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoredBytes::Shared(_, range) => f.debug_tuple("Shared").field(range).finish(),
            StoredBytes::Owned(bytes) => f.debug_tuple("Owned").field(&bytes.len()).finish(),
        }
    }
}

/// A page ready to be written as it is.
#[derive(Debug, Clone)]
pub struct StoredPage {
    /// Its stored bytes, the checksum included when `has_checksum`.
    pub bytes: StoredBytes,
    /// The elements it holds.
    pub n_elements: u32,
    /// Whether its bytes end with an xxh3-64 checksum.
    pub has_checksum: bool,
}

/// One column's pages in a cluster, and the compression settings they were sealed with.
#[derive(Debug, Clone, Default)]
pub struct StoredColumn {
    /// The pages, in element order.
    pub pages: Vec<StoredPage>,
    /// Compression settings (algorithm × 100 + level) of the pages.
    pub compression: u32,
}

/// A cluster of sealed pages.
#[derive(Debug, Clone, Default)]
pub struct StoredCluster {
    /// Entries of the cluster.
    pub n_entries: u64,
    /// Per column, in id order: its pages. Columns past the end are not listed in the
    /// cluster (deferred columns before their first element; the columns the last schema
    /// extension added must then be left out too).
    pub columns: Vec<StoredColumn>,
}

/// Writes one RNTuple from sealed pages into a [`BlobSink`].
pub struct PageCopyWriter<S: BlobSink> {
    sink: S,
    options: WriteOptions,
    header: Header,
    extension: SchemaDescription,
    descriptor: Descriptor,
    clusters: ClusterBook,
}

impl<S: BlobSink> PageCopyWriter<S> {
    /// Starts an RNTuple named `name` whose header holds `schema` and whose footer will
    /// hold the schema extension `extension` (global ids, its deferred columns' first
    /// elements as recorded); writes the header.
    pub fn new(
        mut sink: S,
        name: &str,
        schema: SchemaDescription,
        extension: SchemaDescription,
        options: WriteOptions,
    ) -> Result<Self> {
        let header = new_header(name, schema);
        let footer = Footer {
            extension: extension.clone(),
            ..Footer::default()
        };
        let descriptor = Descriptor::build(FORMAT_VERSION, header.clone(), footer, Vec::new())?;
        let mut clusters = ClusterBook::start(&mut sink, &header, &options)?;
        for c in &descriptor.columns {
            // A deferred column's elements before its first are zeros nobody stores.
            let first = c.record.first_element_index.map_or(0, |f| f.unsigned_abs());
            clusters.add_column(first);
        }
        Ok(PageCopyWriter {
            sink,
            options,
            header,
            extension,
            descriptor,
            clusters,
        })
    }

    /// The schema written so far (fields and columns, no clusters).
    pub fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    /// Entries written so far.
    pub fn num_entries(&self) -> u64 {
        self.clusters.num_entries()
    }

    /// Adds fields after entries were written (late model extension), as
    /// [`super::RNTupleWriter::extend_schema`] does: their principal columns at entry
    /// level are deferred to the current entry.
    pub fn extend_schema(&mut self, extra: SchemaDescription) -> Result<()> {
        let extended = extend_schema(
            &self.header,
            &self.extension,
            &self.descriptor,
            extra,
            self.num_entries(),
        )?;
        for first in extended.first_elements {
            self.clusters.add_column(first);
        }
        self.descriptor = extended.descriptor;
        self.extension = extended.extension;
        Ok(())
    }

    /// Writes a cluster's pages (in blobs of at most one key each) and commits it; the
    /// cluster group is committed too when a checkpoint is due.
    pub fn write_cluster(&mut self, cluster: &StoredCluster) -> Result<()> {
        if cluster.columns.len() > self.descriptor.columns.len() {
            return Err(Error::InvalidArgument(format!(
                "a cluster of {} columns for a schema of {}",
                cluster.columns.len(),
                self.descriptor.columns.len()
            )));
        }
        let max_blob = self.options.max_key_size();
        let mut infos: Vec<Vec<PageInfo>> = Vec::with_capacity(cluster.columns.len());
        let mut blob: Vec<&[u8]> = Vec::new();
        // Per page of the blob being assembled: its column and index.
        let mut placed: Vec<(usize, usize)> = Vec::new();
        let mut blob_len = 0u64;
        // Pages that share their source bytes (an input's same-page merging: one stored
        // page listed several times) are written once, at the first one's place.
        let mut first_of: HashMap<(usize, usize, usize), (usize, usize)> = HashMap::new();
        let mut repeats: Vec<(usize, usize, usize, usize)> = Vec::new();
        for (ci, column) in cluster.columns.iter().enumerate() {
            let mut column_infos = Vec::with_capacity(column.pages.len());
            for (pi, page) in column.pages.iter().enumerate() {
                if let StoredBytes::Shared(buffer, range) = &page.bytes {
                    let key = (
                        Arc::as_ptr(buffer).cast::<u8>() as usize,
                        range.start,
                        range.end,
                    );
                    if let Some(&(cj, pj)) = first_of.get(&key) {
                        repeats.push((ci, pi, cj, pj));
                        column_infos.push(PageInfo {
                            n_elements: page.n_elements,
                            has_checksum: page.has_checksum,
                            locator: Locator::default(),
                        });
                        continue;
                    }
                    first_of.insert(key, (ci, pi));
                }
                let bytes = page.bytes.as_slice();
                let checksum = if page.has_checksum {
                    PAGE_CHECKSUM_BYTES
                } else {
                    0
                };
                let len = bytes.len() as u64;
                if len < checksum {
                    return Err(Error::InvalidArgument(format!(
                        "page {pi} of column {ci}: {len} bytes cannot hold its checksum"
                    )));
                }
                if blob_len > 0 && blob_len + len > max_blob {
                    self.flush_blob(&mut blob, &mut placed, &mut infos, &mut column_infos)?;
                    blob_len = 0;
                }
                blob.push(bytes);
                placed.push((ci, pi));
                column_infos.push(PageInfo {
                    n_elements: page.n_elements,
                    has_checksum: page.has_checksum,
                    locator: Locator::file(len - checksum, 0),
                });
                blob_len += len;
            }
            infos.push(column_infos);
        }
        let mut no_open_column = Vec::new();
        self.flush_blob(&mut blob, &mut placed, &mut infos, &mut no_open_column)?;
        for (ci, pi, cj, pj) in repeats {
            let locator = infos[cj][pj].locator;
            infos[ci][pi].locator = locator;
        }
        let columns = infos
            .into_iter()
            .zip(&cluster.columns)
            .map(|(pages, c)| (pages, c.compression))
            .collect();
        self.clusters.commit_cluster_columns(
            &mut self.sink,
            cluster.n_entries,
            columns,
            &self.options,
        )
    }

    /// Writes the pages of `blob` as one blob and sets their locators' offsets: in
    /// `infos` for the columns done, in `open_column` for the column being laid out.
    fn flush_blob(
        &mut self,
        blob: &mut Vec<&[u8]>,
        placed: &mut Vec<(usize, usize)>,
        infos: &mut [Vec<PageInfo>],
        open_column: &mut [PageInfo],
    ) -> Result<()> {
        if blob.is_empty() {
            return Ok(());
        }
        let located = self.sink.write_located(blob, self.options.max_key_size())?;
        for (&(ci, pi), place) in placed.iter().zip(located) {
            let info = match infos.get_mut(ci) {
                Some(column) => column.get_mut(pi),
                None => open_column.get_mut(pi),
            };
            if let Some(info) = info {
                // The page list's size leaves out the checksum; the place is the sink's.
                info.locator = Locator {
                    size: info.locator.size,
                    ..place
                };
            }
        }
        blob.clear();
        placed.clear();
        Ok(())
    }

    /// Commits the open cluster group, writes the footer, and returns the anchor to store.
    pub fn finish(mut self) -> Result<Anchor> {
        self.clusters
            .commit_cluster_group(&mut self.sink, &self.options)?;
        let extension = std::mem::take(&mut self.extension);
        self.clusters
            .finish(&mut self.sink, extension, &self.options)
    }
}
