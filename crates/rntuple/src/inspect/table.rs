//! Inspection tables: rows by field, column or column type, sorted and cut to their
//! largest rows with the rest summed in one row, and the figures and columns the CLI and
//! the Python package show.

use super::{average, compression_factor, Inspection};

/// What the rows of an inspection [`Table`] are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    /// One row per field, its subfields included.
    Field,
    /// One row per physical column.
    Column,
    /// One row per column type.
    Type,
}

impl By {
    /// `"field"`, `"column"` or `"type"`.
    pub fn from_name(name: &str) -> Option<By> {
        match name {
            "field" => Some(By::Field),
            "column" => Some(By::Column),
            "type" => Some(By::Type),
            _ => None,
        }
    }

    /// What a row is, in the plural (`fields`, `columns`, `column types`), or in the
    /// singular for one.
    fn rows(self, n: u64) -> &'static str {
        match (self, n == 1) {
            (By::Field, true) => "field",
            (By::Field, false) => "fields",
            (By::Column, true) => "column",
            (By::Column, false) => "columns",
            (By::Type, true) => "column type",
            (By::Type, false) => "column types",
        }
    }
}

/// How [`Inspection::arranged_table`] orders rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortKey {
    /// Compressed bytes, the largest first.
    Size,
    /// Uncompressed bytes, the largest first.
    Uncompressed,
    /// Compression factor, the smallest (the worst compressed) first.
    Compression,
    /// Pages, the most first.
    Pages,
    /// Label (fields, columns) or column type, in byte order.
    Name,
}

impl SortKey {
    /// The keys' names, as [`SortKey::from_name`] takes them.
    pub const NAMES: [&'static str; 5] = ["size", "uncompressed", "compression", "pages", "name"];

    /// The key of one of [`SortKey::NAMES`].
    pub fn from_name(name: &str) -> Option<SortKey> {
        match name {
            "size" => Some(SortKey::Size),
            "uncompressed" => Some(SortKey::Uncompressed),
            "compression" => Some(SortKey::Compression),
            "pages" => Some(SortKey::Pages),
            "name" => Some(SortKey::Name),
            _ => None,
        }
    }
}

/// One value of a [`Table`].
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// A name.
    Text(String),
    /// A count of bytes, elements, pages, columns.
    Count(u64),
    /// A compression factor, from its uncompressed and compressed bytes (shown as ROOT
    /// prints it in CSV: single precision, three decimals).
    Factor {
        /// Uncompressed bytes.
        uncompressed: u64,
        /// Compressed bytes.
        compressed: u64,
    },
    /// Bytes per page.
    Average(f64),
    /// A fraction: of the file, or of the data.
    Fraction(f64),
    /// No value (the type or id of a row summing others).
    Empty,
}

impl Cell {
    /// The value as a number (`None` for text and no value); a factor is its
    /// double-precision ratio.
    pub fn number(&self) -> Option<f64> {
        match self {
            Cell::Text(_) | Cell::Empty => None,
            Cell::Count(n) => Some(*n as f64),
            Cell::Factor {
                uncompressed,
                compressed,
            } => Some(compression_factor(*uncompressed, *compressed)),
            Cell::Average(x) | Cell::Fraction(x) => Some(*x),
        }
    }
}

/// One column of a [`Table`].
#[derive(Debug, Clone, PartialEq)]
pub struct TableColumn {
    /// Its name in JSON and Arrow (`compressed`, `compression_factor`, ...).
    pub name: &'static str,
    /// Its heading in CSV, in ROOT's style (`compressedSize`); `None`: not in the CSV
    /// (the per-type CSV is exactly ROOT's `PrintColumnTypeInfo` one).
    pub csv: Option<&'static str>,
    /// Its heading in a text table.
    pub label: &'static str,
    /// Whether a text table shows it (a field's name is shown as its label).
    pub text: bool,
}

/// The rows left out of an arranged [`Table`], summed.
#[derive(Debug, Clone, PartialEq)]
pub struct Rest {
    /// Rows left out (per field: top-level fields, each with its subfields).
    pub rows: u64,
    /// Their sums, one cell per column of the table: the name and label say
    /// `... 840 more fields`, other texts and ids are [`Cell::Empty`], counts are
    /// summed, and the compression factor, average page size and share of the file are
    /// those of the sums.
    pub cells: Vec<Cell>,
}

