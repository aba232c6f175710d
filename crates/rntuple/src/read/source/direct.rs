//! Pages read at their locators as the decoder asks for them: a local file, where a
//! read costs no round trip and the decoder's threads read in parallel. A thread of its
//! own tells the kernel which clusters come next (a read with `Access::WillNeed`), so
//! that it reads them from the disk into the page cache while the current ones are
//! decoded.

use super::pool::BufferPool;
use super::{PageBytes, PageSource, Storage};
use crate::error::Result;
use crate::format::{stored_page_len, PageInfo};
use crate::io::ByteRange;
use crate::schema::Descriptor;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

/// Gaps between the selected pages up to this size are read ahead with them: one hint
/// for a run of pages rather than one per page.
const READ_AHEAD_GAP: u64 = 128 << 10;

/// Clusters asked for beyond the last one of the bunch being decoded: enough that the
/// disk's pace may vary without the decoder waiting.
const READ_AHEAD_CLUSTERS: usize = 2;

/// The piece of a run the read-ahead thread hands to the kernel at a time, checking
/// between pieces whether the read is over.
const READ_AHEAD_PIECE: u64 = 4 << 20;

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
    /// The thread that asks the kernel, started with the first request. The hints run
    /// on it, not on the decoder's threads: the kernel may hold a caller while its
    /// request queue is full.
    worker: Mutex<Option<Worker>>,
}

/// The read-ahead thread: it takes runs from `runs` and asks the kernel for them.
struct Worker {
    /// `None` once stopping.
    runs: Option<Sender<Vec<ByteRange>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Worker {
    /// Starts the thread, or `None` if none can be started (no hints then).
    fn start(storage: Storage) -> Option<Worker> {
        let (runs, queue) = channel::<Vec<ByteRange>>();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("rntuple-read-ahead".into())
            .spawn(move || {
                for cluster in queue {
                    for run in cluster {
                        let end = run.offset.saturating_add(run.len);
                        let mut at = run.offset;
                        while at < end {
                            if stopped.load(Ordering::Relaxed) {
                                return;
                            }
                            let len = READ_AHEAD_PIECE.min(end - at);
                            storage.will_need(&[ByteRange { offset: at, len }]);
                            at += len;
                        }
                    }
                }
            })
            .ok()?;
        Some(Worker {
            runs: Some(runs),
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        self.runs.take();
        if let Some(thread) = self.thread.take() {
            // The thread stops within one piece; it cannot panic (hints fail silently).
            let _ = thread.join();
        }
    }
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
            through.push(last.map_or(0, |l| l + 1 + READ_AHEAD_CLUSTERS));
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
                worker: Mutex::new(None),
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

    fn count_shared(&self, bytes: u64) {
        self.storage.count_shared(bytes);
    }

    fn storage_size(&self) -> u64 {
        self.storage.size()
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
        let wanted = ahead.clusters.get(from..target).unwrap_or_default();
        if wanted.is_empty() {
            return;
        }
        let mut worker = ahead.worker.lock().unwrap_or_else(PoisonError::into_inner);
        if worker.is_none() {
            *worker = Worker::start(self.storage.clone());
        }
        let Some(runs) = worker.as_ref().and_then(|w| w.runs.as_ref()) else {
            return;
        };
        for cluster in wanted {
            // The thread lives as long as the sender: a send cannot fail.
            let _ = runs.send(cluster.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    // Test code: a failed unwrap is a failed test.
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::encoding::ColumnValues;
    use crate::format::stored_page_len;
    use crate::io::MemorySource;
    use crate::read::column::{ColumnPart, ColumnReader};
    use crate::read::RNTupleReader;
    use crate::schema::{ColumnDefaults, SchemaBuilder};
    use crate::write::{RNTupleWriter, WriteOptions};
    use arrow_array::{ArrayRef, Float64Array, RecordBatch};
    use std::sync::Arc;

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

    const ENTRIES: usize = 200_000;

    /// A double in [0, 1) from the bits of a hash of `i`: data zstd cannot shrink much.
    fn varied(i: usize) -> f64 {
        let h = (i as u64 ^ 0x9e37_79b9_7f4a_7c15).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        let h = (h ^ (h >> 31)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (h >> 11) as f64 / (1u64 << 53) as f64
    }

    /// One cluster of `varied` (stored about as large as decoded) and `zeros`
    /// (compressed to almost nothing), in pages of 8 KiB.
    fn reader() -> RNTupleReader {
        let columns: Vec<(&str, ArrayRef)> = vec![
            (
                "varied",
                Arc::new(Float64Array::from_iter_values((0..ENTRIES).map(varied))),
            ),
            ("zeros", Arc::new(Float64Array::from(vec![0.0; ENTRIES]))),
        ];
        let batch = RecordBatch::try_from_iter(columns).unwrap();
        let mut builder = SchemaBuilder::new(ColumnDefaults { compressed: true });
        for f in batch.schema().fields() {
            builder.add_arrow_field(f).unwrap();
        }
        let options = WriteOptions::builder().page_size(8 << 10).build().unwrap();
        let mut sink = Vec::new();
        let mut w = RNTupleWriter::new(&mut sink, "t", builder.finish(), options).unwrap();
        w.write_batch(&batch).unwrap();
        let anchor = w.finish().unwrap();
        let source = Arc::new(MemorySource::new("mem", sink));
        RNTupleReader::from_anchor(source, anchor, "t".into()).unwrap()
    }

    #[test]
    fn pages_are_decoded_as_fetched_into_few_buffers_unless_the_output_could_outgrow_them() {
        let reader = reader();
        let descriptor = &reader.descriptor;
        assert_eq!(descriptor.clusters.len(), 1);
        let cluster = &descriptor.clusters[0];
        const THREADS: usize = 2;
        let threads = rayon::ThreadPoolBuilder::new()
            .num_threads(THREADS)
            .build()
            .unwrap();
        for (name, as_fetched) in [("varied", true), ("zeros", false)] {
            let field = descriptor.find_field(name).unwrap();
            let column = descriptor.written_columns(field)[0];
            let listed = &cluster.column(column).unwrap().pages;
            let pages = DirectPages::new(reader.storage.clone());
            let decoder = ColumnReader::new(descriptor, &pages);
            let part = ColumnPart {
                cluster,
                range: 0..ENTRIES as u64,
                expected_total: Some(ENTRIES as u64),
            };
            let (values, taken) = threads
                .install(|| decoder.read_column_parts(column, &[part], 0))
                .unwrap();
            let ColumnValues::F64(values) = values else {
                panic!("{name}: not doubles");
            };
            let want: Vec<f64> = match name {
                "varied" => (0..ENTRIES).map(varied).collect(),
                _ => vec![0.0; ENTRIES],
            };
            assert!(values == want, "{name}: other values than written");
            assert_eq!(
                taken,
                listed.iter().map(stored_page_len).sum::<u64>(),
                "{name}"
            );
            let fresh = pages.buffers.fresh();
            if as_fetched {
                // Each thread holds one page at a time: its buffer serves the next one.
                assert!(listed.len() > 50, "{name}: {} pages", listed.len());
                assert!(
                    fresh <= THREADS,
                    "{name}: {fresh} buffers for {} pages",
                    listed.len()
                );
            } else {
                // Every page is fetched and checked before the output is allocated.
                assert_eq!(fresh, listed.len(), "{name}");
            }
        }
    }
}
