//! How an iteration over entries is cut into steps, at cluster boundaries: the planner's
//! own rule (`batch_ranges`: Dask's partitions, a cluster larger than a step cut into
//! equal parts) and uproot's (`uproot_steps`: Python's `iterate`, a cluster larger than
//! a step cut into steps from its first entry, and a memory size turned into entries as
//! uproot turns it).

use super::{Projection, RNTupleReader};
use crate::encoding::ColumnType;
use crate::error::{Error, Result};
use crate::schema::{ClusterDescriptor, Descriptor};
use std::collections::HashSet;
use std::ops::Range;

/// How [`RNTupleReader::batch_ranges`] sizes the batches of an iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepSize {
    /// About this many entries per batch.
    Entries(u64),
    /// About this many uncompressed bytes of the selected columns per batch.
    Bytes(u64),
}

impl RNTupleReader {
    /// Entry ranges covering `entries` for an iteration over `projection`, cut at cluster
    /// boundaries: whole clusters are grouped until the next one would pass `step`
    /// (entries, or uncompressed bytes of the projection's columns, a cluster's bytes
    /// counted in proportion to its entries inside `entries`); a cluster larger than the
    /// step is cut into equal parts.
    pub fn batch_ranges(
        &self,
        projection: &Projection,
        entries: Range<u64>,
        step: StepSize,
    ) -> Result<Vec<Range<u64>>> {
        self.check_entries(&entries)?;
        let (by_entries, target) = match step {
            StepSize::Entries(n) => (true, n),
            StepSize::Bytes(n) => (false, n),
        };
        if target == 0 {
            return Err(Error::InvalidArgument(
                "step size must be positive, not 0".into(),
            ));
        }
        let bytes = if by_entries {
            Vec::new()
        } else {
            self.projection_bytes_per_cluster(projection)
        };
        Ok(plan_batches(
            &self.descriptor.clusters,
            &bytes,
            entries,
            target,
        ))
    }

    /// Entry ranges covering `entries` as uproot's `iterate` steps them (Python's
    /// `iterate`), cut at cluster boundaries: whole clusters are grouped while the group
    /// holds at most a step of entries, and a cluster larger than a step is cut into steps
    /// from its first entry (the last one shorter). A step of bytes is first turned into
    /// entries as uproot does: its share of the decoded bytes of the fields `names`
    /// (qualified names) and everything below them over the clusters the range touches,
    /// rounded as Python rounds, at least one entry; `names` are not used for a step of
    /// entries.
    pub fn uproot_steps(
        &self,
        names: &[String],
        entries: Range<u64>,
        step: StepSize,
    ) -> Result<Vec<Range<u64>>> {
        self.check_entries(&entries)?;
        let d = &self.descriptor;
        let step = match step {
            StepSize::Entries(0) | StepSize::Bytes(0) => {
                return Err(Error::InvalidArgument(
                    "step size must be positive, not 0".into(),
                ))
            }
            StepSize::Entries(n) => n,
            StepSize::Bytes(target) => {
                let mut ids = Vec::new();
                for name in names {
                    let id = d.find_field(name).ok_or_else(|| self.no_field(name))?;
                    let mut below = vec![id];
                    while let Some(f) = below.pop() {
                        ids.push(f);
                        below.extend(d.field(f).children.iter().copied());
                    }
                }
                ids.sort_unstable();
                ids.dedup();
                uproot_step_entries(d, &ids, target, &entries)
            }
        };
        Ok(uproot_cut(&d.clusters, &entries, step))
    }
}