/// The rows of an inspection, per field, column or column type, as the command and the
/// Python package show them.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// The columns.
    pub columns: Vec<TableColumn>,
    /// The rows, one cell per column.
    pub rows: Vec<Vec<Cell>>,
    /// Per row, the row of its parent field (per field, subfields follow their parent);
    /// `None` for top-level fields and the rows of the other tables.
    pub parents: Vec<Option<usize>>,
    /// The rows [`Inspection::arranged_table`] left out, summed (`None` when it kept
    /// them all).
    pub rest: Option<Rest>,
}

impl Table {
    /// The position of the column named `name`.
    pub fn position(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    /// The count in column `name` of row `row` (0 where there is none).
    fn count(&self, row: usize, name: &str) -> u64 {
        match self
            .position(name)
            .and_then(|k| self.rows.get(row).and_then(|r| r.get(k)))
        {
            Some(Cell::Count(n)) => *n,
            _ => 0,
        }
    }

    /// The name a row sorts by: its label, or its column type.
    fn sort_name(&self, row: usize) -> &str {
        let k = self.position("label").or_else(|| self.position("type"));
        match k.and_then(|k| self.rows.get(row).and_then(|r| r.get(k))) {
            Some(Cell::Text(s)) => s,
            _ => "",
        }
    }

    /// How rows `a` and `b` compare by `key` (ties: equal, for a stable sort).
    fn compare(&self, key: SortKey, a: usize, b: usize) -> std::cmp::Ordering {
        let factor = |row| {
            compression_factor(
                self.count(row, "uncompressed"),
                self.count(row, "compressed"),
            )
        };
        match key {
            SortKey::Size => self
                .count(b, "compressed")
                .cmp(&self.count(a, "compressed")),
            SortKey::Uncompressed => self
                .count(b, "uncompressed")
                .cmp(&self.count(a, "uncompressed")),
            SortKey::Compression => factor(a).total_cmp(&factor(b)),
            SortKey::Pages => self.count(b, "pages").cmp(&self.count(a, "pages")),
            SortKey::Name => self.sort_name(a).cmp(self.sort_name(b)),
        }
    }

    /// The rows in `order` (their parents renumbered; a parent not kept is `None`).
    fn reordered(self, order: &[usize]) -> Table {
        let mut at = vec![None; self.rows.len()];
        for (new, &old) in order.iter().enumerate() {
            if let Some(slot) = at.get_mut(old) {
                *slot = Some(new);
            }
        }
        let parents = order
            .iter()
            .map(|&old| {
                self.parents
                    .get(old)
                    .copied()
                    .flatten()
                    .and_then(|p| at.get(p).copied().flatten())
            })
            .collect();
        let mut rows: Vec<Option<Vec<Cell>>> = self.rows.into_iter().map(Some).collect();
        Table {
            columns: self.columns,
            rows: order
                .iter()
                .filter_map(|&old| rows.get_mut(old).and_then(Option::take))
                .collect(),
            parents,
            rest: self.rest,
        }
    }

    /// The rows in tree order, siblings sorted by `key`: each row followed by its
    /// subfields (and theirs), top-level rows in `key` order.
    fn tree_order(&self, key: SortKey) -> Vec<usize> {
        let n = self.rows.len();
        let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut roots = Vec::new();
        for i in 0..n {
            match self.parents.get(i).copied().flatten() {
                Some(p) if p != i && p < n => {
                    if let Some(c) = children.get_mut(p) {
                        c.push(i);
                    }
                }
                _ => roots.push(i),
            }
        }
        roots.sort_by(|&a, &b| self.compare(key, a, b));
        for c in &mut children {
            c.sort_by(|&a, &b| self.compare(key, a, b));
        }
        let mut order = Vec::with_capacity(n);
        let mut seen = vec![false; n];
        let mut stack: Vec<usize> = roots.into_iter().rev().collect();
        while let Some(i) = stack.pop() {
            if std::mem::replace(&mut seen[i], true) {
                continue;
            }
            order.push(i);
            if let Some(c) = children.get(i) {
                stack.extend(c.iter().rev());
            }
        }
        order
    }
}

/// A table column.
const fn col(name: &'static str, csv: Option<&'static str>, label: &'static str) -> TableColumn {
    TableColumn {
        name,
        csv,
        label,
        text: true,
    }
}

/// A table column a text table does not show.
const fn hidden(name: &'static str, csv: Option<&'static str>) -> TableColumn {
    TableColumn {
        name,
        csv,
        label: name,
        text: false,
    }
}
impl Inspection {
    /// The whole-RNTuple figures by name, as the command's JSON and the Python package
    /// give them: entries, clusters, pages, data and metadata bytes, file size.
    pub fn figures(&self) -> Vec<(&'static str, Cell)> {
        vec![
            ("entries", Cell::Count(self.entries)),
            ("clusters", Cell::Count(self.clusters)),
            ("cluster_groups", Cell::Count(self.cluster_groups)),
            ("physical_columns", Cell::Count(self.columns.len() as u64)),
            ("pages", Cell::Count(self.pages)),
            ("compressed", Cell::Count(self.compressed)),
            ("uncompressed", Cell::Count(self.uncompressed)),
            (
                "compression_factor",
                Cell::Factor {
                    uncompressed: self.uncompressed,
                    compressed: self.compressed,
                },
            ),
            ("average_page_size", Cell::Average(self.average_page_size())),
            ("stored_page_bytes", Cell::Count(self.stored_page_bytes)),
            ("shared_pages", Cell::Count(self.shared_pages)),
            ("checksum_bytes", Cell::Count(self.checksum_bytes)),
            ("zero_pages", Cell::Count(self.zero_pages)),
            ("zero_page_bytes", Cell::Count(self.zero_page_bytes)),
            ("header_bytes", Cell::Count(self.header.on_disk)),
            ("header_uncompressed", Cell::Count(self.header.uncompressed)),
            ("footer_bytes", Cell::Count(self.footer.on_disk)),
            ("footer_uncompressed", Cell::Count(self.footer.uncompressed)),
            ("page_list_bytes", Cell::Count(self.page_lists.on_disk)),
            (
                "page_list_uncompressed",
                Cell::Count(self.page_lists.uncompressed),
            ),
            ("metadata_bytes", Cell::Count(self.metadata_bytes())),
            (
                "metadata_data_ratio",
                Cell::Fraction(self.metadata_data_ratio()),
            ),
            ("file_bytes", Cell::Count(self.file_bytes)),
            ("other_bytes", Cell::Count(self.other_bytes())),
        ]
    }

