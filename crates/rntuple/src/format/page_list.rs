//! The page list envelope: cluster summaries and the location of every page.

use super::cursor::{u32_len, Cursor, Writer};
use super::header::read_list;
use super::locator::Locator;
use crate::error::{Error, Result};

/// Cluster flag reserved for sharded clusters; readers must refuse it.
const CLUSTER_FLAG_SHARDED: u8 = 0x01;

/// A cluster's entry range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClusterSummary {
    /// First entry of the cluster.
    pub first_entry: u64,
    /// Number of entries.
    pub n_entries: u64,
}

/// One page: its element count, whether a checksum follows it, and where it lies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PageInfo {
    /// Number of elements in the page.
    pub n_elements: u32,
    /// An xxh3 checksum of the compressed page follows the page on disk.
    pub has_checksum: bool,
    /// Where the (compressed) page lies; its size excludes the checksum.
    pub locator: Locator,
}

/// The pages of one column in one cluster.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ColumnPages {
    /// The pages, in element order.
    pub pages: Vec<PageInfo>,
    /// Index of the column's first element in this cluster (`None` if suppressed).
    pub element_offset: Option<u64>,
    /// Compression settings (algorithm × 100 + level); `None` if suppressed.
    pub compression: Option<u32>,
}

impl ColumnPages {
    /// Total number of elements in the pages.
    pub fn n_elements(&self) -> u64 {
        self.pages.iter().map(|p| p.n_elements as u64).sum()
    }

    /// Whether this column belongs to a representation not used in this cluster.
    pub fn is_suppressed(&self) -> bool {
        self.element_offset.is_none()
    }
}

/// The page list envelope's payload.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PageList {
    /// The checksum of the header this page list belongs to.
    pub header_checksum: u64,
    /// The clusters of the group.
    pub clusters: Vec<ClusterSummary>,
    /// For each cluster, for each physical column (in id order), its pages. Columns
    /// added after this page list was written have no entry.
    pub columns: Vec<Vec<ColumnPages>>,
}

impl PageList {
    /// Parses a page list payload (inside the envelope).
    pub fn read(payload: &[u8]) -> Result<PageList> {
        let mut c = Cursor::new(payload, "page list envelope");
        let header_checksum = c.u64()?;
        let clusters = read_list(&mut c, |c| {
            let frame = c.record_frame()?;
            let first_entry = c.u64()?;
            let packed = c.u64()?;
            let flags = (packed >> 56) as u8;
            if flags & CLUSTER_FLAG_SHARDED != 0 {
                return Err(Error::Unsupported(
                    "sharded clusters (cluster flag 0x01)".to_string(),
                ));
            }
            c.end_frame(&frame)?;
            Ok(ClusterSummary {
                first_entry,
                n_entries: packed & ((1u64 << 56) - 1),
            })
        })?;
        let columns = read_list(&mut c, |c| read_list(c, read_column_pages))?;
        if columns.len() != clusters.len() {
            return Err(Error::corrupt(
                "page list envelope",
                format!(
                    "{} cluster summaries but page locations for {} clusters",
                    clusters.len(),
                    columns.len()
                ),
            ));
        }
        Ok(PageList {
            header_checksum,
            clusters,
            columns,
        })
    }

