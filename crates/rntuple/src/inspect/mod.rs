//! Where the bytes of an RNTuple go: per physical column, per field (summed over its
//! subfields) and per column type, compressed and uncompressed sizes, elements, pages,
//! average page size and share of the file, with the figures ROOT's `RNTupleInspector`
//! gives (compressed: the page locators' sizes, checksums not included; uncompressed:
//! elements times the in-memory size of the column's element); the sizes of the header,
//! footer and page-list envelopes; and the distribution of the pages' compressed sizes,
//! binned as ROOT's `RNTupleInspector::GetPageSizeDistribution` bins it.
//!
//! Fields are labelled by what they hold where their names do not say it: the
//! `_collection0`, `_collection1`, ... fields ROOT's `RNTupleImporter` (and `convert`)
//! make of a TTree's counted arrays read `Jet_* (_collection8)` ([`field_labels`]).
//! Tables sort and keep their largest rows, the rest summed in one row
//! ([`Inspection::arranged_table`]).

mod labels;
mod table;
pub mod verify;

pub use labels::{collection_label, field_labels};
pub use table::{By, Cell, Rest, SortKey, Table, TableColumn};

use crate::encoding::ColumnType;
use crate::error::{Error, Result};
use crate::format::Anchor;
use crate::read::RNTupleReader;
use crate::schema::Descriptor;

/// The bins ROOT's `RNTupleInspector::GetPageSizeDistribution` uses by default.
pub const ROOT_PAGE_SIZE_BINS: usize = 64;

/// The most zero pages an inspection synthesizes for deferred columns (64 Ki elements
/// or more each): beyond, the page lists are taken for corrupt.
const MAX_ZERO_PAGES: u64 = 1 << 22;

/// Uncompressed over compressed bytes, 1 when nothing is stored (as ROOT's
/// `PrintColumnTypeInfo` has it).
pub fn compression_factor(uncompressed: u64, compressed: u64) -> f64 {
    if compressed == 0 {
        1.0
    } else {
        uncompressed as f64 / compressed as f64
    }
}

/// The compression factor as ROOT computes it: in single precision (what its printouts
/// round).
pub fn root_compression_factor(uncompressed: u64, compressed: u64) -> f32 {
    if compressed == 0 {
        1.0
    } else {
        uncompressed as f32 / compressed as f32
    }
}

/// Compressed bytes per page, 0 without pages.
fn average(bytes: u64, pages: u64) -> f64 {
    if pages == 0 {
        0.0
    } else {
        bytes as f64 / pages as f64
    }
}

/// One physical column's storage.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnStats {
    /// Physical column id.
    pub id: u32,
    /// The qualified name of its field.
    pub field: String,
    /// Its field's label ([`field_labels`]): the qualified name, or what the field holds
    /// where its name does not say it.
    pub label: String,
    /// Its type's name (`SplitReal32`, ...).
    pub column_type: String,
    /// Elements over all clusters.
    pub elements: u64,
    /// Pages over all clusters.
    pub pages: u64,
    /// Bytes of its pages on storage (checksums not included).
    pub compressed: u64,
    /// Elements times the in-memory element size (as ROOT's inspector counts).
    pub uncompressed: u64,
    /// The compressed size of each page, cluster by cluster, in element order.
    pub page_sizes: Vec<u64>,
    /// Where the type sorts in ROOT's `ENTupleColumnType` (unknown types last).
    type_order: u16,
}

impl ColumnStats {
    /// Uncompressed over compressed bytes (1 when nothing is stored).
    pub fn compression_factor(&self) -> f64 {
        compression_factor(self.uncompressed, self.compressed)
    }

    /// Compressed bytes per page (0 without pages).
    pub fn average_page_size(&self) -> f64 {
        average(self.compressed, self.pages)
    }
}

/// One field's storage, its subfields' columns included.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldStats {
    /// Field id.
    pub id: u32,
    /// Qualified name (`Jet.pt`).
    pub name: String,
    /// Its label ([`field_labels`]): the qualified name, or what the field holds where
    /// its name does not say it (`Jet_* (_collection8)`).
    pub label: String,
    /// The parent field's id (`None` for a top-level field).
    pub parent: Option<u32>,
    /// C++ type name.
    pub type_name: String,
    /// Physical columns of the field and its subfields.
    pub columns: usize,
    /// Pages of those columns.
    pub pages: u64,
    /// Their compressed bytes.
    pub compressed: u64,
    /// Their uncompressed bytes.
    pub uncompressed: u64,
}

