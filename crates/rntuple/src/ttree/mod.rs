//! The TTree reader: ROOT's row-wise-then-columnar predecessor of RNTuple, read from the
//! same container, without ROOT.
//!
//! A TTree is a key of class `TTree` whose object ([`Tree`], [`parse_tree`]) lists
//! branches; each branch has leaves (typed values) and a table of baskets
//! ([`read_basket`]), each basket a key of its own holding a range of entries, compressed
//! like any key. A [`ChunkReader`] gathers a branch's entries over an entry range from its
//! baskets; [`LeafType`] turns plain leaves' values into Arrow, and [`Streamed`] with a
//! [`StreamCursor`] the streamed values of `TBranchElement`s (STL collections, strings,
//! objects, whose layouts a [`TypeResolver`] reads from the file's [`StreamerInfo`]s).
//! Used by the conversion to RNTuple (`import`).

mod basket;
mod chunk;
mod encode;
mod meta;
mod object_reader;
mod streamer_info_parse;
mod type_layout;
mod value_decode;
mod values;

pub use basket::Basket;
pub use chunk::{read_basket, BranchChunk, ChunkReader};
pub use encode::{encode, restreamable, with_class_header};
pub use meta::{parse_tree, Branch, ElementInfo, Leaf, Tree};
pub use streamer_info_parse::{
    parse_streamer_info_object, parse_streamer_infos, StreamerElement, StreamerInfo,
};
pub use type_layout::{
    ClassKind, ClassLayout, Collection, Streamed, TypeResolver, TOBJECT_ALLOCATION_BITS,
};
pub use value_decode::{Builder, EntryHeader, StreamCursor};
pub use values::{leaf_array, LeafType, RealPacking};

use crate::container::{KeyEntry, RootFile};
use crate::error::{Error, Result};
use crate::io::{open_source, Source};

/// Class names of TTree keys read as TTrees.
pub const TREE_CLASS_NAMES: [&str; 1] = ["TTree"];

/// A ROOT file opened to read its TTrees.
#[derive(Debug)]
pub struct TreeFile {
    file: RootFile,
}

/// A TTree found in a file, before its branches are read in full.
#[derive(Debug, Clone, PartialEq)]
pub struct TreeSummary {
    /// The tree's path in the file (`"dir/sub/name"`).
    pub path: String,
    /// Number of entries.
    pub entries: u64,
    /// Number of top-level branches.
    pub branches: usize,
    /// Number of branches at every level.
    pub all_branches: usize,
}

impl TreeFile {
    /// Opens the ROOT file at `location` (a path or URL).
    pub fn open_path(location: &str) -> Result<TreeFile> {
        TreeFile::open(open_source(location)?)
    }

    /// Opens a ROOT file from a byte source.
    pub fn open(source: Source) -> Result<TreeFile> {
        Ok(TreeFile {
            file: RootFile::open(source)?,
        })
    }

    /// The container.
    pub fn root_file(&self) -> &RootFile {
        &self.file
    }

    /// The byte source.
    pub fn source(&self) -> &Source {
        self.file.source()
    }

    /// The TTree keys of every directory (the highest cycle of each name).
    pub fn tree_entries(&self) -> Result<Vec<KeyEntry>> {
        self.file.entries_of_class(&TREE_CLASS_NAMES)
    }

    /// Every TTree with its entry and branch counts.
    pub fn trees(&self) -> Result<Vec<TreeSummary>> {
        self.tree_entries()?
            .iter()
            .map(|e| {
                let tree = self.load(e)?;
                Ok(TreeSummary {
                    path: e.path.clone(),
                    entries: tree.entries,
                    branches: tree.branches.len(),
                    all_branches: tree.all_branches().len(),
                })
            })
            .collect()
    }

    /// Reads the tree of key `entry`.
    pub fn load(&self, entry: &KeyEntry) -> Result<Tree> {
        let what = format!(
            "TTree \"{}\" (key at byte offset {}) in {}",
            entry.path,
            entry.key.seek_key,
            self.source().name()
        );
        let object = self.file.read_object(&entry.key)?;
        parse_tree(&object, u32::from(entry.key.key_len), &what)
    }

    /// The tree at `name_or_path` (a path such as `"dir/name"` or a bare name unique in
    /// the file), or the only tree of the file when `None`.
    pub fn tree(&self, name_or_path: Option<&str>) -> Result<(String, Tree)> {
        let entry = self.find(name_or_path)?;
        let tree = self.load(&entry)?;
        Ok((entry.path, tree))
    }

    fn find(&self, name_or_path: Option<&str>) -> Result<KeyEntry> {
        let all = self.tree_entries()?;
        let paths = || {
            let p: Vec<&str> = all.iter().map(|e| e.path.as_str()).collect();
            if p.is_empty() {
                "none".to_string()
            } else {
                p.join(", ")
            }
        };
        let Some(wanted) = name_or_path.map(|n| n.trim_start_matches('/')) else {
            return match all.as_slice() {
                [one] => Ok(one.clone()),
                [] => Err(self.no_tree()),
                _ => Err(Error::InvalidArgument(format!(
                    "{} holds several TTrees ({}): name one as FILE:TREE",
                    self.source().name(),
                    paths()
                ))),
            };
        };
        if let Some(e) = all.iter().find(|e| e.path == wanted) {
            return Ok(e.clone());
        }
        let matches: Vec<&KeyEntry> = all
            .iter()
            .filter(|e| e.path.rsplit('/').next() == Some(wanted))
            .collect();
        match matches.as_slice() {
            [e] => Ok((*e).clone()),
            [] if all.is_empty() => Err(self.no_tree()),
            [] => {
                let names = all.iter().map(|e| e.path.as_str());
                let hint = crate::error::did_you_mean(wanted, names)
                    .map(|h| format!("; {h}"))
                    .unwrap_or_default();
                Err(Error::NotFound(format!(
                    "no TTree \"{wanted}\" in {} (it has: {}){hint}",
                    self.source().name(),
                    paths()
                )))
            }
            _ => Err(Error::InvalidArgument(format!(
                "TTree name \"{wanted}\" is ambiguous in {}: {}",
                self.source().name(),
                paths()
            ))),
        }
    }

    /// The error for a file without a TTree: one that holds RNTuples already says so.
    fn no_tree(&self) -> Error {
        let name = self.source().name();
        match self.file.rntuple_anchors() {
            Ok(anchors) if !anchors.is_empty() => {
                let paths: Vec<String> =
                    anchors.iter().map(|a| format!("\"{}\"", a.path)).collect();
                Error::NotFound(format!(
                    "{name} holds no TTree but RNTuple{} {}: it needs no conversion",
                    if paths.len() == 1 { "" } else { "s" },
                    paths.join(", ")
                ))
            }
            _ => Error::NotFound(format!("{name} holds no TTree")),
        }
    }

    /// The streamer infos of the file: the layout of every class stored in it.
    pub fn streamer_infos(&self) -> Result<Vec<StreamerInfo>> {
        let header = self.file.header();
        if header.seek_info == 0 {
            return Ok(Vec::new());
        }
        let key = self.file.key_at(header.seek_info)?;
        let object = self.file.read_object(&key)?;
        parse_streamer_infos(
            &object,
            u32::from(key.key_len),
            &format!("streamer infos of {}", self.source().name()),
        )
    }
}
