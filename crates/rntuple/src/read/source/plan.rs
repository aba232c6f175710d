//! The read planner: which page bytes a read needs, merged into few ranges and grouped
//! into few requests, bunch by bunch of clusters, so that a remote source is asked once
//! per bunch (a vectored read) and the next bunches can be fetched while one decodes.

use crate::io::{ByteRange, ReadHints};
use crate::schema::Descriptor;
use std::collections::HashSet;
use std::ops::Range;

/// A page a read needs: its stored bytes (checksum included) in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct PageKey {
    /// The page's file offset.
    pub offset: u64,
    /// The page's stored bytes, its checksum included.
    pub len: u64,
}

impl PageKey {
    fn end(&self) -> u64 {
        self.offset.saturating_add(self.len)
    }
}

/// One range of a request: merged neighbouring pages (and the gaps between them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MergedRange {
    /// The bytes to read.
    pub range: ByteRange,
    /// The pages inside, by offset.
    pub pages: Vec<PageKey>,
}

/// Clusters read together: their entries and the requests that fetch their pages.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Bunch {
    /// The bunch's entries (within the read's range).
    pub entries: Range<u64>,
    /// The selected fields it covers (indices into the selection), or `None` for all.
    pub fields: Option<Vec<usize>>,
    /// One vectored read each.
    pub requests: Vec<Vec<MergedRange>>,
    /// Pages it needs that an earlier bunch fetches (kept for it until it is decoded).
    pub reused: Vec<PageKey>,
}

impl Bunch {
    /// Every selected field over `entries`, with no pages fetched for it: the one bunch of
    /// a range read from a local file.
    pub(crate) fn whole(entries: Range<u64>) -> Bunch {
        Bunch {
            entries,
            fields: None,
            requests: Vec::new(),
            reused: Vec::new(),
        }
    }

    /// Every page the bunch needs: those it fetches and those it reuses.
    pub(crate) fn pages(&self) -> impl Iterator<Item = &PageKey> {
        self.requests
            .iter()
            .flatten()
            .flat_map(|r| r.pages.iter())
            .chain(&self.reused)
    }
}

/// Whether a page of `len` stored bytes (checksum included) lies in one piece at its
/// locator. A page larger than the file's max key size is a multi-key blob, its chunks
/// elsewhere in the file (listed in the first chunk): the plan leaves it out and the
/// page source reads it on demand through the keys that hold it.
pub(crate) fn contiguous_page(len: u64, max_key_size: u64) -> bool {
    len > 0 && (max_key_size == 0 || len <= max_key_size)
}

