//! The TTree's metadata as streamed in its key: the tree, its branches (`TBranch`,
//! `TBranchElement`) and their leaves (`TLeaf*`), with where each branch's baskets are.
//!
//! Class versions are those ROOT 6 writes (`TTree` 20, `TBranch` 12-13, `TBranchElement`
//! 10, `TLeaf` 2); members are read in the order of their streamer info, and byte counts
//! skip what is not needed (attributes, leaf minima and maxima, indices, friends).

use super::basket::{parse_embedded_basket, Basket};
use super::object_reader::{ArrayItem, ObjectReader, Pointer};
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::sync::Arc;

/// A leaf: one typed value (or fixed or variable array of values) of a branch.
#[derive(Debug, Clone, PartialEq)]
pub struct Leaf {
    /// The leaf's class (`TLeafF`, `TLeafI`, `TLeafElement`, ...).
    pub class_name: String,
    /// The leaf's name (`x`, or `x[3]` stripped to `x`).
    pub name: String,
    /// The leaf's title: its declaration, e.g. `x[nX]` or `x[3][2]`.
    pub title: String,
    /// Values per entry for fixed arrays (product of the dimensions), else 1.
    pub len: u32,
    /// Bytes per value.
    pub len_type: u32,
    /// Whether this leaf is a count leaf (another leaf's array length).
    pub is_range: bool,
    /// Whether the integer type is unsigned.
    pub is_unsigned: bool,
    /// The count leaf's name, for a variable array (`x[n]/F`).
    pub count: Option<String>,
    /// For `TLeafElement`: the element type of the streamer info (`fType`).
    pub element_type: i32,
    /// For `TLeafObject`: whether each entry names the object's class first (`fVirtual`).
    pub virtual_object: bool,
}

/// The part of a `TBranchElement` beyond `TBranch`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ElementInfo {
    /// The class holding the member this branch stores (or the branch's own class).
    pub class_name: String,
    /// The parent class name (for members of split objects).
    pub parent_name: String,
    /// The class of the elements, for a split TClonesArray or STL collection.
    pub clones_name: String,
    /// The streamer info checksum of `class_name`.
    pub checksum: u32,
    /// The class version of `class_name`.
    pub class_version: i16,
    /// The member's index in the streamer info of `class_name` (-1 for a whole object).
    pub id: i32,
    /// The branch type: 0 (object or member), -1 (unsplit object), 3/4 (TClonesArray /
    /// STL collection, holding the count), 31/41 (a member of their elements), ...
    pub branch_type: i32,
    /// The streamer element type of the member (`TVirtualStreamerInfo::EReadWrite`).
    pub streamer_type: i32,
    /// The largest number of elements of a collection branch seen while writing.
    pub maximum: i32,
    /// The branch holding this branch's element counts (for 31/41 branches).
    pub count_branch: Option<String>,
    /// For a `TBranchObject` (a `TObject` stored the old way): each entry starts with the
    /// object's class name (its `TLeafObject` is virtual), then the object.
    pub named_entries: bool,
}

/// A branch: its leaves, sub-branches and the location of its baskets.
#[derive(Debug, Clone, PartialEq)]
pub struct Branch {
    /// The branch's class (`TBranch`, `TBranchElement`, ...).
    pub class_name: String,
    /// The branch's full name (sub-branches carry their parent's prefix as ROOT stores it).
    pub name: String,
    /// The branch's title (for a leaf branch: the leaf list, e.g. `x[n]/F`).
    pub title: String,
    /// Compression setting of the branch's baskets.
    pub compress: i32,
    /// Entries per basket's entry-offset table when entries vary in size (0: fixed size).
    pub entry_offset_len: i32,
    /// Split level.
    pub split_level: i32,
    /// Number of entries.
    pub entries: u64,
    /// Bytes of its baskets before compression (key headers included).
    pub tot_bytes: u64,
    /// Bytes of its baskets on disk.
    pub zip_bytes: u64,
    /// The leaves.
    pub leaves: Vec<Leaf>,
    /// Sub-branches.
    pub branches: Vec<Branch>,
    /// Per basket written: its size on disk (key included).
    pub basket_bytes: Vec<u32>,
    /// Per basket written: its first entry; one more element gives the end.
    pub basket_entry: Vec<u64>,
    /// Per basket written: the file offset of its key.
    pub basket_seek: Vec<u64>,
    /// Baskets kept in the tree's own key (written with the tree's metadata rather than
    /// as keys of their own: a tree saved before its last baskets were flushed), after
    /// the baskets written; `basket_entry` has their first entries too.
    pub embedded: Vec<Arc<Basket>>,
    /// For `TBranchElement`: what it stores.
    pub element: Option<ElementInfo>,
}

