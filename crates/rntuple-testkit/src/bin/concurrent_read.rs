//! Concurrent readers: ONE [`RNTupleReader`] shared by several threads, each reading a
//! different selection of fields over different entry ranges through a different API,
//! must give exactly what the same reads give one after the other.
//!
//! ```text
//! cargo run --release -p rntuple-testkit --bin concurrent_read -- \
//!     FILE_OR_URL[:NAME] [--threads 8] [--repetitions 100] [--seed N] [--tasks K] [--timeout S] [--verbose]
//! ```
//!
//! The location is opened once through [`rntuple_io::open_source`] (a path or any URL
//! the library reads: `http(s)://`, `root(s)://`, `s3://`). A deterministic list of tasks
//! (from `--seed`) mixes:
//!
//! - selections: every field, single top-level fields, subsets of them, and nested paths
//!   (record members, collection items, members of records inside collections);
//! - entry ranges: the whole RNTuple, ranges inside one cluster, ranges crossing one or
//!   several cluster boundaries, ranges starting on a boundary, the last entries, empty;
//! - APIs: [`RNTupleReader::read`] (one record batch), [`RNTupleReader::read_entries`]
//!   (rows of values) and [`RNTupleReader::read_ranges`] (the stream of batches, several
//!   ranges per task).
//!
//! Every task is first run serially; then `--repetitions` rounds run `--threads` threads
//! at once (started together at a barrier), each on a different task, the tasks of a
//! round rotating from round to round, and every result is compared with the serial one
//! (Arrow's logical equality, so offsets and buffer layouts do not matter; a value that
//! is not equal to itself, NaN, is compared by its rendering instead). A watchdog ends
//! the process (exit 3) naming the tasks in flight when a round takes longer than
//! `--timeout` seconds (default 120): a deadlock.
//!
//! Nested paths are found in the schema (up to three levels below a top-level field); one
//! that the reader accepts but then fails to read (over the first 1000 entries) is left
//! out of the tasks, reported on stderr and in `refused_paths`: a bug of its own, not of
//! concurrency.
//!
//! Prints one JSON line: `rounds`, `threads`, `tasks`, `reads`, `mismatches`, `errors`,
//! `seconds` (the concurrent rounds), `serial_seconds`, the RNTuple's `entries` and
//! `clusters`, the tasks per API (`read_tasks`, `row_tasks`, `stream_tasks`) and with
//! nested paths (`nested_tasks`), `nested_paths` (how many were found) and
//! `refused_paths`. Exits 1 on any mismatch or error, 2 on bad arguments or a failed
//! serial read.

// Not library code: stops at the first failure; its data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

use arrow_array::RecordBatch;
use read_task::{run_task, Api, Output, Task};
use rntuple::container::RootFile;
use rntuple::read::RNTupleReader;
use rntuple::schema::{array_value, Value};
use rntuple_io::open_source;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::time::{Duration, Instant};

/// The tasks and how they are run: one file with the library's concurrent readers' test.
#[path = "../../../rntuple/tests/common/read_task.rs"]
mod read_task;

fn main() {
    match run() {
        Ok(ok) => std::process::exit(if ok { 0 } else { 1 }),
        Err(e) => {
            eprintln!("concurrent_read: {e}");
            std::process::exit(2);
        }
    }
}

const USAGE: &str = "usage: concurrent_read FILE_OR_URL[:NAME] [--threads N] [--repetitions N] \
                     [--seed N] [--tasks N] [--timeout SECONDS] [--verbose]";

struct Args {
    location: String,
    threads: usize,
    repetitions: usize,
    seed: u64,
    tasks: Option<usize>,
    timeout: u64,
    verbose: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        location: String::new(),
        threads: 8,
        repetitions: 100,
        seed: 1,
        tasks: None,
        timeout: 120,
        verbose: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut number = |name: &str| -> Result<u64, String> {
            it.next()
                .and_then(|v| v.parse().ok())
                .ok_or_else(|| format!("{name} takes a number\n{USAGE}"))
        };
        match a.as_str() {
            "--threads" => args.threads = number("--threads")?.max(1) as usize,
            "--repetitions" => args.repetitions = number("--repetitions")? as usize,
            "--seed" => args.seed = number("--seed")?,
            "--tasks" => args.tasks = Some(number("--tasks")?.max(1) as usize),
            "--timeout" => args.timeout = number("--timeout")?.max(1),
            "--verbose" => args.verbose = true,
            "-h" | "--help" => return Err(USAGE.to_string()),
            _ if a.starts_with("--") => return Err(format!("unknown option {a}\n{USAGE}")),
            _ if args.location.is_empty() => args.location = a,
            _ => return Err(format!("unexpected argument {a}\n{USAGE}")),
        }
    }
    if args.location.is_empty() {
        return Err(USAGE.to_string());
    }
    Ok(args)
}

