//! `rntuple ls FILE...` and `rntuple info TARGET...`: one line per RNTuple (and TTree)
//! of each file, its names cut short for files of thousands of fields; the description
//! of each target. Several files each get a `== FILE ==` header (as `head` does), and
//! one that fails is reported, naming it, while the others are still listed.

use super::Failure;
use crate::trees;
use rntuple::container::RootFile;
use rntuple::error::printable;
use rntuple::read::RNTupleReader;
use rntuple_io::{open_source, split_target};
use std::io::Write;

/// The most field (branch) names an `ls` line lists.
pub(crate) const LS_NAMES: usize = 10;

/// The names of an `ls` line: all of them up to [`LS_NAMES`], else the first ones and
/// how many more there are, with the command that lists them (`rntuple info TARGET`).
pub(crate) fn name_list(names: &[&str], target: &str) -> String {
    if names.len() <= LS_NAMES {
        return names.join(", ");
    }
    format!(
        "{}, ... ({} more; rntuple info {target} shows them all)",
        names[..LS_NAMES].join(", "),
        names.len() - LS_NAMES
    )
}

/// Runs `each` on every one of `files`: for one file, just that; for several, each
/// after a `== FILE ==` header (a blank line between files), a failure reported on
/// standard error naming its file and the next file listed, the command failing at the
/// end if any file did.
pub(crate) fn each<W: Write>(
    files: &[String],
    out: &mut W,
    mut each: impl FnMut(&str, &mut W) -> Result<(), Failure>,
) -> Result<(), Failure> {
    if let [one] = files {
        return each(one, out);
    }
    let mut failed = Vec::new();
    for (k, file) in files.iter().enumerate() {
        if k > 0 {
            writeln!(out)?;
        }
        writeln!(out, "== {file} ==")?;
        let failure = match each(file, out) {
            Ok(()) => continue,
            // The output itself failed (a closed pipe): nothing more can be listed.
            Err(Failure::Output(e)) => return Err(Failure::Output(e)),
            Err(failure) => failure,
        };
        failed.push(file.as_str());
        out.flush()?;
        failure.report_input(&split_target(file).0);
    }
    out.flush()?;
    if !failed.is_empty() {
        return Err(Failure::Bad(format!(
            "{} of {} files failed: {}",
            failed.len(),
            files.len(),
            failed.join(", ")
        )));
    }
    Ok(())
}

/// `ls` of one file: a line per RNTuple (path, entries, fields), then per TTree, and
/// on standard error how to convert the TTrees.
pub(crate) fn ls(file: &str, out: &mut impl Write) -> Result<(), Failure> {
    if rntuple_io::is_object_layout(file) || rntuple_io::is_daos(file) {
        // A dataset of objects holds one RNTuple; DAOS's is named: daos://POOL/CONT:NAME.
        let (dataset, name) = split_target(file);
        let reader = RNTupleReader::open_path(&dataset, name.as_deref())?;
        let d = reader.descriptor();
        let names: Vec<&str> = d.top_level.iter().map(|&id| d.field(id).name()).collect();
        writeln!(
            out,
            "{}\t{} entries\t{} fields: {}",
            printable(reader.path()),
            d.n_entries,
            names.len(),
            printable(&name_list(&names, file))
        )?;
        return Ok(());
    }
    let root = RootFile::open(open_source(file)?)?;
    let anchors = root.rntuple_anchors()?;
    for anchor in &anchors {
        let reader = RNTupleReader::open(&root, Some(&anchor.path))?;
        let d = reader.descriptor();
        let names: Vec<&str> = d.top_level.iter().map(|&id| d.field(id).name()).collect();
        writeln!(
            out,
            "{}\t{} entries\t{} fields: {}",
            printable(&anchor.path),
            d.n_entries,
            names.len(),
            printable(&name_list(&names, &format!("{file}:{}", anchor.path)))
        )?;
    }
    let tree_file = rntuple::ttree::TreeFile::open(root.source().clone())?;
    let trees = trees::all_trees(&tree_file)?;
    if anchors.is_empty() && trees.is_empty() {
        return Err(Failure::Input(rntuple::Error::NotFound(format!(
            "{file} holds no RNTuple and no TTree"
        ))));
    }
    for (path, tree) in &trees {
        writeln!(out, "{}", trees::ls_line(file, path, tree))?;
    }
    if !trees.is_empty() {
        out.flush()?;
        let only = match trees.as_slice() {
            [(path, _)] => Some(path.as_str()),
            _ => None,
        };
        eprintln!("convert a TTree with: {}", trees::convert_hint(file, only));
    }
    Ok(())
}

/// `info` of one target (`FILE[:NAME]`): the RNTuple's description (with `stats`, what
/// opening it cost), or the TTree's when there is no such RNTuple.
pub(crate) fn info(target: &str, stats: bool, out: &mut impl Write) -> Result<(), Failure> {
    let (file, name) = split_target(target);
    let start = std::time::Instant::now();
    let reader = match RNTupleReader::open_path(&file, name.as_deref()) {
        Ok(reader) => reader,
        Err(e)
            if matches!(e.root_cause(), rntuple::Error::NotFound(_))
                && !rntuple_io::is_object_layout(&file)
                && !rntuple_io::is_daos(&file) =>
        {
            // A TTree of that name, or the file's TTrees when it holds no RNTuple.
            if trees::info(&file, name.as_deref(), out)? {
                out.flush()?;
                return Ok(());
            }
            return Err(e.into());
        }
        Err(e) => return Err(e.into()),
    };
    let seconds = start.elapsed().as_secs_f64();
    out.write_all(rntuple::read::describe(&reader).as_bytes())?;
    if rntuple_io::is_object_layout(&file) {
        // Objects under the prefix that no anchor references.
        let dataset =
            rntuple_io::ObjectDataset::open(&file, &rntuple_io::SourceOptions::current()?, false)?;
        if let Some(note) = rntuple::read::dataset_objects(&dataset)?.leftover_note(&file) {
            writeln!(out, "leftover objects: {note}")?;
        }
    }
    if stats {
        let io = reader.metrics().io;
        writeln!(
            out,
            "opening: {} requests ({} vectored), {} ranges, {} bytes read, {:.1} ms",
            io.requests,
            io.vector_requests,
            io.ranges,
            io.bytes_read,
            seconds * 1e3
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_name_lists_are_cut_after_ten() {
        let names: Vec<String> = (0..854).map(|k| format!("f{k}")).collect();
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        assert_eq!(
            name_list(&names, "a.root:Events"),
            "f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, ... (844 more; rntuple info a.root:Events shows them all)"
        );
        assert_eq!(
            name_list(&names[..10], "a.root:Events"),
            names[..10].join(", ")
        );
        assert_eq!(name_list(&[], "a.root:Events"), "");
    }
}
