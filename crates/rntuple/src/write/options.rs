//! Write options, with ROOT's defaults (RNTupleWriteOptions).

use crate::compression::CompressionSettings;

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
    /// Memory the page buffers of one cluster may hold before pages are sealed early
    /// (`None`: as ROOT, bounded by the cluster size).
    pub page_buffer_budget: Option<u64>,
    /// Append an xxh3 checksum to every page (on).
    pub enable_page_checksums: bool,
    /// The largest payload one TFile key holds; larger ones span several keys (1 GiB).
    pub max_key_size: u64,
    /// Commit a cluster group after this many clusters (`None`: one group, as ROOT).
    pub clusters_per_group: Option<u64>,
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
            enable_page_checksums: true,
            max_key_size: 1 << 30,
            clusters_per_group: None,
        }
    }
}
