//! Page planning: where ROOT would cut each column's pages (its page-size policy on
//! element counts alone: write pages that start small, double while the page buffer
//! budget allows, and are sealed when full), and the bytes one element takes in memory,
//! by which ROOT sizes pages.

use super::entry_counts::Counts;
use super::options::WriteOptions;
use crate::encoding::ColumnType;
use crate::error::{Error, Result};
use std::cmp::Reverse;
use std::collections::BTreeSet;

/// Bytes one element of `column_type` takes in memory (ROOT sizes pages by it).
pub(crate) fn memory_size(column_type: ColumnType, field_is_double: bool) -> u64 {
    use ColumnType as C;
    match column_type {
        C::Bit | C::Byte | C::Char | C::Int8 | C::UInt8 => 1,
        C::Int16 | C::UInt16 | C::SplitInt16 | C::SplitUInt16 => 2,
        C::Int32 | C::UInt32 | C::SplitInt32 | C::SplitUInt32 => 4,
        C::Real16
        | C::SplitReal16
        | C::Real32
        | C::SplitReal32
        | C::Real32Trunc
        | C::Real32Quant => {
            if field_is_double {
                8
            } else {
                4
            }
        }
        C::Int64 | C::UInt64 | C::SplitInt64 | C::SplitUInt64 | C::Real64 | C::SplitReal64 => 8,
        C::Index32 | C::Index64 | C::SplitIndex32 | C::SplitIndex64 => 8,
        C::Switch => 16,
    }
}

/// Cumulative element counts of one column over the entries of a slice.
enum Prefix {
    /// The same count for every entry.
    Const(u64),
    /// `sums[e]`: the elements of entries `0..e`.
    Sums(Vec<u64>),
}

impl Prefix {
    fn new(counts: &Counts) -> Self {
        match counts {
            Counts::Const(k) => Prefix::Const(*k),
            Counts::PerItem(v) => {
                let mut sums = Vec::with_capacity(v.len() + 1);
                let mut acc = 0u64;
                sums.push(0);
                for x in v {
                    acc += x;
                    sums.push(acc);
                }
                Prefix::Sums(sums)
            }
        }
    }

    /// The elements of entries `0..e`.
    fn at(&self, e: usize) -> u64 {
        match self {
            Prefix::Const(k) => k * e as u64,
            Prefix::Sums(sums) => sums.get(e).or(sums.last()).copied().unwrap_or(0),
        }
    }

    /// The first entry at or after `s` (before `n`) whose elements no longer fit in
    /// `room` counted from `s`: the entry where the column's write page overflows.
    fn first_overflow(&self, s: usize, room: u64, n: usize) -> usize {
        match self {
            Prefix::Const(0) => n,
            Prefix::Const(k) => s
                .saturating_add((room / k).try_into().unwrap_or(usize::MAX))
                .min(n),
            Prefix::Sums(sums) => {
                let limit = self.at(s) + room;
                let tail = sums.get(s + 1..).unwrap_or_default();
                (s + tail.partition_point(|&p| p <= limit)).min(n)
            }
        }
    }
}

/// ROOT's write pages on element counts alone: where it would cut each column's pages.
///
/// Every column has one write page, starting at the initial page size. When it is full
/// it doubles (up to the maximum page size) if the page buffer budget allows, after
/// sealing the pages of other columns that are larger than it, largest first (ties: the
/// higher column id first), until enough is free; pages at their initial size are never
/// sealed early. If that is not enough, or the page is at its maximum size, the page is
/// sealed and the column starts again with a page of the initial size.
#[derive(Clone)]
pub(crate) struct PagePlanner {
    budget: u64,
    initial_page_size: u64,
    max_page_size: u64,
    /// Sum of the capacities (bytes) of all write pages.
    allocated: u64,
    columns: Vec<PlannedColumn>,
    /// The columns by write page capacity, largest first, then by id, highest first.
    by_size: BTreeSet<(Reverse<u64>, Reverse<usize>)>,
}

#[derive(Clone)]
struct PlannedColumn {
    element_size: u64,
    initial_elements: u64,
    max_elements: u64,
    n_elements: u64,
    /// Element counts of the pages sealed and not yet cut.
    cuts: Vec<u64>,
}

impl PlannedColumn {
    fn capacity(&self) -> u64 {
        self.max_elements * self.element_size
    }
}