/// Entry ranges covering `entries` cut at the boundaries of `clusters` by uproot's rule,
/// in steps of `step` entries: see [`RNTupleReader::uproot_steps`].
fn uproot_cut(clusters: &[ClusterDescriptor], entries: &Range<u64>, step: u64) -> Vec<Range<u64>> {
    let mut ranges = Vec::new();
    let mut group: Option<Range<u64>> = None;
    for c in clusters {
        let (lo, hi) = (
            c.first_entry.max(entries.start),
            (c.first_entry + c.n_entries).min(entries.end),
        );
        if lo >= hi {
            continue;
        }
        if hi - lo > step {
            ranges.extend(group.take());
            let mut at = lo;
            while at < hi {
                let end = at.saturating_add(step).min(hi);
                ranges.push(at..end);
                at = end;
            }
            continue;
        }
        if group.as_ref().is_some_and(|g| hi - g.start > step) {
            ranges.extend(group.take());
        }
        match &mut group {
            Some(g) => g.end = hi,
            None => group = Some(lo..hi),
        }
    }
    ranges.extend(group);
    ranges
}

/// uproot's entries per step for a step of `target` bytes over `entries`: the decoded
/// bytes of the columns of `field_ids` over the clusters the range touches (uproot counts
/// the cluster starting at the range's end too, [`uproot_decoded_bytes`]), scaled to
/// `target` bytes a step; rounded as Python rounds the float quotient (half to even); at
/// least one entry.
fn uproot_step_entries(
    d: &Descriptor,
    field_ids: &[u32],
    target: u64,
    entries: &Range<u64>,
) -> u64 {
    // The index of the last cluster starting at or before `entry`, if any.
    let starting_by = |entry: u64| d.clusters.partition_point(|c| c.first_entry <= entry);
    let first = starting_by(entries.start).saturating_sub(1);
    let stop = starting_by(entries.end);
    let total = uproot_decoded_bytes(d, field_ids, first..stop);
    if total == 0 {
        return 1;
    }
    let numerator = u128::from(target) * u128::from(entries.end - entries.start);
    rounded_quotient(numerator, u128::from(total)).max(1)
}

/// `numerator / denominator` rounded as Python's `round(numerator / denominator)`: the
/// quotient as the nearest float, rounded half to even. Both fit a float's 53 bits in
/// every real case, where the float division is Python's; past them, the exact quotient
/// rounded half to even.
fn rounded_quotient(numerator: u128, denominator: u128) -> u64 {
    const EXACT: u128 = 1 << 53;
    if numerator < EXACT && denominator < EXACT {
        #[allow(clippy::cast_precision_loss)] // both below 2^53: exact
        let quotient = numerator as f64 / denominator as f64;
        // The quotient is at most 2^53: float-to-int `as` is exact for it.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        return quotient.round_ties_even() as u64;
    }
    let (q, r) = (numerator / denominator, numerator % denominator);
    let up = match (2 * r).cmp(&denominator) {
        std::cmp::Ordering::Greater => 1,
        std::cmp::Ordering::Equal => q % 2,
        std::cmp::Ordering::Less => 0,
    };
    u64::try_from(q + up).unwrap_or(u64::MAX)
}

/// The bytes the columns of `field_ids` take decoded over `clusters`, as uproot counts
/// them to size a step: each column's elements times the width of one decoded element
/// (and one more element for an offset column), a column counted once however many
/// fields read it (a projected field reads its source field's columns; a cardinality
/// field reads its collection's offsets as counts, a buffer of its own); of a field with
/// several representations, the first each cluster uses.
fn uproot_decoded_bytes(d: &Descriptor, field_ids: &[u32], clusters: Range<usize>) -> u64 {
    let mut total = 0u64;
    let mut counted: HashSet<(u32, bool)> = HashSet::new();
    for &id in field_ids {
        let field = d.field(id);
        let source = field.record.source_field_id.unwrap_or(id);
        let cardinality = field.type_name().starts_with("ROOT::RNTupleCardinality");
        // The source's columns not yet counted, by representation in the order they
        // first appear.
        let mut groups: Vec<(u16, Vec<u32>)> = Vec::new();
        for c in &d.columns {
            if c.record.field_id != source || counted.contains(&(c.id, cardinality)) {
                continue;
            }
            let representation = c.record.representation_index;
            match groups.iter_mut().find(|(r, _)| *r == representation) {
                Some((_, columns)) => columns.push(c.id),
                None => groups.push((representation, vec![c.id])),
            }
        }
        let Some((_, first_group)) = groups.first() else {
            continue;
        };
        counted.extend(
            groups
                .iter()
                .flat_map(|(_, cols)| cols.iter().map(|&c| (c, cardinality))),
        );
        // The offsets' leading zero, once.
        total += first_group
            .iter()
            .filter(|&&c| column_type(d, c).is_some_and(ColumnType::is_index))
            .map(|&c| decoded_width(d, c))
            .sum::<u64>();
        let mut by_index: Vec<&(u16, Vec<u32>)> = groups.iter().collect();
        by_index.sort_by_key(|(r, _)| *r);
        for cluster in d.clusters.get(clusters.clone()).unwrap_or_default() {
            let used = by_index.iter().find(|(_, cols)| {
                cols.iter()
                    .all(|&c| cluster.column(c).is_some_and(|p| !p.is_suppressed()))
            });
            for &c in used.map(|(_, cols)| cols.as_slice()).unwrap_or_default() {
                let elements = cluster.column(c).map_or(0, |p| p.n_elements());
                total += elements * decoded_width(d, c);
            }
        }
    }
    total
}

