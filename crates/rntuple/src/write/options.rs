//! Write options, with ROOT's defaults (RNTupleWriteOptions), set through one builder
//! that checks them: the command line, Python and Rust accept the same values and
//! refuse the others with the same messages.

use crate::compression::CompressionSettings;
use crate::error::{Error, Result};

/// Clusters per checkpoint by default: every cluster. A page list per cluster costs about
/// 170 bytes (0.0001% of a file of ROOT's 128 MiB clusters, 1% with 16 KiB clusters) and
/// no measurable time (`bench/RESULTS-checkpoint.md`), and makes every committed cluster
/// recoverable.
pub const DEFAULT_CHECKPOINT_EVERY: u64 = 1;

/// The smallest page size: a page holds at least one element of 8 bytes.
const MIN_PAGE_SIZE: u64 = 8;

/// The smallest maximum key size (the smallest ROOT's own tests use).
const MIN_KEY_SIZE: u64 = 1 << 10;

/// The largest maximum key size: ROOT's default (a TKey counts its bytes in 32 bits).
const MAX_KEY_SIZE: u64 = 1 << 30;

/// How an RNTuple is written. `Default` gives ROOT 6.40's defaults;
/// [`WriteOptions::builder`] sets others, and checks them.
///
/// ```
/// use rntuple::compression::CompressionSettings;
/// use rntuple::write::WriteOptions;
///
/// let options = WriteOptions::builder()
///     .compression(CompressionSettings::UNCOMPRESSED)
///     .cluster_size(16 << 20)
///     .page_size(64 << 10)
///     .build()?;
/// assert_eq!(options.page_size(), 64 << 10);
/// assert!(WriteOptions::builder().page_size(0).build().is_err());
/// # Ok::<(), rntuple::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct WriteOptions {
    compression: CompressionSettings,
    cluster_size: u64,
    max_unzipped_cluster_size: u64,
    initial_page_size: u64,
    page_size: u64,
    page_buffer_budget: Option<u64>,
    page_run_size: Option<u64>,
    page_checksums: bool,
    same_page_merging: bool,
    max_key_size: u64,
    checkpoint_every: Option<u64>,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            compression: CompressionSettings::DEFAULT_RNTUPLE,
            cluster_size: 128 << 20,
            max_unzipped_cluster_size: 1280 << 20,
            initial_page_size: 256,
            page_size: 1 << 20,
            page_buffer_budget: None,
            page_run_size: Some(8 << 20),
            page_checksums: true,
            same_page_merging: true,
            max_key_size: MAX_KEY_SIZE,
            checkpoint_every: Some(DEFAULT_CHECKPOINT_EVERY),
        }
    }
}

impl WriteOptions {
    /// A builder starting from the defaults.
    pub fn builder() -> WriteOptionsBuilder {
        WriteOptions::default().to_builder()
    }

    /// A builder starting from these options.
    pub fn to_builder(&self) -> WriteOptionsBuilder {
        WriteOptionsBuilder {
            options: self.clone(),
            initial_page_size_set: false,
            same_page_merging_set: false,
        }
    }

    /// These options with another compression (any compression goes with any other
    /// options).
    pub fn with_compression(mut self, compression: CompressionSettings) -> WriteOptions {
        self.compression = compression;
        self
    }

    /// Compression of pages and envelopes (default zstd level 5, ROOT setting 505).
    pub fn compression(&self) -> CompressionSettings {
        self.compression
    }

    /// A cluster is committed when its estimated compressed size reaches this (ROOT's
    /// approximate zipped cluster size, 128 MiB).
    pub fn cluster_size(&self) -> u64 {
        self.cluster_size
    }

    /// A cluster is committed at the latest when its uncompressed size reaches this
    /// (1280 MiB).
    pub fn max_unzipped_cluster_size(&self) -> u64 {
        self.max_unzipped_cluster_size
    }

    /// Page buffers start at this size (256 B, or the page size if smaller) and grow as
    /// they fill.
    pub fn initial_page_size(&self) -> u64 {
        self.initial_page_size
    }

    /// A page is sealed when its uncompressed size reaches this (ROOT's maximum unzipped
    /// page size, 1 MiB).
    pub fn page_size(&self) -> u64 {
        self.page_size
    }

    /// The most memory all write pages (one per column) may hold together: a page that
    /// fills up doubles only while the budget allows, after the largest pages of other
    /// columns were sealed early to make room; else it is sealed. `None`: ROOT's default,
    /// the cluster size, twice that when compressing.
    pub fn page_buffer_budget(&self) -> Option<u64> {
        self.page_buffer_budget
    }

