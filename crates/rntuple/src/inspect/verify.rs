//! Verifying files: every RNTuple of a file opened (envelopes and their checksums), its
//! structure checked against itself (clusters contiguous, column element ranges
//! consistent from cluster to cluster, page locators inside the file), and every page
//! read, its checksum checked and every value decoded.

use crate::container::RootFile;
use crate::error::{Error, Result};
use crate::io::{open_source, ObjectDataset, SourceOptions};
use crate::read::{dataset_objects, RNTupleReader};

/// What verifying one RNTuple found.
#[derive(Debug, Clone, PartialEq)]
pub struct RNTupleCheck {
    /// The RNTuple's path in the file.
    pub name: String,
    /// Entries (as the footer says).
    pub entries: u64,
    /// Clusters.
    pub clusters: usize,
    /// Pages read (suppressed columns excepted).
    pub pages: u64,
    /// Bytes of those pages on storage.
    pub page_bytes: u64,
    /// Problems found, each saying where; empty when the RNTuple is good.
    pub problems: Vec<String>,
}

/// What verifying one file found.
#[derive(Debug, Clone, PartialEq)]
pub struct FileCheck {
    /// The file (path or URL).
    pub file: String,
    /// Its RNTuples.
    pub rntuples: Vec<RNTupleCheck>,
    /// Problems of the file itself (unreadable, no RNTuple).
    pub problems: Vec<String>,
}

impl FileCheck {
    /// Whether nothing was found wrong.
    pub fn is_good(&self) -> bool {
        self.problems.is_empty() && self.rntuples.iter().all(|r| r.problems.is_empty())
    }

    /// Every problem, each prefixed with its RNTuple's name.
    pub fn all_problems(&self) -> Vec<String> {
        let mut out = self.problems.clone();
        for r in &self.rntuples {
            out.extend(
                r.problems
                    .iter()
                    .map(|p| format!("RNTuple \"{}\": {p}", r.name)),
            );
        }
        out
    }
}

/// Verifies every RNTuple of the file at `location` (a path or URL). Never fails: what
/// cannot be read is a problem of the report.
pub fn verify_file(location: &str) -> FileCheck {
    let mut check = FileCheck {
        file: location.to_string(),
        rntuples: Vec::new(),
        problems: Vec::new(),
    };
    if crate::io::is_object_layout(location) || crate::io::is_daos(location) {
        // A dataset of objects (its one RNTuple), or DAOS's `daos://POOL/CONTAINER:NAME`.
        let (dataset, name) = crate::io::split_target(location);
        let opened = RNTupleReader::open_path(&dataset, name.as_deref());
        let anchored = opened.is_ok();
        let name = opened
            .as_ref()
            .map_or(String::new(), |r| r.path().to_string());
        check.rntuples.push(verify_reader(opened, &name));
        if anchored && crate::io::is_object_layout(&dataset) {
            // Objects under the prefix that the anchor does not reference.
            let found = SourceOptions::current()
                .and_then(|options| ObjectDataset::open(&dataset, &options, false))
                .map_err(Error::from)
                .and_then(|d| dataset_objects(&d).map(|o| o.leftover_note(&dataset)));
            match found {
                Ok(note) => check.problems.extend(note),
                Err(e) => check.problems.push(format!("listing its objects: {e}")),
            }
        }
        return check;
    }
    let file = match open_source(location)
        .map_err(Error::from)
        .and_then(RootFile::open)
    {
        Ok(f) => f,
        Err(e) => {
            // The report names the file already.
            let text = e.to_string();
            let named = format!("file {location}: ");
            check
                .problems
                .push(text.strip_prefix(&named).unwrap_or(&text).to_string());
            return check;
        }
    };
    let entries = match file.anchor_entries() {
        Ok(e) => e,
        Err(e) => {
            check.problems.push(e.to_string());
            return check;
        }
    };
    if entries.is_empty() {
        check.problems.push("the file holds no RNTuple".to_string());
    }
    for entry in entries {
        check.rntuples.push(verify_rntuple(&file, &entry.path));
    }
    check
}

/// What [`repair_dataset`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetRepair {
    /// The ids of the objects removed (stored under the prefix, referenced by no anchor).
    pub removed: Vec<u64>,
    /// Whether the dataset has an anchor (without one, every object was a leftover).
    pub anchored: bool,
    /// Files of puts that did not finish, removed (a directory store's temporary files).
    pub unfinished: u64,
}