/// Plans a read of the selected fields (`field_columns`: each field's columns) over
/// `entries`, in bunches of about `hints.bunch_bytes` of page bytes: consecutive small clusters
/// with all fields go together; a cluster of at least that is split into groups
/// of consecutive fields instead, so the decoder can start on a cluster's first fields
/// while the others arrive. Each bunch's pages are merged and grouped into requests as
/// the source's `hints` say. Pages are keyed by location, so a page that several columns
/// share (same-page merging) is read once; so is a page that `fetched` (the pages of
/// earlier plans of the same read, updated here) already holds: the bunch lists it as
/// reused.
pub(crate) fn plan_read(
    descriptor: &Descriptor,
    field_columns: &[Vec<u32>],
    entries: Range<u64>,
    hints: &ReadHints,
    max_key_size: u64,
    fetched: &mut HashSet<PageKey>,
    cached: &Extents<'_>,
) -> Vec<Bunch> {
    let mut bunches = Vec::new();
    // Small clusters waiting to make a bunch: their entries and pages.
    let mut pending: Option<(Range<u64>, Vec<PageKey>, u64)> = None;
    for c in &descriptor.clusters {
        let (first, last) = (c.first_entry, c.first_entry + c.n_entries);
        if last <= entries.start || first >= entries.end || c.n_entries == 0 {
            continue;
        }
        let range = first.max(entries.start)..last.min(entries.end);
        let per_field: Vec<(Vec<PageKey>, u64)> = field_columns
            .iter()
            .map(|cols| {
                let mut pages = Vec::new();
                for &col in cols {
                    let Some(cp) = c.column(col) else { continue };
                    for p in &cp.pages {
                        let len = p.locator.size + if p.has_checksum { 8 } else { 0 };
                        if contiguous_page(len, max_key_size) {
                            pages.push(PageKey {
                                offset: p.locator.offset,
                                len,
                            });
                        }
                    }
                }
                let bytes = pages.iter().map(|p| p.len).sum();
                (pages, bytes)
            })
            .collect();
        let cluster_bytes: u64 = per_field.iter().map(|(_, b)| b).sum();
        if cluster_bytes >= hints.bunch_bytes {
            if let Some((r, pages, _)) = pending.take() {
                bunches.push(make_bunch(r, None, pages, hints, fetched, cached));
            }
            let mut group: Vec<usize> = Vec::new();
            let mut pages: Vec<PageKey> = Vec::new();
            let mut bytes = 0u64;
            for (i, (field_pages, field_bytes)) in per_field.into_iter().enumerate() {
                group.push(i);
                pages.extend(field_pages);
                bytes += field_bytes;
                if bytes >= hints.bunch_bytes {
                    let fields = Some(std::mem::take(&mut group));
                    bunches.push(make_bunch(
                        range.clone(),
                        fields,
                        std::mem::take(&mut pages),
                        hints,
                        fetched,
                        cached,
                    ));
                    bytes = 0;
                }
            }
            if !group.is_empty() {
                bunches.push(make_bunch(
                    range,
                    Some(group),
                    pages,
                    hints,
                    fetched,
                    cached,
                ));
            }
            continue;
        }
        let (r, pages, bytes) = pending.get_or_insert_with(|| (range.clone(), Vec::new(), 0));
        r.end = range.end;
        for (field_pages, field_bytes) in per_field {
            pages.extend(field_pages);
            *bytes += field_bytes;
        }
        if *bytes >= hints.bunch_bytes {
            if let Some((r, pages, _)) = pending.take() {
                bunches.push(make_bunch(r, None, pages, hints, fetched, cached));
            }
        }
    }
    if let Some((r, pages, _)) = pending {
        bunches.push(make_bunch(r, None, pages, hints, fetched, cached));
    }
    bunches
}

/// A bunch of `entries` (and `fields`) that needs `pages`: the ones `fetched` (the pages
/// earlier bunches fetch, updated here) holds already are reused, the others merged into
/// ranges and grouped into requests as `hints` say.
pub(crate) fn make_bunch(
    entries: Range<u64>,
    fields: Option<Vec<usize>>,
    mut pages: Vec<PageKey>,
    hints: &ReadHints,
    fetched: &mut HashSet<PageKey>,
    cached: &Extents<'_>,
) -> Bunch {
    pages.sort_unstable();
    pages.dedup();
    let (reused, new): (Vec<PageKey>, Vec<PageKey>) =
        pages.into_iter().partition(|p| fetched.contains(p));
    fetched.extend(new.iter().copied());
    let ranges = merge_around_cache(&new, hints, cached);
    Bunch {
        entries,
        fields,
        requests: group_requests(ranges, hints),
        reused,
    }
}

/// Fetches the pages of consecutive small bunches together: a read of many short entry
/// ranges (`dump` and `verify` read cluster by cluster, `iterate()` in small steps) plans
/// a bunch per range, and would pay a round trip for each. While the pages the bunches
/// fetch add up to at most `hints.bunch_bytes`, the first bunch of a run fetches them
/// all (merged and grouped anew, as one bunch's are) and the others list them as reused:
/// decoding still goes bunch by bunch, and memory holds at most about one bunch's bytes
/// more.
pub(crate) fn coalesce_fetches(bunches: &mut [Bunch], hints: &ReadHints, cached: &Extents<'_>) {
    let fetched = |b: &Bunch| -> Vec<PageKey> {
        b.requests
            .iter()
            .flatten()
            .flat_map(|r| r.pages.iter().copied())
            .collect()
    };
    let bytes = |pages: &[PageKey]| pages.iter().map(|p| p.len).sum::<u64>();
    let mut k = 0;
    while k < bunches.len() {
        let mut pages = fetched(&bunches[k]);
        let mut total = bytes(&pages);
        let mut next = k + 1;
        while next < bunches.len() {
            let more = fetched(&bunches[next]);
            let more_bytes = bytes(&more);
            if total + more_bytes > hints.bunch_bytes {
                break;
            }
            total += more_bytes;
            bunches[next].requests.clear();
            bunches[next].reused.extend(more.iter().copied());
            pages.extend(more);
            next += 1;
        }
        if next > k + 1 {
            pages.sort_unstable();
            pages.dedup();
            bunches[k].requests = group_requests(merge_around_cache(&pages, hints, cached), hints);
        }
        k = next;
    }
}

