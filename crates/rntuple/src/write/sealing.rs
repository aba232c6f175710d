//! The sealing pipeline: full pages are sealed (encoded, compressed, checksummed) by
//! jobs on the rayon pool while the caller goes on filling; sealed pages are written in
//! runs (every column's pages sealed from about `page_run_size` bytes of values, column
//! by column), identical pages of a cluster once (same-page merging), in blobs of at
//! most one key each.

use super::options::WriteOptions;
use super::sink::BlobSink;
use crate::encoding::{ColumnEncoding, ColumnValues};
use crate::error::{Error, Result};
use crate::format::{seal_page_parts, Locator, PageInfo, SealedPage};
use std::collections::{HashMap, VecDeque};
use std::sync::mpsc;
use std::sync::Mutex;

/// Written pages up to this size (compressed) stay candidates for same-page merging with
/// the later runs of their cluster. Identical pages are, in practice, pages of constant
/// values, which compress to a few bytes.
const MERGE_ACROSS_RUNS_BYTES: usize = 4096;

/// A column's values as the chunks they were appended in: a page grows without
/// reallocating and copying, and is joined into one buffer only when it is sealed.
#[derive(Default)]
pub(crate) struct ChunkedValues {
    chunks: VecDeque<ColumnValues>,
    len: usize,
}

impl ChunkedValues {
    /// The number of values.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Appends values (without copying them).
    pub(crate) fn push(&mut self, values: ColumnValues) {
        if !values.is_empty() {
            self.len += values.len();
            self.chunks.push_back(values);
        }
    }

    /// Splits off the first `n` values.
    pub(crate) fn take_front(&mut self, n: usize) -> Result<ChunkedValues> {
        let beyond = || Error::InvalidArgument("page plan beyond the values".into());
        if n > self.len {
            return Err(beyond());
        }
        let mut front = ChunkedValues::default();
        while front.len < n {
            let Some(chunk) = self.chunks.pop_front() else {
                break;
            };
            let want = n - front.len;
            if chunk.len() <= want {
                self.len -= chunk.len();
                front.push(chunk);
            } else {
                let head = chunk.slice(0, want).ok_or_else(beyond)?;
                let tail = chunk.slice(want, chunk.len() - want).ok_or_else(beyond)?;
                self.chunks.push_front(tail);
                self.len -= want;
                front.push(head);
            }
        }
        Ok(front)
    }

    /// The last value, when the values are offsets.
    pub(crate) fn last_index(&self) -> Option<u64> {
        match self.chunks.back()? {
            ColumnValues::Index(v) => v.last().copied(),
            _ => None,
        }
    }

    /// Whether both hold the same offsets (whatever chunks they were appended in); false
    /// for values of any other kind.
    pub(crate) fn same_index_values(&self, other: &ChunkedValues) -> bool {
        fn offsets(c: &ColumnValues) -> Option<&[u64]> {
            match c {
                ColumnValues::Index(v) => Some(v),
                _ => None,
            }
        }
        if self.len != other.len {
            return false;
        }
        let (mut mine, mut theirs) = (self.chunks.iter(), other.chunks.iter());
        let (mut a, mut b): (&[u64], &[u64]) = (&[], &[]);
        loop {
            if a.is_empty() {
                match mine.next() {
                    Some(c) => match offsets(c) {
                        Some(v) => a = v,
                        None => return false,
                    },
                    None => {
                        return b.is_empty()
                            && theirs.all(|c| offsets(c).is_some_and(<[u64]>::is_empty))
                    }
                }
                continue;
            }
            if b.is_empty() {
                match theirs.next() {
                    Some(c) => match offsets(c) {
                        Some(v) => b = v,
                        None => return false,
                    },
                    None => return false,
                }
                continue;
            }
            let n = a.len().min(b.len());
            if a[..n] != b[..n] {
                return false;
            }
            a = &a[n..];
            b = &b[n..];
        }
    }

    /// The chunks, in order: the parts a page is sealed from, without joining them
    /// ([`seal_page_parts`]).
    fn into_parts(self) -> Result<Vec<ColumnValues>> {
        if self.chunks.is_empty() {
            return Err(Error::InvalidArgument("an empty page to seal".into()));
        }
        Ok(self.chunks.into())
    }
}