/// The error for a page buffer budget that cannot hold the first pages of all columns,
/// in the user's terms and in the style of [`WriteOptions`]' own checks: the option it
/// comes from (the budget, or the cluster size it defaults to), and the smallest value
/// that works. It depends on the schema, so it is found here, not when the options are
/// built.
fn budget_too_small(options: &WriteOptions, planner: &PagePlanner, element_sizes: &[u64]) -> Error {
    // Each column takes its first page from the budget twice (see `add_column`).
    let needed: u64 = element_sizes
        .iter()
        .map(|&size| 2 * planner.initial_page_bytes(size))
        .sum();
    let n = element_sizes.len();
    match options.page_buffer_budget() {
        Some(budget) => Error::InvalidArgument(format!(
            "the page buffer budget of {budget} bytes is too small for the {n} columns of this schema: page_buffer_budget must be at least {needed} bytes (their first pages need that much)"
        )),
        None => {
            let factor = if options.compression().as_u32() != 0 { 2 } else { 1 };
            Error::InvalidArgument(format!(
                "the cluster size of {} bytes is too small for the {n} columns of this schema: cluster_size must be at least {} bytes (their first pages need {needed} bytes of page buffers, {factor}x the cluster size)",
                options.cluster_size(),
                needed.div_ceil(factor)
            ))
        }
    }
}

impl PagePlanner {
    /// Bytes of a column's first write page, for elements of `element_size` bytes.
    fn initial_page_bytes(&self, element_size: u64) -> u64 {
        let element_size = element_size.max(1);
        let initial = self.initial_page_size.min(self.max_page_size);
        (initial / element_size).max(1) * element_size
    }

    pub(crate) fn new(options: &WriteOptions) -> Self {
        PagePlanner {
            budget: options.effective_page_buffer_budget(),
            initial_page_size: options.initial_page_size(),
            max_page_size: options.page_size(),
            allocated: 0,
            columns: Vec::new(),
            by_size: BTreeSet::new(),
        }
    }

    /// Adds columns whose elements take `element_sizes` bytes in memory and reserves
    /// their first write pages; an error in the user's terms if the page buffer budget
    /// cannot hold them (the planner is then as it was).
    pub(crate) fn add_columns(
        &mut self,
        element_sizes: &[u64],
        options: &WriteOptions,
    ) -> Result<()> {
        let mut planned = self.clone();
        for &size in element_sizes {
            if planned.add_column(size).is_err() {
                let all: Vec<u64> = self
                    .columns
                    .iter()
                    .map(|c| c.element_size)
                    .chain(element_sizes.iter().copied())
                    .collect();
                return Err(budget_too_small(options, self, &all));
            }
        }
        *self = planned;
        Ok(())
    }

    /// Adds a column whose elements take `element_size` bytes in memory and reserves its
    /// first write page.
    fn add_column(&mut self, element_size: u64) -> Result<()> {
        let element_size = element_size.max(1);
        // ROOT refuses an initial page larger than the maximum page, or too small for one
        // element; here the initial page is capped at the maximum and holds at least one.
        let initial = self.initial_page_size.min(self.max_page_size);
        let initial_elements = (initial / element_size).max(1);
        let id = self.columns.len();
        let bytes = initial_elements * element_size;
        self.columns.push(PlannedColumn {
            element_size,
            initial_elements,
            max_elements: initial_elements,
            n_elements: 0,
            cuts: Vec::new(),
        });
        // ROOT's buffered sink reserves the write page from its inner (file) sink, which
        // connects a copy of every column as well: each column takes its initial page
        // from the budget twice, and the copy's is never given back.
        for _ in 0..2 {
            if !self.try_evict(bytes, 0) {
                return Err(Error::InvalidArgument(format!(
                    "page buffer budget {} too small for the initial pages of all columns",
                    self.budget
                )));
            }
            self.allocated += bytes;
        }
        self.by_size.insert((Reverse(bytes), Reverse(id)));
        Ok(())
    }

    /// Runs the plan over the column appends of `n` entries: `counts` holds, per column,
    /// the elements each entry appends to it, and `entry_ops(e)` gives entry `e`'s appends
    /// (column, elements) in the order ROOT's fields make them. Between the entries where
    /// some column's write page overflows, nothing but element counts change: those
    /// stretches are added in bulk, and only the overflowing entries are planned append by
    /// append, as ROOT makes them.
    pub(crate) fn plan<'c>(
        &mut self,
        counts: impl IntoIterator<Item = (u32, &'c Counts)>,
        n: usize,
        mut entry_ops: impl FnMut(usize) -> Result<Vec<(u32, u64)>>,
    ) -> Result<()> {
        let prefixes: Vec<(usize, Prefix)> = counts
            .into_iter()
            .map(|(c, k)| (c as usize, Prefix::new(k)))
            .collect();
        let mut next: Vec<usize> = prefixes
            .iter()
            .map(|(c, p)| p.first_overflow(0, self.room(*c), n))
            .collect();
        let mut s = 0usize;
        loop {
            let first = next.iter().copied().min().unwrap_or(n).min(n);
            for (c, p) in &prefixes {
                self.add(*c, p.at(first) - p.at(s));
            }
            if first >= n {
                break;
            }
            let before: Vec<(u64, u64)> = prefixes.iter().map(|(c, _)| self.state(*c)).collect();
            for (column, count) in entry_ops(first)? {
                self.append(column as usize, count);
            }
            s = first + 1;
            // Columns whose page the overflowing entry changed otherwise than by its
            // elements (grown, sealed, or sealed early to make room) overflow elsewhere.
            for (j, (c, p)) in prefixes.iter().enumerate() {
                let (n0, max0) = before[j];
                let expected = (n0 + p.at(s) - p.at(first), max0);
                if next[j] <= first || self.state(*c) != expected {
                    next[j] = p.first_overflow(s, self.room(*c), n);
                }
            }
        }
        Ok(())
    }