    /// The page buffer budget in effect: the option, or ROOT's default for it.
    pub fn effective_page_buffer_budget(&self) -> u64 {
        self.page_buffer_budget
            .unwrap_or_else(|| self.initial_cluster_size_estimate())
    }

    /// A cluster's pages are written in runs, each run every column's pages sealed from
    /// about this many uncompressed bytes of values, column by column. Sealed pages wait in
    /// memory until their run is written, one run after they were sent for sealing, so
    /// memory holds about two runs' worth, compressed. `None`: one run per cluster, as
    /// ROOT's buffered sink (each column's pages of a cluster lie together; memory holds
    /// the whole compressed cluster). Default 8 MiB.
    pub fn page_run_size(&self) -> Option<u64> {
        self.page_run_size
    }

    /// Whether every page gets an xxh3 checksum (on).
    pub fn page_checksums(&self) -> bool {
        self.page_checksums
    }

    /// Whether identical pages of a cluster are stored once, with several page locators
    /// pointing to them (on, as ROOT; needs page checksums).
    pub fn same_page_merging(&self) -> bool {
        self.same_page_merging
    }

    /// The largest payload one TFile key holds; larger ones span several keys (1 GiB).
    pub fn max_key_size(&self) -> u64 {
        self.max_key_size
    }

    /// A cluster group is committed (its page list written and the file's bytes handed
    /// to the operating system) after this many clusters: a checkpoint. If the writing
    /// process dies before the footer is written (killed, out of memory, out of time),
    /// every committed cluster group can be recovered (`rntuple recover`); the entries
    /// after the last checkpoint are lost. `None`: one group at the end, as ROOT (nothing
    /// is recoverable). Default: every cluster.
    pub fn checkpoint_every(&self) -> Option<u64> {
        self.checkpoint_every
    }

    /// The first estimate of a cluster's uncompressed size: the zipped target size,
    /// assuming a compression factor of 2 when compressing.
    pub(crate) fn initial_cluster_size_estimate(&self) -> u64 {
        let factor = if self.compression.as_u32() != 0 { 2 } else { 1 };
        self.cluster_size.saturating_mul(factor)
    }
}

/// Sets write options and checks them together ([`WriteOptionsBuilder::build`]); see
/// [`WriteOptions`] for what each means.
#[derive(Debug, Clone)]
pub struct WriteOptionsBuilder {
    options: WriteOptions,
    /// Whether the initial page size was set: if not, it follows a smaller page size.
    initial_page_size_set: bool,
    /// Whether same-page merging was set: if not, it is off without page checksums.
    same_page_merging_set: bool,
}