impl Branch {
    /// The number of baskets written to the file as keys of their own.
    pub fn written_baskets(&self) -> usize {
        self.basket_seek.len()
    }

    /// The number of baskets: written ones, then the ones kept in the tree's metadata.
    pub fn basket_count(&self) -> usize {
        self.basket_seek.len() + self.embedded.len()
    }

    /// Every branch of this one's sub-tree, depth-first, this one first.
    pub fn walk(&self) -> Vec<&Branch> {
        let mut out = vec![self];
        for b in &self.branches {
            out.extend(b.walk());
        }
        out
    }
}

/// A TTree's metadata.
#[derive(Debug, Clone, PartialEq)]
pub struct Tree {
    /// The tree's name.
    pub name: String,
    /// The tree's title.
    pub title: String,
    /// Number of entries.
    pub entries: u64,
    /// Top-level branches, in order.
    pub branches: Vec<Branch>,
    /// `fAutoFlush`: entries per cluster when positive, compressed bytes per cluster when
    /// negative.
    pub auto_flush: i64,
}

impl Tree {
    /// Every branch of the tree, depth-first, in order.
    pub fn all_branches(&self) -> Vec<&Branch> {
        self.branches.iter().flat_map(|b| b.walk()).collect()
    }

    /// The branch named `name` anywhere in the tree.
    pub fn find_branch(&self, name: &str) -> Option<&Branch> {
        self.all_branches().into_iter().find(|b| b.name == name)
    }

    /// The leaf named `name` of any branch, with its branch.
    pub fn find_leaf(&self, name: &str) -> Option<(&Branch, &Leaf)> {
        self.all_branches()
            .into_iter()
            .find_map(|b| b.leaves.iter().find(|l| l.name == name).map(|l| (b, l)))
    }
}

/// Objects already read, by map position: leaves (for count-leaf references) and
/// branches (for `fBranchCount` references).
#[derive(Default)]
struct Registry {
    leaves: HashMap<u32, Leaf>,
    branches: HashMap<u32, String>,
}

/// Parses the object bytes of a TTree key (`key_len` is the key header's length, which
/// object positions count in).
pub fn parse_tree(data: &[u8], key_len: u32, what: &str) -> Result<Tree> {
    let mut r = ObjectReader::new(data, key_len, what);
    let mut registry = Registry::default();
    // Version 19 lacks fIOFeatures; older layouts (before ROOT 6.04) are not read.
    let v = r.version_of("TTree", 19..=20)?;
    let (name, title) = r.tnamed()?;
    r.skip_object("TAttLine")?;
    r.skip_object("TAttFill")?;
    r.skip_object("TAttMarker")?;
    let entries = r.non_negative_i64("TTree fEntries")?;
    // fTotBytes, fZipBytes, fSavedBytes, fFlushedBytes, fWeight.
    r.skip(40)?;
    // fTimerInterval, fScanField, fUpdate, fDefaultEntryOffsetLen.
    r.skip(16)?;
    let n_cluster_range = r.count("TTree fNClusterRange")?;
    // fMaxEntries, fMaxEntryLoop, fMaxVirtualSize, fAutoSave.
    r.skip(32)?;
    let auto_flush = r.i64()?;
    r.i64()?; // fEstimate
    r.basic_pointer_i64(n_cluster_range, "TTree fClusterRangeEnd")?;
    r.basic_pointer_i64(n_cluster_range, "TTree fClusterSize")?;
    if v.version >= 20 {
        r.skip_object("ROOT::TIOFeatures")?;
    }
    let branches = r.tobjarray(|r, item| branch_item(r, item, &mut registry))?;
    // fLeaves, fAliases, indices, friends, user info and the branch reference follow; the
    // byte count skips them.
    r.finish(v.end, "TTree")?;
    Ok(Tree {
        name,
        title,
        entries,
        branches,
        auto_flush,
    })
}

/// An element of a branch list: branches are never referenced twice.
fn branch_item(
    r: &mut ObjectReader<'_>,
    item: ArrayItem<'_>,
    registry: &mut Registry,
) -> Result<Option<Branch>> {
    match item {
        ArrayItem::Object(class, position) => parse_branch(r, class, position, registry).map(Some),
        ArrayItem::Reference(at) => {
            Err(r.corrupt(format!("a branch list refers back to the object at {at}")))
        }
    }
}

