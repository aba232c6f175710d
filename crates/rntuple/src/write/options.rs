//! Write options, with ROOT's defaults (RNTupleWriteOptions).

use crate::compression::CompressionSettings;

/// Clusters per checkpoint by default: every cluster. A page list per cluster costs about
/// 170 bytes (0.0001% of a file of ROOT's 128 MiB clusters, 1% with 16 KiB clusters) and
/// no measurable time (`bench/RESULTS-checkpoint.md`), and makes every committed cluster
/// recoverable.
pub const DEFAULT_CHECKPOINT_EVERY: u64 = 1;

/// How an RNTuple is written. `Default` gives ROOT 6.40's defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct WriteOptions {
    /// Compression of pages and envelopes (default zstd level 5, ROOT setting 505).
    pub compression: CompressionSettings,
    /// A cluster is committed when its estimated compressed size reaches this (128 MiB).
    pub approx_zipped_cluster_size: u64,
    /// A cluster is committed at the latest when its uncompressed size reaches this
    /// (1280 MiB).
    pub max_unzipped_cluster_size: u64,
    /// Page buffers start at this size (256 B) and grow as they fill.
    pub initial_unzipped_page_size: u64,
    /// A page is sealed when its uncompressed size reaches this (1 MiB).
    pub max_unzipped_page_size: u64,
    /// The most memory all write pages (one per column) may hold together: a page that
    /// fills up doubles only while the budget allows, after the largest pages of other
    /// columns were sealed early to make room; else it is sealed. `None`: ROOT's default,
    /// the approximate zipped cluster size, twice that when compressing.
    pub page_buffer_budget: Option<u64>,
    /// A cluster's pages are written in runs, each run every column's pages sealed from
    /// about this many uncompressed bytes of values, column by column. Sealed pages wait in
    /// memory until their run is written, one run after they were sent for sealing, so
    /// memory holds about two runs' worth, compressed. `None`: one run per cluster, as
    /// ROOT's buffered sink (each column's pages of a cluster lie together; memory holds
    /// the whole compressed cluster). Default 8 MiB.
    pub page_run_size: Option<u64>,
    /// Append an xxh3 checksum to every page (on).
    pub enable_page_checksums: bool,
    /// Store identical pages of a cluster once, with several page locators pointing to it
    /// (on, as ROOT; needs page checksums).
    pub enable_same_page_merging: bool,
    /// The largest payload one TFile key holds; larger ones span several keys (1 GiB).
    pub max_key_size: u64,
    /// Commit a cluster group (write its page list and hand the file's bytes to the
    /// operating system) after this many clusters: a checkpoint. If the writing process
    /// dies before the footer is written (killed, out of memory, out of time), every
    /// committed cluster group can be recovered (`rntuple recover`); the entries after the
    /// last checkpoint are lost. `None`: one group at the end, as ROOT (nothing is
    /// recoverable).
    pub checkpoint_every: Option<u64>,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            compression: CompressionSettings::DEFAULT_RNTUPLE,
            approx_zipped_cluster_size: 128 << 20,
            max_unzipped_cluster_size: 1280 << 20,
            initial_unzipped_page_size: 256,
            max_unzipped_page_size: 1 << 20,
            page_buffer_budget: None,
            page_run_size: Some(8 << 20),
            enable_page_checksums: true,
            enable_same_page_merging: true,
            max_key_size: 1 << 30,
            checkpoint_every: Some(DEFAULT_CHECKPOINT_EVERY),
        }
    }
}

impl WriteOptions {
    /// The page buffer budget in effect: the option, or ROOT's default for it.
    pub fn effective_page_buffer_budget(&self) -> u64 {
        self.page_buffer_budget.unwrap_or_else(|| {
            let factor = if self.compression.as_u32() != 0 { 2 } else { 1 };
            self.approx_zipped_cluster_size.saturating_mul(factor)
        })
    }

    /// The first estimate of a cluster's uncompressed size: the zipped target size,
    /// assuming a compression factor of 2 when compressing.
    pub(crate) fn initial_cluster_size_estimate(&self) -> u64 {
        let factor = if self.compression.as_u32() != 0 { 2 } else { 1 };
        self.approx_zipped_cluster_size.saturating_mul(factor)
    }
}
