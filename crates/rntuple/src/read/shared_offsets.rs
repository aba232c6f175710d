//! Offsets decoded once for several fields: the fields of one collection stored as
//! separate top-level vectors (NanoAOD's `Jet_pt`, `Jet_eta`, ..., as ROOT's importer
//! writes them) each have an offsets column, and same-page merging makes their page lists
//! point to the same stored pages. Such columns decode to the same offsets, so a read
//! decodes them once and the fields' arrays share one offsets buffer: less decoding, and
//! less fresh memory, which bounds a full read on a machine where a page fault is dear.

use super::column::{ColumnReader, Offsets, PerEntry, Seg};
use crate::schema::FieldKind;
use rayon::prelude::*;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};

/// What decoding an offsets column over a read's clusters depends on: the column's
/// encoding and, per cluster, the entry range and the column's page list (same stored
/// pages, same bytes). Two columns with equal keys decode to the same offsets.
type OffsetsKey = Vec<u64>;

/// Offsets decoded for a group of columns with the same key.
struct Decoded {
    /// The column that decoded them (it took the pages from the page source).
    leader: u32,
    /// The items' range in each cluster of the read.
    items: Vec<Range<u64>>,
    offsets: Offsets,
    /// Stored bytes the leader took: counted again for every other field of the group.
    taken: u64,
    /// Whether the leader's own field has taken them (the one take not counted again).
    leader_took: AtomicBool,
}

/// The offsets of the read being decoded that several of its fields share.
#[derive(Default)]
pub(crate) struct SharedOffsets {
    decoded: Mutex<HashMap<OffsetsKey, Decoded>>,
}

impl SharedOffsets {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<OffsetsKey, Decoded>> {
        // Plain data: a panic elsewhere leaves it usable.
        self.decoded.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Before the top-level `fields` are assembled over `segs` (in parallel): decodes
    /// once the offsets that several of them would each decode, for their assembly to
    /// take. Decided up front, not by which field comes first, so that what a read
    /// takes from the page source does not depend on thread timing. A group whose
    /// decoding fails is left to its fields, which report the error as without sharing.
    pub(super) fn share(&self, reader: &ColumnReader<'_>, segs: &[Seg<'_>], fields: &[u32]) {
        let mut groups: HashMap<OffsetsKey, Vec<u32>> = HashMap::new();
        for &id in fields {
            if let Some(column) = top_offsets_column(reader, segs, id) {
                let key = offsets_key(reader, segs, column, Some(1));
                groups.entry(key).or_default().push(column);
            }
        }
        let decoded: Vec<(OffsetsKey, Decoded)> = groups
            .into_iter()
            .filter(|(_, columns)| columns.len() > 1)
            .collect::<Vec<_>>()
            .into_par_iter()
            .filter_map(|(key, columns)| {
                let leader = columns.iter().copied().min()?;
                let (items, offsets, taken) = reader.decode_offsets(segs, leader, Some(1)).ok()?;
                let items = items.into_iter().map(|(_, r)| r).collect();
                Some((
                    key,
                    Decoded {
                        leader,
                        items,
                        offsets,
                        taken,
                        leader_took: AtomicBool::new(false),
                    },
                ))
            })
            .collect();
        *self.lock() = decoded.into_iter().collect();
    }

    /// Drops the shared offsets of the read just assembled (its arrays keep them).
    pub(super) fn forget(&self) {
        self.lock().clear();
    }

    /// The offsets of `column` over `segs` if they were decoded for several columns: the
    /// items' ranges and the offsets, as `read_offsets` returns them. Every field of the
    /// group but the first to take them counts the pages it would have taken.
    pub(super) fn get<'a>(
        &self,
        reader: &ColumnReader<'_>,
        segs: &[Seg<'a>],
        column: u32,
        per_entry: PerEntry,
    ) -> Option<(Vec<Seg<'a>>, Offsets)> {
        if self.lock().is_empty() {
            return None;
        }
        let key = offsets_key(reader, segs, column, per_entry);
        let shared = self.lock();
        let found = shared.get(&key)?;
        if found.items.len() != segs.len() {
            return None;
        }
        // Every field of the group but one counts the pages: fields (projections) may
        // read the very same column as the leader.
        if column != found.leader || found.leader_took.swap(true, Ordering::Relaxed) {
            reader.pages.count_shared(found.taken);
        }
        let items = segs
            .iter()
            .zip(&found.items)
            .map(|((c, _), r)| (*c, r.clone()))
            .collect();
        Some((items, found.offsets.clone()))
    }
}

/// The offsets column a top-level field `id` reads first over `segs`, if its kind
/// reads offsets over all of `segs` at once (a collection, string or optional whose
/// columns are the same in every cluster).
fn top_offsets_column(reader: &ColumnReader<'_>, segs: &[Seg<'_>], id: u32) -> Option<u32> {
    let reads_offsets = matches!(
        reader.descriptor().field_kind(id),
        FieldKind::List(_)
            | FieldKind::Map(_)
            | FieldKind::String
            | FieldKind::Streamer
            | FieldKind::Optional(_)
            | FieldKind::Cardinality(_)
    );
    let (first, _) = segs.first()?;
    let columns = reader.active_columns(first, id);
    let same_everywhere = segs
        .iter()
        .all(|(c, _)| reader.active_columns(c, id) == columns);
    (reads_offsets && same_everywhere)
        .then(|| columns.first().copied())
        .flatten()
}

/// The key of `column`'s offsets over `segs` (see [`OffsetsKey`]).
fn offsets_key(
    reader: &ColumnReader<'_>,
    segs: &[Seg<'_>],
    column: u32,
    per_entry: PerEntry,
) -> OffsetsKey {
    const NONE: u64 = u64::MAX;
    let record = &reader.descriptor().column(column).record;
    let (lo, hi) = record
        .value_range
        .map_or((NONE, NONE), |(lo, hi)| (lo.to_bits(), hi.to_bits()));
    let mut key = vec![
        u64::from(record.column_type),
        u64::from(record.bits_on_storage),
        // A two's-complement reinterpretation: only compared for equality.
        record.first_element_index.map_or(NONE, |f| f as u64),
        lo,
        hi,
        per_entry.unwrap_or(NONE),
    ];
    for (cluster, range) in segs {
        key.extend([cluster.id, range.start, range.end]);
        match cluster.column(column) {
            None => key.push(NONE),
            Some(pages) => {
                key.extend([
                    pages.pages.len() as u64,
                    pages.element_offset.unwrap_or(NONE),
                    pages.compression.map_or(NONE, u64::from),
                ]);
                for p in &pages.pages {
                    key.extend([
                        p.locator.offset,
                        p.locator.size,
                        u64::from(p.n_elements),
                        u64::from(p.has_checksum),
                    ]);
                }
            }
        }
    }
    key
}
