//! Converting a TTree to an RNTuple: the RNTuple ROOT 6.40's `RNTupleImporter` writes
//! (same fields, names, C++ types, column types and projections), without ROOT.
//!
//! The importer's mapping, top-level branch by branch in order:
//! - a branch of one leaf becomes a field named after the branch, of the leaf's type
//!   (`Char_t` is `char`, `Double32_t` keeps its alias); a fixed array `x[3]/F` becomes
//!   `std::array<float,3>` (nested for more dimensions); a C string `/C` a `std::string`;
//! - a leaf list `a/F:b/I` becomes an untyped record named after the branch;
//! - arrays sized by a count leaf (`x[n]/F`) are grouped per count leaf into untyped
//!   collections `_collection0`, `_collection1`, ... (numbered in the count leaves'
//!   lexicographic order, after the other fields), each holding an untyped record `_0` of
//!   the arrays; every array is then projected as `ROOT::VecOps::RVec<T>` named after its
//!   branch, and the count leaf as `ROOT::RNTupleCardinality<std::uint32_t>`;
//! - the count branches themselves become no field.
//!
//! Reading runs ahead of writing: a thread gathers the next chunk of entries from the
//! baskets (decompressing branches in parallel) while the writer encodes and compresses
//! the current one.

use crate::container::{streamer_info_object, FileOutput, FileWriter, StreamerInfo};
use crate::error::{Error, Result};
use crate::format::{ExtraTypeInfoRecord, EXTRA_TYPE_STREAMER_INFO};
use crate::schema::{arrow_field, ClassSpec, ColumnDefaults, Descriptor, SchemaBuilder};
use crate::ttree::{
    encode, restreamable, with_class_header, Branch, BranchChunk, Builder, ChunkReader, ClassKind,
    ClassLayout, Collection, LeafType, NativeValues, StreamCursor, Streamed, Tree, TreeFile,
    TypeResolver, TOBJECT_ALLOCATION_BITS,
};
use crate::write::{RNTupleWriter, WriteOptions};
use arrow_array::{
    Array, ArrayRef, FixedSizeListArray, LargeBinaryArray, LargeListArray, RecordBatch, StructArray,
};
use arrow_buffer::{OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, FieldRef, Schema};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Uncompressed bytes of branch data gathered per chunk of entries.
const CHUNK_BYTES: u64 = 16 << 20;

/// What to convert and how.
#[derive(Debug, Clone, Default)]
pub struct ConvertOptions {
    /// The RNTuple's name; the tree's name when `None`.
    pub name: Option<String>,
    /// Glob patterns of the top-level branches to convert (all when empty). Arrays pull
    /// in their count leaves.
    pub branches: Vec<String>,
    /// The entries to convert (`start..end`; an end past the tree's last entry converts
    /// to the end); all when `None`.
    pub entries: Option<(u64, u64)>,
    /// Leave out branches of a type that cannot be converted (reported in
    /// [`ConversionPlan::skipped`]) instead of failing.
    pub skip_unsupported: bool,
    /// Glob patterns of the top-level branches to store unsplit, as streamer fields
    /// (each entry's object as ROOT streams it), even where a split mapping exists; a
    /// branch split in the TTree is joined into whole objects.
    pub unsplit: Vec<String>,
    /// Which of the branches holding objects are stored split, as fields of their own,
    /// and which unsplit, as streamer fields (besides those `unsplit` names).
    pub split_policy: SplitPolicy,
}

/// Which top-level branches holding objects (of classes, or collections of them) become
/// split fields and which streamer fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SplitPolicy {
    /// Split wherever RNTuple has fields for the type (as ROOT's importer).
    #[default]
    Split,
    /// Unsplit wherever the objects can be streamed whole.
    Unsplit,
    /// Each branch in the smaller of the two forms, measured on a sample of its entries
    /// written both ways (CMSSW's partially split layout).
    Auto,
}

/// The sizes the two forms of a branch took on a sample of entries, and the form chosen
/// ([`SplitPolicy::Auto`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitChoice {
    /// The top-level branch.
    pub branch: String,
    /// Entries of the sample.
    pub entries: u64,
    /// Bytes of the sample written split (an RNTuple file of the one field).
    pub split_bytes: u64,
    /// Bytes of the sample written unsplit.
    pub unsplit_bytes: u64,
    /// Whether the branch is stored unsplit.
    pub unsplit: bool,
}

/// How the values of one leaf are laid out in an entry (or a collection item).
#[derive(Debug, Clone)]
struct Values {
    ty: LeafType,
    /// Values per item: 1, or N for a fixed array (the importer flattens `x[2][3]/F` to
    /// `std::array<float,6>`).
    len: usize,
}

impl Values {
    fn bytes(&self) -> usize {
        self.len * self.ty.disk_size()
    }

    fn cpp_type(&self) -> String {
        if self.len == 1 {
            self.ty.cpp_type().to_string()
        } else {
            format!("std::array<{},{}>", self.ty.cpp_type(), self.len)
        }
    }
}

/// How a top-level data field is filled from branches (indices into the plan's branches).
#[derive(Debug, Clone)]
enum Filler {
    /// One value (or fixed array) per entry.
    Leaf { branch: usize, values: Values },
    /// A C string per entry.
    CString { branch: usize },
    /// A leaf list: a record of fixed-size members, back to back in each entry.
    LeafList {
        branch: usize,
        members: Vec<(String, Values)>,
    },
    /// A `TBranchElement` whose entries each stream one value (an STL collection, a
    /// string, an unsplit object); `named`: each entry starts with the name of the
    /// object's class, this one (a `TBranchObject`).
    Streamed {
        branch: usize,
        ty: Streamed,
        header: bool,
        named: Option<String>,
    },
    /// An object stored whole: each entry's bytes as ROOT's streamer field holds them
    /// (a streamer field), framed from the branch's as `framing` says; `ty`, when the
    /// values can be decoded, to stream again a collection the TTree streamed member-wise.
    Opaque {
        branch: usize,
        framing: Framing,
        named: Option<String>,
        ty: Option<Streamed>,
    },
    /// Objects built from `source` (a split object or collection, joined) and stored
    /// whole, streamed object-wise as ROOT's streamer field holds them (a collection
    /// without header).
    Restreamed {
        source: Box<Filler>,
        ty: Streamed,
        collection: bool,
    },
    /// An object split into one branch per member.
    Split(SplitNode),
    /// A split collection of objects (`std::vector<T>` split): the branch holding the
    /// counts, and the members (each member branch's entry holds one value per item).
    SplitCollection { count: usize, items: SplitNode },
    /// Arrays sharing a count leaf.
    Collection {
        count: usize,
        count_type: LeafType,
        arrays: Vec<(String, usize, Values)>,
    },
}

/// How a whole-object branch's entries relate to what ROOT's streamer field stores for
/// the object (what `TClass::Streamer` writes: a class's byte count and version, then its
/// members; a collection's count and items, without header).
#[derive(Debug, Clone, Copy)]
enum Framing {
    /// The same bytes (an object streamed by its class's streamer: branch type -1, or a
    /// `TBranchObject`).
    Same,
    /// A collection (or a `std::bitset`) behind a header (byte count, version) that the
    /// field leaves out.
    CollectionHeader,
    /// An object's members without its header (branch type 0): the field adds the byte
    /// count and the class `version`.
    MembersOnly { version: u16, checksum: Option<u32> },
}

/// Where a split object's members are: a branch per member, or a member object split
/// further.
#[derive(Debug, Clone)]
enum SplitNode {
    /// A member's own branch and the member's type; `length_member`, for a counted C
    /// array, the index (among the members of the object node) of the member holding its
    /// length; `tobject_bits` for `TObject::fBits`,
    /// whose allocation bits the RNTuple leaves out.
    Leaf {
        branch: usize,
        ty: Streamed,
        length_member: Option<usize>,
        tobject_bits: bool,
    },
    /// A member object (or the top object) whose members are split further.
    Object(Vec<SplitNode>),
}

/// The class version ROOT gives its STL collection classes (`vector<T>`).
const STL_COLLECTION_VERSION: u32 = 6;

/// The checksum `TClass` computes from a class's name alone (STL collections): each
/// character added to three times the sum so far.
fn name_checksum(name: &str) -> u32 {
    name.bytes()
        .fold(0u32, |id, c| id.wrapping_mul(3).wrapping_add(u32::from(c)))
}