/// Builder methods that set one option as given (the checks come in `build`).
macro_rules! plain_setters {
    ($($(#[$doc:meta])* $name:ident: $value:ty;)*) => {$(
        $(#[$doc])*
        pub fn $name(mut self, value: $value) -> Self {
            self.options.$name = value;
            self
        }
    )*};
}

impl WriteOptionsBuilder {
    plain_setters! {
        /// Compression of pages and envelopes.
        compression: CompressionSettings;
        /// The compressed size a cluster aims at, in bytes: at least 1, at most the
        /// maximum uncompressed cluster size.
        cluster_size: u64;
        /// The uncompressed size at which a cluster is committed at the latest, in bytes.
        max_unzipped_cluster_size: u64;
        /// The uncompressed size at which a page is sealed, in bytes: at least 8, at most
        /// the maximum uncompressed cluster size.
        page_size: u64;
        /// The memory all write pages may hold together, in bytes (at least 1); `None`
        /// for ROOT's default.
        page_buffer_budget: Option<u64>;
        /// The uncompressed bytes of values whose pages are written as one run (at least
        /// 1); `None` for one run per cluster.
        page_run_size: Option<u64>;
        /// Whether pages get checksums; without them, same-page merging is off too
        /// (unless asked for, which is an error).
        page_checksums: bool;
        /// The largest payload of one TFile key, in bytes: from 1 KiB to 1 GiB.
        max_key_size: u64;
    }

    /// The size page buffers start at, in bytes: at least 1, at most the page size.
    pub fn initial_page_size(mut self, bytes: u64) -> Self {
        self.options.initial_page_size = bytes;
        self.initial_page_size_set = true;
        self
    }

    /// Whether identical pages of a cluster are stored once (needs page checksums).
    pub fn same_page_merging(mut self, on: bool) -> Self {
        self.options.same_page_merging = on;
        self.same_page_merging_set = true;
        self
    }

    /// A checkpoint after every `clusters` clusters; 0 commits one cluster group at the
    /// end, as ROOT.
    pub fn checkpoint_every(mut self, clusters: u64) -> Self {
        self.options.checkpoint_every = (clusters > 0).then_some(clusters);
        self
    }

    /// The options, if they hold together; else an [`Error::InvalidArgument`] naming the
    /// first option out of range and the range.
    pub fn build(self) -> Result<WriteOptions> {
        let mut o = self.options;
        let invalid = |message: String| Err(Error::InvalidArgument(message));
        if o.cluster_size == 0 || o.cluster_size > o.max_unzipped_cluster_size {
            return invalid(format!(
                "cluster_size must be between 1 byte and max_unzipped_cluster_size ({} bytes), not {}",
                o.max_unzipped_cluster_size, o.cluster_size
            ));
        }
        if o.page_size < MIN_PAGE_SIZE || o.page_size > o.max_unzipped_cluster_size {
            return invalid(format!(
                "page_size must be between {MIN_PAGE_SIZE} bytes and max_unzipped_cluster_size ({} bytes), not {}",
                o.max_unzipped_cluster_size, o.page_size
            ));
        }
        if !self.initial_page_size_set {
            // The default initial page follows a smaller page size.
            o.initial_page_size = o.initial_page_size.min(o.page_size);
        }
        if o.initial_page_size == 0 || o.initial_page_size > o.page_size {
            return invalid(format!(
                "initial_page_size must be between 1 byte and page_size ({} bytes), not {}",
                o.page_size, o.initial_page_size
            ));
        }
        if o.page_buffer_budget == Some(0) {
            return invalid(
                "page_buffer_budget must be at least 1 byte, or None for ROOT's default, not 0"
                    .into(),
            );
        }
        if o.page_run_size == Some(0) {
            return invalid(
                "page_run_size must be at least 1 byte, or None for one run per cluster, not 0"
                    .into(),
            );
        }
        if !o.page_checksums {
            if self.same_page_merging_set && o.same_page_merging {
                return invalid(
                    "same_page_merging needs page_checksums: identical pages are found by their checksums"
                        .into(),
                );
            }
            o.same_page_merging = false;
        }
        if !(MIN_KEY_SIZE..=MAX_KEY_SIZE).contains(&o.max_key_size) {
            return invalid(format!(
                "max_key_size must be between {MIN_KEY_SIZE} and {MAX_KEY_SIZE} bytes, not {}",
                o.max_key_size
            ));
        }
        Ok(o)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message of the error `builder` gives.
    fn refused(builder: WriteOptionsBuilder) -> String {
        match builder.build() {
            Err(Error::InvalidArgument(message)) => message,
            other => panic!("expected an invalid argument, got {other:?}"),
        }
    }

    #[test]
    fn defaults_are_roots_and_valid() {
        let built = WriteOptions::builder().build().expect("valid");
        assert_eq!(built, WriteOptions::default());
        assert_eq!(built.compression(), CompressionSettings::DEFAULT_RNTUPLE);
        assert_eq!(built.cluster_size(), 128 << 20);
        assert_eq!(built.max_unzipped_cluster_size(), 1280 << 20);
        assert_eq!(built.initial_page_size(), 256);
        assert_eq!(built.page_size(), 1 << 20);
        assert_eq!(built.page_buffer_budget(), None);
        assert_eq!(built.effective_page_buffer_budget(), 256 << 20);
        assert_eq!(built.page_run_size(), Some(8 << 20));
        assert!(built.page_checksums() && built.same_page_merging());
        assert_eq!(built.max_key_size(), 1 << 30);
        assert_eq!(built.checkpoint_every(), Some(1));
    }

    #[test]
    fn every_option_is_set() {
        let o = WriteOptions::builder()
            .compression(CompressionSettings::UNCOMPRESSED)
            .cluster_size(1000)
            .max_unzipped_cluster_size(5000)
            .initial_page_size(16)
            .page_size(64)
            .page_buffer_budget(Some(4096))
            .page_run_size(None)
            .page_checksums(false)
            .max_key_size(4096)
            .checkpoint_every(3)
            .build()
            .expect("valid");
        assert_eq!(o.compression(), CompressionSettings::UNCOMPRESSED);
        assert_eq!(
            (o.cluster_size(), o.max_unzipped_cluster_size()),
            (1000, 5000)
        );
        assert_eq!((o.initial_page_size(), o.page_size()), (16, 64));
        assert_eq!(o.page_buffer_budget(), Some(4096));
        assert_eq!(o.effective_page_buffer_budget(), 4096);
        assert_eq!(o.page_run_size(), None);
        // No checksums: no same-page merging either, as ROOT.
        assert!(!o.page_checksums() && !o.same_page_merging());
        assert_eq!(o.max_key_size(), 4096);
        assert_eq!(o.checkpoint_every(), Some(3));
        // Uncompressed: the budget and first estimate are the cluster size itself.
        assert_eq!(o.initial_cluster_size_estimate(), 1000);
        // A builder from options keeps them.
        assert_eq!(o.to_builder().build().expect("valid"), o);
    }

    #[test]
    fn checkpoint_every_zero_means_once_at_the_end() {
        let o = WriteOptions::builder().checkpoint_every(0).build();
        assert_eq!(o.expect("valid").checkpoint_every(), None);
    }

    #[test]
    fn the_initial_page_follows_a_smaller_page_size() {
        let o = WriteOptions::builder()
            .page_size(100)
            .build()
            .expect("valid");
        assert_eq!((o.initial_page_size(), o.page_size()), (100, 100));
        // Set explicitly, it must fit the page.
        assert_eq!(
            refused(
                WriteOptions::builder()
                    .page_size(100)
                    .initial_page_size(101)
            ),
            "initial_page_size must be between 1 byte and page_size (100 bytes), not 101"
        );
        assert_eq!(
            refused(WriteOptions::builder().initial_page_size(0)),
            "initial_page_size must be between 1 byte and page_size (1048576 bytes), not 0"
        );
    }

    #[test]
    fn sizes_out_of_range_are_refused_by_name() {
        assert_eq!(
            refused(WriteOptions::builder().cluster_size(0)),
            "cluster_size must be between 1 byte and max_unzipped_cluster_size (1342177280 bytes), not 0"
        );
        assert_eq!(
            refused(WriteOptions::builder().cluster_size(2 << 30)),
            "cluster_size must be between 1 byte and max_unzipped_cluster_size (1342177280 bytes), not 2147483648"
        );
        assert_eq!(
            refused(WriteOptions::builder().max_unzipped_cluster_size(1000)),
            "cluster_size must be between 1 byte and max_unzipped_cluster_size (1000 bytes), not 134217728"
        );
        assert_eq!(
            refused(WriteOptions::builder().page_size(0)),
            "page_size must be between 8 bytes and max_unzipped_cluster_size (1342177280 bytes), not 0"
        );
        assert_eq!(
            refused(WriteOptions::builder().page_size(7)),
            "page_size must be between 8 bytes and max_unzipped_cluster_size (1342177280 bytes), not 7"
        );
        assert_eq!(
            refused(
                WriteOptions::builder()
                    .cluster_size(1000)
                    .max_unzipped_cluster_size(4000)
                    .page_size(4001)
            ),
            "page_size must be between 8 bytes and max_unzipped_cluster_size (4000 bytes), not 4001"
        );
        assert_eq!(
            refused(WriteOptions::builder().page_buffer_budget(Some(0))),
            "page_buffer_budget must be at least 1 byte, or None for ROOT's default, not 0"
        );
        assert_eq!(
            refused(WriteOptions::builder().page_run_size(Some(0))),
            "page_run_size must be at least 1 byte, or None for one run per cluster, not 0"
        );
        assert_eq!(
            refused(WriteOptions::builder().max_key_size(1023)),
            "max_key_size must be between 1024 and 1073741824 bytes, not 1023"
        );
        assert_eq!(
            refused(WriteOptions::builder().max_key_size((1 << 30) + 1)),
            "max_key_size must be between 1024 and 1073741824 bytes, not 1073741825"
        );
        // The bounds themselves are accepted.
        let edges = WriteOptions::builder()
            .cluster_size(1)
            .max_unzipped_cluster_size(8)
            .page_size(8)
            .initial_page_size(8)
            .max_key_size(1024)
            .build()
            .expect("valid");
        assert_eq!((edges.cluster_size(), edges.page_size()), (1, 8));
    }

    #[test]
    fn same_page_merging_needs_checksums() {
        assert_eq!(
            refused(
                WriteOptions::builder()
                    .page_checksums(false)
                    .same_page_merging(true)
            ),
            "same_page_merging needs page_checksums: identical pages are found by their checksums"
        );
        let o = WriteOptions::builder()
            .same_page_merging(false)
            .build()
            .expect("valid");
        assert!(o.page_checksums() && !o.same_page_merging());
    }
}
