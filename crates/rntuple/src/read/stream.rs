//! The one read path: a selection over entry ranges, planned by the storage (pages
//! fetched ahead for a remote source, read on demand from a local file) and decoded
//! bunch by bunch into record batches. A loop over the batches of several ranges pays a
//! remote source's latency once, not once per batch: the pages of the next ranges
//! arrive while the current one decodes.

use super::assemble::Decoder;
use super::column::PageCarry;
use super::source::PlannedRead;
use super::{decode_fields, elapsed_nanos, Projection, RNTupleReader};
use crate::error::{to_usize, Error, Result};
use crate::memory::Recycling;
use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use std::ops::Range;

/// Record batches of the selected fields, one per entry range, in order (see
/// [`RNTupleReader::read_ranges`]).
pub struct RangeBatches {
    planned: Planned,
    /// Large decoded buffers the consumer drops come back for the next batches.
    _recycling: Recycling,
}

/// A planned read over several entry ranges.
pub(super) struct Planned {
    reader: RNTupleReader,
    plan: PlannedRead,
    ranges: Vec<Range<u64>>,
    next_range: usize,
    next_bunch: usize,
    projection: Projection,
    /// The pages across the end of the last range, decoded whole.
    carry: PageCarry,
    /// After an error nothing more is read.
    failed: bool,
}

impl Planned {
    /// Checks `ranges` and the selection, plans the read and starts fetching.
    pub(super) fn start(
        reader: &RNTupleReader,
        projection: Projection,
        ranges: Vec<Range<u64>>,
    ) -> Result<Planned> {
        for range in &ranges {
            reader.check_entries(range)?;
        }
        let field_columns: Vec<Vec<u32>> = projection
            .selection
            .iter()
            .map(|s| reader.columns_of(&[s]))
            .collect();
        let mut columns: Vec<u32> = field_columns.iter().flatten().copied().collect();
        columns.sort_unstable();
        columns.dedup();
        reader
            .storage
            .check_pages(&reader.descriptor, &columns, &ranges)?;
        let plan = reader
            .storage
            .plan(&reader.descriptor, &field_columns, &ranges);
        Ok(Planned {
            reader: reader.clone(),
            plan,
            ranges,
            next_range: 0,
            next_bunch: 0,
            projection,
            carry: PageCarry::default(),
            failed: false,
        })
    }

    /// The next range's batches, one per cluster (or group of small clusters) it
    /// covers; `None` after the last range.
    pub(super) fn next_pieces(&mut self) -> Option<Result<Vec<RecordBatch>>> {
        if self.failed {
            return None;
        }
        let index = self.next_range;
        self.ranges.get(index)?;
        self.next_range += 1;
        let result = self.pieces_of(index).map_err(|e| self.reader.locate(e));
        self.carry.end_range();
        self.failed = result.is_err();
        Some(result)
    }

    fn pieces_of(&mut self, index: usize) -> Result<Vec<RecordBatch>> {
        let first = self.next_bunch;
        while self.plan.range_of.get(self.next_bunch) == Some(&index) {
            self.next_bunch += 1;
        }
        if first == self.next_bunch {
            // Nothing planned: an empty range.
            return Ok(vec![RecordBatch::new_empty(self.projection.schema.clone())]);
        }
        let decoder =
            Decoder::new(&self.reader.descriptor, self.plan.pages.as_ref()).with_carry(&self.carry);
        let all: Vec<usize> = (0..self.projection.selection.len()).collect();
        let mut batches = Vec::new();
        // The arrays of a large cluster, filled group by group.
        let mut open: Option<(Range<u64>, Vec<Option<ArrayRef>>)> = None;
        for k in first..self.next_bunch {
            let bunch = &self.plan.bunches[k];
            let which = bunch.fields.as_deref().unwrap_or(&all);
            let arrays = decode_fields(
                &decoder,
                &self.projection.selection,
                self.projection.decoded.fields(),
                which,
                &bunch.entries,
                || self.plan.pages.starting(k),
            )?;
            self.plan.pages.done_with(k);
            let (entries, slots) = open.get_or_insert_with(|| {
                (
                    bunch.entries.clone(),
                    vec![None; self.projection.selection.len()],
                )
            });
            if *entries != bunch.entries {
                return Err(Error::InvalidArgument(
                    "read plan: a cluster's field groups are not consecutive".into(),
                ));
            }
            for (&i, a) in which.iter().zip(arrays) {
                slots[i] = Some(self.projection.convert(i, a, bunch.entries.start)?);
            }
            if slots.iter().all(Option::is_some) {
                let (entries, slots) = open.take().unwrap_or_default();
                let columns: Vec<ArrayRef> = slots.into_iter().flatten().collect();
                let rows = to_usize(entries.end - entries.start, "entries of one batch")?;
                let options = RecordBatchOptions::new().with_row_count(Some(rows));
                batches.push(RecordBatch::try_new_with_options(
                    self.projection.schema.clone(),
                    columns,
                    &options,
                )?);
            }
        }
        if open.is_some() {
            return Err(Error::InvalidArgument(
                "read plan: a cluster's field groups do not cover the selection".into(),
            ));
        }
        Ok(batches)
    }
}

impl RangeBatches {
    pub(super) fn new(
        reader: &RNTupleReader,
        projection: Projection,
        ranges: Vec<Range<u64>>,
    ) -> Result<RangeBatches> {
        Ok(RangeBatches {
            planned: Planned::start(reader, projection, ranges)?,
            _recycling: Recycling::start(),
        })
    }
}

impl Iterator for RangeBatches {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        let planned = &mut self.planned;
        let start = std::time::Instant::now();
        let batch = planned.next_pieces()?.and_then(|mut pieces| {
            if pieces.len() == 1 {
                return Ok(pieces.remove(0));
            }
            Ok(arrow_select::concat::concat_batches(
                &planned.projection.schema,
                &pieces,
            )?)
        });
        planned.reader.storage.count_read_time(elapsed_nanos(start));
        Some(batch)
    }
}