/// Whether top-level `branch` holds objects of classes (or collections of them): a
/// branch [`SplitPolicy`] chooses a form for.
fn holds_objects(branch: &Branch, resolver: &mut TypeResolver) -> bool {
    let Some(e) = &branch.element else {
        return false;
    };
    if e.branch_type == 3 {
        return true;
    }
    resolver.type_of(&e.class_name).is_ok_and(|t| {
        let mut classes = Vec::new();
        t.classes(&mut classes);
        !classes.is_empty()
    })
}

/// A collection's name, its arrays (name, C++ element type) and its count leaf's name.
type CollectionProjections = (String, Vec<(String, String)>, String);

/// The conversion of a tree, planned: the branches to read and the fields they fill.
#[derive(Debug, Clone)]
pub struct ConversionPlan {
    entries: (u64, u64),
    branches: Vec<Branch>,
    fields: Vec<(String, Filler)>,
    builder: SchemaBuilder,
    /// The streamer infos of the classes streamer fields store.
    streamer_infos: Vec<StreamerInfo>,
    /// Branches left out (with `skip_unsupported`), each with the reason.
    pub skipped: Vec<String>,
}

/// What a conversion did.
#[derive(Debug, Clone, PartialEq)]
pub struct ConvertSummary {
    /// Entries written.
    pub entries: u64,
    /// Bytes of the baskets read (as stored in the file).
    pub input_bytes: u64,
    /// Branches left out, each with the reason.
    pub skipped: Vec<String>,
    /// With [`SplitPolicy::Auto`]: each branch that can take either form, the sizes of
    /// both on a sample and the form chosen.
    pub split_choices: Vec<SplitChoice>,
}

/// The dimensions in a leaf title after the leaf's name: `x[3][2]` gives
/// `["3", "2"]`, `x[n]` gives `["n"]`.
fn title_dims(title: &str) -> Vec<&str> {
    let mut out = Vec::new();
    // A `Double32_t`/`Float16_t` leaf's title carries its type and range after a slash
    // (`x[3]/d[0,1,16]`): those brackets are no dimensions.
    let mut rest = title.split('/').next().unwrap_or(title);
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find(']') else {
            break;
        };
        out.push(&rest[open + 1..open + close]);
        rest = &rest[open + close + 1..];
    }
    out
}

/// The values per item of a leaf: the product of its fixed dimensions (those after the
/// count dimension for a variable array), which must agree with its stored length.
fn values_of(branch: &Branch, leaf: &crate::ttree::Leaf, ty: LeafType) -> Result<Values> {
    let dims = title_dims(&leaf.title);
    let fixed = if leaf.count.is_some() {
        dims.get(1..).unwrap_or(&[])
    } else {
        &dims[..]
    };
    let mut len = 1usize;
    for d in fixed {
        let n = d.trim().parse::<usize>().map_err(|_| {
            Error::Unsupported(format!(
                "branch \"{}\": leaf \"{}\" has a dimension that is not a number",
                branch.name, leaf.title
            ))
        })?;
        len = len.checked_mul(n).ok_or_else(|| {
            Error::corrupt(format!("branch \"{}\"", branch.name), "huge dimensions")
        })?;
    }
    if len != leaf.len.max(1) as usize {
        return Err(Error::corrupt(
            format!("branch \"{}\"", branch.name),
            format!(
                "leaf \"{}\" declares {len} values per entry, its length is {}",
                leaf.title, leaf.len
            ),
        ));
    }
    if len == 0 {
        return Err(Error::Unsupported(format!(
            "branch \"{}\": leaf \"{}\" is an array of no values",
            branch.name, leaf.title
        )));
    }
    Ok(Values { ty, len })
}

fn leaf_type(branch: &Branch, leaf: &crate::ttree::Leaf) -> Result<LeafType> {
    LeafType::of(leaf).ok_or_else(|| {
        Error::Unsupported(format!(
            "branch \"{}\": leaves of class {} cannot be converted",
            branch.name, leaf.class_name
        ))
    })
}

/// Registers every class `ty` uses with `builder` (version and checksum from the streamer
/// infos; a class of version 1 is taken for one without `ClassDef`, which ROOT records as
/// version -1, unless it derives from `TObject`).
pub(crate) fn register_classes(builder: &mut SchemaBuilder, ty: &Streamed) -> Result<()> {
    let mut classes = Vec::new();
    ty.classes(&mut classes);
    for c in classes {
        let members: Vec<(String, String)> = c
            .members
            .iter()
            .map(|(n, t)| (n.clone(), t.cpp_type()))
            .collect();
        let mut spec = ClassSpec::new(
            &c.name,
            &members
                .iter()
                .map(|(n, t)| (n.as_str(), t.as_str()))
                .collect::<Vec<_>>(),
            &c.bases.iter().map(|b| b.name.as_str()).collect::<Vec<_>>(),
        );
        // A TObject has a ClassDef (its version 1 is a version).
        spec.type_version = if c.without_class_def() {
            u32::MAX
        } else {
            u32::try_from(c.version).unwrap_or(u32::MAX)
        };
        spec.checksum = Some(c.checksum);
        builder.register_class(spec)?;
    }
    Ok(())
}

/// Glob `patterns` of top-level branches (named `what` in errors), each of which must
/// match a branch of `tree`.
fn branch_patterns(tree: &Tree, patterns: &[String], what: &str) -> Result<Vec<glob::Pattern>> {
    patterns
        .iter()
        .map(|text| {
            let p = glob::Pattern::new(text)
                .map_err(|e| Error::InvalidArgument(format!("{what} \"{text}\": {e}")))?;
            if tree.branches.iter().any(|b| p.matches(&b.name)) {
                Ok(p)
            } else {
                let names = tree.branches.iter().map(|b| b.name.as_str());
                let hint = crate::error::did_you_mean(text, names)
                    .map(|h| format!("; {h}"))
                    .unwrap_or_default();
                Err(Error::InvalidArgument(format!(
                    "{what} \"{text}\" matches no branch of TTree \"{}\"{hint}",
                    tree.name
                )))
            }
        })
        .collect()
}

fn matches_any(patterns: &[glob::Pattern], name: &str) -> bool {
    patterns.is_empty() || patterns.iter().any(|p| p.matches(name))
}