/// Removes the objects under the prefix of the dataset at `location` (an object-store
/// layout URL, `[:NAME]` allowed) that its anchor does not reference: those left by
/// writers that did not finish (every object when there is no anchor). Referenced
/// objects are never touched: the anchor is read before and after taking stock, and a
/// change (a write finishing meanwhile) stops the repair, as does a referenced object
/// missing from the listing (a listing that cannot be trusted). Run it when no write to
/// the dataset is in progress: a write's objects are leftovers until its anchor is
/// stored (that write then fails, and the dataset stays as it was). A writer that was
/// killed counts as in progress for a moment after: a server still carries out the
/// requests it had sent whole (late on a loaded server, its anchor among them).
pub fn repair_dataset(location: &str) -> Result<DatasetRepair> {
    let (url, _) = crate::io::split_target(location);
    if !crate::io::is_object_layout(&url) {
        return Err(Error::InvalidArgument(format!(
            "{location}: --repair removes leftover objects of object-store datasets \
             (ntpl+s3+http(s)://, ntpl+file://); a file has none"
        )));
    }
    repair_objects(&ObjectDataset::open(
        &url,
        &SourceOptions::current()?,
        false,
    )?)
}

/// [`repair_dataset`] of an opened dataset.
pub fn repair_objects(dataset: &ObjectDataset) -> Result<DatasetRepair> {
    let url = dataset.url();
    let anchor = |d: &ObjectDataset| {
        d.store().size_of(d.anchor_key()).and_then(|size| {
            size.map(|_| d.store().get(d.anchor_key(), None))
                .transpose()
        })
    };
    let before = anchor(dataset)?;
    let objects = dataset_objects(dataset)?;
    if anchor(dataset)? != before {
        return Err(Error::Io(crate::io::Error::Write {
            what: format!("{url} (repairing it)"),
            source: std::io::Error::other(
                "the anchor changed while the objects were counted (a write finished \
                 meanwhile?): nothing removed; run the repair again",
            ),
        }));
    }
    let missing = objects.missing();
    if let Some(first) = missing.first() {
        return Err(Error::corrupt(
            url,
            format!(
                "{} objects the anchor references are not listed (the first: object {first}): \
                 nothing removed, the listing cannot be trusted",
                missing.len()
            ),
        ));
    }
    let removed = objects.leftovers();
    let keys: Vec<String> = removed.iter().map(|&n| dataset.object_key(n)).collect();
    crate::write::delete_objects(dataset.store().as_ref(), &keys)?;
    let unfinished = dataset
        .store()
        .remove_unfinished(&format!("{}/", dataset.anchor_key()))?;
    Ok(DatasetRepair {
        removed,
        anchored: objects.anchored,
        unfinished,
    })
}

fn verify_rntuple(file: &RootFile, path: &str) -> RNTupleCheck {
    verify_reader(RNTupleReader::open(file, Some(path)), path)
}

/// Checks the RNTuple `path` as opened: its structure, then every page.
fn verify_reader(opened: crate::error::Result<RNTupleReader>, path: &str) -> RNTupleCheck {
    let mut check = RNTupleCheck {
        name: path.to_string(),
        entries: 0,
        clusters: 0,
        pages: 0,
        page_bytes: 0,
        problems: Vec::new(),
    };
    let reader = match opened {
        Ok(r) => r,
        Err(e) => {
            check.problems.push(e.to_string());
            return check;
        }
    };
    check
        .problems
        .extend(structure_problems(&reader, reader.source().size()));
    let d = reader.descriptor();
    check.entries = d.n_entries;
    check.clusters = d.clusters.len();
    for c in &d.clusters {
        for col in &c.columns {
            check.pages += col.pages.len() as u64;
            check.page_bytes += col.pages.iter().map(|p| p.locator.size).sum::<u64>();
        }
    }
    if !check.problems.is_empty() {
        return check;
    }
    // Every page of every column, cluster by cluster: checksums and decoding. One
    // planned stream over the clusters (a remote file's pages fetched ahead, many
    // clusters to a request); after a bad cluster, a new stream from the next one.
    let ranges: Vec<std::ops::Range<u64>> = d
        .clusters
        .iter()
        .map(|c| c.first_entry..c.first_entry.saturating_add(c.n_entries))
        .collect();
    let mut next = 0;
    while next < ranges.len() {
        let start = next;
        let batches = match reader.read_ranges(None, ranges[start..].to_vec()) {
            Ok(batches) => batches,
            Err(e) => {
                check
                    .problems
                    .push(format!("cluster {}: {e}", d.clusters[start].id));
                next = start + 1;
                continue;
            }
        };
        next = ranges.len();
        for (i, batch) in batches.enumerate() {
            if let Err(e) = batch {
                check
                    .problems
                    .push(format!("cluster {}: {e}", d.clusters[start + i].id));
                next = start + i + 1;
                break;
            }
        }
    }
    for set in &d.attribute_sets {
        if let Err(e) = reader
            .attribute_set(&set.name)
            .and_then(|a| a.read(None, 0..a.num_entries()).map(|_| ()))
        {
            check
                .problems
                .push(format!("attribute set \"{}\": {e}", set.name));
        }
    }
    check
}