/// SplitMix64: a small deterministic generator (no dependency needed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// A number in `lo..=hi`.
    fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }
}

impl std::fmt::Display for Task {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let fields = match &self.fields {
            None => "all fields".to_string(),
            Some(v) => v.join(","),
        };
        let ranges: Vec<String> = self
            .ranges
            .iter()
            .map(|r| format!("{}..{}", r.start, r.end))
            .collect();
        write!(f, "{:?} [{fields}] entries {}", self.api, ranges.join(" "))
    }
}

impl Output {
    /// Every value, rendered (for values that are not equal to themselves, NaN).
    fn rendered(&self) -> String {
        let rows: Vec<Vec<Value>> = match self {
            Output::Rows(rows) => rows.clone(),
            Output::Batches(batches) => batches
                .iter()
                .flat_map(|b| {
                    (0..b.num_rows()).map(move |row| {
                        b.columns()
                            .iter()
                            .map(|c| array_value(c.as_ref(), row))
                            .collect()
                    })
                })
                .collect(),
        };
        format!("{rows:?}")
    }

    fn same_as(&self, other: &Output) -> bool {
        let equal = match (self, other) {
            (Output::Batches(a), Output::Batches(b)) => a == b,
            (Output::Rows(a), Output::Rows(b)) => a == b,
            _ => false,
        };
        equal || self.rendered() == other.rendered()
    }

    fn rows(&self) -> usize {
        match self {
            Output::Batches(b) => b.iter().map(RecordBatch::num_rows).sum(),
            Output::Rows(r) => r.len(),
        }
    }
}

/// Field selections: top-level names, nested paths that the reader reads, and nested
/// paths it accepts but then fails to read (with the error; a bug of their own, left out
/// of the tasks).
fn selectable_paths(reader: &RNTupleReader) -> (Vec<String>, Vec<String>, Vec<(String, String)>) {
    let d = reader.descriptor();
    let top: Vec<String> = reader
        .readable_fields()
        .into_iter()
        .map(|id| d.field(id).name().to_string())
        .collect();
    let mut nested = Vec::new();
    let mut refused = Vec::new();
    let probe = 0..reader.num_entries().min(1000);
    for name in &top {
        let Some(id) = d.find_field(name) else {
            continue;
        };
        // Every field below, by its dotted path of names, two levels deep at most.
        let mut stack: Vec<(u32, String, usize)> = d
            .field(id)
            .children
            .iter()
            .map(|&c| (c, format!("{name}.{}", d.field(c).name()), 1))
            .collect();
        while let Some((f, path, depth)) = stack.pop() {
            let ok = reader
                .select_fields(Some(std::slice::from_ref(&path)))
                .is_ok()
                && reader
                    .arrow_schema(Some(std::slice::from_ref(&path)))
                    .is_ok();
            if ok {
                match reader.read(Some(std::slice::from_ref(&path)), probe.clone()) {
                    Ok(_) => nested.push(path.clone()),
                    Err(e) => refused.push((path.clone(), e.to_string())),
                }
            }
            if depth < 3 {
                stack.extend(
                    d.field(f)
                        .children
                        .iter()
                        .map(|&c| (c, format!("{path}.{}", d.field(c).name()), depth + 1)),
                );
            }
        }
    }
    nested.sort();
    refused.sort();
    (top, nested, refused)
}