/// A sealing job's result.
struct Sealed {
    column: usize,
    job: usize,
    /// The bytes its values took in memory.
    bytes: u64,
    pages: Result<Vec<SealedPage>>,
}

/// One column's pages in the pipeline, within the open cluster.
struct ColumnQueue {
    encoding: ColumnEncoding,
    /// The sealing jobs started and not yet moved to `sealed`, in the order they were
    /// started: their pages once sealed.
    jobs: VecDeque<Option<Vec<SealedPage>>>,
    /// Jobs moved out of `jobs` so far: job number `k` is at `jobs[k - jobs_taken]`.
    jobs_taken: usize,
    /// Sealed pages waiting to be written (the next run).
    sealed: Vec<SealedPage>,
    /// Pages already written (in earlier runs), in order.
    placed: Vec<PageInfo>,
}

impl ColumnQueue {
    /// Jobs started so far (the number the next one gets).
    fn jobs_started(&self) -> usize {
        self.jobs_taken + self.jobs.len()
    }

    /// Moves the pages of the first `n` jobs to `sealed`; all of them must be done.
    fn take_jobs(&mut self, n: usize) -> Result<()> {
        let n = n.min(self.jobs.len());
        self.jobs_taken += n;
        for job in self.jobs.drain(..n) {
            let pages =
                job.ok_or_else(|| Error::InvalidArgument("a page sealing job lost".into()))?;
            self.sealed.extend(pages);
        }
        Ok(())
    }
}

/// Where a sealed page goes in a run: written, or pointing to an identical page written
/// before (`Earlier`) or in this run (`InRun`, its column and index).
enum Place {
    Write,
    Earlier(Locator),
    InRun(usize, usize),
}

/// The pages being sealed and written, for all columns.
pub(crate) struct SealingPipeline {
    tx: mpsc::Sender<Sealed>,
    /// Behind a mutex only so that the writer is `Sync`; only the writer receives.
    rx: Mutex<mpsc::Receiver<Sealed>>,
    /// Jobs started and not yet received.
    outstanding: usize,
    /// The bytes in memory of their values.
    in_flight_bytes: u64,
    columns: Vec<ColumnQueue>,
    /// Uncompressed bytes of the pages sent for sealing since the last run mark.
    run_bytes: u64,
    /// The last run mark: per column, the number of its sealing jobs started before it.
    /// The pages of the jobs before a mark are written (as a run) at the next mark, by
    /// when they are sealed.
    run_mark: Option<Vec<usize>>,
    /// Jobs that take a copy of another job's sealed pages once it is received: (column,
    /// job) of the copy, (column, job) of the original.
    copies: Vec<((usize, usize), (usize, usize))>,
    /// Jobs started as copies so far (for the tests).
    #[cfg(test)]
    pub(crate) copied_jobs: usize,
    /// Bytes written for the open cluster so far.
    cluster_zipped_bytes: u64,
    /// Small pages of the open cluster already written, by checksum: their locator and
    /// bytes, so that identical pages of later runs point to them.
    written_pages: HashMap<u64, (Locator, Vec<u8>)>,
}

impl SealingPipeline {
    /// An empty pipeline (no columns yet).
    pub(crate) fn new() -> Self {
        let (tx, rx) = mpsc::channel();
        SealingPipeline {
            tx,
            rx: Mutex::new(rx),
            outstanding: 0,
            in_flight_bytes: 0,
            columns: Vec::new(),
            run_bytes: 0,
            run_mark: None,
            copies: Vec::new(),
            #[cfg(test)]
            copied_jobs: 0,
            cluster_zipped_bytes: 0,
            written_pages: HashMap::new(),
        }
    }

    /// Adds a column written with `encoding`.
    pub(crate) fn add_column(&mut self, encoding: ColumnEncoding) {
        self.columns.push(ColumnQueue {
            encoding,
            jobs: VecDeque::new(),
            jobs_taken: 0,
            sealed: Vec::new(),
            placed: Vec::new(),
        });
    }