/// Cluster groups whose entry range in the footer is not the range of their clusters
/// (ROOT takes the RNTuple's entries from the groups' spans and aborts reading past the
/// clusters; this reader takes them from the clusters), or that do not follow each other.
fn cluster_group_problems(d: &crate::schema::Descriptor) -> Vec<String> {
    let mut out = Vec::new();
    // Per group, in one pass over the clusters: its first entry and its entries.
    let mut held: Vec<(Option<u64>, u64)> = vec![(None, 0); d.cluster_groups.len()];
    for c in &d.clusters {
        if let Some((first, entries)) = held.get_mut(c.group) {
            *first = Some(first.map_or(c.first_entry, |f| f.min(c.first_entry)));
            *entries = entries.saturating_add(c.n_entries);
        }
    }
    let mut next_entry = 0u64;
    let mut groups: Vec<(usize, &crate::schema::ClusterGroupDescriptor)> =
        d.cluster_groups.iter().enumerate().collect();
    groups.sort_by_key(|(_, g)| g.min_entry);
    for (g, group) in groups {
        let (first, entries) = held[g];
        if group.entry_span != entries || first.is_some_and(|f| f != group.min_entry) {
            out.push(format!(
                "cluster group {g}: the footer gives entries {}..{} ({} entries), its clusters hold {entries} from entry {}",
                group.min_entry,
                group.min_entry.saturating_add(group.entry_span),
                group.entry_span,
                first.unwrap_or(group.min_entry)
            ));
        } else if group.entry_span > 0 && group.min_entry != next_entry {
            out.push(format!(
                "cluster group {g} starts at entry {}, the groups before it end at {next_entry}",
                group.min_entry
            ));
        }
        next_entry = next_entry.max(group.min_entry.saturating_add(group.entry_span));
    }
    out
}

/// Structure problems: clusters that do not follow each other, a column whose elements
/// do not continue from one cluster to the next, pages outside the file.
fn structure_problems(reader: &RNTupleReader, file_size: u64) -> Vec<String> {
    let d = reader.descriptor();
    let mut out = Vec::new();
    let mut next_entry = 0u64;
    let mut next_element: Vec<Option<u64>> = vec![None; d.columns.len()];
    for c in &d.clusters {
        if c.first_entry != next_entry {
            out.push(format!(
                "cluster {} starts at entry {}, the cluster before it ends at {next_entry}",
                c.id, c.first_entry
            ));
        }
        next_entry = c.first_entry.saturating_add(c.n_entries);
        for (id, col) in c.columns.iter().enumerate() {
            let Some(first) = col.element_offset else {
                continue;
            };
            if let Some(Some(expected)) = next_element.get(id) {
                if first != *expected {
                    out.push(format!(
                        "cluster {}, column {id}: elements start at {first}, the clusters \
                         before end at {expected}",
                        c.id
                    ));
                }
            }
            if let Some(slot) = next_element.get_mut(id) {
                *slot = Some(first.saturating_add(col.n_elements()));
            }
            for (i, p) in col.pages.iter().enumerate() {
                let end = p
                    .locator
                    .offset
                    .checked_add(p.locator.size)
                    .and_then(|e| e.checked_add(if p.has_checksum { 8 } else { 0 }));
                if end.is_none_or(|e| e > file_size) {
                    out.push(format!(
                        "cluster {}, column {id}, page {i}: at byte offset {} with {} \
                         bytes, past the end of the file ({file_size} bytes)",
                        c.id, p.locator.offset, p.locator.size
                    ));
                }
            }
        }
    }
    out.extend(cluster_group_problems(d));
    if next_entry != d.n_entries {
        out.push(format!(
            "the clusters hold {next_entry} entries, the footer says {}",
            d.n_entries
        ));
    }
    out
}

/// Verifies every file, in parallel; the reports in the order of `locations`.
pub fn verify_files(locations: &[String]) -> Vec<FileCheck> {
    use rayon::prelude::*;
    locations.par_iter().map(|l| verify_file(l)).collect()
}