impl ConversionPlan {
    /// Plans the conversion of `tree` under `options`; `resolver` knows the classes of
    /// the file (its streamer infos), for `TBranchElement` branches.
    pub fn new(
        tree: &Tree,
        resolver: &mut TypeResolver,
        options: &ConvertOptions,
    ) -> Result<ConversionPlan> {
        let patterns = branch_patterns(tree, &options.branches, "branch pattern")?;
        // A stop past the end converts to the end, as a slice does.
        let entries = match options.entries {
            None => (0, tree.entries),
            Some((a, b)) if a <= b && a <= tree.entries => (a, b.min(tree.entries)),
            Some((a, b)) if a > b => {
                return Err(Error::InvalidArgument(format!(
                    "entries {a}:{b}: the start is after the stop"
                )))
            }
            Some((a, _)) => {
                return Err(Error::InvalidArgument(format!(
                    "entries starting at {a} start past the end: the TTree has {} entries",
                    tree.entries
                )))
            }
        };
        let mut plan = ConversionPlan {
            entries,
            branches: Vec::new(),
            fields: Vec::new(),
            builder: SchemaBuilder::new(ColumnDefaults::default()),
            streamer_infos: Vec::new(),
            skipped: Vec::new(),
        };
        let unsplit = branch_patterns(tree, &options.unsplit, "--unsplit pattern")?;
        // Arrays by count leaf name (sorted: the importer numbers collections so).
        let mut collections: BTreeMap<String, Vec<(String, usize, Values)>> = BTreeMap::new();
        let count_leaves: std::collections::HashSet<&str> = tree
            .branches
            .iter()
            .flat_map(|b| b.leaves.iter())
            .filter_map(|l| l.count.as_deref())
            .collect();
        for branch in &tree.branches {
            if !matches_any(&patterns, &branch.name) {
                continue;
            }
            let result = if branch.element.is_some() {
                let asked = unsplit.iter().any(|p| p.matches(&branch.name));
                if !asked
                    && options.split_policy == SplitPolicy::Unsplit
                    && holds_objects(branch, resolver)
                {
                    // Unsplit where the objects can be streamed whole, else split.
                    let before = plan.clone();
                    match plan.plan_element(branch, resolver, true) {
                        Err(Error::Unsupported(_)) | Err(Error::InvalidArgument(_)) => {
                            plan = before;
                            plan.plan_element(branch, resolver, false)
                        }
                        other => other,
                    }
                } else {
                    plan.plan_element(branch, resolver, asked)
                }
            } else {
                plan.plan_branch(branch, &count_leaves, &mut collections)
            };
            match result {
                Ok(()) => {}
                Err(Error::Unsupported(why)) if options.skip_unsupported => plan.skipped.push(why),
                Err(e) => return Err(e),
            }
        }
        for (index, (count_name, arrays)) in collections.into_iter().enumerate() {
            let (count_branch, count_leaf) = tree
                .branches
                .iter()
                .find_map(|b| {
                    b.leaves
                        .iter()
                        .find(|l| l.name == count_name)
                        .filter(|_| b.leaves.len() == 1 && b.class_name == "TBranch")
                        .map(|l| (b, l))
                })
                .ok_or_else(|| {
                    Error::Unsupported(format!(
                        "branch \"{}\": its count leaf \"{count_name}\" is not a top-level \
                         branch of one leaf",
                        arrays[0].0
                    ))
                })?;
            let count_type = leaf_type(count_branch, count_leaf)?;
            if !matches!(
                count_type,
                LeafType::Int
                    | LeafType::UInt
                    | LeafType::Short
                    | LeafType::UShort
                    | LeafType::Char
                    | LeafType::UChar
                    | LeafType::Long64
                    | LeafType::ULong64
            ) {
                return Err(Error::corrupt(
                    format!("branch \"{}\"", count_branch.name),
                    "a count leaf that is not an integer",
                ));
            }
            let count = plan.add_branch(count_branch);
            let name = format!("_collection{index}");
            let members: Vec<(String, String)> = arrays
                .iter()
                .map(|(n, _, v)| (n.clone(), v.cpp_type()))
                .collect();
            let refs: Vec<(&str, &str)> = members
                .iter()
                .map(|(n, t)| (n.as_str(), t.as_str()))
                .collect();
            plan.builder.add_untyped_collection(&name, &refs)?;
            plan.fields.push((
                name,
                Filler::Collection {
                    count,
                    count_type,
                    arrays,
                },
            ));
        }
        if plan.fields.is_empty() && !plan.skipped.is_empty() {
            return Err(Error::Unsupported(format!(
                "nothing left to convert: every selected branch is of a type that cannot be converted ({})",
                plan.skipped.join("; ")
            )));
        }
        // The projections: per collection, each array as an RVec, then the count leaf.
        let collection_fields: Vec<CollectionProjections> = plan
            .fields
            .iter()
            .filter_map(|(name, f)| match f {
                Filler::Collection { count, arrays, .. } => Some((
                    name.clone(),
                    arrays
                        .iter()
                        .map(|(n, _, v)| (n.clone(), v.cpp_type()))
                        .collect(),
                    plan.branches[*count].leaves[0].name.clone(),
                )),
                _ => None,
            })
            .collect();
        for (collection, arrays, count_leaf) in collection_fields {
            for (array, cpp) in &arrays {
                let (col, arr) = (collection.clone(), array.clone());
                plan.builder.add_projected_field_mapped(
                    array,
                    &format!("ROOT::VecOps::RVec<{cpp}>"),
                    &move |p: &str| match p.split_once('.') {
                        None => col.clone(),
                        Some((_, rest)) => {
                            let tail = rest.strip_prefix("_0").unwrap_or(rest);
                            format!("{col}._0.{arr}{tail}")
                        }
                    },
                )?;
            }
            plan.builder.add_projected_field(
                &count_leaf,
                "ROOT::RNTupleCardinality<std::uint32_t>",
                &collection,
            )?;
        }
        if !plan.streamer_infos.is_empty() {
            // As ROOT's writer: one record of every class the streamer fields store.
            plan.builder.add_extra_type_info(ExtraTypeInfoRecord {
                content_id: EXTRA_TYPE_STREAMER_INFO,
                type_version: 0,
                type_name: String::new(),
                content: streamer_info_object(&plan.streamer_infos)?,
            });
        }
        Ok(plan)
    }

    /// Adds `branch` to the branches read (once) and returns its index.
    fn add_branch(&mut self, branch: &Branch) -> usize {
        // Sub-branches of different split objects may share a name ("i" of "ev" and of
        // "pl"): the same branch is the same name at the same baskets.
        if let Some(i) = self
            .branches
            .iter()
            .position(|b| b.name == branch.name && b.basket_seek == branch.basket_seek)
        {
            return i;
        }
        self.branches.push(branch.clone());
        self.branches.len() - 1
    }

    /// Plans a top-level `TBranchElement`: STL collections, strings and objects, whole
    /// or split; a whole object whose type RNTuple cannot store natively (a class with a
    /// streamer of its own, a member with no field type) or that `force_unsplit` asks so
    /// becomes a streamer field.
    fn plan_element(
        &mut self,
        branch: &Branch,
        resolver: &mut TypeResolver,
        force_unsplit: bool,
    ) -> Result<()> {
        let Some(e) = &branch.element else {
            return Err(Error::InvalidArgument("not a TBranchElement".into()));
        };
        let unsupported = |why: &str| {
            Error::Unsupported(format!(
                "branch \"{}\" of class {} ({why})",
                branch.name, e.class_name
            ))
        };
        if branch.name.contains('.') {
            return Err(unsupported("a name with a dot cannot be a field name"));
        }
        let whole = matches!(e.branch_type, -1 | 0) && branch.branches.is_empty();
        let resolved = if e.branch_type == 3 {
            // Resolved from its element class below.
            Ok(Streamed::Prim(LeafType::Int))
        } else {
            resolver.type_of(&e.class_name)
        };
        // Branch type -1: the object was streamed by its class's own streamer, which need
        // not follow its streamer info (TLorentzVector, a class with a custom Streamer).
        let custom_streamer = e.branch_type == -1 && matches!(resolved, Ok(Streamed::Object(_)));
        let native = !custom_streamer && resolved.as_ref().is_ok_and(Streamed::is_native);
        if whole && (force_unsplit || !native) && !matches!(resolved, Ok(Streamed::Prim(_))) {
            return self.plan_streamer(branch, resolver);
        }
        let mut ty = resolved.map_err(|err| unsupported(&err.to_string()))?;
        // A split object that RNTuple stores only whole, or asked unsplit: its branches
        // joined into objects.
        let restream = !whole && (force_unsplit || !ty.is_native());
        let filler = match (e.branch_type, branch.branches.is_empty()) {
            // A whole value per entry: a string (-1), a collection or an unsplit object (0).
            (-1 | 0, true) => {
                // A TBranchObject's object comes with its header, as a collection does.
                let header =
                    matches!(ty, Streamed::Vector(..) | Streamed::Bitset(_)) || e.named_entries;
                Filler::Streamed {
                    branch: self.add_branch(branch),
                    ty: ty.clone(),
                    header,
                    named: e.named_entries.then(|| e.class_name.clone()),
                }
            }
            // A split object (a std::array too: its class's one member, the element array
            // `_M_elems[N]`).
            (0, false) => match &ty {
                Streamed::Object(class) => Filler::Split(self.split_node(class, branch, "")?),
                _ => return Err(unsupported("a split branch of a type that is no class")),
            },
            // A split TClonesArray: the count, and its element class's members split.
            (3, false) => {
                let class = resolver
                    .class(&e.clones_name, 0)
                    .map_err(|err| unsupported(&err.to_string()))?;
                let count = self.add_branch(branch);
                let items = self.split_node(&class, branch, "")?;
                ty = Streamed::Vector(Collection::Vector, Box::new(Streamed::Object(class)));
                Filler::SplitCollection { count, items }
            }
            (4, false) => {
                let Streamed::Vector(_, item) = &ty else {
                    return Err(unsupported("a split collection that is no STL collection"));
                };
                let Streamed::Object(class) = item.as_ref() else {
                    return Err(unsupported("a split collection of no class"));
                };
                let count = self.add_branch(branch);
                Filler::SplitCollection {
                    count,
                    items: self.split_node(class, branch, "")?,
                }
            }
            (t, _) => return Err(unsupported(&format!("branch type {t}"))),
        };
        if restream {
            return self.plan_restreamed(branch, filler, ty, resolver);
        }
        self.register_classes(&ty)?;
        self.builder.add_cpp_field(&branch.name, &ty.cpp_type())?;
        self.fields.push((branch.name.clone(), filler));
        Ok(())
    }