impl FieldStats {
    /// Uncompressed over compressed bytes (1 when nothing is stored).
    pub fn compression_factor(&self) -> f64 {
        compression_factor(self.uncompressed, self.compressed)
    }

    /// Compressed bytes per page (0 without pages).
    pub fn average_page_size(&self) -> f64 {
        average(self.compressed, self.pages)
    }
}

/// The physical columns of one column type, summed (ROOT's `PrintColumnTypeInfo` row).
#[derive(Debug, Clone, PartialEq)]
pub struct TypeStats {
    /// The column type's name.
    pub column_type: String,
    /// Physical columns of this type.
    pub count: u64,
    /// Their elements.
    pub elements: u64,
    /// Their pages.
    pub pages: u64,
    /// Their compressed bytes.
    pub compressed: u64,
    /// Their uncompressed bytes.
    pub uncompressed: u64,
}

impl TypeStats {
    /// Uncompressed over compressed bytes (1 when nothing is stored).
    pub fn compression_factor(&self) -> f64 {
        compression_factor(self.uncompressed, self.compressed)
    }

    /// Compressed bytes per page (0 without pages).
    pub fn average_page_size(&self) -> f64 {
        average(self.compressed, self.pages)
    }
}

/// The size of a metadata envelope (or of several, summed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EnvelopeSize {
    /// Bytes on storage (compressed, with the envelope's checksum).
    pub on_disk: u64,
    /// Bytes once decompressed.
    pub uncompressed: u64,
}

/// The storage of an RNTuple.
#[derive(Debug, Clone, PartialEq)]
pub struct Inspection {
    /// Per physical column, by id.
    pub columns: Vec<ColumnStats>,
    /// Per field (projected fields left out), by id.
    pub fields: Vec<FieldStats>,
    /// Per column type, in the order of ROOT's `ENTupleColumnType` (as ROOT's
    /// `PrintColumnTypeInfo` lists them).
    pub types: Vec<TypeStats>,
    /// Sum of the columns' compressed bytes.
    pub compressed: u64,
    /// Sum of the columns' uncompressed bytes.
    pub uncompressed: u64,
    /// Pages of all columns.
    pub pages: u64,
    /// Bytes of the pages on storage: each stored page once (ROOT's same-page merging
    /// lets columns share a page, which the figures count for each), zero pages left
    /// out.
    pub stored_page_bytes: u64,
    /// Pages that are a page stored for another column or cluster (same-page merging).
    pub shared_pages: u64,
    /// Bytes of the stored pages' checksums (8 after each page that has one).
    pub checksum_bytes: u64,
    /// Pages ROOT's descriptor synthesizes for the zeros of columns added by a late
    /// model extension, before they were added: counted in the figures as ROOT's
    /// inspector counts them, though not on storage.
    pub zero_pages: u64,
    /// Their bytes, as ROOT counts them (their elements packed).
    pub zero_page_bytes: u64,
    /// Entries.
    pub entries: u64,
    /// Clusters.
    pub clusters: u64,
    /// Cluster groups (one page-list envelope each).
    pub cluster_groups: u64,
    /// The header envelope.
    pub header: EnvelopeSize,
    /// The footer envelope.
    pub footer: EnvelopeSize,
    /// The page-list envelopes, summed.
    pub page_lists: EnvelopeSize,
    /// Bytes of the whole file the RNTuple is in.
    pub file_bytes: u64,
}

impl Inspection {
    /// Uncompressed over compressed bytes (1 when nothing is stored).
    pub fn compression_factor(&self) -> f64 {
        compression_factor(self.uncompressed, self.compressed)
    }

    /// Compressed bytes per page (0 without pages).
    pub fn average_page_size(&self) -> f64 {
        average(self.compressed, self.pages)
    }

