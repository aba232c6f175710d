//! Cluster and cluster-group bookkeeping: when a filler's cluster is due (ROOT's size
//! estimate, [`ClusterSizer`]), and what the committed clusters hold (entries, the pages
//! of each column), the page list of each cluster group, and at the end the footer and
//! the anchor ([`ClusterBook`]).

use super::options::WriteOptions;
use super::sink::{write_envelope, BlobSink};
use crate::error::Result;
use crate::format::{
    Anchor, ClusterGroupRecord, ClusterSummary, ColumnPages, EnvelopeLink, EnvelopeType, Footer,
    Header, LinkedAttributeSet, Locator, PageInfo, PageList, SchemaDescription,
};

/// The format version written in the anchor: 1.0.2.0, as ROOT 6.40.
pub(crate) const FORMAT_VERSION: (u16, u16, u16, u16) = (1, 0, 2, 0);

/// The open cluster of one filler (a writer, or a fill context of the parallel writer)
/// and when it is due: ROOT's fill context estimates a cluster's uncompressed size from
/// the compression factor of its clusters so far.
pub(crate) struct ClusterSizer {
    /// Entries of the open cluster.
    open_entries: u64,
    /// Uncompressed bytes of the open cluster, as ROOT's fields count them.
    unzipped_cluster_bytes: u64,
    /// The size at which the open cluster is committed: the zipped target size times
    /// the compression factor so far (2 before the first cluster when compressing).
    unzipped_cluster_estimate: u64,
    /// Uncompressed bytes of all committed clusters.
    bytes_filled: u64,
    /// Bytes written for all committed clusters (pages with checksums, merged pages once).
    bytes_flushed: u64,
}

impl ClusterSizer {
    /// No entries yet.
    pub(crate) fn new(options: &WriteOptions) -> Self {
        ClusterSizer {
            open_entries: 0,
            unzipped_cluster_bytes: 0,
            unzipped_cluster_estimate: options.initial_cluster_size_estimate(),
            bytes_filled: 0,
            bytes_flushed: 0,
        }
    }

    /// Entries of the open cluster.
    pub(crate) fn open_entries(&self) -> u64 {
        self.open_entries
    }

    /// Uncompressed bytes of the open cluster so far.
    pub(crate) fn unzipped_cluster_bytes(&self) -> u64 {
        self.unzipped_cluster_bytes
    }

    /// The uncompressed size at which the open cluster is committed.
    pub(crate) fn cluster_threshold(&self, options: &WriteOptions) -> u64 {
        self.unzipped_cluster_estimate
            .min(options.max_unzipped_cluster_size())
    }

    /// `n` entries of `unzipped_bytes` uncompressed bytes were added to the open cluster.
    pub(crate) fn add_entries(&mut self, n: u64, unzipped_bytes: u64) {
        self.open_entries += n;
        self.unzipped_cluster_bytes += unzipped_bytes;
    }

    /// The open cluster was written in `zipped_bytes` bytes: estimates the next
    /// cluster's size and starts it. Returns the entries of the cluster.
    pub(crate) fn close_cluster(&mut self, zipped_bytes: u64, options: &WriteOptions) -> u64 {
        // The next cluster's size estimate follows the compression factor of all clusters
        // so far (in single precision, capped at 1000, as ROOT's fill context).
        self.bytes_filled += std::mem::take(&mut self.unzipped_cluster_bytes);
        self.bytes_flushed += zipped_bytes;
        let factor = (self.bytes_filled as f32 / self.bytes_flushed as f32).min(1000.0);
        // A float-to-int cast saturates; the factor is at most 1000 and the size a u64.
        #[allow(clippy::cast_possible_truncation)]
        let estimate = (factor * options.cluster_size() as f32) as u64;
        self.unzipped_cluster_estimate = estimate;
        std::mem::take(&mut self.open_entries)
    }
}

/// The header of an RNTuple named `name` with `schema`, as this library writes it.
pub(crate) fn new_header(name: &str, schema: SchemaDescription) -> Header {
    Header {
        name: name.to_string(),
        description: String::new(),
        writer: format!("rntuple v{}", env!("CARGO_PKG_VERSION")),
        schema,
    }
}

/// The committed clusters and cluster groups of the RNTuple being written.
pub(crate) struct ClusterBook {
    /// Where the header envelope went.
    header_link: EnvelopeLink,
    header_checksum: u64,
    /// Entries of the committed clusters.
    n_entries: u64,
    /// Per column, the global index of the next cluster's first element.
    columns: Vec<u64>,
    open_group: Vec<(ClusterSummary, Vec<ColumnPages>)>,
    groups: Vec<ClusterGroupRecord>,
    attribute_sets: Vec<LinkedAttributeSet>,
}

impl ClusterBook {
    /// Writes `header` into `sink`: no clusters yet, and no columns (see
    /// [`ClusterBook::add_column`]).
    pub(crate) fn start<S: BlobSink>(
        sink: &mut S,
        header: &Header,
        options: &WriteOptions,
    ) -> Result<Self> {
        let (header_link, header_checksum) =
            write_envelope(sink, EnvelopeType::Header, &header.write(), options)?;
        Ok(ClusterBook {
            header_link,
            header_checksum,
            n_entries: 0,
            columns: Vec::new(),
            open_group: Vec::new(),
            groups: Vec::new(),
            attribute_sets: Vec::new(),
        })
    }