    /// The table of `by`: per field (subfields included), column or column type, with
    /// compression factor, pages, average page size and share of the file on every row.
    /// Fields and columns have the field's label ([`field_labels`](super::labels::field_labels)) next to its name.
    pub fn table(&self, by: By) -> Table {
        match by {
            By::Field => {
                let row_of: std::collections::HashMap<u32, usize> = self
                    .fields
                    .iter()
                    .enumerate()
                    .map(|(row, f)| (f.id, row))
                    .collect();
                Table {
                    columns: [
                        hidden("name", Some("fieldName")),
                        col("label", None, "field"),
                        col("type", Some("typeName"), "type"),
                        col("columns", Some("nColumns"), "columns"),
                    ]
                    .into_iter()
                    .chain(size_columns(true))
                    .collect(),
                    rows: self
                        .fields
                        .iter()
                        .map(|f| {
                            let head = [
                                Cell::Text(f.name.clone()),
                                Cell::Text(f.label.clone()),
                                Cell::Text(f.type_name.clone()),
                                Cell::Count(f.columns as u64),
                            ];
                            self.row(head, f.compressed, f.uncompressed, f.pages)
                        })
                        .collect(),
                    parents: self
                        .fields
                        .iter()
                        .map(|f| f.parent.and_then(|p| row_of.get(&p).copied()))
                        .collect(),
                    rest: None,
                }
            }
            By::Column => Table {
                columns: [
                    col("id", Some("columnId"), "id"),
                    hidden("field", Some("fieldName")),
                    col("label", None, "field"),
                    col("type", Some("columnType"), "type"),
                    col("elements", Some("nElements"), "elements"),
                ]
                .into_iter()
                .chain(size_columns(true))
                .collect(),
                rows: self
                    .columns
                    .iter()
                    .map(|c| {
                        let head = [
                            Cell::Count(c.id.into()),
                            Cell::Text(c.field.clone()),
                            Cell::Text(c.label.clone()),
                            Cell::Text(c.column_type.clone()),
                            Cell::Count(c.elements),
                        ];
                        self.row(head, c.compressed, c.uncompressed, c.pages)
                    })
                    .collect(),
                parents: vec![None; self.columns.len()],
                rest: None,
            },
            // ROOT's PrintColumnTypeInfo columns, in its order; the CSV has only those.
            By::Type => Table {
                columns: [
                    col("type", Some("columnType"), "column type"),
                    col("count", Some("count"), "count"),
                    col("elements", Some("nElements"), "elements"),
                ]
                .into_iter()
                .chain(size_columns(false))
                .collect(),
                rows: self
                    .types
                    .iter()
                    .map(|t| {
                        let head = [
                            Cell::Text(t.column_type.clone()),
                            Cell::Count(t.count),
                            Cell::Count(t.elements),
                        ];
                        self.row(head, t.compressed, t.uncompressed, t.pages)
                    })
                    .collect(),
                parents: vec![None; self.types.len()],
                rest: None,
            },
        }
    }