fn parse_branch(
    r: &mut ObjectReader<'_>,
    class: &str,
    position: u32,
    registry: &mut Registry,
) -> Result<Branch> {
    match class {
        "TBranch" => parse_tbranch(r, class, position, registry),
        "TBranchElement" => {
            let v = r.version_of("TBranchElement", 10..=10)?;
            let mut branch = parse_tbranch(r, class, position, registry)?;
            let class_name = r.tstring()?;
            let parent_name = r.tstring()?;
            let clones_name = r.tstring()?;
            let checksum = r.u32()?;
            let class_version = r.i16()?;
            let id = r.i32()?;
            let branch_type = r.i32()?;
            let streamer_type = r.i32()?;
            let maximum = r.i32()?;
            let count_branch = branch_pointer(r, registry)?;
            let _count2 = branch_pointer(r, registry)?;
            r.finish(v.end, "TBranchElement")?;
            branch.element = Some(ElementInfo {
                class_name,
                parent_name,
                clones_name,
                checksum,
                class_version,
                id,
                branch_type,
                streamer_type,
                maximum,
                count_branch,
                named_entries: false,
            });
            Ok(branch)
        }
        // An object deriving from TObject stored whole, the old way (ROOT makes one for a
        // TObject at split level 0): the class name; the class's version and checksum are
        // its streamer info's.
        "TBranchObject" => {
            let v = r.version_of("TBranchObject", 1..=1)?;
            let mut branch = parse_tbranch(r, class, position, registry)?;
            let class_name = r.tstring()?;
            r.finish(v.end, "TBranchObject")?;
            let named_entries = branch.leaves.first().is_some_and(|l| l.virtual_object);
            branch.element = Some(ElementInfo {
                class_name,
                id: -1,
                branch_type: -1,
                named_entries,
                ..Default::default()
            });
            Ok(branch)
        }
        other => Err(Error::Unsupported(format!(
            "branch of class {other} (only TBranch, TBranchElement and TBranchObject are read)"
        ))),
    }
}

/// A `TBranchElement*` member: the name of the branch it points to.
fn branch_pointer(r: &mut ObjectReader<'_>, registry: &mut Registry) -> Result<Option<String>> {
    match r.pointer()? {
        Pointer::Null => Ok(None),
        Pointer::Reference(at) => registry
            .branches
            .get(&at)
            .cloned()
            .map(Some)
            .ok_or_else(|| {
                r.corrupt(format!(
                    "a branch pointer refers to {at}, where no branch is"
                ))
            }),
        Pointer::Object {
            class,
            position,
            end,
        } => {
            let b = parse_branch(r, &class, position, registry)?;
            r.finish(end, &class)?;
            Ok(Some(b.name))
        }
    }
}