    /// Plans a whole-object branch as a streamer field: each entry's bytes (an object as
    /// ROOT streams it, with its byte count and version) copied, the class's version and
    /// checksum from the branch, the streamer infos of the classes involved recorded.
    fn plan_streamer(&mut self, branch: &Branch, resolver: &mut TypeResolver) -> Result<()> {
        let Some(e) = &branch.element else {
            return Err(Error::InvalidArgument("not a TBranchElement".into()));
        };
        // A TBranchObject records no version or checksum: its class's streamer info has.
        let (class_version, checksum) = if branch.class_name == "TBranchObject" {
            let info = resolver.info(&e.class_name).ok_or_else(|| {
                Error::Unsupported(format!(
                    "branch \"{}\" of class {}: the file holds no streamer info describing it",
                    branch.name, e.class_name
                ))
            })?;
            (info.class_version, info.checksum)
        } else {
            (i32::from(e.class_version), e.checksum)
        };
        let version = u16::try_from(class_version).map_err(|_| {
            Error::Unsupported(format!(
                "branch \"{}\" of class {}: class version {class_version} cannot be stored in \
                 a streamer field",
                branch.name, e.class_name
            ))
        })?;
        // A class without ClassDef: ROOT records version -1 for the field and streams
        // version 0 and the checksum (a class with a streamer of its own has a ClassDef).
        let foreign = e.branch_type != -1
            && resolver
                .class(&e.class_name, 0)
                .is_ok_and(|c| c.kind == ClassKind::Class && c.without_class_def());
        self.builder.add_streamer_field(
            &branch.name,
            &e.class_name,
            if foreign {
                u32::MAX
            } else {
                u32::from(version)
            },
            checksum,
        )?;
        // A class streamed by a streamer of its own (branch type -1) is described by its
        // streamer info only if that streamer is known to follow it (ROOT's vectors): a
        // reader decoding the field by a layout its bytes do not follow would read wrong
        // values.
        let described = e.branch_type != -1 || Streamed::streams_by_its_info(&e.class_name);
        if described {
            self.add_streamer_infos(resolver.streamer_infos_of(&e.class_name));
        }
        let index = self.add_branch(branch);
        // The values' layout, to stream again a collection streamed member-wise.
        let ty = resolver
            .type_of(&e.class_name)
            .ok()
            .filter(|t| described && restreamable(t));
        // A std::bitset is streamed as an STL collection (of bools).
        let bitset = e
            .class_name
            .trim()
            .trim_start_matches("std::")
            .starts_with("bitset<");
        let framing = if Collection::of_type_name(&e.class_name).is_some() || bitset {
            Framing::CollectionHeader
        } else if e.branch_type == 0 && !e.named_entries {
            Framing::MembersOnly {
                version: if foreign { 0 } else { version },
                checksum: foreign.then_some(checksum),
            }
        } else {
            Framing::Same
        };
        self.fields.push((
            branch.name.clone(),
            Filler::Opaque {
                branch: index,
                framing,
                named: e.named_entries.then(|| e.class_name.clone()),
                ty,
            },
        ));
        Ok(())
    }

    /// Plans a split object (or split collection of objects) as a streamer field: the
    /// values `filler` builds from the split branches, streamed whole.
    fn plan_restreamed(
        &mut self,
        branch: &Branch,
        filler: Filler,
        ty: Streamed,
        resolver: &TypeResolver,
    ) -> Result<()> {
        let unsupported = |why: String| {
            Error::Unsupported(format!(
                "branch \"{}\" cannot be stored unsplit: {why}",
                branch.name
            ))
        };
        let (type_name, version, checksum, class) = match &ty {
            Streamed::Object(c) if c.kind == ClassKind::Class => {
                // A class without ClassDef: ROOT records version -1.
                let version = match u32::try_from(c.version) {
                    _ if c.without_class_def() => u32::MAX,
                    Ok(v) => v,
                    Err(_) => {
                        return Err(unsupported(format!(
                            "class {} has version {}",
                            c.name, c.version
                        )))
                    }
                };
                (c.name.clone(), version, c.checksum, c.name.clone())
            }
            Streamed::Vector(Collection::Vector, item) => match item.as_ref() {
                Streamed::Object(c) if c.kind == ClassKind::Class => {
                    // ROOT's class of the collection: its name, version and checksum (of
                    // the name alone, as TClass computes it for STL collections).
                    let root_name = format!("vector<{}>", c.name);
                    (
                        format!("std::{root_name}"),
                        STL_COLLECTION_VERSION,
                        name_checksum(&root_name),
                        c.name.clone(),
                    )
                }
                _ => return Err(unsupported("a collection of no class".to_string())),
            },
            _ => return Err(unsupported(format!("type {}", ty.cpp_type()))),
        };
        if !matches!(&filler, Filler::Split(_) | Filler::SplitCollection { .. }) {
            return Err(unsupported("its values are not split objects".to_string()));
        }
        if !restreamable(&ty) {
            return Err(unsupported(
                "a std::array named by its type cannot be streamed again".to_string(),
            ));
        }
        self.builder
            .add_streamer_field(&branch.name, &type_name, version, checksum)?;
        self.add_streamer_infos(resolver.streamer_infos_of(&class));
        let collection = matches!(ty, Streamed::Vector(..));
        self.fields.push((
            branch.name.clone(),
            Filler::Restreamed {
                source: Box::new(filler),
                ty,
                collection,
            },
        ));
        Ok(())
    }

    /// Records the streamer infos of classes that streamer fields store (each once).
    fn add_streamer_infos(&mut self, infos: Vec<StreamerInfo>) {
        for info in infos {
            if !self
                .streamer_infos
                .iter()
                .any(|i| i.class_name == info.class_name)
            {
                self.streamer_infos.push(info);
            }
        }
    }

    /// Registers every class `ty` uses with the schema builder ([`register_classes`]).
    fn register_classes(&mut self, ty: &Streamed) -> Result<()> {
        register_classes(&mut self.builder, ty)
    }

    /// Maps the members of a split `class` to the sub-branches of `top` that hold them:
    /// the branch named `[top.]path` (`path` is `prefix` + the member's name, with `[N]`
    /// for arrays), or, for a member object split further, its members' branches.
    ///
    /// A base class's members are split at the level of the class deriving from it (ROOT
    /// unrolls bases), `TObject`'s too (`fUniqueID`, `fBits`).
    fn split_node(&mut self, class: &ClassLayout, top: &Branch, prefix: &str) -> Result<SplitNode> {
        let all = top.walk();
        let mut members = Vec::with_capacity(class.bases.len() + class.members.len());
        for base in &class.bases {
            members.push(self.split_node(base, top, prefix)?);
        }
        for (name, ty) in &class.members {
            let path = format!("{prefix}{name}");
            let dotted = format!("{}.{path}", top.name);
            let matches = |b: &&&Branch| {
                let n = b.name.as_str();
                [path.as_str(), dotted.as_str()]
                    .iter()
                    .any(|p| n == *p || n.strip_prefix(p).is_some_and(|rest| rest.starts_with('[')))
            };
            let found = all.iter().skip(1).find(matches);
            match (found, ty) {
                // Its counts here, its items' members in branches of their own.
                (Some(b), Streamed::Vector(..)) if !b.branches.is_empty() => {
                    return Err(Error::Unsupported(format!(
                        "branch \"{}\": member \"{path}\" of class {} is a split collection \
                         (branch \"{}\" and its sub-branches), which is not converted",
                        top.name, class.name, b.name
                    )))
                }
                (Some(b), _) if b.basket_count() > 0 || b.entries == 0 => {
                    members.push(SplitNode::Leaf {
                        branch: self.add_branch(b),
                        ty: ty.clone(),
                        length_member: match ty {
                            Streamed::Counted(_, count) => Some(class.bases.len() + count),
                            _ => None,
                        },
                        tobject_bits: class.kind == ClassKind::TObject && name == "fBits",
                    });
                }
                (_, Streamed::Object(inner)) => {
                    members.push(self.split_node(inner, top, &format!("{path}."))?);
                }
                _ => {
                    return Err(Error::Unsupported(format!(
                        "branch \"{}\": no sub-branch holds member \"{path}\" of class {}",
                        top.name, class.name
                    )))
                }
            }
        }
        Ok(SplitNode::Object(members))
    }