    /// Header, footer and page-list envelopes on storage: ROOT's "Header size" plus
    /// "Footer size" (ROOT counts the page lists into the footer).
    pub fn metadata_bytes(&self) -> u64 {
        self.header.on_disk + self.footer.on_disk + self.page_lists.on_disk
    }

    /// Metadata over data bytes (ROOT's "Metadata / data"; 0 without data).
    pub fn metadata_data_ratio(&self) -> f64 {
        if self.compressed == 0 {
            0.0
        } else {
            self.metadata_bytes() as f64 / self.compressed as f64
        }
    }

    /// The file's bytes that are neither pages, their checksums nor this RNTuple's
    /// envelopes: the container's keys, directories and streamer info, and any other
    /// object in the file.
    pub fn other_bytes(&self) -> u64 {
        self.file_bytes
            .saturating_sub(self.stored_page_bytes + self.checksum_bytes + self.metadata_bytes())
    }

    /// `bytes` as a fraction of the file (0 for an empty file).
    pub fn file_share(&self, bytes: u64) -> f64 {
        if self.file_bytes == 0 {
            0.0
        } else {
            bytes as f64 / self.file_bytes as f64
        }
    }

    /// The compressed sizes of the pages of `columns` (physical ids; all columns for
    /// `None`), column by column; ids past the last column are ignored.
    pub fn page_sizes(&self, columns: Option<&[u32]>) -> Vec<u64> {
        match columns {
            None => self
                .columns
                .iter()
                .flat_map(|c| c.page_sizes.iter().copied())
                .collect(),
            Some(ids) => ids
                .iter()
                .filter_map(|&id| self.columns.get(id as usize))
                .flat_map(|c| c.page_sizes.iter().copied())
                .collect(),
        }
    }

    /// The page sizes of every column type, histogrammed over common bins as ROOT's
    /// `GetPageSizeDistribution()` (its `THStack`) does: from the smallest to the
    /// largest page of all types, `bins` bins; types without pages are left out.
    pub fn type_histograms(&self, bins: usize) -> Vec<(String, Histogram)> {
        let all = self.page_sizes(None);
        let (Some(&min), Some(&max)) = (all.iter().min(), all.iter().max()) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for t in &self.types {
            let sizes: Vec<u64> = self
                .columns
                .iter()
                .filter(|c| c.column_type == t.column_type)
                .flat_map(|c| c.page_sizes.iter().copied())
                .collect();
            if !sizes.is_empty() {
                out.push((
                    t.column_type.clone(),
                    Histogram::with_range(&sizes, bins, min, max),
                ));
            }
        }
        out
    }
}

/// A histogram of page sizes over equal bins, as ROOT's `TH1D` fills it.
#[derive(Debug, Clone, PartialEq)]
pub struct Histogram {
    /// Lower edge of the first bin.
    pub low: f64,
    /// Upper edge of the last bin.
    pub high: f64,
    /// Pages per bin.
    pub counts: Vec<u64>,
    /// Pages below `low`.
    pub underflow: u64,
    /// Pages at or above `high` (all of them when `low == high`, as in ROOT).
    pub overflow: u64,
}

impl Histogram {
    /// ROOT's binning of `sizes` (`RNTupleInspector::GetPageSizeDistribution`): `bins`
    /// bins from the smallest size to the largest plus one bin width, so that the
    /// largest falls in the last bin. Without sizes, every bin is empty over [0, 0).
    pub fn root_binning(sizes: &[u64], bins: usize) -> Histogram {
        match (sizes.iter().min(), sizes.iter().max()) {
            (Some(&min), Some(&max)) => Histogram::with_range(sizes, bins, min, max),
            _ => Histogram {
                low: 0.0,
                high: 0.0,
                counts: vec![0; bins],
                underflow: 0,
                overflow: 0,
            },
        }
    }

    /// `sizes` over `bins` bins from `min` to `max` plus one bin width.
    fn with_range(sizes: &[u64], bins: usize, min: u64, max: u64) -> Histogram {
        let n = bins.max(1);
        let low = min as f64;
        let high = max as f64 + (max - min) as f64 / n as f64;
        let mut h = Histogram {
            low,
            high,
            counts: vec![0; n],
            underflow: 0,
            overflow: 0,
        };
        for &s in sizes {
            h.fill(s as f64);
        }
        h
    }