/// Entry ranges of interest: whole, within a cluster, across boundaries, on a boundary,
/// the end, empty.
fn entry_range(rng: &mut Rng, clusters: &[Range<u64>], n: u64) -> Range<u64> {
    if n == 0 {
        return 0..0;
    }
    let k = clusters.len() as u64;
    let c = |i: u64| clusters[i as usize].clone();
    match rng.below(8) {
        0 => 0..n,
        1 => {
            // Inside one cluster.
            let cl = c(rng.below(k));
            let a = rng.between(cl.start, cl.end - 1);
            a..rng.between(a + 1, cl.end)
        }
        2 | 3 if k > 1 => {
            // Across one boundary: from inside cluster i into cluster i + 1.
            let i = rng.below(k - 1);
            let (x, y) = (c(i), c(i + 1));
            rng.between(x.start, x.end - 1)..rng.between(y.start + 1, y.end)
        }
        4 if k > 2 => {
            // Across several boundaries.
            let i = rng.below(k - 2);
            let j = rng.between(i + 2, k - 1);
            rng.between(c(i).start, c(i).end - 1)..rng.between(c(j).start + 1, c(j).end)
        }
        5 => {
            // Starting on a boundary, ending anywhere after.
            let a = c(rng.below(k)).start;
            a..rng.between(a + 1, n)
        }
        6 => n.saturating_sub(rng.between(1, 50))..n,
        7 if rng.below(4) == 0 => {
            let a = rng.below(n + 1);
            a..a
        }
        _ => {
            let a = rng.below(n);
            a..rng.between(a + 1, n)
        }
    }
}

fn make_tasks(
    reader: &RNTupleReader,
    count: usize,
    seed: u64,
    top: &[String],
    nested: &[String],
) -> Vec<Task> {
    let mut rng = Rng(seed);
    let d = reader.descriptor();
    let n = reader.num_entries();
    let clusters: Vec<Range<u64>> = d
        .clusters
        .iter()
        .filter(|c| c.n_entries > 0)
        .map(|c| c.first_entry..c.first_entry + c.n_entries)
        .collect();
    let mut tasks = Vec::with_capacity(count);
    for i in 0..count {
        let api = [Api::Read, Api::Rows, Api::Stream][i % 3];
        let fields = match (i / 3) % 4 {
            _ if top.is_empty() => None,
            0 if i % 8 == 0 => None,
            0 | 1 => Some(vec![top[rng.below(top.len() as u64) as usize].clone()]),
            2 if !nested.is_empty() => {
                // Nested paths, with a top-level field beside them.
                let mut v = vec![top[rng.below(top.len() as u64) as usize].clone()];
                for _ in 0..rng.between(1, 2) {
                    let p = nested[rng.below(nested.len() as u64) as usize].clone();
                    if !v.contains(&p) {
                        v.push(p);
                    }
                }
                Some(v)
            }
            _ => {
                let mut v: Vec<String> = Vec::new();
                for _ in 0..rng.between(2, 5) {
                    let p = top[rng.below(top.len() as u64) as usize].clone();
                    if !v.contains(&p) {
                        v.push(p);
                    }
                }
                Some(v)
            }
        };
        // Row-API reads of everything over everything are slow; keep them shorter.
        let mut ranges = vec![entry_range(&mut rng, &clusters, n)];
        if api == Api::Stream {
            for _ in 0..rng.between(1, 3) {
                ranges.push(entry_range(&mut rng, &clusters, n));
            }
        }
        if api == Api::Rows && fields.is_none() {
            let r = &ranges[0];
            ranges[0] = r.start..r.end.min(r.start + 500);
        }
        tasks.push(Task {
            api,
            fields,
            ranges,
        });
    }
    tasks
}