/// The `TBranch` part of a branch (for a `TBranchElement`, its base class).
fn parse_tbranch(
    r: &mut ObjectReader<'_>,
    class: &str,
    position: u32,
    registry: &mut Registry,
) -> Result<Branch> {
    let v = r.version_of("TBranch", 12..=13)?;
    let (name, title) = r.tnamed()?;
    registry.branches.insert(position, name.clone());
    r.skip_object("TAttFill")?;
    let compress = r.i32()?;
    r.i32()?; // fBasketSize
    let entry_offset_len = r.i32()?;
    let write_basket = r.count("TBranch fWriteBasket")?;
    r.i64()?; // fEntryNumber
    if v.version >= 13 {
        r.skip_object("ROOT::TIOFeatures")?;
    }
    r.i32()?; // fOffset
    let max_baskets = r.count("TBranch fMaxBaskets")?;
    let split_level = r.i32()?;
    let entries = r.non_negative_i64("TBranch fEntries")?;
    r.i64()?; // fFirstEntry
    let tot_bytes = r.non_negative_i64("TBranch fTotBytes")?;
    let zip_bytes = r.non_negative_i64("TBranch fZipBytes")?;
    let branches = r.tobjarray(|r, item| branch_item(r, item, registry))?;
    let leaves = r.tobjarray(|r, item| match item {
        ArrayItem::Object(class, position) => parse_leaf(r, class, position, registry).map(Some),
        ArrayItem::Reference(at) => {
            registry.leaves.get(&at).cloned().map(Some).ok_or_else(|| {
                r.corrupt(format!("a leaf reference points to {at}, where no leaf is"))
            })
        }
    })?;
    let mut embedded = r.tobjarray(|r, item| match item {
        ArrayItem::Object("TBasket", _) => parse_embedded_basket(r, &name).map(Some),
        ArrayItem::Object(class, _) => {
            Err(r.corrupt(format!("a branch's basket list holds a {class}")))
        }
        ArrayItem::Reference(_) => Ok(None),
    })?;
    embedded.retain(|b| b.entries > 0);
    if write_basket > max_baskets {
        return Err(r.corrupt(format!(
            "branch \"{name}\" has {write_basket} baskets written but room for {max_baskets}"
        )));
    }
    let bytes = r.basic_pointer_i32(max_baskets, "TBranch fBasketBytes")?;
    let first = r.basic_pointer_i64(max_baskets, "TBranch fBasketEntry")?;
    let seeks = r.basic_pointer_i64(max_baskets, "TBranch fBasketSeek")?;
    r.tstring()?; // fFileName
    r.finish(v.end, "TBranch")?;
    let mut basket_bytes = Vec::with_capacity(write_basket);
    let mut basket_entry = Vec::with_capacity(write_basket + 1);
    let mut basket_seek = Vec::with_capacity(write_basket);
    for i in 0..write_basket {
        let (Some(&b), Some(&e), Some(&s)) = (bytes.get(i), first.get(i), seeks.get(i)) else {
            return Err(r.corrupt(format!("branch \"{name}\" lacks the table of its baskets")));
        };
        let (Ok(b), Ok(e), Ok(s)) = (u32::try_from(b), u64::try_from(e), u64::try_from(s)) else {
            return Err(r.corrupt(format!(
                "branch \"{name}\": basket {i} has a negative size, entry or seek"
            )));
        };
        if basket_entry.last().is_some_and(|&prev| e < prev) {
            return Err(r.corrupt(format!(
                "branch \"{name}\": basket {i} starts at entry {e}, before the basket before it"
            )));
        }
        basket_bytes.push(b);
        basket_entry.push(e);
        basket_seek.push(s);
    }
    // The baskets kept in memory hold the last entries, one after the other.
    let kept: u64 = embedded.iter().map(|b| u64::from(b.entries)).sum();
    let mut next = entries.checked_sub(kept).ok_or_else(|| {
        r.corrupt(format!(
            "branch \"{name}\" has {entries} entries, but its baskets kept in the tree's \
             metadata hold {kept}"
        ))
    })?;
    if basket_entry.last().is_some_and(|&prev| next < prev) {
        return Err(r.corrupt(format!(
            "branch \"{name}\": its baskets kept in the tree's metadata start at entry {next}, \
             before its last basket written"
        )));
    }
    let embedded: Vec<Arc<Basket>> = embedded
        .into_iter()
        .map(|mut b| {
            b.first_entry = next;
            basket_entry.push(next);
            next += u64::from(b.entries);
            Arc::new(b)
        })
        .collect();
    basket_entry.push(entries);
    Ok(Branch {
        class_name: class.to_string(),
        name,
        title,
        compress,
        entry_offset_len,
        split_level,
        entries,
        tot_bytes,
        zip_bytes,
        leaves,
        branches,
        basket_bytes,
        basket_entry,
        basket_seek,
        embedded,
        element: None,
    })
}

fn parse_leaf(
    r: &mut ObjectReader<'_>,
    class: &str,
    position: u32,
    registry: &mut Registry,
) -> Result<Leaf> {
    if !class.starts_with("TLeaf") {
        return Err(r.corrupt(format!("a branch's leaf list holds a {class}")));
    }
    let outer = r.version()?;
    let v = r.version_of("TLeaf", 2..=2)?;
    let (name, title) = r.tnamed()?;
    let len = r.i32()?;
    let len_type = r.i32()?;
    r.i32()?; // fOffset
    let is_range = r.u8()? != 0;
    let is_unsigned = r.u8()? != 0;
    let count = match r.pointer()? {
        Pointer::Null => None,
        Pointer::Reference(at) => Some(
            registry
                .leaves
                .get(&at)
                .map(|l| l.name.clone())
                .ok_or_else(|| {
                    r.corrupt(format!(
                        "a count leaf reference points to {at}, where no leaf is"
                    ))
                })?,
        ),
        Pointer::Object {
            class,
            position,
            end,
        } => {
            let l = parse_leaf(r, &class, position, registry)?;
            r.finish(end, &class)?;
            Some(l.name)
        }
    };
    r.finish(v.end, "TLeaf")?;
    let element_type = if class == "TLeafElement" {
        r.i32()?; // fID
        r.i32()?
    } else {
        0
    };
    let virtual_object = class == "TLeafObject" && r.u8()? != 0;
    r.finish(outer.end, class)?;
    let (Ok(len), Ok(len_type)) = (u32::try_from(len), u32::try_from(len_type)) else {
        return Err(r.corrupt(format!("leaf \"{name}\" has a negative length or size")));
    };
    let leaf = Leaf {
        class_name: class.to_string(),
        name,
        title,
        len,
        len_type,
        is_range,
        is_unsigned,
        count,
        element_type,
        virtual_object,
    };
    registry.leaves.insert(position, leaf.clone());
    Ok(leaf)
}