    fn plan_branch(
        &mut self,
        branch: &Branch,
        count_leaves: &std::collections::HashSet<&str>,
        collections: &mut BTreeMap<String, Vec<(String, usize, Values)>>,
    ) -> Result<()> {
        if branch.class_name != "TBranch" {
            return Err(Error::Unsupported(format!(
                "branch \"{}\" of class {} cannot be converted",
                branch.name, branch.class_name
            )));
        }
        if branch.name.contains('.') {
            return Err(Error::Unsupported(format!(
                "branch \"{}\": a name with a dot cannot be a field name",
                branch.name
            )));
        }
        match branch.leaves.as_slice() {
            [] => Err(Error::Unsupported(format!(
                "branch \"{}\" has no leaves",
                branch.name
            ))),
            [leaf] => {
                let ty = leaf_type(branch, leaf)?;
                if let Some(count) = &leaf.count {
                    if ty == LeafType::CString {
                        return Err(Error::Unsupported(format!(
                            "branch \"{}\": an array of C strings",
                            branch.name
                        )));
                    }
                    let values = values_of(branch, leaf, ty)?;
                    let index = self.add_branch(branch);
                    collections.entry(count.clone()).or_default().push((
                        branch.name.clone(),
                        index,
                        values,
                    ));
                    return Ok(());
                }
                if leaf.is_range || count_leaves.contains(leaf.name.as_str()) {
                    // A count leaf: shown as its collection's cardinality.
                    return Ok(());
                }
                let index = self.add_branch(branch);
                if ty == LeafType::CString {
                    self.builder.add_cpp_field(&branch.name, "std::string")?;
                    self.fields
                        .push((branch.name.clone(), Filler::CString { branch: index }));
                    return Ok(());
                }
                let values = values_of(branch, leaf, ty)?;
                self.builder
                    .add_cpp_field(&branch.name, &values.cpp_type())?;
                self.fields.push((
                    branch.name.clone(),
                    Filler::Leaf {
                        branch: index,
                        values,
                    },
                ));
                Ok(())
            }
            leaves => {
                let mut members = Vec::new();
                for leaf in leaves {
                    let ty = leaf_type(branch, leaf)?;
                    if leaf.count.is_some() || ty == LeafType::CString {
                        return Err(Error::Unsupported(format!(
                            "branch \"{}\": leaf \"{}\" of a leaf list is a variable array \
                             or a string",
                            branch.name, leaf.title
                        )));
                    }
                    members.push((leaf.name.clone(), values_of(branch, leaf, ty)?));
                }
                let types: Vec<(String, String)> = members
                    .iter()
                    .map(|(n, v)| (n.clone(), v.cpp_type()))
                    .collect();
                let refs: Vec<(&str, &str)> = types
                    .iter()
                    .map(|(n, t)| (n.as_str(), t.as_str()))
                    .collect();
                self.builder.add_untyped_record(&branch.name, &refs)?;
                let index = self.add_branch(branch);
                self.fields.push((
                    branch.name.clone(),
                    Filler::LeafList {
                        branch: index,
                        members,
                    },
                ));
                Ok(())
            }
        }
    }

    /// Bytes on disk of the baskets this plan reads.
    pub fn input_bytes(&self) -> u64 {
        self.branches.iter().map(|b| b.zip_bytes).sum()
    }
}

/// Converts the tree of `plan` from `file` into `out` as an RNTuple named `name` (a path
/// such as `a/b/t` puts RNTuple `t` into directory `a/b`); `progress` gets the entries
/// written so far and the entries to write.
pub fn convert_tree<W: FileOutput>(
    file: &TreeFile,
    plan: &ConversionPlan,
    out: &mut FileWriter<W>,
    name: &str,
    options: WriteOptions,
    mut progress: impl FnMut(u64, u64),
) -> Result<ConvertSummary> {
    let schema = plan.builder.clone().finish();
    let (start, end) = plan.entries;
    let total_bytes: u64 = plan.branches.iter().map(|b| b.tot_bytes).sum();
    let all_entries = plan
        .branches
        .iter()
        .map(|b| b.entries)
        .max()
        .unwrap_or(0)
        .max(1);
    let per_entry = (total_bytes / all_entries).max(1);
    let step = (CHUNK_BYTES / per_entry).max(1);
    let mut readers = plan
        .branches
        .iter()
        .map(|b| ChunkReader::new(file.source().clone(), b))
        .collect::<Result<Vec<_>>>()?;
    for b in &plan.branches {
        if b.entries < end {
            return Err(Error::corrupt(
                format!("branch \"{}\"", b.name),
                format!("it has {} entries, the tree {end}", b.entries),
            ));
        }
    }
    // As ROOT's writer: the file describes the classes its streamer fields store.
    out.describe_classes(&plan.streamer_infos);
    let anchor = {
        // "a/b/t": RNTuple "t" (its header's name) in directory a/b (its anchor's path).
        let base = name.trim_matches('/').rsplit('/').next().unwrap_or(name);
        let mut writer = RNTupleWriter::new(&mut *out, base, schema, options)?;
        let targets = target_fields(writer.descriptor(), plan)?;
        let (sender, receiver) = std::sync::mpsc::sync_channel::<Result<RecordBatch>>(1);
        let written = std::thread::scope(|scope| -> Result<u64> {
            let targets = &targets;
            let readers = &mut readers;
            scope.spawn(move || {
                let mut at = start;
                while at < end {
                    let stop = (at + step).min(end);
                    let batch = read_chunk(plan, readers, targets, at, stop);
                    let failed = batch.is_err();
                    if sender.send(batch).is_err() || failed {
                        return;
                    }
                    at = stop;
                }
            });
            let mut written = start;
            for batch in receiver {
                let batch = batch?;
                writer.write_batch(&batch)?;
                written += batch.num_rows() as u64;
                progress(written - start, end - start);
            }
            Ok(written)
        })?;
        if written != end {
            return Err(Error::InvalidArgument(format!(
                "the conversion stopped at entry {written} of {end}"
            )));
        }
        writer.finish()?
    };
    out.write_anchor(name, &anchor.to_object())?;
    Ok(ConvertSummary {
        entries: end - start,
        input_bytes: plan.input_bytes(),
        skipped: plan.skipped.clone(),
        split_choices: Vec::new(),
    })
}

/// The Arrow field the writer expects for each data field of the plan.
fn target_fields(desc: &Descriptor, plan: &ConversionPlan) -> Result<Vec<FieldRef>> {
    plan.fields
        .iter()
        .map(|(name, _)| {
            let id = desc
                .find_field(name)
                .ok_or_else(|| Error::InvalidArgument(format!("no field \"{name}\"")))?;
            Ok(Arc::new(arrow_field(desc, id, name)?))
        })
        .collect()
}

/// Reads entries `start..stop` of every branch (in parallel) and builds the batch.
fn read_chunk(
    plan: &ConversionPlan,
    readers: &mut [ChunkReader],
    targets: &[FieldRef],
    start: u64,
    stop: u64,
) -> Result<RecordBatch> {
    let chunks = readers
        .par_iter_mut()
        .map(|r| r.read(start, stop))
        .collect::<Result<Vec<BranchChunk>>>()?;
    let columns = plan
        .fields
        .par_iter()
        .zip(targets.par_iter())
        .map(|((name, filler), target)| {
            fill(filler, &chunks, plan, target)
                .map_err(|e| e.at(branch_location(name, start, stop)))
        })
        .collect::<Result<Vec<ArrayRef>>>()?;
    // Strings are built as bytes (C strings need not be UTF-8): the batch's fields take
    // their columns' types.
    let fields: Vec<Field> = targets
        .iter()
        .zip(&columns)
        .map(|(t, c)| t.as_ref().clone().with_data_type(c.data_type().clone()))
        .collect();
    Ok(RecordBatch::try_new(
        Arc::new(Schema::new(fields)),
        columns,
    )?)
}

