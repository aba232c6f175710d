//! `rntuple read-bench`: fields read into memory, the time and the I/O it took.

use super::Failure;
use rntuple::read::RNTupleReader;
use rntuple_io::split_target;
use std::io::Write;

/// Read fields into memory and report the time and the I/O it took: requests,
/// vectored requests, ranges, bytes read versus the page bytes the decoder used,
/// time waiting for I/O.
#[derive(clap::Args)]
pub(crate) struct Job {
    /// FILE or FILE:NAME, FILE a path or URL.
    pub(crate) target: String,
    #[command(flatten)]
    pub(crate) selection: super::entries::Selection,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Runs `rntuple read-bench` as `job` says, writing to `out`.
pub(crate) fn run(job: Job, out: &mut impl Write) -> Result<(), Failure> {
    let Job {
        target,
        selection: super::entries::Selection { fields, entries },
        json,
    } = job;
    let (file, name) = split_target(&target);
    let start = std::time::Instant::now();
    let reader = RNTupleReader::open_path(&file, name.as_deref())?;
    let opened = start.elapsed().as_secs_f64();
    let fields = super::entries::selected(&reader, fields)?;
    let at_open = reader.metrics();
    let range = match entries {
        Some(spec) => {
            super::entries::parse_entries(&spec, reader.num_entries()).map_err(Failure::Usage)?
        }
        None => 0..reader.num_entries(),
    };
    let t = std::time::Instant::now();
    // Batches as they come (one per bunch of clusters from a remote source): the
    // time is the read's, not a concatenation's.
    let batches = reader.read_batches(fields.as_deref(), range.clone())?;
    let seconds = t.elapsed().as_secs_f64();
    let m = reader.metrics();
    let report = ReadBenchReport {
        entries: range.end - range.start,
        fields: reader.arrow_schema(fields.as_deref())?.fields().len(),
        arrow_bytes: batches
            .iter()
            .map(|b| b.get_array_memory_size() as u64)
            .sum(),
        open_seconds: opened,
        read_seconds: seconds,
        requests: m.io.requests - at_open.io.requests,
        vector_requests: m.io.vector_requests - at_open.io.vector_requests,
        ranges: m.io.ranges - at_open.io.ranges,
        bytes_read: m.io.bytes_read - at_open.io.bytes_read,
        bytes_used: m.bytes_used - at_open.bytes_used,
        io_wait_seconds: (m.io.wait_nanos - at_open.io.wait_nanos) as f64 * 1e-9,
        prefetch_wait_seconds: (m.prefetch_wait_nanos - at_open.prefetch_wait_nanos) as f64 * 1e-9,
        open_requests: at_open.io.requests,
        open_bytes_read: at_open.io.bytes_read,
    };
    report.write(&mut *out, json)?;
    Ok(())
}

/// What `read-bench` measured.
struct ReadBenchReport {
    entries: u64,
    fields: usize,
    arrow_bytes: u64,
    open_seconds: f64,
    read_seconds: f64,
    requests: u64,
    vector_requests: u64,
    ranges: u64,
    bytes_read: u64,
    bytes_used: u64,
    io_wait_seconds: f64,
    prefetch_wait_seconds: f64,
    open_requests: u64,
    open_bytes_read: u64,
}

impl ReadBenchReport {
    fn write(&self, out: &mut impl Write, json: bool) -> std::io::Result<()> {
        if json {
            let value = serde_json::json!({
                "entries": self.entries,
                "fields": self.fields,
                "arrow_bytes": self.arrow_bytes,
                "open_seconds": self.open_seconds,
                "read_seconds": self.read_seconds,
                "open_requests": self.open_requests,
                "open_bytes_read": self.open_bytes_read,
                "requests": self.requests,
                "vector_requests": self.vector_requests,
                "ranges": self.ranges,
                "bytes_read": self.bytes_read,
                "bytes_used": self.bytes_used,
                "io_wait_seconds": self.io_wait_seconds,
                "prefetch_wait_seconds": self.prefetch_wait_seconds,
            });
            return writeln!(out, "{value}");
        }
        let mb = |b: u64| b as f64 / 1e6;
        writeln!(
            out,
            "read {} entries, {} fields: {:.1} MB in memory in {:.3} s ({:.0} MB/s); opening took {:.3} s",
            self.entries,
            self.fields,
            mb(self.arrow_bytes),
            self.read_seconds,
            mb(self.arrow_bytes) / self.read_seconds.max(1e-9),
            self.open_seconds
        )?;
        writeln!(
            out,
            "I/O: {} requests ({} vectored), {} ranges, {:.2} MB read for {:.2} MB of pages used ({:.3}x)",
            self.requests,
            self.vector_requests,
            self.ranges,
            mb(self.bytes_read),
            mb(self.bytes_used),
            self.bytes_read as f64 / (self.bytes_used.max(1)) as f64
        )?;
        writeln!(
            out,
            "time: {:.3} s in source calls (summed over threads), decoder waited {:.3} s for prefetched pages",
            self.io_wait_seconds, self.prefetch_wait_seconds
        )
    }
}