    /// Bytes one element of column `id` takes in memory.
    pub(crate) fn element_size(&self, id: usize) -> u64 {
        self.columns.get(id).map_or(8, |c| c.element_size)
    }

    /// Elements column `id`'s write page has room for.
    fn room(&self, id: usize) -> u64 {
        self.columns
            .get(id)
            .map_or(0, |c| c.max_elements - c.n_elements)
    }

    /// The elements and capacity of column `id`'s write page.
    fn state(&self, id: usize) -> (u64, u64) {
        self.columns
            .get(id)
            .map_or((0, 0), |c| (c.n_elements, c.max_elements))
    }

    /// `count` elements appended to column `id`, which has room for them.
    fn add(&mut self, id: usize, count: u64) {
        if let Some(c) = self.columns.get_mut(id) {
            debug_assert!(c.n_elements + count <= c.max_elements);
            c.n_elements += count;
        }
    }

    /// `count` elements appended to column `id`.
    pub(crate) fn append(&mut self, id: usize, mut count: u64) {
        while count > 0 {
            let c = &self.columns[id];
            let mut room = c.max_elements - c.n_elements;
            if room == 0 {
                self.grow_or_flush(id);
                let c = &self.columns[id];
                room = c.max_elements - c.n_elements;
            }
            let batch = count.min(room);
            self.columns[id].n_elements += batch;
            count -= batch;
        }
    }

    fn grow_or_flush(&mut self, id: usize) {
        let c = &self.columns[id];
        let mut grown = c.max_elements * 2;
        if grown * c.element_size > self.max_page_size {
            grown = (self.max_page_size / c.element_size).max(c.initial_elements);
        }
        if grown <= c.max_elements {
            self.flush(id);
        } else if self.try_resize(id, grown) {
            self.columns[id].max_elements = grown;
        } else {
            self.flush(id);
        }
    }

    /// Seals column `id`'s write page (if it has elements) and starts a new one at the
    /// initial size.
    fn flush(&mut self, id: usize) {
        let c = &mut self.columns[id];
        if c.n_elements == 0 {
            return;
        }
        c.cuts.push(c.n_elements);
        c.n_elements = 0;
        let initial = c.initial_elements;
        // Shrinking always succeeds.
        self.try_resize(id, initial);
        self.columns[id].max_elements = initial;
    }

    /// Seals every write page (a cluster is committed).
    pub(crate) fn flush_all(&mut self) {
        for id in 0..self.columns.len() {
            self.flush(id);
        }
    }

    /// Registers `elements` as column `id`'s new write page capacity, making room by
    /// sealing larger pages of other columns if it grows; false if it does not fit.
    fn try_resize(&mut self, id: usize, elements: u64) -> bool {
        let current = self.columns[id].capacity();
        let new = elements * self.columns[id].element_size;
        if new == current {
            return true;
        }
        let key = (Reverse(current), Reverse(id));
        self.by_size.remove(&key);
        if new < current {
            self.allocated -= current - new;
        } else if self.try_evict(new - current, current) {
            self.allocated += new - current;
        } else {
            self.by_size.insert(key);
            return false;
        }
        self.by_size.insert((Reverse(new), Reverse(id)));
        true
    }

    /// Seals write pages larger than `limit` bytes, largest first, until `target` bytes
    /// of the budget are free; false if they cannot be.
    fn try_evict(&mut self, target: u64, limit: u64) -> bool {
        if self.budget.saturating_sub(self.allocated) >= target {
            return true;
        }
        let candidates: Vec<usize> = self
            .by_size
            .iter()
            .take_while(|(size, _)| size.0 > limit)
            .map(|(_, id)| id.0)
            .collect();
        for other in candidates {
            let c = &self.columns[other];
            if c.max_elements == c.initial_elements {
                continue;
            }
            self.flush(other);
            if self.budget.saturating_sub(self.allocated) >= target {
                return true;
            }
        }
        false
    }