    /// Adds one value, in the bin `TAxis::FindFixBin` gives it.
    #[allow(
        clippy::cast_possible_truncation,
        reason = "x is in [low, high): the bin is in [0, bins), and clamped"
    )]
    fn fill(&mut self, x: f64) {
        if x < self.low {
            self.underflow += 1;
        } else if x >= self.high {
            self.overflow += 1;
        } else {
            let n = self.counts.len();
            let bin = (n as f64 * (x - self.low) / (self.high - self.low)) as usize;
            if let Some(c) = self.counts.get_mut(bin.min(n - 1)) {
                *c += 1;
            }
        }
    }

    /// The lower edge of bin `i` (0-based); `i == counts.len()` gives `high`.
    pub fn edge(&self, i: usize) -> f64 {
        self.low + (self.high - self.low) * i as f64 / self.counts.len().max(1) as f64
    }
}

/// The distribution of page sizes in a few numbers.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Pages.
    pub pages: u64,
    /// The smallest (0 without pages).
    pub min: u64,
    /// The largest (0 without pages).
    pub max: u64,
    /// The mean (0 without pages).
    pub mean: f64,
    /// The quantiles at [`Summary::QUANTILES`], interpolated linearly between the
    /// sorted sizes (as numpy's default).
    pub quantiles: Vec<f64>,
}

impl Summary {
    /// The quantiles a summary gives.
    pub const QUANTILES: [f64; 5] = [0.1, 0.25, 0.5, 0.75, 0.9];
    /// Their names.
    pub const QUANTILE_NAMES: [&'static str; 5] = ["p10", "p25", "median", "p75", "p90"];

    /// Summarizes `sizes`.
    pub fn of(sizes: &[u64]) -> Summary {
        let mut sorted = sizes.to_vec();
        sorted.sort_unstable();
        let n = sorted.len();
        #[allow(
            clippy::cast_possible_truncation,
            reason = "the positions are in [0, n - 1]"
        )]
        let quantile = |q: f64| -> f64 {
            if n == 0 {
                return 0.0;
            }
            let pos = q * (n - 1) as f64;
            let lo = pos.floor() as usize;
            let hi = pos.ceil() as usize;
            let (a, b) = (sorted[lo.min(n - 1)] as f64, sorted[hi.min(n - 1)] as f64);
            a + (b - a) * (pos - lo as f64)
        };
        Summary {
            pages: n as u64,
            min: sorted.first().copied().unwrap_or(0),
            max: sorted.last().copied().unwrap_or(0),
            mean: average(sorted.iter().sum(), n as u64),
            quantiles: Summary::QUANTILES.iter().map(|&q| quantile(q)).collect(),
        }
    }

    /// The median.
    pub fn median(&self) -> f64 {
        self.quantiles.get(2).copied().unwrap_or(0.0)
    }
}

/// Bytes of one element in memory, as ROOT's column elements hold it.
pub fn memory_element_size(t: ColumnType) -> u64 {
    use ColumnType as C;
    match t {
        C::Bit | C::Byte | C::Char | C::Int8 | C::UInt8 => 1,
        C::Int16 | C::UInt16 | C::SplitInt16 | C::SplitUInt16 => 2,
        C::Int32
        | C::UInt32
        | C::SplitInt32
        | C::SplitUInt32
        | C::Real32
        | C::SplitReal32
        | C::Real16
        | C::SplitReal16
        | C::Real32Trunc
        | C::Real32Quant => 4,
        C::Switch => 16,
        _ => 8,
    }
}

/// Where a column type sorts in ROOT's `ENTupleColumnType` enumeration, the order of
/// ROOT's per-type tables (it has no split Real16, which goes after the split 16-bit
/// integers here).
fn root_type_order(t: ColumnType) -> u16 {
    use ColumnType as C;
    match t {
        C::Index64 => 1,
        C::Index32 => 2,
        C::Switch => 3,
        C::Byte => 4,
        C::Char => 5,
        C::Bit => 6,
        C::Real64 => 7,
        C::Real32 => 8,
        C::Real16 => 9,
        C::Int64 => 10,
        C::UInt64 => 11,
        C::Int32 => 12,
        C::UInt32 => 13,
        C::Int16 => 14,
        C::UInt16 => 15,
        C::Int8 => 16,
        C::UInt8 => 17,
        C::SplitIndex64 => 18,
        C::SplitIndex32 => 19,
        C::SplitReal64 => 20,
        C::SplitReal32 => 21,
        C::SplitInt64 => 22,
        C::SplitUInt64 => 23,
        C::SplitInt32 => 24,
        C::SplitUInt32 => 25,
        C::SplitInt16 => 26,
        C::SplitUInt16 => 27,
        C::SplitReal16 => 28,
        C::Real32Trunc => 29,
        C::Real32Quant => 30,
    }
}

