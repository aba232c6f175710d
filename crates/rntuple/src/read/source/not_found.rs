//! The errors of opening an RNTuple by name that is not there, saying so when the name
//! (or the file) holds a TTree instead, and how to convert it. TTrees are found by the
//! class of their keys only (`container`), without reading them.

use crate::container::RootFile;
use crate::error::Error;

/// The key class of a TTree.
const TTREE_CLASS: &str = "TTree";

/// The paths of the file's TTrees (none when the keys cannot be listed: the hint is
/// then left out, the error stays the RNTuple's).
fn tree_paths(file: &RootFile) -> Vec<String> {
    file.entries_of_class(&[TTREE_CLASS])
        .map(|entries| entries.into_iter().map(|e| e.path).collect())
        .unwrap_or_default()
}

/// How to convert the TTree at `path` of the file `file_name`.
fn convert_hint(file_name: &str, path: &str) -> String {
    format!(
        "convert it with: rntuple convert {file_name}:{path} OUT.root (Python: rntuple.convert(\"{file_name}:{path}\", \"out.root\"))"
    )
}

/// The error for the RNTuple `name` not found in `file`: a TTree of that name (its path,
/// or a bare name unique among the file's TTrees) is named as such, with the command
/// that converts it.
pub(super) fn no_rntuple_named(file: &RootFile, name: &str) -> Error {
    let file_name = file.source().name();
    let wanted = name.trim_start_matches('/');
    let trees = tree_paths(file);
    let exact = trees.iter().find(|p| p.as_str() == wanted);
    let by_name: Vec<&String> = trees
        .iter()
        .filter(|p| p.rsplit('/').next() == Some(wanted))
        .collect();
    let tree = exact.or(match by_name.as_slice() {
        [one] => Some(*one),
        _ => None,
    });
    match tree {
        Some(path) => Error::NotFound(format!(
            "\"{wanted}\" in {file_name} is a TTree, not an RNTuple; {}",
            convert_hint(file_name, path)
        )),
        None if trees.is_empty() => {
            let rntuples: Vec<String> = file
                .rntuple_anchors()
                .map(|anchors| anchors.into_iter().map(|a| a.path).collect())
                .unwrap_or_default();
            let hint = match crate::error::did_you_mean(wanted, rntuples.iter().map(String::as_str)) {
                Some(hint) => format!("; {hint}"),
                None if rntuples.is_empty() => String::new(),
                None => format!(" (it holds {})", quoted(&rntuples)),
            };
            Error::NotFound(format!("no RNTuple named \"{name}\" in {file_name}{hint}"))
        }
        None => Error::NotFound(format!(
            "no RNTuple named \"{name}\" in {file_name} (it holds the TTree{} {}; convert one with: rntuple convert {file_name}:TREE OUT.root)",
            if trees.len() == 1 { "" } else { "s" },
            trees.join(", ")
        )),
    }
}

/// Names in quotes, separated by commas.
fn quoted(names: &[String]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("\"{n}\"")).collect();
    quoted.join(", ")
}

/// The error for a file without any RNTuple: when it holds TTrees, it names them and
/// says how to convert them.
pub(super) fn no_rntuple(file: &RootFile) -> Error {
    let file_name = file.source().name();
    let trees = tree_paths(file);
    match trees.as_slice() {
        [] => Error::NotFound(format!("{file_name} holds no RNTuple")),
        [one] => Error::NotFound(format!(
            "{file_name} holds no RNTuple but a TTree, \"{one}\"; {}",
            convert_hint(file_name, one)
        )),
        many => Error::NotFound(format!(
            "{file_name} holds no RNTuple but TTrees ({}); convert one with: rntuple convert {file_name}:TREE OUT.root (Python: rntuple.convert(\"{file_name}:TREE\", \"out.root\"))",
            many.join(", ")
        )),
    }
}
