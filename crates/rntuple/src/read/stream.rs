//! Reading entry ranges one after the other, as record batches. From a remote source
//! the pages of every range are planned at once and fetched by one prefetcher, so the
//! pages of the next ranges arrive while the current one decodes: a loop over batches
//! pays the latency once, not once per batch.

use super::plan::{self, Bunch};
use super::prefetch::Prefetcher;
use super::{RNTupleReader, Selection, PREFETCH_WINDOW};
use crate::error::{Error, Result};
use ::arrow_schema::SchemaRef;
use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions};
use std::ops::Range;
use std::sync::Arc;

/// Record batches of the selected fields, one per entry range, in order (see
/// [`RNTupleReader::read_ranges`]).
pub struct RangeBatches {
    inner: Inner,
}

enum Inner {
    /// A local file: each range read when asked for (pages are read in parallel then).
    Direct {
        reader: RNTupleReader,
        names: Option<Vec<String>>,
        ranges: std::vec::IntoIter<Range<u64>>,
    },
    /// A remote source: every range planned up front, pages fetched ahead.
    Planned(Box<Planned>),
}

/// A planned read over several entry ranges.
pub(super) struct Planned {
    /// The reader, taking its pages from the prefetcher.
    view: RNTupleReader,
    names: Option<Vec<String>>,
    prefetcher: Prefetcher,
    bunches: Arc<Vec<Bunch>>,
    /// For every bunch, the range it belongs to.
    range_of: Vec<usize>,
    ranges: Vec<Range<u64>>,
    next_range: usize,
    next_bunch: usize,
    selected: Vec<Selection>,
    schema: SchemaRef,
    /// After an error nothing more is read.
    failed: bool,
}

impl Planned {
    /// Plans `ranges` (already checked) and starts fetching.
    pub(super) fn start(
        reader: &RNTupleReader,
        names: Option<&[String]>,
        ranges: Vec<Range<u64>>,
    ) -> Result<Planned> {
        let selected = reader.resolve_selection(names)?;
        let schema = reader.arrow_schema(names)?;
        let field_columns: Vec<Vec<u32>> =
            selected.iter().map(|s| reader.columns_of(&[s])).collect();
        let hints = reader.source.hints();
        let mut bunches = Vec::new();
        let mut range_of = Vec::new();
        // A cluster that several ranges share is fetched once, kept until its last range.
        let mut fetched = std::collections::HashSet::new();
        for (i, range) in ranges.iter().enumerate() {
            let planned = plan::plan_read(
                &reader.descriptor,
                &field_columns,
                range.clone(),
                &hints,
                hints.bunch_bytes,
                reader.anchor.max_key_size,
                &mut fetched,
            );
            range_of.extend(std::iter::repeat_n(i, planned.len()));
            bunches.extend(planned);
        }
        let bunches = Arc::new(bunches);
        let prefetcher = Prefetcher::start(
            reader.source.clone(),
            bunches.clone(),
            PREFETCH_WINDOW,
            hints.parallel_requests,
            hints.bunch_bytes,
            reader.counters.clone(),
        );
        let view = RNTupleReader {
            pages: Some(prefetcher.cache().clone()),
            ..reader.clone()
        };
        Ok(Planned {
            view,
            names: names.map(<[String]>::to_vec),
            prefetcher,
            bunches,
            range_of,
            ranges,
            next_range: 0,
            next_bunch: 0,
            selected,
            schema,
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
        let range = self.ranges.get(index)?.clone();
        self.next_range += 1;
        let result = self.pieces_of(index, range);
        self.failed = result.is_err();
        Some(result)
    }

    fn pieces_of(&mut self, index: usize, range: Range<u64>) -> Result<Vec<RecordBatch>> {
        let first = self.next_bunch;
        while self.range_of.get(self.next_bunch) == Some(&index) {
            self.next_bunch += 1;
        }
        if first == self.next_bunch {
            // Nothing planned (an empty range): the direct read gives its empty batch.
            return self
                .view
                .read_direct(self.names.as_deref(), range)
                .map(|b| vec![b]);
        }
        let all: Vec<usize> = (0..self.selected.len()).collect();
        let mut batches = Vec::new();
        // The arrays of a large cluster, filled group by group.
        let mut open: Option<(Range<u64>, Vec<Option<ArrayRef>>)> = None;
        for k in first..self.next_bunch {
            let bunch = &self.bunches[k];
            let which = bunch.fields.as_deref().unwrap_or(&all);
            let arrays = self.view.decode_fields(
                &self.selected,
                self.schema.fields(),
                which,
                &bunch.entries,
            )?;
            self.prefetcher.cache().finish_bunch(k, bunch);
            let (entries, slots) = open
                .get_or_insert_with(|| (bunch.entries.clone(), vec![None; self.selected.len()]));
            if *entries != bunch.entries {
                return Err(Error::InvalidArgument(
                    "read plan: a cluster's field groups are not consecutive".into(),
                ));
            }
            for (&i, a) in which.iter().zip(arrays) {
                slots[i] = Some(a);
            }
            if slots.iter().all(Option::is_some) {
                let (entries, slots) = open.take().unwrap_or_default();
                let columns: Vec<ArrayRef> = slots.into_iter().flatten().collect();
                let options = RecordBatchOptions::new()
                    .with_row_count(Some((entries.end - entries.start) as usize));
                batches.push(RecordBatch::try_new_with_options(
                    self.schema.clone(),
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
        names: Option<&[String]>,
        ranges: Vec<Range<u64>>,
    ) -> Result<RangeBatches> {
        for range in &ranges {
            reader.check_entries(range)?;
        }
        let inner = if reader.plans_reads() {
            Inner::Planned(Box::new(Planned::start(reader, names, ranges)?))
        } else {
            // Checked here, so that a bad selection fails before the first batch.
            reader.resolve_selection(names)?;
            Inner::Direct {
                reader: reader.clone(),
                names: names.map(<[String]>::to_vec),
                ranges: ranges.into_iter(),
            }
        };
        Ok(RangeBatches { inner })
    }
}

impl Iterator for RangeBatches {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        match &mut self.inner {
            Inner::Direct {
                reader,
                names,
                ranges,
            } => {
                let range = ranges.next()?;
                Some(reader.read(names.as_deref(), range))
            }
            Inner::Planned(planned) => {
                let start = std::time::Instant::now();
                let batch = planned.next_pieces()?.and_then(|mut pieces| {
                    if pieces.len() == 1 {
                        return Ok(pieces.remove(0));
                    }
                    Ok(arrow_select::concat::concat_batches(
                        &planned.schema,
                        &pieces,
                    )?)
                });
                let nanos = u64::try_from(start.elapsed().as_nanos()).unwrap_or(u64::MAX);
                planned
                    .view
                    .counters
                    .read_nanos
                    .fetch_add(nanos, std::sync::atomic::Ordering::Relaxed);
                Some(batch)
            }
        }
    }
}