    /// Adds a column whose first element has global index `first_element` (not 0 for a
    /// deferred column of a late model extension).
    pub(crate) fn add_column(&mut self, first_element: u64) {
        self.columns.push(first_element);
    }

    /// Entries of the committed clusters.
    pub(crate) fn num_entries(&self) -> u64 {
        self.n_entries
    }

    /// The committed clusters.
    pub(crate) fn num_clusters(&self) -> u64 {
        let grouped: u64 = self.groups.iter().map(|g| u64::from(g.n_clusters)).sum();
        grouped + self.open_group.len() as u64
    }

    /// Records a cluster of `n_entries` entries whose pages were written at `pages` (per
    /// column, in order), compressed with the options' settings. Commits the cluster
    /// group when a checkpoint is due.
    pub(crate) fn commit_cluster<S: BlobSink>(
        &mut self,
        sink: &mut S,
        n_entries: u64,
        pages: Vec<Vec<PageInfo>>,
        options: &WriteOptions,
    ) -> Result<()> {
        let compression = options.compression().as_u32();
        let columns = pages.into_iter().map(|p| (p, compression)).collect();
        self.commit_cluster_columns(sink, n_entries, columns, options)
    }

    /// As [`ClusterBook::commit_cluster`], with each column's compression settings
    /// (pages copied from other files keep theirs). Columns past the end of `columns`
    /// are not listed in this cluster (deferred columns before their first element).
    pub(crate) fn commit_cluster_columns<S: BlobSink>(
        &mut self,
        sink: &mut S,
        n_entries: u64,
        columns: Vec<(Vec<PageInfo>, u32)>,
        options: &WriteOptions,
    ) -> Result<()> {
        let cluster_columns = self
            .columns
            .iter_mut()
            .zip(columns)
            .map(|(first, (pages, compression))| {
                let elements: u64 = pages.iter().map(|p| u64::from(p.n_elements)).sum();
                let column = ColumnPages {
                    pages,
                    element_offset: Some(*first),
                    compression: Some(compression),
                };
                *first += elements;
                column
            })
            .collect();
        self.open_group.push((
            ClusterSummary {
                first_entry: self.n_entries,
                n_entries,
            },
            cluster_columns,
        ));
        self.n_entries += n_entries;
        if let Some(per_group) = options.checkpoint_every().filter(|_| sink.recovers()) {
            if self.open_group.len() as u64 >= per_group {
                self.commit_cluster_group(sink, options)?;
            }
        }
        Ok(())
    }

    /// Commits the open cluster group: writes the page list of its clusters, then hands
    /// the file's bytes to the operating system (a checkpoint).
    pub(crate) fn commit_cluster_group<S: BlobSink>(
        &mut self,
        sink: &mut S,
        options: &WriteOptions,
    ) -> Result<()> {
        if self.open_group.is_empty() {
            return Ok(());
        }
        let (clusters, columns): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.open_group).into_iter().unzip();
        let min_entry = clusters
            .first()
            .map_or(0, |c: &ClusterSummary| c.first_entry);
        let span = clusters.iter().map(|c| c.n_entries).sum();
        let list = PageList {
            header_checksum: self.header_checksum,
            clusters,
            columns,
        };
        let n_clusters = crate::format::u32_len(list.clusters.len(), || {
            "clusters of a cluster group".to_string()
        })?;
        let (page_list, _) = write_envelope(sink, EnvelopeType::PageList, &list.write()?, options)?;
        // The group is committed once its page list is out of this process.
        sink.checkpoint()?;
        self.groups.push(ClusterGroupRecord {
            min_entry,
            entry_span: span,
            n_clusters,
            page_list,
        });
        Ok(())
    }

    /// Links an attribute set (see [`super::RNTupleWriter::link_attribute_set`]).
    pub(crate) fn link_attribute_set(
        &mut self,
        name: &str,
        schema_version: (u16, u16),
        anchor_locator: Locator,
        anchor_length: u32,
    ) {
        self.attribute_sets.push(LinkedAttributeSet {
            schema_version_major: schema_version.0,
            schema_version_minor: schema_version.1,
            anchor_length,
            anchor_locator,
            name: name.to_string(),
        });
    }

    /// Writes the footer (with the late model `extension`) and returns the anchor. The
    /// last cluster and cluster group must be committed before.
    pub(crate) fn finish<S: BlobSink>(
        self,
        sink: &mut S,
        extension: SchemaDescription,
        options: &WriteOptions,
    ) -> Result<Anchor> {
        let footer = Footer {
            header_checksum: self.header_checksum,
            extension,
            cluster_groups: self.groups,
            attribute_sets: self.attribute_sets,
        };
        let (footer_link, _) =
            write_envelope(sink, EnvelopeType::Footer, &footer.write(), options)?;
        Ok(Anchor {
            version_epoch: FORMAT_VERSION.0,
            version_major: FORMAT_VERSION.1,
            version_minor: FORMAT_VERSION.2,
            version_patch: FORMAT_VERSION.3,
            seek_header: self.header_link.locator.offset,
            nbytes_header: self.header_link.locator.size,
            len_header: self.header_link.length,
            seek_footer: footer_link.locator.offset,
            nbytes_footer: footer_link.locator.size,
            len_footer: footer_link.length,
            max_key_size: options.max_key_size(),
        })
    }
}