/// Inspects the RNTuple `reader` opened (no page is read: the page lists say it all).
/// An error only for page lists that would make a column added by a late model
/// extension zeros over more than 2^22 pages (as ROOT counts them), which no real file
/// has.
pub fn inspect(reader: &RNTupleReader) -> Result<Inspection> {
    let d = reader.descriptor();
    let stored = if reader.source_profile().holds_objects {
        // A dataset of objects has no file: what its objects hold (header, footer, page
        // lists and every page once; the small JSON anchor left out).
        objects_bytes(d, reader.anchor())
    } else {
        reader.source().size()
    };
    inspect_descriptor(d, reader.anchor(), stored)
}

/// The bytes of an RNTuple's objects: header, footer, page lists, each stored page once.
fn objects_bytes(d: &Descriptor, anchor: &Anchor) -> u64 {
    let mut seen = std::collections::HashSet::new();
    let pages: u64 = d
        .clusters
        .iter()
        .flat_map(|c| c.columns.iter().flat_map(|cp| cp.pages.iter()))
        .filter(|p| seen.insert(p.locator.offset))
        .map(crate::format::stored_page_len)
        .sum();
    let lists: u64 = d.cluster_groups.iter().map(|g| g.page_list_bytes).sum();
    anchor.nbytes_header + anchor.nbytes_footer + lists + pages
}

/// Like [`inspect`], from a descriptor, the anchor it was read with and the size of
/// its file.
pub fn inspect_descriptor(d: &Descriptor, anchor: &Anchor, file_bytes: u64) -> Result<Inspection> {
    let labels = field_labels(d);
    let label_of = |id: u32| {
        labels
            .get(id as usize)
            .cloned()
            .unwrap_or_else(|| d.qualified_name(id))
    };
    let mut columns = column_rows(d, &label_of);
    let totals = count_pages(d, &mut columns)?;
    for (stats, c) in columns.iter_mut().zip(&d.columns) {
        let size = ColumnType::from_u16(c.record.column_type).map_or(0, memory_element_size);
        stats.uncompressed = stats.elements.saturating_mul(size);
    }
    let fields = field_rows(d, &columns, &label_of);
    let types = type_rows(&columns);
    let page_lists = d
        .cluster_groups
        .iter()
        .fold(EnvelopeSize::default(), |acc, g| EnvelopeSize {
            on_disk: acc.on_disk.saturating_add(g.page_list_bytes),
            uncompressed: acc.uncompressed.saturating_add(g.page_list_length),
        });
    let total = |get: fn(&ColumnStats) -> u64| columns.iter().map(get).fold(0, u64::saturating_add);
    Ok(Inspection {
        compressed: total(|c| c.compressed),
        uncompressed: total(|c| c.uncompressed),
        pages: total(|c| c.pages),
        stored_page_bytes: totals.stored_page_bytes,
        shared_pages: totals.shared_pages,
        checksum_bytes: totals.checksum_bytes,
        zero_pages: totals.zero_pages,
        zero_page_bytes: totals.zero_page_bytes,
        columns,
        fields,
        types,
        entries: d.n_entries,
        clusters: d.clusters.len() as u64,
        cluster_groups: d.cluster_groups.len() as u64,
        header: EnvelopeSize {
            on_disk: anchor.nbytes_header,
            uncompressed: anchor.len_header,
        },
        footer: EnvelopeSize {
            on_disk: anchor.nbytes_footer,
            uncompressed: anchor.len_footer,
        },
        page_lists,
        file_bytes,
    })
}