    /// Serializes the page list payload (to be sealed into an envelope). A page of more
    /// than 2^31 - 1 elements, or an element offset past 2^63 - 1, has no representation
    /// (the sign bit of the element count is the checksum flag) and is an error.
    pub fn write(&self) -> Result<Vec<u8>> {
        let mut w = Writer::new();
        w.u64(self.header_checksum);
        let list = w.begin_list(u32_len(self.clusters.len(), || {
            "page list clusters".into()
        })?);
        for cl in &self.clusters {
            let rec = w.begin_record();
            w.u64(cl.first_entry);
            w.u64(cl.n_entries);
            w.end_frame(rec);
        }
        w.end_frame(list);
        let top = w.begin_list(u32_len(self.columns.len(), || {
            "page list column lists".into()
        })?);
        for (k, cluster) in self.columns.iter().enumerate() {
            let outer = w.begin_list(u32_len(cluster.len(), || {
                format!("page list columns of cluster {k}")
            })?);
            for (c, col) in cluster.iter().enumerate() {
                let inner = w.begin_list(u32_len(col.pages.len(), || {
                    format!("page list pages of column {c} in cluster {k}")
                })?);
                for p in &col.pages {
                    let n = i32::try_from(p.n_elements).map_err(|_| {
                        Error::InvalidArgument(format!(
                            "a page of {} elements: a page holds at most {} (2^31 - 1)",
                            p.n_elements,
                            i32::MAX
                        ))
                    })?;
                    w.i32(if p.has_checksum { -n } else { n });
                    p.locator.write(&mut w);
                }
                match (col.element_offset, col.compression) {
                    (Some(offset), Some(settings)) => {
                        let offset = i64::try_from(offset).map_err(|_| {
                            Error::InvalidArgument(format!(
                                "column element offset {offset} is past 2^63 - 1"
                            ))
                        })?;
                        w.i64(offset);
                        w.u32(settings);
                    }
                    _ => w.i64(i64::MIN),
                }
                w.end_frame(inner);
            }
            w.end_frame(outer);
        }
        w.end_frame(top);
        Ok(w.into_bytes())
    }
}

/// Reads one column's inner list frame: pages, element offset, compression settings.
fn read_column_pages(c: &mut Cursor<'_>) -> Result<ColumnPages> {
    // A page takes 12 bytes: its element count and locator.
    let frame = c.bounded_list_frame(12, "pages")?;
    let mut pages = Vec::with_capacity(frame.items as usize);
    for _ in 0..frame.items {
        let n = c.i32()?;
        let locator = Locator::read(c)?;
        pages.push(PageInfo {
            n_elements: n.unsigned_abs(),
            has_checksum: n < 0,
            locator,
        });
    }
    let offset = c.i64()?;
    let (element_offset, compression) = if offset < 0 {
        (None, None)
    } else {
        (Some(offset as u64), Some(c.u32()?))
    };
    if element_offset.is_none() && !pages.is_empty() {
        return Err(Error::corrupt(
            c.what(),
            format!("suppressed column at offset {} lists pages", frame.start),
        ));
    }
    c.end_frame(&frame)?;
    Ok(ColumnPages {
        pages,
        element_offset,
        compression,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_list_round_trip_with_suppressed_column() {
        let pl = PageList {
            header_checksum: 99,
            clusters: vec![
                ClusterSummary {
                    first_entry: 0,
                    n_entries: 10,
                },
                ClusterSummary {
                    first_entry: 10,
                    n_entries: 5,
                },
            ],
            columns: vec![
                vec![
                    ColumnPages {
                        pages: vec![PageInfo {
                            n_elements: 10,
                            has_checksum: true,
                            locator: Locator::file(40, 1000),
                        }],
                        element_offset: Some(0),
                        compression: Some(505),
                    },
                    ColumnPages::default(),
                ],
                vec![ColumnPages::default(), ColumnPages::default()],
            ],
        };
        let back = PageList::read(&pl.write().unwrap()).unwrap();
        assert_eq!(back, pl);
    }

    #[test]
    fn a_page_count_past_the_sign_bit_is_an_error_not_a_checksum_flag() {
        let page = |n_elements| PageList {
            header_checksum: 1,
            clusters: vec![ClusterSummary {
                first_entry: 0,
                n_entries: 1,
            }],
            columns: vec![vec![ColumnPages {
                pages: vec![PageInfo {
                    n_elements,
                    has_checksum: false,
                    locator: Locator::default(),
                }],
                element_offset: Some(0),
                compression: Some(0),
            }]],
        };
        let largest = page(i32::MAX as u32).write().unwrap();
        let back = PageList::read(&largest).unwrap();
        assert_eq!(back.columns[0][0].pages[0].n_elements, i32::MAX as u32);
        assert!(!back.columns[0][0].pages[0].has_checksum);
        let err = page(1 << 31).write().unwrap_err();
        assert!(
            err.to_string()
                .contains("a page of 2147483648 elements: a page holds at most 2147483647"),
            "{err}"
        );
    }
}