/// The type of column `col`, if this reader knows it.
fn column_type(d: &Descriptor, col: u32) -> Option<ColumnType> {
    ColumnType::from_u16(d.column(col).record.column_type)
}

/// The bytes of one decoded element of column `col` (NumPy's width of its type: a bit
/// as a byte, a switch as 12; an unknown type 1).
fn decoded_width(d: &Descriptor, col: u32) -> u64 {
    match column_type(d, col) {
        Some(ColumnType::Bit) | None => 1,
        Some(t) => u64::from(t.default_bits().div_ceil(8)),
    }
}

/// Entry ranges covering `entries` cut at the boundaries of `clusters`, grouped up to
/// `target` (entries when `cluster_bytes` is empty, else bytes): see
/// [`RNTupleReader::batch_ranges`]. Every range holds at least one entry.
fn plan_batches(
    clusters: &[crate::schema::ClusterDescriptor],
    cluster_bytes: &[u64],
    entries: Range<u64>,
    target: u64,
) -> Vec<Range<u64>> {
    let mut ranges = Vec::new();
    let mut group: Option<(Range<u64>, f64)> = None;
    for (i, c) in clusters.iter().enumerate() {
        let (lo, hi) = (
            c.first_entry.max(entries.start),
            (c.first_entry + c.n_entries).min(entries.end),
        );
        if lo >= hi {
            continue;
        }
        let weight = match cluster_bytes.get(i) {
            Some(&bytes) if !cluster_bytes.is_empty() => {
                bytes as f64 * (hi - lo) as f64 / c.n_entries as f64
            }
            _ => (hi - lo) as f64,
        };
        if let Some((range, size)) = &group {
            if size + weight > target as f64 {
                ranges.push(range.clone());
                group = None;
            }
        }
        if weight > target as f64 {
            // Equal parts, each about the step (float-to-int `as` saturates, an
            // approximation is all that is wanted) and at least one entry each.
            #[allow(clippy::cast_possible_truncation)]
            let parts = (weight as u64).div_ceil(target).clamp(1, hi - lo);
            // (hi - lo) * k can pass 2^64: multiply in 128 bits; the quotient is at most
            // hi - lo, as k <= parts.
            let span = u128::from(hi - lo);
            let bounds: Vec<u64> = (0..=parts)
                .map(|k| {
                    let step = span * u128::from(k) / u128::from(parts);
                    lo + u64::try_from(step).unwrap_or(hi - lo)
                })
                .collect();
            ranges.extend(
                bounds
                    .windows(2)
                    .filter(|w| w[1] > w[0])
                    .map(|w| w[0]..w[1]),
            );
            continue;
        }
        match &mut group {
            Some((range, size)) => {
                range.end = hi;
                *size += weight;
            }
            None => group = Some((lo..hi, weight)),
        }
    }
    ranges.extend(group.map(|(range, _)| range));
    ranges
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::ClusterDescriptor;

    fn cluster(n_entries: u64) -> ClusterDescriptor {
        ClusterDescriptor {
            id: 0,
            first_entry: 0,
            n_entries,
            group: 0,
            columns: Vec::new(),
        }
    }

    #[test]
    fn batch_bounds_of_a_huge_cluster_do_not_overflow() {
        // 2^48 entries in steps of 2^32: 2^48 × 2^16 parts passes 2^64.
        let n = 1u64 << 48;
        let ranges = plan_batches(&[cluster(n)], &[], 0..n, 1 << 32);
        assert_eq!(ranges.len(), 1 << 16);
        assert_eq!(ranges.first(), Some(&(0..1 << 32)));
        assert_eq!(ranges.last(), Some(&(n - (1 << 32)..n)));
        assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
    }

    #[test]
    fn batches_of_a_heavy_cluster_hold_at_least_one_entry() {
        // 10 entries of 10^9 bytes in steps of 1 byte: 10 batches, not 10^9 bounds.
        let ranges = plan_batches(&[cluster(10)], &[1_000_000_000], 0..10, 1);
        assert_eq!(ranges, (0..10).map(|k| k..k + 1).collect::<Vec<_>>());
    }

    /// Consecutive clusters of `sizes` entries.
    fn clusters(sizes: &[u64]) -> Vec<ClusterDescriptor> {
        let mut first = 0;
        sizes
            .iter()
            .map(|&n| {
                let c = ClusterDescriptor {
                    first_entry: first,
                    ..cluster(n)
                };
                first += n;
                c
            })
            .collect()
    }

    #[test]
    fn uproot_steps_group_whole_clusters_and_cut_large_ones_from_their_start() {
        // The example file's clusters; uproot groups while a group holds at most 500.
        let cs = clusters(&[334, 417, 412, 413, 413, 11]);
        let ranges = uproot_cut(&cs, &(0..2000), 500);
        let bounds: Vec<(u64, u64)> = ranges.iter().map(|r| (r.start, r.end)).collect();
        assert_eq!(
            bounds,
            [
                (0, 334),
                (334, 751),
                (751, 1163),
                (1163, 1576),
                (1576, 2000)
            ]
        );
        // A step of 200: each cluster cut from its first entry in the range, the rest
        // of it last; the 11 entries after the last large cluster a group of their own.
        let ranges = uproot_cut(&cs, &(100..1600), 200);
        let bounds: Vec<(u64, u64)> = ranges.iter().map(|r| (r.start, r.end)).collect();
        assert_eq!(
            bounds,
            [
                (100, 300),
                (300, 334),
                (334, 534),
                (534, 734),
                (734, 751),
                (751, 951),
                (951, 1151),
                (1151, 1163),
                (1163, 1363),
                (1363, 1563),
                (1563, 1576),
                (1576, 1600),
            ]
        );
        // A step past 2^64 entries does not overflow.
        let one = uproot_cut(&cs, &(0..2000), u64::MAX);
        assert_eq!((one.len(), one[0].start, one[0].end), (1, 0, 2000));
    }

    #[test]
    fn uproot_step_entries_round_as_python_does() {
        // Python: round(5 / 2) == 2, round(7 / 2) == 4, round(10 / 4) == 2, round(11 / 4) == 3.
        assert_eq!(rounded_quotient(5, 2), 2);
        assert_eq!(rounded_quotient(7, 2), 4);
        assert_eq!(rounded_quotient(10, 4), 2);
        assert_eq!(rounded_quotient(11, 4), 3);
        // Past 2^53, exactly: (2^60 + 1) / 2 is a tie, to even 2^59; (2^60 + 3) / 2 up.
        assert_eq!(rounded_quotient((1 << 60) + 1, 2), 1 << 59);
        assert_eq!(rounded_quotient((1 << 60) + 3, 2), (1 << 59) + 2);
    }
}