/// A step through the tasks coprime with their number: consecutive rounds group
/// different tasks together, and all tasks run.
fn stride(tasks: usize, threads: usize) -> usize {
    fn gcd(a: usize, b: usize) -> usize {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    (threads + 1..).find(|&s| gcd(s, tasks) == 1).unwrap_or(1)
}

fn run() -> Result<bool, String> {
    let args = parse_args()?;
    let (location, name) = rntuple_io::split_target(&args.location);
    let source = open_source(&location).map_err(|e| e.to_string())?;
    let file = RootFile::open(source).map_err(|e| e.to_string())?;
    let reader = RNTupleReader::open(&file, name.as_deref()).map_err(|e| e.to_string())?;
    let n_tasks = args.tasks.unwrap_or(3 * args.threads).max(args.threads);
    let (top, nested, refused) = selectable_paths(&reader);
    for (path, error) in &refused {
        eprintln!(
            "concurrent_read: nested path {path} is accepted but does not read ({error}); left out"
        );
    }
    let tasks = make_tasks(&reader, n_tasks, args.seed, &top, &nested);

    // Serial results first.
    let t0 = Instant::now();
    let mut expected = Vec::with_capacity(tasks.len());
    for (i, task) in tasks.iter().enumerate() {
        let out = run_task(&reader, task).map_err(|e| format!("serial task {i} ({task}): {e}"))?;
        if args.verbose {
            eprintln!("task {i}: {task}: {} rows", out.rows());
        }
        expected.push(out);
    }
    let serial_seconds = t0.elapsed().as_secs_f64();

    // The watchdog: a round that takes too long is a deadlock.
    let in_flight: Arc<Mutex<Vec<Option<usize>>>> = Arc::new(Mutex::new(vec![None; args.threads]));
    let round_started = Arc::new(Mutex::new((0usize, Instant::now())));
    let done = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let (in_flight, round_started, done) =
            (in_flight.clone(), round_started.clone(), done.clone());
        let tasks = tasks.clone();
        let timeout = Duration::from_secs(args.timeout);
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                let (round, started) = *round_started.lock().unwrap();
                if started.elapsed() > timeout && !done.load(Ordering::Relaxed) {
                    eprintln!(
                        "concurrent_read: DEADLOCK? round {round} has run for more than {} s; tasks in flight:",
                        timeout.as_secs()
                    );
                    for (thread, t) in in_flight.lock().unwrap().iter().enumerate() {
                        if let Some(t) = t {
                            eprintln!("  thread {thread}: task {t}: {}", tasks[*t]);
                        }
                    }
                    std::process::exit(3);
                }
            }
        })
    };

    let mismatches = AtomicU64::new(0);
    let errors = AtomicU64::new(0);
    let reads = AtomicU64::new(0);
    let step = stride(tasks.len(), args.threads);
    let t1 = Instant::now();
    for round in 0..args.repetitions {
        *round_started.lock().unwrap() = (round, Instant::now());
        let first = round * step;
        let barrier = Barrier::new(args.threads);
        std::thread::scope(|s| {
            for thread in 0..args.threads {
                let i = (first + thread) % tasks.len();
                let (reader, task, want) = (&reader, &tasks[i], &expected[i]);
                let (barrier, in_flight) = (&barrier, &in_flight);
                let (mismatches, errors, reads) = (&mismatches, &errors, &reads);
                s.spawn(move || {
                    in_flight.lock().unwrap()[thread] = Some(i);
                    barrier.wait();
                    match run_task(reader, task) {
                        Ok(got) if got.same_as(want) => {}
                        Ok(got) => {
                            mismatches.fetch_add(1, Ordering::Relaxed);
                            eprintln!(
                                "MISMATCH round {round} thread {thread} task {i} ({task}): {} rows, serial {}",
                                got.rows(),
                                want.rows()
                            );
                        }
                        Err(e) => {
                            errors.fetch_add(1, Ordering::Relaxed);
                            eprintln!("ERROR round {round} thread {thread} task {i} ({task}): {e}");
                        }
                    }
                    reads.fetch_add(1, Ordering::Relaxed);
                    in_flight.lock().unwrap()[thread] = None;
                });
            }
        });
    }
    let seconds = t1.elapsed().as_secs_f64();
    done.store(true, Ordering::Relaxed);
    watchdog.join().map_err(|_| "watchdog panicked")?;

    let (mismatches, errors) = (mismatches.into_inner(), errors.into_inner());
    let count = |api: Api| tasks.iter().filter(|t| t.api == api).count();
    let nested_tasks = tasks
        .iter()
        .filter(|t| {
            t.fields
                .as_ref()
                .is_some_and(|f| f.iter().any(|p| p.contains('.')))
        })
        .count();
    println!(
        "{{\"rounds\": {}, \"threads\": {}, \"tasks\": {}, \"reads\": {}, \"mismatches\": {mismatches}, \
         \"errors\": {errors}, \"seconds\": {seconds:.3}, \"serial_seconds\": {serial_seconds:.3}, \
         \"entries\": {}, \"clusters\": {}, \"read_tasks\": {}, \"row_tasks\": {}, \"stream_tasks\": {}, \
         \"nested_tasks\": {nested_tasks}, \"nested_paths\": {}, \"refused_paths\": [{}]}}",
        args.repetitions,
        args.threads,
        tasks.len(),
        reads.into_inner(),
        reader.num_entries(),
        reader.descriptor().clusters.len(),
        count(Api::Read),
        count(Api::Rows),
        count(Api::Stream),
        nested.len(),
        refused
            .iter()
            .map(|(p, _)| format!("\"{p}\""))
            .collect::<Vec<_>>()
            .join(", "),
    );
    Ok(mismatches == 0 && errors == 0)
}