    /// Starts sealing `pages` of column `column` (whose values take `bytes` in memory) as
    /// one job on the thread pool, without waiting for it.
    pub(crate) fn submit(
        &mut self,
        column: usize,
        pages: Vec<ChunkedValues>,
        bytes: u64,
        options: &WriteOptions,
    ) -> Result<()> {
        let (job, encoding) = self.open_job(column)?;
        let (compression, checksums) = (options.compression(), options.page_checksums());
        let tx = self.tx.clone();
        self.outstanding += 1;
        self.in_flight_bytes += bytes;
        self.run_bytes += bytes;
        rayon::spawn(move || {
            let sealed = pages
                .into_iter()
                .map(|p| seal_page_parts(&encoding, &p.into_parts()?, compression, checksums))
                .collect::<Result<Vec<_>>>();
            // The writer may be gone (dropped after an error): nobody waits then.
            let _ = tx.send(Sealed {
                column,
                job,
                bytes,
                pages: sealed,
            });
        });
        Ok(())
    }

    /// Starts the next job of column `column`, its pages to come: its number and the
    /// column's encoding.
    fn open_job(&mut self, column: usize) -> Result<(usize, ColumnEncoding)> {
        let queue = self
            .columns
            .get_mut(column)
            .ok_or_else(|| Error::InvalidArgument(format!("pages of no column ({column})")))?;
        let job = queue.jobs_started();
        queue.jobs.push_back(None);
        Ok((job, queue.encoding))
    }

    /// Where the sealed pages of job `job` of column `column` go.
    fn job_slot(&mut self, column: usize, job: usize) -> Result<&mut Option<Vec<SealedPage>>> {
        self.columns
            .get_mut(column)
            .and_then(|c| c.jobs.get_mut(job.checked_sub(c.jobs_taken)?))
            .ok_or_else(|| Error::InvalidArgument("a page sealing job of no column".into()))
    }

    /// Whether column `column` holds offsets (an index column).
    pub(crate) fn is_index_column(&self, column: usize) -> bool {
        self.columns
            .get(column)
            .is_some_and(|c| c.encoding.column_type.is_index())
    }

    /// Whether two columns are stored with the same encoding.
    pub(crate) fn same_encoding(&self, a: usize, b: usize) -> bool {
        match (self.columns.get(a), self.columns.get(b)) {
            (Some(a), Some(b)) => a.encoding == b.encoding,
            _ => false,
        }
    }

    /// Starts a job of column `column` whose pages hold the same values, with the same
    /// encoding, as those of the job just submitted for column `of`: it takes a copy of
    /// that job's sealed pages when they are received, instead of sealing them again.
    /// Its `bytes` count towards the run as a sealed job's would, so that the file's
    /// layout stays the same.
    pub(crate) fn submit_copy(&mut self, column: usize, of: usize, bytes: u64) -> Result<()> {
        let original_job = self
            .columns
            .get(of)
            .and_then(|c| c.jobs_started().checked_sub(1))
            .ok_or_else(|| Error::InvalidArgument(format!("a copy of no job (column {of})")))?;
        let (job, _) = self.open_job(column)?;
        self.copies.push(((column, job), (of, original_job)));
        self.run_bytes += bytes;
        #[cfg(test)]
        {
            self.copied_jobs += 1;
        }
        Ok(())
    }

    /// After a round of [`SealingPipeline::submit`]: waits until the values being sealed
    /// are back under the page buffer budget, and writes a run when the pages sent since
    /// the last run mark reach the run size.
    pub(crate) fn pace<S: BlobSink>(&mut self, sink: &mut S, options: &WriteOptions) -> Result<()> {
        // Enough values in flight to keep every thread busy, and no more: the rest of the
        // page buffer budget is the caller's.
        let busy = (4 * rayon::current_num_threads() as u64)
            .saturating_mul(options.page_size())
            .max(4 << 20);
        let limit = options.effective_page_buffer_budget().min(busy);
        while self.outstanding > 0 && self.in_flight_bytes > limit {
            self.receive_sealed()?;
        }
        // Runs are cut by the bytes sent for sealing, never by what happens to be sealed
        // already, so that the file's layout does not depend on thread timing.
        if let Some(run) = options.page_run_size() {
            if self.run_bytes >= run {
                self.run_bytes = 0;
                let mark = self.columns.iter().map(ColumnQueue::jobs_started).collect();
                if let Some(previous) = self.run_mark.replace(mark) {
                    self.write_run_before(sink, &previous, options)?;
                }
            }
        }
        Ok(())
    }