    /// The table of `by` with its rows ordered by `sort` (as [`Inspection::table`]
    /// without) and, with `top`, only the first `top` rows (by compressed size when
    /// `sort` is `None`), the others summed in [`Table::rest`]. Per field, rows are
    /// sorted among their siblings, subfields staying under their parent; with `top`,
    /// only top-level fields are rows (their figures include their subfields'), so that
    /// the rows and the rest add up to the whole RNTuple.
    pub fn arranged_table(&self, by: By, sort: Option<SortKey>, top: Option<usize>) -> Table {
        let table = self.table(by);
        let Some(top) = top else {
            return match sort {
                Some(key) => {
                    let order = table.tree_order(key);
                    table.reordered(&order)
                }
                None => table,
            };
        };
        let key = sort.unwrap_or(SortKey::Size);
        let mut order: Vec<usize> = (0..table.rows.len())
            .filter(|&i| table.parents.get(i).copied().flatten().is_none())
            .collect();
        order.sort_by(|&a, &b| table.compare(key, a, b));
        let left_out = order.split_off(top.min(order.len()));
        let rest = (!left_out.is_empty()).then(|| self.rest(by, &table, &left_out));
        let mut kept = table.reordered(&order);
        kept.rest = rest;
        kept
    }

    /// The rows `rows` of `table` (of `by`) summed.
    fn rest(&self, by: By, table: &Table, rows: &[usize]) -> Rest {
        let sum = |name: &str| {
            rows.iter()
                .map(|&r| table.count(r, name))
                .fold(0, u64::saturating_add)
        };
        let n = rows.len() as u64;
        let what = format!("... {n} more {}", by.rows(n));
        let (compressed, uncompressed, pages) =
            (sum("compressed"), sum("uncompressed"), sum("pages"));
        let names: &[&str] = match by {
            By::Field => &["name", "label"],
            By::Column => &["field", "label"],
            By::Type => &["type"],
        };
        let cells = table
            .columns
            .iter()
            .map(|c| match c.name {
                name if names.contains(&name) => Cell::Text(what.clone()),
                "compression_factor" => Cell::Factor {
                    uncompressed,
                    compressed,
                },
                "average_page_size" => Cell::Average(average(compressed, pages)),
                "share" => Cell::Fraction(self.file_share(compressed)),
                name @ ("columns" | "count" | "elements" | "compressed" | "uncompressed"
                | "pages") => Cell::Count(sum(name)),
                _ => Cell::Empty,
            })
            .collect();
        Rest { rows: n, cells }
    }

    /// A table row: `head`, then the cells of [`size_columns`].
    fn row<const N: usize>(
        &self,
        head: [Cell; N],
        compressed: u64,
        uncompressed: u64,
        pages: u64,
    ) -> Vec<Cell> {
        head.into_iter()
            .chain([
                Cell::Count(compressed),
                Cell::Count(uncompressed),
                Cell::Factor {
                    uncompressed,
                    compressed,
                },
                Cell::Count(pages),
                Cell::Average(average(compressed, pages)),
                Cell::Fraction(self.file_share(compressed)),
            ])
            .collect()
    }
}

/// The columns every table ends with (ROOT's `PrintColumnTypeInfo` order); the
/// average page size and the share of the file are in the CSV when `all_in_csv`.
fn size_columns(all_in_csv: bool) -> [TableColumn; 6] {
    let extra = |name| if all_in_csv { Some(name) } else { None };
    [
        col("compressed", Some("compressedSize"), "compressed B"),
        col("uncompressed", Some("uncompressedSize"), "uncompressed B"),
        col("compression_factor", Some("compressionFactor"), "factor"),
        col("pages", Some("nPages"), "pages"),
        col("average_page_size", extra("averagePageSize"), "avg page B"),
        col("share", extra("fileShare"), "% of file"),
    ]
}