fn branch_location(field: &str, start: u64, stop: u64) -> crate::error::Location {
    crate::error::Location {
        field: Some(field.to_string()),
        structure: Some(format!("TTree entries {start}..{stop}")),
        ..Default::default()
    }
}

/// Builds one field's array from the chunks read.
fn fill(
    filler: &Filler,
    chunks: &[BranchChunk],
    plan: &ConversionPlan,
    target: &Field,
) -> Result<ArrayRef> {
    let what = |branch: usize| format!("branch \"{}\"", plan.branches[branch].name);
    match filler {
        Filler::Leaf { branch, values } => {
            let chunk = &chunks[*branch];
            if chunk.offsets.is_some() || chunk.data.len() != chunk.entries * values.bytes() {
                return Err(Error::corrupt(
                    what(*branch),
                    format!(
                        "{} bytes for {} entries of {} bytes",
                        chunk.data.len(),
                        chunk.entries,
                        values.bytes()
                    ),
                ));
            }
            shape(values.ty.decode(&chunk.data, &what(*branch))?, target)
        }
        Filler::CString { branch } => c_strings(&chunks[*branch], &what(*branch)),
        Filler::Streamed { .. } | Filler::Split(_) | Filler::SplitCollection { .. } => {
            build(filler, chunks, plan)?.finish(target)
        }
        Filler::Restreamed {
            source,
            ty,
            collection,
        } => {
            let values = build(source, chunks, plan)?;
            let mut offsets = Vec::with_capacity(values.len() + 1);
            offsets.push(0i64);
            let mut bytes = Vec::new();
            for i in 0..values.len() {
                encode(ty, &values, i, !collection, &mut bytes)?;
                push_offset(&mut offsets, &bytes)?;
            }
            binary_column(offsets, bytes)
        }
        Filler::Opaque {
            branch,
            framing,
            named,
            ty,
        } => {
            let chunk = &chunks[*branch];
            let mut offsets = Vec::with_capacity(chunk.entries + 1);
            offsets.push(0i64);
            let mut bytes = Vec::new();
            for i in 0..chunk.entries {
                let at = |e: Error| e.at(entry_location(&what(*branch), i));
                let mut entry = chunk.entry(i);
                if let Some(class) = named {
                    entry = named_object(entry, class).map_err(at)?;
                }
                match framing {
                    Framing::Same => bytes.extend_from_slice(whole_object(entry).map_err(at)?),
                    Framing::CollectionHeader => {
                        collection_content(entry, ty.as_ref(), &mut bytes).map_err(at)?;
                    }
                    Framing::MembersOnly { version, checksum } => {
                        with_class_header(*version, *checksum, entry, &mut bytes).map_err(at)?;
                    }
                }
                push_offset(&mut offsets, &bytes)
                    .map_err(|e| e.at(entry_location(&what(*branch), i)))?;
            }
            binary_column(offsets, bytes)
        }
        Filler::LeafList { branch, members } => {
            let chunk = &chunks[*branch];
            let entry_bytes: usize = members.iter().map(|(_, v)| v.bytes()).sum();
            if chunk.offsets.is_some() || chunk.data.len() != chunk.entries * entry_bytes {
                return Err(Error::corrupt(
                    what(*branch),
                    format!(
                        "{} bytes for {} entries of {entry_bytes} bytes",
                        chunk.data.len(),
                        chunk.entries
                    ),
                ));
            }
            let DataType::Struct(fields) = target.data_type() else {
                return Err(Error::InvalidArgument("a leaf list is not a record".into()));
            };
            let mut at = 0;
            let mut arrays = Vec::with_capacity(members.len());
            for ((_, values), field) in members.iter().zip(fields.iter()) {
                // Each member decoded straight from its place in every entry.
                let size = values.bytes();
                let mut decoded = NativeValues::new(values.ty, chunk.entries * values.len)?;
                for entry in chunk.data.chunks_exact(entry_bytes) {
                    decoded.append_be(values.ty, &entry[at..at + size]);
                }
                at += size;
                arrays.push(shape(decoded.into_array(), field)?);
            }
            Ok(Arc::new(StructArray::try_new(
                fields.clone(),
                arrays,
                None,
            )?))
        }
        Filler::Collection {
            count,
            count_type,
            arrays,
        } => {
            let counts = decode_counts(&chunks[*count], *count_type, &what(*count))?;
            let (offsets, _) = offsets_of(&counts, &what(*count))?;
            let DataType::LargeList(item) = target.data_type() else {
                return Err(Error::InvalidArgument("a collection is not a list".into()));
            };
            let DataType::Struct(fields) = item.data_type() else {
                return Err(Error::InvalidArgument(
                    "a collection item is not a record".into(),
                ));
            };
            let mut members = Vec::with_capacity(arrays.len());
            for ((_, branch, values), field) in arrays.iter().zip(fields.iter()) {
                let chunk = &chunks[*branch];
                check_array_sizes(chunk, &counts, values.bytes(), &what(*branch))?;
                members.push(shape(
                    values.ty.decode(&chunk.data, &what(*branch))?,
                    field,
                )?);
            }
            let items = StructArray::try_new(fields.clone(), members, None)?;
            Ok(Arc::new(LargeListArray::try_new(
                item.clone(),
                OffsetBuffer::new(ScalarBuffer::from(offsets)),
                Arc::new(items),
                None,
            )?))
        }
    }
}

/// Appends the end of the value just written to `bytes` to a binary column's offsets.
fn push_offset(offsets: &mut Vec<i64>, bytes: &[u8]) -> Result<()> {
    offsets.push(
        i64::try_from(bytes.len())
            .map_err(|_| Error::InvalidArgument("more bytes than an offset holds".to_string()))?,
    );
    Ok(())
}

/// A binary column (a streamer field's values) of `offsets` into `bytes`.
fn binary_column(offsets: Vec<i64>, bytes: Vec<u8>) -> Result<ArrayRef> {
    Ok(Arc::new(LargeBinaryArray::try_new(
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        bytes.into(),
        None,
    )?))
}

/// The values of a field streamed in the TTree (`Streamed`, `Split`, `SplitCollection`),
/// decoded.
fn build(filler: &Filler, chunks: &[BranchChunk], plan: &ConversionPlan) -> Result<Builder> {
    let what = |branch: usize| format!("branch \"{}\"", plan.branches[branch].name);
    match filler {
        Filler::Streamed {
            branch,
            ty,
            header,
            named,
        } => {
            let chunk = &chunks[*branch];
            let mut out = Builder::new(ty);
            for i in 0..chunk.entries {
                let entry = match named {
                    Some(class) => named_object(chunk.entry(i), class)
                        .map_err(|e| e.at(entry_location(&what(*branch), i)))?,
                    None => chunk.entry(i),
                };
                let mut cursor = StreamCursor::new(entry);
                cursor
                    .decode(ty, &mut out, *header)
                    .and_then(|()| entry_consumed(&cursor))
                    .map_err(|e| e.at(entry_location(&what(*branch), i)))?;
            }
            Ok(out)
        }
        Filler::Split(node) => {
            let entries = chunks.first().map_or(0, |c| c.entries);
            split_values(node, chunks, plan, None, entries)
        }
        Filler::SplitCollection { count, items } => {
            let counts = decode_counts(&chunks[*count], LeafType::Int, &what(*count))?;
            let (offsets, total) = offsets_of(&counts, &what(*count))?;
            let items = split_values(items, chunks, plan, Some(&counts), total)?;
            Ok(Builder::List(offsets, Box::new(items)))
        }
        _ => Err(Error::InvalidArgument(
            "a field whose values are not streamed".to_string(),
        )),
    }
}

