//! A read of one shared reader by one of its APIs, as the concurrent readers' test and
//! the test tool `concurrent_read` (`crates/rntuple-testkit`, which includes this file)
//! run them: the same task run serially and concurrently must give the same output.

use arrow_array::RecordBatch;
use rntuple::read::RNTupleReader;
use rntuple::schema::Value;
use std::ops::Range;

/// The reader's API a task reads through.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Api {
    /// `read`: one record batch.
    Read,
    /// `read_entries`: rows of values.
    Rows,
    /// `read_ranges`: a stream of record batches, one per range.
    Stream,
}

/// A read: the fields (all when `None`) over the entry ranges (one, except for
/// [`Api::Stream`]), through an API.
#[derive(Clone, Debug)]
pub(crate) struct Task {
    /// The API read through.
    pub(crate) api: Api,
    /// The fields selected, or all.
    pub(crate) fields: Option<Vec<String>>,
    /// The entry ranges read.
    pub(crate) ranges: Vec<Range<u64>>,
}

/// What a task read.
#[derive(Debug, PartialEq)]
pub(crate) enum Output {
    /// What [`Api::Read`] and [`Api::Stream`] read.
    Batches(Vec<RecordBatch>),
    /// What [`Api::Rows`] reads.
    Rows(Vec<Vec<Value>>),
}

/// Runs `task` on `reader`.
pub(crate) fn run_task(reader: &RNTupleReader, task: &Task) -> rntuple::Result<Output> {
    let fields = task.fields.as_deref();
    Ok(match task.api {
        Api::Read => Output::Batches(vec![reader.read(fields, task.ranges[0].clone())?]),
        Api::Rows => Output::Rows(reader.read_entries(fields, task.ranges[0].clone())?),
        Api::Stream => Output::Batches(
            reader
                .read_ranges(fields, task.ranges.clone())?
                .collect::<rntuple::Result<_>>()?,
        ),
    })
}
