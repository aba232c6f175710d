//! Pages read at their locators as the decoder asks for them: a local file, where a
//! read costs no round trip and the decoder's threads read in parallel. The kernel is
//! told which clusters come next (`ReadAt::will_need`), so that it reads them from the
//! disk into the page cache while the current ones are decoded.

use super::pool::BufferPool;
use super::{PageBytes, PageSource, Storage};
use crate::error::Result;
use crate::format::{stored_page_len, PageInfo};
use crate::io::ByteRange;
use crate::schema::Descriptor;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Gaps between the selected pages up to this size are read ahead with them: one hint
/// for a run of pages rather than one per page.
const READ_AHEAD_GAP: u64 = 128 << 10;

/// Every page read on demand from the storage, into buffers reused once the decoder has
/// dropped their pages.
pub(crate) struct DirectPages {
    storage: Storage,
    buffers: Arc<BufferPool>,
    read_ahead: Option<ReadAhead>,
}

/// What to read ahead: the byte ranges of the selected pages of each cluster, in the
/// order the plan's bunches first need the clusters.
struct ReadAhead {
    /// The clusters' pages, merged into runs.
    clusters: Vec<Vec<ByteRange>>,
    /// For every bunch, the clusters to have asked for when it starts: its own and the
    /// one after its last (an exclusive end in `clusters`).
    through: Vec<usize>,
    /// The clusters asked for so far.
    asked: AtomicUsize,
}

impl DirectPages {
    /// Pages read from `storage`.
    pub(crate) fn new(storage: Storage) -> DirectPages {
        DirectPages {
            storage,
            buffers: Arc::default(),
            read_ahead: None,
        }
    }

    /// Pages read from `storage` for a plan of `bunches` (entry ranges) over `columns`:
    /// when bunch k starts, the pages of its clusters and of the next cluster are asked
    /// for ahead.
    pub(crate) fn reading_ahead(
        storage: Storage,
        descriptor: &Descriptor,
        columns: &[u32],
        bunches: &[Range<u64>],
    ) -> DirectPages {
        let mut position: HashMap<usize, usize> = HashMap::new();
        let mut order: Vec<usize> = Vec::new();
        let mut through = Vec::with_capacity(bunches.len());
        for entries in bunches {
            let mut last = None;
            for (i, c) in descriptor.clusters.iter().enumerate() {
                if c.first_entry < entries.end && c.first_entry + c.n_entries > entries.start {
                    let p = *position.entry(i).or_insert_with(|| {
                        order.push(i);
                        order.len() - 1
                    });
                    last = Some(last.map_or(p, |l: usize| l.max(p)));
                }
            }
            through.push(last.map_or(0, |l| l + 2));
        }
        let clusters = order
            .iter()
            .map(|&i| {
                let cluster = &descriptor.clusters[i];
                let mut pages: Vec<(u64, u64)> = columns
                    .iter()
                    .filter_map(|&col| cluster.column(col))
                    .flat_map(|cp| cp.pages.iter())
                    .map(|p| (p.locator.offset, stored_page_len(p)))
                    .collect();
                pages.sort_unstable();
                merge_runs(&pages)
            })
            .collect();
        DirectPages {
            storage,
            buffers: Arc::default(),
            read_ahead: Some(ReadAhead {
                clusters,
                through,
                asked: AtomicUsize::new(0),
            }),
        }
    }
}

/// Sorted `(offset, len)` pages merged into runs across gaps of at most
/// [`READ_AHEAD_GAP`].
fn merge_runs(pages: &[(u64, u64)]) -> Vec<ByteRange> {
    let mut runs: Vec<ByteRange> = Vec::new();
    for &(offset, len) in pages {
        match runs.last_mut() {
            Some(run) if offset <= run.offset + run.len + READ_AHEAD_GAP => {
                let end = (offset + len).max(run.offset + run.len);
                run.len = end - run.offset;
            }
            _ => runs.push(ByteRange { offset, len }),
        }
    }
    runs
}

impl PageSource for DirectPages {
    fn page(&self, page: &PageInfo) -> Result<PageBytes> {
        self.storage.read_page_pooled(page, &self.buffers)
    }

    fn starting(&self, k: usize) {
        let Some(ahead) = &self.read_ahead else {
            return;
        };
        let target = ahead
            .through
            .get(k)
            .copied()
            .unwrap_or(0)
            .min(ahead.clusters.len());
        // One caller at a time decodes a plan; the swap keeps a cluster from being asked
        // for twice all the same.
        let from = ahead.asked.fetch_max(target, Ordering::Relaxed);
        for runs in ahead.clusters.get(from..target).unwrap_or_default() {
            self.storage.will_need(runs);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_merge_into_runs_across_small_gaps() {
        let gap = READ_AHEAD_GAP;
        let pages = [
            (0, 10),
            (10, 5),
            (15 + gap, 1),
            (16 + 3 * gap, 4),
            (17 + 3 * gap, 2),
        ];
        let runs = merge_runs(&pages);
        assert_eq!(
            runs,
            vec![
                ByteRange {
                    offset: 0,
                    len: 16 + gap
                },
                ByteRange {
                    offset: 16 + 3 * gap,
                    len: 4
                },
            ]
        );
        assert!(merge_runs(&[]).is_empty());
    }
}
