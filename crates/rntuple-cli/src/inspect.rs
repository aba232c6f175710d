//! `rntuple inspect`: the storage of an RNTuple as a text table, CSV or JSON.

use super::Failure;
use rntuple::error::printable;
use rntuple::inspect::{
    root_compression_factor, By, Cell, Histogram, Inspection, SortKey, Summary, Table,
    ROOT_PAGE_SIZE_BINS,
};
use rntuple::read::RNTupleReader;
use rntuple_io::split_target;
use std::io::{self, Write};

/// How `inspect` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// A table and the whole-RNTuple figures, for people.
    Text,
    /// The table of `--by` as CSV (for `--by type` exactly ROOT's `PrintColumnTypeInfo`).
    Csv,
    /// Everything as one JSON object.
    Json,
}

/// Bins of the small page-size table of the text output.
const TEXT_BINS: usize = 8;

/// Prints the inspection `i` of the RNTuple at `path`: the table of `by` sorted by
/// `sort` (`--sort`, one of [`SortKey::NAMES`]; the file's order without), with `top`
/// only its first rows and one summing the rest (text and CSV; JSON has every table
/// whole).
pub(crate) fn print(
    out: &mut impl Write,
    path: &str,
    i: &Inspection,
    by: By,
    format: Format,
    sort: Option<&str>,
    top: Option<usize>,
) -> io::Result<()> {
    let table = || i.arranged_table(by, sort.and_then(SortKey::from_name), top);
    match format {
        Format::Json => writeln!(out, "{}", json(path, i)),
        Format::Csv => csv(out, &table()),
        Format::Text => {
            text_table(out, &table())?;
            writeln!(
                out,
                "% of file: compressed B (the bytes of the row's pages, checksums not included) over the whole file's {} B",
                i.file_bytes
            )?;
            writeln!(out)?;
            text_figures(out, path, i)
        }
    }
}

/// A cell as JSON.
fn json_cell(cell: &Cell) -> serde_json::Value {
    match cell {
        Cell::Text(s) => s.as_str().into(),
        Cell::Count(n) => (*n).into(),
        Cell::Empty => serde_json::Value::Null,
        other => other.number().unwrap_or(0.0).into(),
    }
}

/// The rows of a table as JSON objects.
fn json_rows(table: &Table) -> serde_json::Value {
    table
        .rows
        .iter()
        .map(|row| {
            table
                .columns
                .iter()
                .zip(row)
                .map(|(c, cell)| (c.name.to_string(), json_cell(cell)))
                .collect::<serde_json::Map<_, _>>()
                .into()
        })
        .collect::<Vec<serde_json::Value>>()
        .into()
}

/// A histogram as JSON.
fn json_histogram(h: &Histogram) -> serde_json::Value {
    serde_json::json!({
        "bins": h.counts.len(), "low": h.low, "high": h.high, "counts": h.counts,
        "underflow": h.underflow, "overflow": h.overflow,
    })
}

/// Everything: the figures, the three tables and the page-size distribution (overall,
/// and per column type over the same bins, as ROOT's `GetPageSizeDistribution()`).
fn json(path: &str, i: &Inspection) -> serde_json::Value {
    let mut top = serde_json::Map::new();
    top.insert("rntuple".into(), path.into());
    for (name, cell) in i.figures() {
        top.insert(name.into(), json_cell(&cell));
    }
    top.insert("fields".into(), json_rows(&i.table(By::Field)));
    top.insert("columns".into(), json_rows(&i.table(By::Column)));
    top.insert("types".into(), json_rows(&i.table(By::Type)));
    let sizes = i.page_sizes(None);
    let summary = Summary::of(&sizes);
    let mut dist = serde_json::Map::new();
    dist.insert("pages".into(), summary.pages.into());
    dist.insert("min".into(), summary.min.into());
    dist.insert("max".into(), summary.max.into());
    dist.insert("mean".into(), summary.mean.into());
    for (name, q) in Summary::QUANTILE_NAMES.iter().zip(&summary.quantiles) {
        dist.insert((*name).into(), (*q).into());
    }
    dist.insert(
        "histogram".into(),
        json_histogram(&Histogram::root_binning(&sizes, ROOT_PAGE_SIZE_BINS)),
    );
    dist.insert(
        "by_type".into(),
        i.type_histograms(ROOT_PAGE_SIZE_BINS)
            .iter()
            .map(|(t, h)| {
                serde_json::json!({
                    "type": t, "counts": h.counts, "underflow": h.underflow,
                    "overflow": h.overflow,
                })
            })
            .collect::<Vec<_>>()
            .into(),
    );
    top.insert("page_sizes".into(), dist.into());
    top.into()
}

/// A text value (a name, a type) quoted for CSV when it holds a comma or a quote, its
/// control characters escaped (`\0`, `\n`).
fn csv_text(s: &str) -> String {
    let s = printable(s);
    if s.contains([',', '"']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.into_owned()
    }
}