    /// The page sizes (elements) sealed for column `id` since the last call.
    pub(crate) fn take_cuts(&mut self, id: usize) -> Vec<u64> {
        self.columns
            .get_mut(id)
            .map(|c| std::mem::take(&mut c.cuts))
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pseudo-random entries over `columns` columns: per entry, its appends (column,
    /// elements) in order, as a field tree makes them. Column 0 takes one element per
    /// entry (as an entry-level index column), column 1 three (as an array of three).
    fn entries(n: usize, columns: u64, seed: u64) -> Vec<Vec<(u32, u64)>> {
        let mut next = crate::write::pseudo_random(seed);
        (0..n)
            .map(|_| {
                let mut ops = vec![(1, 3)];
                for _ in 0..next(6) {
                    let column = 2 + next(columns - 2) as u32;
                    // Mostly small appends, now and then one larger than a page.
                    let count = if next(50) == 0 { next(3000) } else { next(40) };
                    if count > 0 {
                        ops.push((column, count));
                    }
                }
                ops.push((0, 1));
                ops
            })
            .collect()
    }

    /// Per column, the elements each entry appends: constant where it is.
    fn counts_of(entries: &[Vec<(u32, u64)>], columns: u64) -> Vec<(u32, Counts)> {
        (0..columns as u32)
            .map(|c| {
                let per: Vec<u64> = entries
                    .iter()
                    .map(|ops| ops.iter().filter(|o| o.0 == c).map(|o| o.1).sum())
                    .collect();
                let counts = match per.first() {
                    Some(&k) if per.iter().all(|&x| x == k) => Counts::Const(k),
                    _ => Counts::PerItem(per),
                };
                (c, counts)
            })
            .collect()
    }

    #[test]
    fn bulk_plan_matches_appends_entry_by_entry() {
        let element_sizes = [8, 8, 4, 1, 16, 2, 8];
        let columns = element_sizes.len() as u64;
        // Small pages and budgets: many page overflows, growths and evictions.
        for (initial, max, budget) in [
            (64, 4096, None),
            (16, 1024, Some(12 * 1024)),
            (256, 1 << 20, None),
            (8, 512, Some(4 * 1024)),
        ] {
            let options = WriteOptions::builder()
                .initial_page_size(initial)
                .page_size(max)
                .page_buffer_budget(budget)
                .cluster_size(20_000)
                .build()
                .expect("valid options");
            let mut bulk = PagePlanner::new(&options);
            bulk.add_columns(&element_sizes, &options).expect("room");
            let mut reference = bulk.clone();
            let mut bulk_cuts = vec![Vec::new(); element_sizes.len()];
            let mut reference_cuts = vec![Vec::new(); element_sizes.len()];
            for (slice, seed) in [(3000, 1), (1, 2), (500, 3), (4000, 4)] {
                let entries = entries(slice, columns, seed);
                let counts = counts_of(&entries, columns);
                bulk.plan(counts.iter().map(|(c, k)| (*c, k)), slice, |e| {
                    Ok(entries[e].clone())
                })
                .expect("planned");
                for ops in &entries {
                    for &(column, count) in ops {
                        reference.append(column as usize, count);
                    }
                }
                for id in 0..element_sizes.len() {
                    bulk_cuts[id].extend(bulk.take_cuts(id));
                    reference_cuts[id].extend(reference.take_cuts(id));
                    assert_eq!(bulk.state(id), reference.state(id), "column {id}");
                }
            }
            let cuts: usize = reference_cuts.iter().map(Vec::len).sum();
            assert!(cuts > 50, "{cuts} pages: too few to test the plan");
            assert_eq!(
                bulk_cuts, reference_cuts,
                "pages {initial}..{max}, budget {budget:?}"
            );
        }
    }

    #[test]
    fn a_budget_too_small_for_the_first_pages_is_refused_in_the_users_terms() {
        // Three columns of 8-byte elements take their 256-byte first pages twice: 1536
        // bytes. Compressed, the budget is twice the cluster size: 1400 bytes.
        let small_cluster = WriteOptions::builder()
            .cluster_size(700)
            .build()
            .expect("valid options");
        let mut planner = PagePlanner::new(&small_cluster);
        let err = planner.add_columns(&[8, 8, 8], &small_cluster).unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid argument: the cluster size of 700 bytes is too small for the 3 columns \
             of this schema: cluster_size must be at least 768 bytes (their first pages need \
             1536 bytes of page buffers, 2x the cluster size)"
        );
        // Refused columns leave the planner as it was: one column fits.
        planner
            .add_columns(&[8], &small_cluster)
            .expect("room for one");
        assert_eq!(planner.columns.len(), 1);
        let small_budget = WriteOptions::builder()
            .page_buffer_budget(Some(1000))
            .build()
            .expect("valid options");
        let err = PagePlanner::new(&small_budget)
            .add_columns(&[8, 8, 8], &small_budget)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid argument: the page buffer budget of 1000 bytes is too small for the 3 \
             columns of this schema: page_buffer_budget must be at least 1536 bytes (their \
             first pages need that much)"
        );
    }
}