/// Figures over all pages, beside the per-column counts.
#[derive(Default)]
struct PageTotals {
    stored_page_bytes: u64,
    shared_pages: u64,
    checksum_bytes: u64,
    zero_pages: u64,
    zero_page_bytes: u64,
}

/// One row per physical column, its pages not counted yet.
fn column_rows(d: &Descriptor, label_of: &dyn Fn(u32) -> String) -> Vec<ColumnStats> {
    d.columns
        .iter()
        .map(|c| {
            let known = ColumnType::from_u16(c.record.column_type);
            ColumnStats {
                id: c.id,
                field: d.qualified_name(c.record.field_id),
                label: label_of(c.record.field_id),
                column_type: known.map_or_else(
                    || format!("0x{:02x}", c.record.column_type),
                    |t| t.name().to_string(),
                ),
                elements: 0,
                pages: 0,
                compressed: 0,
                uncompressed: 0,
                page_sizes: Vec::new(),
                type_order: known.map_or(u16::MAX, root_type_order),
            }
        })
        .collect()
}

/// Counts every cluster's pages into the column rows (and the zero pages ROOT's
/// descriptor gives deferred columns); returns the totals over all pages.
fn count_pages(d: &Descriptor, columns: &mut [ColumnStats]) -> Result<PageTotals> {
    let repetitions = column_repetitions(d);
    let mut stored_at = std::collections::HashSet::new();
    let mut totals = PageTotals::default();
    for cluster in &d.clusters {
        for (id, stats) in columns.iter_mut().enumerate() {
            let stored = cluster.columns.get(id);
            if stored.is_some_and(|p| p.is_suppressed()) {
                continue;
            }
            // A column added by a late model extension (deferred) reads as zeros where
            // it has no elements; ROOT's descriptor gives those zeros pages of their
            // own, which its inspector counts: so do these figures.
            if let (Some(column), Some(&Some(reps))) = (d.columns.get(id), repetitions.get(id)) {
                let first = column.record.first_element_index.unwrap_or(0);
                let deferred = first > 0 || (first < 0 && stored.is_some());
                let have = stored.map_or(0, |p| p.n_elements());
                let need = cluster.n_entries.saturating_mul(reps);
                if deferred && need > have {
                    let zeros = zero_pages_of(column.record.column_type, need - have);
                    totals.zero_pages = totals.zero_pages.saturating_add(zeros.pages);
                    if totals.zero_pages > MAX_ZERO_PAGES {
                        return Err(Error::corrupt(
                            "page list",
                            format!(
                                "column {id} added by a late model extension would be zeros over more than {MAX_ZERO_PAGES} pages"
                            ),
                        ));
                    }
                    for n in zeros.sizes() {
                        let bytes = (n * u64::from(column.record.bits_on_storage)).div_ceil(8);
                        stats.elements = stats.elements.saturating_add(n);
                        stats.pages += 1;
                        stats.compressed = stats.compressed.saturating_add(bytes);
                        stats.page_sizes.push(bytes);
                        totals.zero_page_bytes = totals.zero_page_bytes.saturating_add(bytes);
                    }
                }
            }
            let Some(pages) = stored else {
                continue;
            };
            stats.elements = stats.elements.saturating_add(pages.n_elements());
            stats.pages += pages.pages.len() as u64;
            for p in &pages.pages {
                stats.compressed = stats.compressed.saturating_add(p.locator.size);
                stats.page_sizes.push(p.locator.size);
                if !stored_at.insert(p.locator.offset) {
                    totals.shared_pages += 1;
                    continue;
                }
                totals.stored_page_bytes = totals.stored_page_bytes.saturating_add(p.locator.size);
                if p.has_checksum {
                    totals.checksum_bytes += 8;
                }
            }
        }
    }
    Ok(totals)
}