/// The columns of `table` that CSV has, with ROOT's headings; factors as ROOT prints
/// them (single precision, three decimals).
fn csv(out: &mut impl Write, table: &Table) -> io::Result<()> {
    let keep: Vec<usize> = (0..table.columns.len())
        .filter(|&k| table.columns[k].csv.is_some())
        .collect();
    let header: Vec<&str> = keep.iter().filter_map(|&k| table.columns[k].csv).collect();
    writeln!(out, "{}", header.join(","))?;
    for row in table.rows.iter().chain(table.rest.iter().map(|r| &r.cells)) {
        let cells: Vec<String> = keep
            .iter()
            .filter_map(|&k| row.get(k))
            .map(|cell| match cell {
                Cell::Text(s) => csv_text(s),
                Cell::Count(n) => n.to_string(),
                Cell::Factor {
                    uncompressed,
                    compressed,
                } => format!("{:.3}", root_compression_factor(*uncompressed, *compressed)),
                Cell::Average(x) => format!("{x:.1}"),
                Cell::Fraction(x) => format!("{x:.6}"),
                Cell::Empty => String::new(),
            })
            .collect();
        writeln!(out, "{}", cells.join(","))?;
    }
    Ok(())
}

/// A cell as the text table shows it.
fn text_cell(cell: &Cell) -> String {
    match cell {
        // A name or a type: its control characters escaped.
        Cell::Text(s) => printable(s).into_owned(),
        Cell::Count(n) => n.to_string(),
        Cell::Factor { .. } => format!("{:.2}", cell.number().unwrap_or(0.0)),
        Cell::Average(x) => format!("{x:.0}"),
        Cell::Fraction(x) => format!("{:.1}%", 100.0 * x),
        Cell::Empty => String::new(),
    }
}

/// The table (its columns a text table shows, its rest last) with columns as wide as
/// their contents, names left and numbers right.
fn text_table(out: &mut impl Write, table: &Table) -> io::Result<()> {
    let shown: Vec<usize> = (0..table.columns.len())
        .filter(|&k| table.columns[k].text)
        .collect();
    let rows: Vec<&Vec<Cell>> = table
        .rows
        .iter()
        .chain(table.rest.iter().map(|r| &r.cells))
        .collect();
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|row| {
            shown
                .iter()
                .map(|&k| row.get(k).map(text_cell).unwrap_or_default())
                .collect()
        })
        .collect();
    let widths: Vec<usize> = shown
        .iter()
        .enumerate()
        .map(|(j, &k)| {
            cells
                .iter()
                .filter_map(|row| row.get(j))
                .map(|s| s.chars().count())
                .max()
                .unwrap_or(0)
                .max(table.columns[k].label.len())
        })
        .collect();
    let left: Vec<bool> = shown
        .iter()
        .map(|&k| {
            table
                .rows
                .first()
                .is_none_or(|row| matches!(row.get(k), Some(Cell::Text(_))))
        })
        .collect();
    let line = |values: Vec<&str>| -> String {
        let parts: Vec<String> = values
            .iter()
            .zip(widths.iter().zip(&left))
            .map(|(v, (&w, &l))| {
                if l {
                    format!("{v:<w$}")
                } else {
                    format!("{v:>w$}")
                }
            })
            .collect();
        parts.join("  ").trim_end().to_string()
    };
    writeln!(
        out,
        "{}",
        line(shown.iter().map(|&k| table.columns[k].label).collect())
    )?;
    for row in &cells {
        writeln!(out, "{}", line(row.iter().map(String::as_str).collect()))?;
    }
    Ok(())
}

