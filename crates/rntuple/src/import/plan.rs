//! The importer's mapping planned ([`ConversionPlan`]): per selected top-level branch
//! the field it becomes and how its values are read ([`FieldSource`]), the collections of
//! arrays sharing a count leaf, the projections and the streamer infos of the classes the
//! streamer fields store.

use super::{ConvertOptions, SplitPolicy};
use crate::container::{streamer_info_object, StreamerInfo};
use crate::error::{Error, Result};
use crate::format::{ExtraTypeInfoRecord, EXTRA_TYPE_STREAMER_INFO};
use crate::schema::{ClassSpec, ColumnDefaults, SchemaBuilder};
use crate::ttree::{
    restreamable, Branch, ClassKind, ClassLayout, Collection, LeafType, Streamed, Tree,
    TypeResolver,
};
use std::collections::BTreeMap;

/// How the values of one leaf are laid out in an entry (or a collection item).
#[derive(Debug, Clone)]
pub(super) struct Values {
    pub(super) ty: LeafType,
    /// Values per item: 1, or N for a fixed array (the importer flattens `x[2][3]/F` to
    /// `std::array<float,6>`).
    pub(super) len: usize,
}

impl Values {
    pub(super) fn bytes(&self) -> usize {
        self.len * self.ty.disk_size()
    }

    pub(super) fn cpp_type(&self) -> String {
        if self.len == 1 {
            self.ty.cpp_type().to_string()
        } else {
            format!("std::array<{},{}>", self.ty.cpp_type(), self.len)
        }
    }
}