/// One row per field that is not a projection, summed over its subfields' columns.
fn field_rows(
    d: &Descriptor,
    columns: &[ColumnStats],
    label_of: &dyn Fn(u32) -> String,
) -> Vec<FieldStats> {
    let mut fields = Vec::new();
    for f in &d.fields {
        if f.is_projected() {
            continue;
        }
        let mut ids = Vec::new();
        collect_columns(d, f.id, &mut ids);
        let pick = |get: fn(&ColumnStats) -> u64| -> u64 {
            ids.iter()
                .filter_map(|&i| columns.get(i as usize))
                .map(get)
                .fold(0, u64::saturating_add)
        };
        fields.push(FieldStats {
            id: f.id,
            name: d.qualified_name(f.id),
            label: label_of(f.id),
            parent: f.parent,
            type_name: f.type_name().to_string(),
            columns: ids.len(),
            pages: pick(|c| c.pages),
            compressed: pick(|c| c.compressed),
            uncompressed: pick(|c| c.uncompressed),
        });
    }
    fields
}

/// One row per column type, in ROOT's order.
fn type_rows(columns: &[ColumnStats]) -> Vec<TypeStats> {
    let mut by_order: Vec<&ColumnStats> = columns.iter().collect();
    by_order.sort_by(|a, b| {
        (a.type_order, &a.column_type, a.id).cmp(&(b.type_order, &b.column_type, b.id))
    });
    let mut types: Vec<TypeStats> = Vec::new();
    for c in by_order {
        if types.last().is_none_or(|t| t.column_type != c.column_type) {
            types.push(TypeStats {
                column_type: c.column_type.clone(),
                count: 0,
                elements: 0,
                pages: 0,
                compressed: 0,
                uncompressed: 0,
            });
        }
        let Some(row) = types.last_mut() else {
            continue;
        };
        row.count += 1;
        row.elements = row.elements.saturating_add(c.elements);
        row.pages += c.pages;
        row.compressed = row.compressed.saturating_add(c.compressed);
        row.uncompressed = row.uncompressed.saturating_add(c.uncompressed);
    }
    types
}

/// The zero pages ROOT's descriptor gives a deferred column: its missing elements in
/// pages of at most 64 KiB in memory (`RPage::kPageZeroSize`), all full but the last.
struct ZeroPages {
    /// Elements of a full page.
    per_page: u64,
    /// Pages.
    pages: u64,
    /// Elements of the last page.
    last: u64,
}

impl ZeroPages {
    /// The elements of each page.
    fn sizes(&self) -> impl Iterator<Item = u64> + '_ {
        (0..self.pages).map(|k| {
            if k + 1 == self.pages {
                self.last
            } else {
                self.per_page
            }
        })
    }
}

/// The zero pages of `elements` missing elements of a column of type `column_type`.
fn zero_pages_of(column_type: u16, elements: u64) -> ZeroPages {
    let size = ColumnType::from_u16(column_type).map_or(8, memory_element_size);
    let per_page = (64 * 1024 / size).max(1);
    let pages = elements.div_ceil(per_page);
    ZeroPages {
        per_page,
        pages,
        last: elements - (pages.saturating_sub(1)) * per_page,
    }
}

/// For every physical column of a (not projected) field, the product of the array
/// sizes from its top-level field down: its elements per entry outside collections, as
/// ROOT's descriptor computes it for deferred columns.
fn column_repetitions(d: &Descriptor) -> Vec<Option<u64>> {
    let mut out = vec![None; d.columns.len()];
    let mut stack: Vec<(u32, u64)> = d
        .top_level
        .iter()
        .filter(|&&id| !d.field(id).is_projected())
        .map(|&id| (id, 1))
        .collect();
    while let Some((id, above)) = stack.pop() {
        let f = d.field(id);
        let reps = above.saturating_mul(f.record.array_size.unwrap_or(1).max(1));
        for c in d.columns.iter().filter(|c| c.record.field_id == id) {
            if let Some(slot) = out.get_mut(c.id as usize) {
                *slot = Some(reps);
            }
        }
        stack.extend(f.children.iter().map(|&child| (child, reps)));
    }
    out
}

/// The physical columns of field `id` and its subfields (not through projections).
fn collect_columns(d: &Descriptor, id: u32, out: &mut Vec<u32>) {
    let f = d.field(id);
    if f.is_projected() {
        return;
    }
    out.extend(
        d.columns
            .iter()
            .filter(|c| c.record.field_id == id)
            .map(|c| c.id),
    );
    for &child in &f.children {
        collect_columns(d, child, out);
    }
}

#[cfg(test)]
mod tests;