/// The cached extent holding a byte range, when the source keeps a local copy of some
/// of its bytes ([`crate::io::SourceProfile::cached_extent`]).
pub(crate) type Extents<'a> = dyn Fn(ByteRange) -> Option<ByteRange> + 'a;

/// No cached extents: every page is fetched.
#[cfg(test)]
pub(crate) fn nothing_cached(_: ByteRange) -> Option<ByteRange> {
    None
}

/// For tests: bunch `k` (entry `k`) of one request, a range of `len` bytes at `k * 1000`
/// holding two pages of 100 bytes, at its start and `second` bytes in.
#[cfg(test)]
pub(crate) fn two_page_bunch(k: u64, second: u64, len: u64) -> Bunch {
    let offset = k * 1000;
    Bunch {
        entries: k..k + 1,
        fields: None,
        requests: vec![vec![MergedRange {
            range: ByteRange { offset, len },
            pages: vec![
                PageKey { offset, len: 100 },
                PageKey {
                    offset: offset + second,
                    len: 100,
                },
            ],
        }]],
        reused: Vec::new(),
    }
}

/// Merges sorted, distinct pages into ranges as [`merge_pages`] does, but pages in a
/// cached extent (`cached`) apart from the others: consecutive ones in the same extent
/// make one range (the bytes between them are in the extent too), and no range to be
/// fetched spans a cached page, so a read moves only the pages the cache lacks.
pub(crate) fn merge_around_cache(
    pages: &[PageKey],
    hints: &ReadHints,
    cached: &Extents<'_>,
) -> Vec<MergedRange> {
    let mut local: Vec<MergedRange> = Vec::new();
    let mut last_extent: Option<ByteRange> = None;
    // Runs of pages to fetch between cached ones: merged run by run.
    let mut runs: Vec<Vec<PageKey>> = vec![Vec::new()];
    for &page in pages {
        let range = ByteRange {
            offset: page.offset,
            len: page.len,
        };
        let Some(extent) = cached(range) else {
            if let Some(run) = runs.last_mut() {
                run.push(page);
            }
            continue;
        };
        if runs.last().is_some_and(|run| !run.is_empty()) {
            runs.push(Vec::new());
        }
        match local.last_mut() {
            Some(last) if last_extent == Some(extent) => {
                let end = (last.range.offset + last.range.len).max(page.end());
                last.range.len = end - last.range.offset;
                last.pages.push(page);
            }
            _ => local.push(MergedRange {
                range,
                pages: vec![page],
            }),
        }
        last_extent = Some(extent);
    }
    let mut all: Vec<MergedRange> = runs
        .iter()
        .flat_map(|run| merge_pages(run, hints))
        .collect();
    if !local.is_empty() {
        all.extend(local);
        all.sort_by_key(|r| r.range.offset);
    }
    all
}

/// Merges sorted, distinct pages into ranges: a page joins the range before it when the
/// gap is at most `merge_gap`, the range stays within `max_range_bytes`, and the gaps
/// read so far stay within `max_waste` of the needed bytes.
pub(crate) fn merge_pages(pages: &[PageKey], hints: &ReadHints) -> Vec<MergedRange> {
    let needed: u64 = pages.iter().map(|p| p.len).sum();
    // A budget: float-to-int `as` saturates (and maps NaN to 0), which is what it means.
    #[allow(clippy::cast_possible_truncation)]
    let waste_budget = (needed as f64 * hints.max_waste.max(0.0)) as u64;
    let mut wasted = 0u64;
    let mut out: Vec<MergedRange> = Vec::new();
    for &page in pages {
        if let Some(last) = out.last_mut() {
            let end = last.range.offset + last.range.len;
            // Overlapping pages (one page inside another's range) join for free.
            let gap = page.offset.saturating_sub(end);
            let new_end = end.max(page.end());
            let grown = new_end - last.range.offset;
            if page.offset < end
                || (gap <= hints.merge_gap
                    && wasted + gap <= waste_budget
                    && grown <= hints.max_range_bytes)
            {
                wasted += gap;
                last.range.len = grown;
                last.pages.push(page);
                continue;
            }
        }
        out.push(MergedRange {
            range: ByteRange {
                offset: page.offset,
                len: page.len,
            },
            pages: vec![page],
        });
    }
    out
}