/// The values of a split object (or of the items of a split collection, `counts` per
/// entry): one builder per member branch.
fn split_values(
    node: &SplitNode,
    chunks: &[BranchChunk],
    plan: &ConversionPlan,
    counts: Option<&[u64]>,
    len: usize,
) -> Result<Builder> {
    match node {
        SplitNode::Object(members) => {
            let mut built: Vec<Builder> = Vec::with_capacity(members.len());
            for m in members {
                let values = match m {
                    SplitNode::Leaf {
                        branch,
                        ty: Streamed::Counted(t, _),
                        length_member: Some(at),
                        ..
                    } => {
                        let lengths = built.get(*at).ok_or_else(|| {
                            Error::InvalidArgument(
                                "a counted array before its length member".to_string(),
                            )
                        })?;
                        counted_values(*t, &chunks[*branch], lengths, counts, plan, *branch)?
                    }
                    _ => split_values(m, chunks, plan, counts, len)?,
                };
                built.push(values);
            }
            Ok(Builder::Struct(built, len))
        }
        SplitNode::Leaf {
            branch,
            ty,
            tobject_bits,
            ..
        } => {
            let chunk = &chunks[*branch];
            let what = format!("branch \"{}\"", plan.branches[*branch].name);
            let mut out = Builder::new(ty);
            // Values without a header: fundamentals, arrays of them, TStrings.
            let is_prim = matches!(
                ty,
                Streamed::Prim(_) | Streamed::Array(..) | Streamed::TString
            );
            // A split std::array's element branch (`_M_elems[N]`), which ROOT 6.40 fills
            // with empty entries (it cannot find the member when it builds the branch).
            let std_array_elements = matches!(ty, Streamed::Array(..))
                && plan.branches[*branch].name.contains("_M_elems[");
            for i in 0..chunk.entries {
                let entry = chunk.entry(i);
                let expected = counts.map_or(1, |c| c[i]);
                if std_array_elements && entry.is_empty() && expected > 0 {
                    return Err(Error::corrupt(
                        "streamed value",
                        format!(
                            "no values for {expected} std::array(s): ROOT 6.40 writes a \
                             split std::array, or a split collection of them, without the \
                             values"
                        ),
                    )
                    .at(entry_location(&what, i)));
                }
                let mut cursor = StreamCursor::new(entry);
                let result = match counts {
                    None => cursor.decode(ty, &mut out, true),
                    Some(c) => {
                        let n = crate::error::to_usize(c[i], "items")?;
                        if is_prim {
                            cursor.items(ty, n, &mut out)
                        } else if n == 0 && cursor.remaining() == 0 {
                            Ok(())
                        } else {
                            cursor.items_with_header(ty, n, &mut out)
                        }
                    }
                };
                result
                    .and_then(|()| entry_consumed(&cursor))
                    .map_err(|e| e.at(entry_location(&what, i)))?;
            }
            if out.len() != len {
                return Err(Error::corrupt(
                    what,
                    format!("{} values where {len} were expected", out.len()),
                ));
            }
            if *tobject_bits {
                if let Builder::Prim(_, NativeValues::U32(bits)) = &mut out {
                    for b in bits.iter_mut() {
                        *b &= !TOBJECT_ALLOCATION_BITS;
                    }
                }
            }
            Ok(out)
        }
    }
}

/// The values of a split counted C array member (`T *x; //[n]`): per object (one per
/// entry, or `counts` per entry in a split collection) a byte saying whether values
/// follow, then as many as the object's length member (`lengths`) says.
fn counted_values(
    t: LeafType,
    chunk: &BranchChunk,
    lengths: &Builder,
    counts: Option<&[u64]>,
    plan: &ConversionPlan,
    branch: usize,
) -> Result<Builder> {
    let what = format!("branch \"{}\"", plan.branches[branch].name);
    let mut out = Builder::new(&Streamed::Counted(t, 0));
    let mut object = 0usize;
    for i in 0..chunk.entries {
        let mut cursor = StreamCursor::new(chunk.entry(i));
        let objects = match counts {
            None => 1,
            Some(c) => crate::error::to_usize(c[i], "items")?,
        };
        for _ in 0..objects {
            let length = lengths.integer_at(object);
            cursor
                .counted_array(t, length, &mut out)
                .map_err(|e| e.at(entry_location(&what, i)))?;
            object += 1;
        }
        entry_consumed(&cursor).map_err(|e| e.at(entry_location(&what, i)))?;
    }
    Ok(out)
}

/// An object streamed whole by its class's streamer, checked as far as its bytes say:
/// a byte count, when it starts with one, must end where the entry ends.
fn whole_object(entry: &[u8]) -> Result<&[u8]> {
    StreamCursor::entry_header(entry)?;
    Ok(entry)
}

/// A `TBranchObject` entry's object: after its class name (a length byte, the name, a
/// NUL). A missing object (no name) or an object of another class than the branch's is
/// refused.
fn named_object<'a>(entry: &'a [u8], class: &str) -> Result<&'a [u8]> {
    let bad = |why: &str| Error::corrupt("object entry", why.to_string());
    let (&n, rest) = entry.split_first().ok_or_else(|| bad("an empty entry"))?;
    let n = usize::from(n);
    let name = rest
        .get(..n)
        .ok_or_else(|| bad("its class name runs past the entry"))?;
    if n == 0 || rest.get(n) != Some(&0) {
        return Err(bad("no class name before the object"));
    }
    if name != class.as_bytes() {
        return Err(Error::Unsupported(format!(
            "an object of class {} in a branch of class {class}",
            String::from_utf8_lossy(name)
        )));
    }
    Ok(&rest[n + 1..])
}

/// Appends a whole STL collection's streamed bytes without their header (byte count,
/// version, checksum after version 0): the count and the items, as ROOT's streamer field
/// stores a collection. One streamed member-wise (items' members in turn) is decoded by
/// its layout `ty` and streamed again object-wise, as ROOT's streamer field reads
/// collections.
fn collection_content(entry: &[u8], ty: Option<&Streamed>, out: &mut Vec<u8>) -> Result<()> {
    let header = StreamCursor::entry_header(entry)?;
    if !header.byte_count {
        return Err(Error::corrupt(
            "streamed collection",
            "no byte count before the collection",
        ));
    }
    if !header.memberwise {
        out.extend_from_slice(&entry[header.content..]);
        return Ok(());
    }
    let ty = ty.ok_or_else(|| {
        Error::Unsupported(
            "a collection streamed member-wise, of classes the file does not describe".to_string(),
        )
    })?;
    let mut values = Builder::new(ty);
    let mut cursor = StreamCursor::new(entry);
    cursor.decode(ty, &mut values, true)?;
    entry_consumed(&cursor)?;
    encode(ty, &values, 0, false, out)
}

fn entry_consumed(cursor: &StreamCursor<'_>) -> Result<()> {
    if cursor.remaining() != 0 {
        return Err(Error::corrupt(
            "streamed value",
            format!("{} bytes are left after the value", cursor.remaining()),
        ));
    }
    Ok(())
}

fn entry_location(what: &str, entry: usize) -> crate::error::Location {
    crate::error::Location {
        structure: Some(format!("{what}, entry {entry} of the chunk")),
        ..Default::default()
    }
}

/// Wraps flat values into the fixed-size lists `target` has (`std::array` fields).
fn shape(values: ArrayRef, target: &Field) -> Result<ArrayRef> {
    match target.data_type() {
        DataType::FixedSizeList(item, n) => {
            let inner = shape(values, item)?;
            let n_usize = usize::try_from(*n).unwrap_or(0).max(1);
            if inner.len() % n_usize != 0 {
                return Err(Error::InvalidArgument(format!(
                    "{} values do not fill arrays of {n}",
                    inner.len()
                )));
            }
            Ok(Arc::new(FixedSizeListArray::try_new(
                item.clone(),
                *n,
                inner,
                None,
            )?))
        }
        _ => {
            if !values.is_empty() && values.data_type() != target.data_type() {
                return Err(Error::InvalidArgument(format!(
                    "values of type {} for a field of type {}",
                    values.data_type(),
                    target.data_type()
                )));
            }
            Ok(values)
        }
    }
}

/// List offsets (from 0) and the number of items of lists of `counts` items.
fn offsets_of(counts: &[u64], what: &str) -> Result<(Vec<i64>, usize)> {
    let mut offsets = Vec::with_capacity(counts.len() + 1);
    offsets.push(0i64);
    let mut total = 0u64;
    for &c in counts {
        total += c;
        offsets.push(
            i64::try_from(total)
                .map_err(|_| Error::corrupt(what.to_string(), "counts add up past 2^63"))?,
        );
    }
    Ok((
        offsets,
        crate::error::to_usize(total, "items of a collection")?,
    ))
}