/// How a top-level data field is filled from branches (indices into the plan's branches).
#[derive(Debug, Clone)]
pub(super) enum FieldSource {
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
        source: Box<FieldSource>,
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
pub(super) enum Framing {
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
pub(super) enum SplitNode {
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
pub(super) const STL_COLLECTION_VERSION: u32 = 6;

/// The checksum `TClass` computes from a class's name alone (STL collections): each
/// character added to three times the sum so far.
pub(super) fn name_checksum(name: &str) -> u32 {
    name.bytes()
        .fold(0u32, |id, c| id.wrapping_mul(3).wrapping_add(u32::from(c)))
}

/// Whether top-level `branch` holds objects of classes (or collections of them): a
/// branch [`SplitPolicy`] chooses a form for.
pub(super) fn holds_objects(branch: &Branch, resolver: &mut TypeResolver) -> bool {
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
pub(super) type CollectionProjections = (String, Vec<(String, String)>, String);

/// The conversion of a tree, planned: the branches to read and the fields they fill.
#[derive(Debug, Clone)]
pub struct ConversionPlan {
    pub(super) entries: (u64, u64),
    pub(super) branches: Vec<Branch>,
    pub(super) fields: Vec<(String, FieldSource)>,
    pub(super) builder: SchemaBuilder,
    /// The streamer infos of the classes streamer fields store.
    pub(super) streamer_infos: Vec<StreamerInfo>,
    /// Branches left out (with `skip_unsupported`), each with the reason.
    pub skipped: Vec<String>,
}

/// The dimensions in a leaf title after the leaf's name: `x[3][2]` gives
/// `["3", "2"]`, `x[n]` gives `["n"]`.
pub(super) fn title_dims(title: &str) -> Vec<&str> {
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
pub(super) fn values_of(
    branch: &Branch,
    leaf: &crate::ttree::Leaf,
    ty: LeafType,
) -> Result<Values> {
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

pub(super) fn leaf_type(branch: &Branch, leaf: &crate::ttree::Leaf) -> Result<LeafType> {
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
pub(super) fn branch_patterns(
    tree: &Tree,
    patterns: &[String],
    what: &str,
) -> Result<Vec<glob::Pattern>> {
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

pub(super) fn matches_any(patterns: &[glob::Pattern], name: &str) -> bool {
    patterns.is_empty() || patterns.iter().any(|p| p.matches(name))
}

/// Arrays sized by a count leaf (name, branch index, values), by count leaf name.
pub(super) type CountedArrays = BTreeMap<String, Vec<(String, usize, Values)>>;

/// The entries to convert: all, or `asked` (a stop past the end converts to the end, as
/// a slice does).
pub(super) fn entry_range(tree: &Tree, asked: Option<(u64, u64)>) -> Result<(u64, u64)> {
    match asked {
        None => Ok((0, tree.entries)),
        Some((a, b)) if a <= b && a <= tree.entries => Ok((a, b.min(tree.entries))),
        Some((a, b)) if a > b => Err(Error::InvalidArgument(format!(
            "entries {a}:{b}: the start is after the stop"
        ))),
        Some((a, _)) => Err(Error::InvalidArgument(format!(
            "entries starting at {a} start past the end: the TTree has {} entries",
            tree.entries
        ))),
    }
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
        let mut plan = ConversionPlan {
            entries: entry_range(tree, options.entries)?,
            branches: Vec::new(),
            fields: Vec::new(),
            builder: SchemaBuilder::new(ColumnDefaults::default()),
            streamer_infos: Vec::new(),
            skipped: Vec::new(),
        };
        let collections = plan.plan_top_branches(tree, resolver, options, &patterns)?;
        plan.plan_collections(tree, collections)?;
        if plan.fields.is_empty() && !plan.skipped.is_empty() {
            return Err(Error::Unsupported(format!(
                "nothing left to convert: every selected branch is of a type that cannot be converted ({})",
                plan.skipped.join("; ")
            )));
        }
        plan.add_projections()?;
        plan.add_streamer_info_record()?;
        Ok(plan)
    }

    /// Plans the selected top-level branches in order; returns the arrays sized by a
    /// count leaf, by count leaf name (sorted: the importer numbers collections so).
    fn plan_top_branches(
        &mut self,
        tree: &Tree,
        resolver: &mut TypeResolver,
        options: &ConvertOptions,
        patterns: &[glob::Pattern],
    ) -> Result<CountedArrays> {
        let plan = self;
        let unsplit = branch_patterns(tree, &options.unsplit, "--unsplit pattern")?;
        let mut collections = CountedArrays::new();
        let count_leaves: std::collections::HashSet<&str> = tree
            .branches
            .iter()
            .flat_map(|b| b.leaves.iter())
            .filter_map(|l| l.count.as_deref())
            .collect();
        for branch in &tree.branches {
            if !matches_any(patterns, &branch.name) {
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
                            *plan = before;
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
        Ok(collections)
    }

    /// Adds one untyped collection `_collectionN` per count leaf, of the arrays it sizes.
    fn plan_collections(&mut self, tree: &Tree, collections: CountedArrays) -> Result<()> {
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
            let count = self.add_branch(count_branch);
            let name = format!("_collection{index}");
            let members: Vec<(String, String)> = arrays
                .iter()
                .map(|(n, _, v)| (n.clone(), v.cpp_type()))
                .collect();
            let refs: Vec<(&str, &str)> = members
                .iter()
                .map(|(n, t)| (n.as_str(), t.as_str()))
                .collect();
            self.builder.add_untyped_collection(&name, &refs)?;
            self.fields.push((
                name,
                FieldSource::Collection {
                    count,
                    count_type,
                    arrays,
                },
            ));
        }
        Ok(())
    }

    /// Adds the projections: per collection, each array as an RVec, then the count leaf.
    fn add_projections(&mut self) -> Result<()> {
        let collection_fields: Vec<CollectionProjections> = self
            .fields
            .iter()
            .filter_map(|(name, f)| match f {
                FieldSource::Collection { count, arrays, .. } => Some((
                    name.clone(),
                    arrays
                        .iter()
                        .map(|(n, _, v)| (n.clone(), v.cpp_type()))
                        .collect(),
                    self.branches[*count].leaves[0].name.clone(),
                )),
                _ => None,
            })
            .collect();
        for (collection, arrays, count_leaf) in collection_fields {
            for (array, cpp) in &arrays {
                let (col, arr) = (collection.clone(), array.clone());
                self.builder.add_projected_field_mapped(
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
            self.builder.add_projected_field(
                &count_leaf,
                "ROOT::RNTupleCardinality<std::uint32_t>",
                &collection,
            )?;
        }
        Ok(())
    }

    /// Adds the streamer infos of the classes the streamer fields store, as ROOT's writer
    /// does: one extra type information record.
    fn add_streamer_info_record(&mut self) -> Result<()> {
        if !self.streamer_infos.is_empty() {
            self.builder.add_extra_type_info(ExtraTypeInfoRecord {
                content_id: EXTRA_TYPE_STREAMER_INFO,
                type_version: 0,
                type_name: String::new(),
                content: streamer_info_object(&self.streamer_infos)?,
            });
        }
        Ok(())
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
        let field_source = match (e.branch_type, branch.branches.is_empty()) {
            // A whole value per entry: a string (-1), a collection or an unsplit object (0).
            (-1 | 0, true) => {
                // A TBranchObject's object comes with its header, as a collection does.
                let header =
                    matches!(ty, Streamed::Vector(..) | Streamed::Bitset(_)) || e.named_entries;
                FieldSource::Streamed {
                    branch: self.add_branch(branch),
                    ty: ty.clone(),
                    header,
                    named: e.named_entries.then(|| e.class_name.clone()),
                }
            }
            // A split object (a std::array too: its class's one member, the element array
            // `_M_elems[N]`).
            (0, false) => match &ty {
                Streamed::Object(class) => FieldSource::Split(self.split_node(class, branch, "")?),
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
                FieldSource::SplitCollection { count, items }
            }
            (4, false) => {
                let Streamed::Vector(_, item) = &ty else {
                    return Err(unsupported("a split collection that is no STL collection"));
                };
                let Streamed::Object(class) = item.as_ref() else {
                    return Err(unsupported("a split collection of no class"));
                };
                let count = self.add_branch(branch);
                FieldSource::SplitCollection {
                    count,
                    items: self.split_node(class, branch, "")?,
                }
            }
            (t, _) => return Err(unsupported(&format!("branch type {t}"))),
        };
        if restream {
            return self.plan_restreamed(branch, field_source, ty, resolver);
        }
        self.register_classes(&ty)?;
        self.builder.add_cpp_field(&branch.name, &ty.cpp_type())?;
        self.fields.push((branch.name.clone(), field_source));
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
            FieldSource::Opaque {
                branch: index,
                framing,
                named: e.named_entries.then(|| e.class_name.clone()),
                ty,
            },
        ));
        Ok(())
    }

    /// Plans a split object (or split collection of objects) as a streamer field: the
    /// values `field_source` builds from the split branches, streamed whole.
    fn plan_restreamed(
        &mut self,
        branch: &Branch,
        field_source: FieldSource,
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
        if !matches!(
            &field_source,
            FieldSource::Split(_) | FieldSource::SplitCollection { .. }
        ) {
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
            FieldSource::Restreamed {
                source: Box::new(field_source),
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
                        .push((branch.name.clone(), FieldSource::CString { branch: index }));
                    return Ok(());
                }
                let values = values_of(branch, leaf, ty)?;
                self.builder
                    .add_cpp_field(&branch.name, &values.cpp_type())?;
                self.fields.push((
                    branch.name.clone(),
                    FieldSource::Leaf {
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
                    FieldSource::LeafList {
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