/// Groups ranges, in file order, into requests of at most `max_ranges_per_request`
/// ranges and `max_request_bytes` bytes (a single larger range is a request of its own).
pub(crate) fn group_requests(ranges: Vec<MergedRange>, hints: &ReadHints) -> Vec<Vec<MergedRange>> {
    let mut requests: Vec<Vec<MergedRange>> = Vec::new();
    let mut bytes = 0u64;
    for r in ranges {
        let fits = requests.last().is_some_and(|req| {
            req.len() < hints.max_ranges_per_request.max(1)
                && bytes + r.range.len <= hints.max_request_bytes
        });
        if !fits {
            requests.push(Vec::new());
            bytes = 0;
        }
        bytes += r.range.len;
        if let Some(req) = requests.last_mut() {
            req.push(r);
        }
    }
    requests
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hints(gap: u64, waste: f64, max_range: u64, per_request: usize, request: u64) -> ReadHints {
        ReadHints {
            merge_gap: gap,
            max_waste: waste,
            max_range_bytes: max_range,
            max_ranges_per_request: per_request,
            max_request_bytes: request,
            parallel_requests: 4,
            remote: true,
            bunch_bytes: 1 << 20,
        }
    }

    fn page(offset: u64, len: u64) -> PageKey {
        PageKey { offset, len }
    }

    #[test]
    fn neighbours_merge_within_the_gap_and_the_waste_budget() {
        // Needed: 4 pages of 100 bytes = 400; waste budget 25% = 100 bytes of gaps.
        let pages = [
            page(0, 100),
            page(150, 100),
            page(300, 100),
            page(1000, 100),
        ];
        let merged = merge_pages(&pages, &hints(60, 0.25, 1 << 20, 16, 1 << 20));
        let ranges: Vec<(u64, u64)> = merged
            .iter()
            .map(|m| (m.range.offset, m.range.len))
            .collect();
        // 0..250 (gap 50), then 300 joins (gap 50, total waste 100 = budget), 1000 is too far.
        assert_eq!(ranges, vec![(0, 400), (1000, 100)]);
        assert_eq!(merged[0].pages.len(), 3);

        // Same gaps with a 10% budget (40 bytes): nothing merges.
        let merged = merge_pages(&pages, &hints(60, 0.10, 1 << 20, 16, 1 << 20));
        assert_eq!(merged.len(), 4);

        // A range never grows past max_range_bytes.
        let merged = merge_pages(&pages, &hints(60, 1.0, 260, 16, 1 << 20));
        let ranges: Vec<(u64, u64)> = merged
            .iter()
            .map(|m| (m.range.offset, m.range.len))
            .collect();
        assert_eq!(ranges, vec![(0, 250), (300, 100), (1000, 100)]);
    }

    #[test]
    fn small_bunches_are_fetched_together_up_to_the_bunch_size() {
        let bunch = |k: u64| two_page_bunch(k, 200, 300);
        // 200 page bytes each; bunch_bytes 1 MiB would take all, 500 takes two at a time.
        let mut h = hints(2000, 10.0, 1 << 20, 1024, 1 << 20);
        h.bunch_bytes = 500;
        let mut bunches: Vec<Bunch> = (0..5).map(bunch).collect();
        let all_pages: Vec<Vec<PageKey>> = bunches
            .iter()
            .map(|b| b.pages().copied().collect())
            .collect();
        coalesce_fetches(&mut bunches, &h, &nothing_cached);
        let requests: Vec<usize> = bunches.iter().map(|b| b.requests.len()).collect();
        assert_eq!(requests, vec![1, 0, 1, 0, 1]);
        // Bunch 0 fetches bunch 1's pages too (one merged range: the gap is allowed),
        // and bunch 1 reuses them; every bunch still lists its own pages, and every page
        // is fetched once.
        let first: Vec<(u64, u64)> = bunches[0].requests[0]
            .iter()
            .map(|r| (r.range.offset, r.range.len))
            .collect();
        assert_eq!(first, vec![(0, 1300)]);
        for (b, want) in bunches.iter().zip(&all_pages) {
            let got: Vec<PageKey> = b.pages().copied().collect();
            assert!(
                want.iter().all(|p| got.contains(p)),
                "{got:?} lacks {want:?}"
            );
        }
        assert_eq!(bunches[1].reused, all_pages[1]);
        let mut fetched: Vec<PageKey> = bunches
            .iter()
            .flat_map(|b| b.requests.iter().flatten().flat_map(|r| r.pages.clone()))
            .collect();
        fetched.sort_unstable();
        let mut every: Vec<PageKey> = all_pages.concat();
        every.sort_unstable();
        assert_eq!(fetched, every);
        // A bunch larger than the bunch size alone stays alone.
        h.bunch_bytes = 100;
        let mut bunches: Vec<Bunch> = (0..3).map(bunch).collect();
        coalesce_fetches(&mut bunches, &h, &nothing_cached);
        assert!(bunches
            .iter()
            .all(|b| b.requests.len() == 1 && b.reused.is_empty()));
    }

    #[test]
    fn cached_pages_are_read_by_extent_and_never_fetched() {
        // Pages at 0, 200, 400, 600, 800 (100 bytes each); an extent holds 150..550.
        let pages: Vec<PageKey> = (0..5).map(|i| page(i * 200, 100)).collect();
        let extent = ByteRange {
            offset: 150,
            len: 400,
        };
        let cached = |r: ByteRange| {
            (r.offset >= extent.offset && r.offset + r.len <= extent.offset + extent.len)
                .then_some(extent)
        };
        // A generous merge would take all five pages in one range.
        let merged = merge_around_cache(&pages, &hints(1000, 10.0, 1 << 20, 16, 1 << 20), &cached);
        let ranges: Vec<(u64, u64, usize)> = merged
            .iter()
            .map(|m| (m.range.offset, m.range.len, m.pages.len()))
            .collect();
        // 0 alone (the next fetched page, 600, would span the cached ones), the two
        // cached pages as one range inside the extent, then 600 and 800 merged.
        assert_eq!(ranges, vec![(0, 100, 1), (200, 300, 2), (600, 300, 2)]);
        let nothing = merge_around_cache(
            &pages,
            &hints(1000, 10.0, 1 << 20, 16, 1 << 20),
            &nothing_cached,
        );
        assert_eq!(nothing.len(), 1, "without a cache, as merge_pages");
    }

    #[test]
    fn multi_key_pages_are_left_to_the_decoder() {
        assert!(contiguous_page(4096, 4096));
        assert!(!contiguous_page(4097, 4096), "two keys: not one range");
        assert!(!contiguous_page(0, 4096));
        assert!(contiguous_page(1 << 40, 0), "no key size limit");
    }

    #[test]
    fn overlapping_and_adjacent_pages_cost_nothing() {
        let pages = [page(0, 100), page(100, 50), page(120, 10), page(150, 10)];
        let merged = merge_pages(&pages, &hints(0, 0.0, 1 << 20, 16, 1 << 20));
        assert_eq!(merged.len(), 1);
        assert_eq!((merged[0].range.offset, merged[0].range.len), (0, 160));
    }

    #[test]
    fn requests_respect_range_and_byte_limits() {
        let ranges: Vec<MergedRange> = (0..10)
            .map(|i| MergedRange {
                range: ByteRange {
                    offset: i * 1000,
                    len: 100,
                },
                pages: vec![page(i * 1000, 100)],
            })
            .collect();
        let by_count = group_requests(ranges.clone(), &hints(0, 0.0, 1 << 20, 4, 1 << 20));
        assert_eq!(
            by_count.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![4, 4, 2]
        );
        let by_bytes = group_requests(ranges, &hints(0, 0.0, 1 << 20, 100, 300));
        assert_eq!(
            by_bytes.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![3, 3, 3, 1]
        );
    }
}