    /// Waits for every sealing job and writes the open cluster's last pages. Returns,
    /// per column, where its pages of the cluster are (in order), and the bytes written
    /// for the cluster.
    pub(crate) fn finish_cluster<S: BlobSink>(
        &mut self,
        sink: &mut S,
        options: &WriteOptions,
    ) -> Result<(Vec<Vec<PageInfo>>, u64)> {
        while self.outstanding > 0 {
            self.receive_sealed()?;
        }
        for c in &mut self.columns {
            c.take_jobs(c.jobs.len())?;
        }
        self.write_sealed_run(sink, options)?;
        self.run_mark = None;
        self.run_bytes = 0;
        self.written_pages.clear();
        // Every original was received above, so every copy has its pages.
        self.copies.clear();
        let placed = self
            .columns
            .iter_mut()
            .map(|c| std::mem::take(&mut c.placed))
            .collect();
        Ok((placed, std::mem::take(&mut self.cluster_zipped_bytes)))
    }

    /// Waits for one sealing job and files its pages.
    fn receive_sealed(&mut self) -> Result<()> {
        let done = self
            .rx
            .lock()
            .map_err(|_| Error::InvalidArgument("a page sealing job panicked".into()))?
            .recv()
            .map_err(|_| Error::InvalidArgument("a page sealing job was lost".into()))?;
        self.outstanding -= 1;
        self.in_flight_bytes -= done.bytes;
        let pages = done.pages?;
        // The jobs that copy this one's pages get them now.
        let (copies, others): (Vec<_>, Vec<_>) = std::mem::take(&mut self.copies)
            .into_iter()
            .partition(|&(_, original)| original == (done.column, done.job));
        self.copies = others;
        for ((column, job), _) in copies {
            *self.job_slot(column, job)? = Some(pages.clone());
        }
        *self.job_slot(done.column, done.job)? = Some(pages);
        Ok(())
    }

    /// Writes the pages of the sealing jobs started before `mark` (per column, a job
    /// count) as one run, waiting for those still being sealed.
    fn write_run_before<S: BlobSink>(
        &mut self,
        sink: &mut S,
        mark: &[usize],
        options: &WriteOptions,
    ) -> Result<()> {
        let pending = |c: &ColumnQueue, before: usize| {
            c.jobs
                .iter()
                .take(before.saturating_sub(c.jobs_taken))
                .any(Option::is_none)
        };
        while self.outstanding > 0
            && self
                .columns
                .iter()
                .zip(mark)
                .any(|(c, &before)| pending(c, before))
        {
            self.receive_sealed()?;
        }
        for (c, &before) in self.columns.iter_mut().zip(mark) {
            c.take_jobs(before.saturating_sub(c.jobs_taken))?;
        }
        self.write_sealed_run(sink, options)
    }

    /// Where each sealed page goes: identical pages of the cluster (same checksum, same
    /// bytes) are written once; across runs only small ones, whose bytes are kept for the
    /// comparison.
    fn places(&self, merge: bool) -> Vec<Vec<Place>> {
        let mut first_seen: HashMap<u64, (usize, usize)> = HashMap::new();
        let mut places = Vec::with_capacity(self.columns.len());
        for (ci, c) in self.columns.iter().enumerate() {
            let mut column_places = Vec::with_capacity(c.sealed.len());
            for (pi, p) in c.sealed.iter().enumerate() {
                let key = if merge { p.checksum() } else { None };
                let place = match key {
                    None => Place::Write,
                    Some(key) => match (self.written_pages.get(&key), first_seen.get(&key)) {
                        (Some((loc, bytes)), _) if *bytes == p.bytes => Place::Earlier(*loc),
                        (_, Some(&(cj, pj))) if self.columns[cj].sealed[pj].bytes == p.bytes => {
                            Place::InRun(cj, pj)
                        }
                        (_, Some(_)) => Place::Write,
                        (_, None) => {
                            first_seen.insert(key, (ci, pi));
                            Place::Write
                        }
                    },
                };
                column_places.push(place);
            }
            places.push(column_places);
        }
        places
    }