/// `n` with the singular or plural of `word`.
fn count(n: u64, word: &str) -> String {
    if n == 1 {
        format!("{n} {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// The whole-RNTuple figures and a compact page-size distribution.
fn text_figures(out: &mut impl Write, path: &str, i: &Inspection) -> io::Result<()> {
    writeln!(
        out,
        "RNTuple \"{}\": {} entries, {} in {}, {}, {}",
        printable(path),
        i.entries,
        count(i.clusters, "cluster"),
        count(i.cluster_groups, "cluster group"),
        count(i.columns.len() as u64, "column"),
        count(i.pages, "page"),
    )?;
    writeln!(
        out,
        "data:     {} B compressed, {} B uncompressed, factor {:.2}, {:.0} B per page on average",
        i.compressed,
        i.uncompressed,
        i.compression_factor(),
        i.average_page_size(),
    )?;
    let mut stored = format!(
        "          stored: {} B of pages and {} B of their checksums",
        i.stored_page_bytes, i.checksum_bytes
    );
    if i.shared_pages > 0 {
        stored.push_str(&format!(
            "; {} pages are a page stored for another column (same-page merging), counted above for each",
            i.shared_pages
        ));
    }
    if i.zero_pages > 0 {
        stored.push_str(&format!(
            "; {} B above are {} zero pages of columns added by a late model extension, not stored (ROOT counts them)",
            i.zero_page_bytes, i.zero_pages
        ));
    }
    writeln!(out, "{stored}")?;
    writeln!(
        out,
        "metadata: {} B: header {} B ({} B uncompressed), footer {} B ({} B uncompressed), {} {} B ({} B uncompressed); metadata / data {:.3}",
        i.metadata_bytes(),
        i.header.on_disk,
        i.header.uncompressed,
        i.footer.on_disk,
        i.footer.uncompressed,
        if i.cluster_groups == 1 { "page list" } else { "page lists" },
        i.page_lists.on_disk,
        i.page_lists.uncompressed,
        i.metadata_data_ratio(),
    )?;
    let pct = |b: u64| 100.0 * i.file_share(b);
    writeln!(
        out,
        "file:     {} B: pages {:.1}%, checksums {:.1}%, metadata {:.1}%, other {:.1}% (keys, directories, streamer info, other objects)",
        i.file_bytes,
        pct(i.stored_page_bytes),
        pct(i.checksum_bytes),
        pct(i.metadata_bytes()),
        pct(i.other_bytes()),
    )?;
    let sizes = i.page_sizes(None);
    if sizes.is_empty() {
        return Ok(());
    }
    let s = Summary::of(&sizes);
    let quantiles: Vec<String> = Summary::QUANTILE_NAMES
        .iter()
        .zip(&s.quantiles)
        .map(|(name, q)| format!("{name} {q:.0} B"))
        .collect();
    writeln!(
        out,
        "page sizes (compressed): min {} B, {}, max {} B, mean {:.0} B",
        s.min,
        quantiles.join(", "),
        s.max,
        s.mean
    )?;
    let h = Histogram::root_binning(&sizes, TEXT_BINS);
    if h.overflow > 0 {
        // All pages have the same size.
        return Ok(());
    }
    let most = h.counts.iter().copied().max().unwrap_or(0).max(1);
    let digits = format!("{:.0}", h.high).len();
    for (k, &n) in h.counts.iter().enumerate() {
        let width = if n == 0 { 0 } else { (n * 40 / most).max(1) };
        let bar = "#".repeat(usize::try_from(width).unwrap_or(40));
        writeln!(
            out,
            "  {:>digits$.0} .. {:>digits$.0} B {n:>8} {bar}",
            h.edge(k),
            h.edge(k + 1),
        )?;
    }
    Ok(())
}

/// Where the bytes go: per field (its subfields included), per column or per column
/// type, compressed and uncompressed bytes, compression factor, elements, pages,
/// average page size, share of the file (the figures of ROOT's RNTupleInspector);
/// the header, footer and page-list sizes; the distribution of page sizes.
#[derive(clap::Args)]
pub(crate) struct Job {
    /// FILE or FILE:NAME.
    pub(crate) target: String,
    /// Rows per field (default), per physical column or per column type.
    #[arg(long, default_value = "field", value_parser = ["field", "column", "type"])]
    pub(crate) by: String,
    /// Print one JSON object (every table, the figures and the page-size
    /// distribution) instead of text.
    #[arg(long, conflicts_with = "csv")]
    pub(crate) json: bool,
    /// Print the table of --by as CSV (with --by type, as ROOT's
    /// RNTupleInspector::PrintColumnTypeInfo prints it).
    #[arg(long)]
    pub(crate) csv: bool,
    /// Order the rows by size (compressed bytes, the largest first), uncompressed,
    /// compression (factor, the worst first), pages or name (default: the file's
    /// order; per field, subfields stay under their parent).
    #[arg(
        long,
        value_name = "KEY",
        conflicts_with = "json",
        value_parser = rntuple::inspect::SortKey::NAMES
    )]
    pub(crate) sort: Option<String>,
    /// Show only the N first rows (by --sort, default size; with --by field,
    /// top-level fields, their subfields' bytes included) and one row summing the
    /// rest.
    #[arg(long, value_name = "N", conflicts_with = "json")]
    pub(crate) top: Option<usize>,
}

/// Runs `rntuple inspect` as `job` says, writing to `out`.
pub(crate) fn run(job: Job, out: &mut impl Write) -> Result<(), Failure> {
    let Job {
        target,
        by,
        json,
        csv,
        sort,
        top,
    } = job;
    let (file, name) = split_target(&target);
    let reader = RNTupleReader::open_path(&file, name.as_deref())?;
    let by = rntuple::inspect::By::from_name(&by)
        .ok_or_else(|| Failure::Usage(format!("--by {by}: not field, column or type")))?;
    let format = match (json, csv) {
        (true, _) => Format::Json,
        (_, true) => Format::Csv,
        _ => Format::Text,
    };
    let i = rntuple::inspect::inspect(&reader)?;
    print(
        &mut *out,
        reader.path(),
        &i,
        by,
        format,
        sort.as_deref(),
        top,
    )?;
    Ok(())
}