/// Element counts from a count leaf's values.
fn decode_counts(chunk: &BranchChunk, ty: LeafType, what: &str) -> Result<Vec<u64>> {
    let size = ty.disk_size();
    // (A split collection's count branch has an entry-offset table, of equal entries.)
    if chunk.data.len() != chunk.entries * size {
        return Err(Error::corrupt(
            what.to_string(),
            format!("{} bytes for {} counts", chunk.data.len(), chunk.entries),
        ));
    }
    let signed = matches!(
        ty,
        LeafType::Char | LeafType::Short | LeafType::Int | LeafType::Long64
    );
    chunk
        .data
        .chunks_exact(size)
        .map(|c| {
            let mut v: i128 = 0;
            for &b in c {
                v = (v << 8) | i128::from(b);
            }
            if signed && c[0] & 0x80 != 0 {
                v -= 1i128 << (8 * size);
            }
            u64::try_from(v)
                .ok()
                .filter(|&n| n <= u64::from(u32::MAX))
                .ok_or_else(|| Error::corrupt(what.to_string(), format!("a count of {v}")))
        })
        .collect()
}

/// Checks that each entry of an array branch holds `count × bytes` bytes.
fn check_array_sizes(chunk: &BranchChunk, counts: &[u64], bytes: usize, what: &str) -> Result<()> {
    let bytes = bytes as u64;
    let sizes_match = match &chunk.offsets {
        Some(o) => counts
            .iter()
            .enumerate()
            .all(|(i, &c)| (o[i + 1] - o[i]) as u64 == c * bytes),
        None => counts.iter().all(|&c| c * bytes == 0),
    };
    if !sizes_match || counts.len() != chunk.entries {
        return Err(Error::corrupt(
            what.to_string(),
            "its entries' sizes disagree with its count leaf",
        ));
    }
    Ok(())
}

/// C strings (`/C` leaves): per entry a one-byte length (or 255 and a four-byte length),
/// then the characters; nothing for an empty string.
fn c_strings(chunk: &BranchChunk, what: &str) -> Result<ArrayRef> {
    let mut offsets = Vec::with_capacity(chunk.entries + 1);
    let mut values = Vec::with_capacity(chunk.data.len());
    offsets.push(0i64);
    for i in 0..chunk.entries {
        let entry = chunk.entry(i);
        // ROOT stores an empty string as no bytes at all.
        if !entry.is_empty() {
            let mut cursor = StreamCursor::new(entry);
            let body = cursor
                .string()
                .and_then(|b| entry_consumed(&cursor).map(|()| b))
                .map_err(|e| e.at(entry_location(what, i)))?;
            values.extend_from_slice(body);
        }
        offsets.push(values.len() as i64);
    }
    Ok(Arc::new(LargeBinaryArray::try_new(
        OffsetBuffer::new(ScalarBuffer::from(offsets)),
        values.into(),
        None,
    )?))
}

/// Converts TTree `tree` (or the file's only tree) of the ROOT file at `input` (a path or
/// URL) into a new ROOT file at `output`, written under a temporary name and renamed
/// when complete: on any error nothing appears at `output` (and an existing file there
/// is kept). An existing `output` is refused unless `replace`; `output` may never be
/// the input, whatever the spelling of its path.
pub fn convert_file(
    input: &str,
    tree: Option<&str>,
    output: &std::path::Path,
    options: &ConvertOptions,
    write: WriteOptions,
    replace: bool,
    progress: impl FnMut(u64, u64),
) -> Result<ConvertSummary> {
    use crate::io::{ensure_distinct, AtomicFile, Existing};
    ensure_distinct(output, &[input])?;
    if !replace {
        crate::io::refuse_existing(output)?;
    }
    let file = TreeFile::open_path(input)?;
    let (tree_path, tree) = file.tree(tree)?;
    let mut resolver = if tree.all_branches().iter().any(|b| b.element.is_some()) {
        TypeResolver::new(file.streamer_infos()?)
    } else {
        TypeResolver::default()
    };
    let (plan, split_choices) = if options.split_policy == SplitPolicy::Auto {
        let (chosen, choices) = choose_split(&file, &tree, &mut resolver, options, &write)?;
        (ConversionPlan::new(&tree, &mut resolver, &chosen)?, choices)
    } else {
        (
            ConversionPlan::new(&tree, &mut resolver, options)?,
            Vec::new(),
        )
    };
    // As the importer: the RNTuple takes the tree's path (a tree in directory a/b
    // becomes an RNTuple in directory a/b of the output).
    let name = options.name.clone().unwrap_or(tree_path);
    let existing = if replace {
        Existing::Replace
    } else {
        Existing::Refuse
    };
    let mut out =
        FileWriter::create_atomic(AtomicFile::create(output, existing)?, write.compression())?;
    let mut summary = convert_tree(&file, &plan, &mut out, &name, write, progress)?;
    out.finish()?;
    summary.split_choices = split_choices;
    Ok(summary)
}

/// Uncompressed bytes of a branch's entries that [`SplitPolicy::Auto`] writes both ways
/// (or all its entries, if fewer).
const SAMPLE_BYTES: u64 = 8 << 20;

/// [`SplitPolicy::Auto`]: for every branch of objects that can be stored either way,
/// writes a sample of its entries (the first, up to [`SAMPLE_BYTES`]) split and unsplit,
/// each as an RNTuple file of that one field in memory, with the output's settings; the
/// options to convert with name the branches whose unsplit sample was smaller.
fn choose_split(
    file: &TreeFile,
    tree: &Tree,
    resolver: &mut TypeResolver,
    options: &ConvertOptions,
    write: &WriteOptions,
) -> Result<(ConvertOptions, Vec<SplitChoice>)> {
    let with = |policy: SplitPolicy| ConvertOptions {
        split_policy: policy,
        ..options.clone()
    };
    let split = ConversionPlan::new(tree, resolver, &with(SplitPolicy::Split))?;
    let unsplit = ConversionPlan::new(tree, resolver, &with(SplitPolicy::Unsplit))?;
    let (start, end) = split.entries;
    let mut chosen = with(SplitPolicy::Split);
    let mut choices = Vec::new();
    for (name, filler) in &unsplit.fields {
        let stored_whole =
            |f: &Filler| matches!(f, Filler::Opaque { .. } | Filler::Restreamed { .. });
        let either = stored_whole(filler)
            && split
                .fields
                .iter()
                .any(|(n, f)| n == name && !stored_whole(f));
        if !either {
            continue;
        }
        let Some(branch) = tree.branches.iter().find(|b| b.name == *name) else {
            continue;
        };
        let per_entry = (branch.tot_bytes / branch.entries.max(1)).max(1);
        let stop = end.min(start.saturating_add((SAMPLE_BYTES / per_entry).max(1)));
        let mut sizes = [0u64; 2];
        for (size, policy) in sizes
            .iter_mut()
            .zip([SplitPolicy::Split, SplitPolicy::Unsplit])
        {
            let one = ConvertOptions {
                name: None,
                branches: vec![glob::Pattern::escape(name)],
                entries: Some((start, stop)),
                skip_unsupported: false,
                unsplit: Vec::new(),
                split_policy: policy,
            };
            let plan = ConversionPlan::new(tree, resolver, &one)?;
            let mut out = FileWriter::new(
                std::io::Cursor::new(Vec::new()),
                "sample.root",
                write.compression(),
            )?;
            convert_tree(file, &plan, &mut out, &tree.name, write.clone(), |_, _| {})?;
            *size = out.finish_into_inner()?.into_inner().len() as u64;
        }
        let choice = SplitChoice {
            branch: name.clone(),
            entries: stop - start,
            split_bytes: sizes[0],
            unsplit_bytes: sizes[1],
            unsplit: sizes[1] < sizes[0],
        };
        if choice.unsplit {
            chosen.unsplit.push(glob::Pattern::escape(name));
        }
        choices.push(choice);
    }
    Ok((chosen, choices))
}

#[cfg(test)]
#[path = "convert_stl_tests.rs"]
mod stl_tests;