    /// Writes the columns' sealed pages as one run: column by column, each column's pages
    /// in order, in blobs of at most one key each, identical pages once.
    fn write_sealed_run<S: BlobSink>(
        &mut self,
        sink: &mut S,
        options: &WriteOptions,
    ) -> Result<()> {
        let merge = options.same_page_merging() && options.page_checksums();
        let places = self.places(merge);
        // Lay the pages out in blobs of at most one key each.
        let max_blob = options.max_key_size();
        let mut blob_len = 0usize;
        let mut pending: Vec<PendingPage> = Vec::new();
        let mut locators: Vec<Vec<Locator>> = self
            .columns
            .iter()
            .map(|c| vec![Locator::default(); c.sealed.len()])
            .collect();
        for (ci, column_places) in places.iter().enumerate() {
            for (pi, place) in column_places.iter().enumerate() {
                if !matches!(place, Place::Write) {
                    continue;
                }
                let len = self.columns[ci].sealed[pi].bytes.len();
                if blob_len > 0 && (blob_len + len) as u64 > max_blob {
                    self.flush_blob(sink, &mut pending, &mut locators, options)?;
                    blob_len = 0;
                }
                pending.push(PendingPage {
                    column: ci,
                    page: pi,
                    len,
                });
                blob_len += len;
                self.cluster_zipped_bytes += len as u64;
            }
        }
        self.flush_blob(sink, &mut pending, &mut locators, options)?;
        for (ci, column_places) in places.into_iter().enumerate() {
            for (pi, place) in column_places.into_iter().enumerate() {
                let locator = match place {
                    Place::Write => locators[ci][pi],
                    Place::Earlier(loc) => loc,
                    Place::InRun(cj, pj) => locators[cj][pj],
                };
                let page = &mut self.columns[ci].sealed[pi];
                let key = page.checksum();
                let bytes = std::mem::take(&mut page.bytes);
                let info = PageInfo {
                    n_elements: page.n_elements,
                    has_checksum: page.has_checksum,
                    locator,
                };
                if merge && matches!(place, Place::Write) && bytes.len() <= MERGE_ACROSS_RUNS_BYTES
                {
                    if let Some(key) = key {
                        self.written_pages.entry(key).or_insert((locator, bytes));
                    }
                }
                self.columns[ci].placed.push(info);
            }
            self.columns[ci].sealed.clear();
        }
        Ok(())
    }

    /// Writes the pending pages as one blob and records their locators.
    fn flush_blob<S: BlobSink>(
        &mut self,
        sink: &mut S,
        pending: &mut Vec<PendingPage>,
        locators: &mut [Vec<Locator>],
        options: &WriteOptions,
    ) -> Result<()> {
        if pending.is_empty() {
            return Ok(());
        }
        let parts: Vec<&[u8]> = pending
            .iter()
            .map(|p| self.columns[p.column].sealed[p.page].bytes.as_slice())
            .collect();
        let located = sink.write_located(&parts, options.max_key_size())?;
        for (p, place) in pending.iter().zip(located) {
            let page = &self.columns[p.column].sealed[p.page];
            // A locator covers the page without its checksum.
            let checksum = if page.has_checksum { 8 } else { 0 };
            locators[p.column][p.page] = Locator {
                size: (p.len - checksum) as u64,
                ..place
            };
        }
        pending.clear();
        Ok(())
    }
}

/// A page laid out in the blob being assembled: its column and index among the column's
/// sealed pages, its offset in the blob and its length.
struct PendingPage {
    column: usize,
    page: usize,
    len: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunked(parts: &[&[u64]]) -> ChunkedValues {
        let mut c = ChunkedValues::default();
        for p in parts {
            c.push(ColumnValues::Index(p.to_vec()));
        }
        c
    }

    /// Offsets compare by value, whatever chunks they were appended in; a difference in
    /// one element or in length, or values that are not offsets, are not the same.
    #[test]
    fn same_index_values_ignores_chunking() {
        let whole = chunked(&[&[1, 2, 3, 4, 5]]);
        assert!(whole.same_index_values(&chunked(&[&[1, 2], &[3], &[4, 5]])));
        assert!(chunked(&[&[1], &[2, 3, 4, 5]]).same_index_values(&whole));
        assert!(!whole.same_index_values(&chunked(&[&[1, 2], &[3], &[4, 6]])));
        assert!(!whole.same_index_values(&chunked(&[&[1, 2, 3, 4]])));
        assert_eq!(whole.last_index(), Some(5));
        let mut floats = ChunkedValues::default();
        floats.push(ColumnValues::U64(vec![1, 2, 3, 4, 5]));
        assert!(!whole.same_index_values(&floats));
        assert!(!floats.same_index_values(&whole));
        assert_eq!(floats.last_index(), None);
    }
}
