//! Writing RNTuples into a DAOS container in ROOT's DAOS layout (`RPageSinkDaos`; the
//! layout is described in `format::daos`), with either page mapping.
//!
//! **Design.** The writers ([`super::RNTupleWriter`], [`super::PageCopyWriter`], merges)
//! store blobs through [`BlobSink`], which does not say which blob is a page, a page
//! list, the header or the footer, nor a page's cluster and column, all of which the
//! DAOS keys depend on. So the sink *stages* every blob (in memory, then in an unnamed
//! temporary file past [`STAGED_IN_MEMORY`] bytes, so a large copy does not hold the
//! RNTuple in memory), numbered in the order written, and hands back object locators
//! with those numbers. When the anchor comes ([`RNTupleOutput::write_rntuple_anchor`]),
//! the anchor names the header and footer blobs, the footer names the page-list blobs,
//! and the page lists name the page blobs with their clusters and columns. The sink then
//! numbers the pages as ROOT does (page ids 0, 1, … in the order the writer stored
//! them; a page several columns list, as same-page merging shares them, has one id, and
//! is stored once under ROOT main's mapping, under each listing column under ROOT 6.40's,
//! whose reader looks under the column it reads), rewrites the page lists (page locators: Object64, location
//! = page id, size = page data without its checksum) and the footer (page-list links:
//! Object64, location = cluster group, size = the stored page list), packs them again
//! with [`DaosSinkOptions::compression`], and writes every value in ROOT's order:
//! header, then per cluster group its pages and its page list, then the footer, and the
//! anchor last. The header is stored as the writer sealed it. The writers' code is
//! untouched; the cost is one more pass over the staged bytes.
//!
//! **Failures and replacement.** Nothing reaches the container before the anchor is
//! asked for. Pages and page lists are written first; header, footer and anchor, which
//! share one object and dkey, last and together ([`DaosContainer::update_together`]:
//! one update of the dkey, which DAOS applies at one epoch). A write that fails leaves
//! the container's RNTuples as they were. An existing RNTuple of the same name is
//! refused unless [`DaosSinkOptions::replace`]; a replacement is as atomic as renaming a
//! file: the new pages take page ids after the old RNTuple's highest, its page lists
//! locations after the old ones (ROOT's readers find both through the locators), so
//! nothing of the old RNTuple is overwritten until the header, footer and anchor switch
//! together; then the old pages and page lists are removed
//! ([`DaosContainer::punch_many`]). A writer killed at any moment leaves the old RNTuple
//! readable, or the new one. (Values a killed writer stored are referenced by nothing;
//! the next write of the name starts at the same ids and overwrites them. A store
//! without key listing cannot find the others.)
//!
//! **Several RNTuples** can be written through one sink, one after the other (as into a
//! file); each is staged and written when its anchor comes.

use super::sink::{BlobSink, RNTupleOutput};
use crate::compression::CompressionSettings;
use crate::error::{Error, Result};
use crate::format::{
    ntuple_index, object_address, pack_envelope, unpack_envelope, Anchor, DaosAnchor, DaosLocation,
    DaosPageMapping, EnvelopeLink, EnvelopeType, Footer, Header, Locator, LocatorKind, PageList,
    OBJECT_ADDRESS_BITS, PAGE_CHECKSUM_BYTES,
};
use crate::io::{
    DaosContainer, DaosExtent, DaosKey, DaosOid, SourceOptions, DAOS_MAPPING_VARIABLE,
};
use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};

/// Staged bytes kept in memory; past this, they go to an unnamed temporary file.
pub const STAGED_IN_MEMORY: usize = 64 << 20;

/// Values sent to the container in one [`DaosContainer::update_many`], about this many
/// bytes (one value may be larger).
const BATCH_BYTES: u64 = 32 << 20;

/// Parses a page mapping's name: `per-page` (also `object-per-page`, `main`) or
/// `per-cluster` (also `object-per-cluster`, `6.40`).
pub fn parse_daos_mapping(text: &str) -> Result<DaosPageMapping> {
    mapping_by_name(text).ok_or_else(|| Error::InvalidArgument(unknown_mapping(text)))
}

fn mapping_by_name(text: &str) -> Option<DaosPageMapping> {
    match text.trim().to_ascii_lowercase().as_str() {
        "per-page" | "object-per-page" | "main" => Some(DaosPageMapping::ObjectPerPage),
        "per-cluster" | "object-per-cluster" | "6.40" => Some(DaosPageMapping::ObjectPerCluster),
        _ => None,
    }
}

fn unknown_mapping(text: &str) -> String {
    format!(
        "DAOS page mapping \"{text}\": expected per-page (ROOT main's) or per-cluster (ROOT \
         6.40's)"
    )
}

/// The page mapping the settings ask for ([`SourceOptions::daos_mapping`], from
/// [`DAOS_MAPPING_VARIABLE`]); ObjectPerPage when unset or empty. Another value is an
/// [`Error::InvalidArgument`] naming the variable.
pub fn daos_mapping(options: &SourceOptions) -> Result<DaosPageMapping> {
    match options.daos_mapping.as_deref() {
        Some(v) if !v.trim().is_empty() => mapping_by_name(v).ok_or_else(|| {
            Error::InvalidArgument(format!("{DAOS_MAPPING_VARIABLE}: {}", unknown_mapping(v)))
        }),
        _ => Ok(DaosPageMapping::ObjectPerPage),
    }
}

/// How a [`DaosSink`] writes.
#[derive(Debug, Clone)]
pub struct DaosSinkOptions {
    /// Where pages go: [`DaosPageMapping::ObjectPerPage`] (ROOT main's; the default) or
    /// [`DaosPageMapping::ObjectPerCluster`] (ROOT 6.40's).
    pub mapping: DaosPageMapping,
    /// The compression of the page lists and footer the sink packs again (use the
    /// writer's; ROOT's default 505 by default). Pages and the header are stored as the
    /// writer sealed them.
    pub compression: CompressionSettings,
    /// Replace an RNTuple of the same name (by default its anchor makes the write an
    /// [`Error::OutputExists`]).
    pub replace: bool,
    /// The object class the anchor names (ROOT's `RNTupleWriteOptionsDaos`; `"SX"` by
    /// default). Stores without object classes (all of this crate's) only record it.
    pub object_class: String,
    /// How the RNTuple a write replaces is found: the ids its pages and page lists take
    /// (which the new ones must not) and its keys (removed once the new one is in
    /// place). A writer does not read RNTuples: the caller gives `rntuple::read::
    /// daos_extent`. `None`: a write over an existing RNTuple is refused.
    pub find_replaced: Option<FindReplaced>,
}

/// Finds the [`DaosExtent`] of the RNTuple of a name in a container (`None`: there is
/// none, or it cannot be read).
pub type FindReplaced = fn(&DaosContainer, &str) -> Result<Option<DaosExtent>>;

impl Default for DaosSinkOptions {
    fn default() -> Self {
        DaosSinkOptions {
            mapping: DaosPageMapping::ObjectPerPage,
            compression: CompressionSettings::DEFAULT_RNTUPLE,
            replace: false,
            object_class: "SX".to_string(),
            find_replaced: None,
        }
    }
}

/// What a [`DaosSink`] wrote for one RNTuple.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DaosWriteSummary {
    /// The RNTuple's name (its header's).
    pub name: String,
    /// Its ntuple index (`OID.hi` of its objects).
    pub ntuple_index: u32,
    /// The page mapping written.
    pub mapping: DaosPageMapping,
    /// Pages written (a page several columns share, once).
    pub pages: u64,
    /// Cluster groups (page lists) written.
    pub cluster_groups: u64,
    /// Values written, the anchor included.
    pub values: u64,
    /// Bytes written, the anchor included.
    pub bytes: u64,
    /// The first page id: 0, or for a replacement the first after the replaced
    /// RNTuple's.
    pub first_page_id: u64,
    /// Values of the replaced RNTuple removed (its pages and page lists).
    pub removed: u64,
    /// Why they could not be removed, if so (the write itself succeeded).
    pub not_removed: Option<String>,
}

/// A [`BlobSink`] and [`RNTupleOutput`] writing RNTuples into a DAOS container in ROOT's
/// layout (module documentation).
pub struct DaosSink {
    container: DaosContainer,
    options: DaosSinkOptions,
    staged: Staging,
    written: Vec<DaosWriteSummary>,
}

impl DaosSink {
    /// A sink writing into `container` as `options` say.
    pub fn new(container: DaosContainer, options: DaosSinkOptions) -> DaosSink {
        DaosSink {
            container,
            options,
            staged: Staging::default(),
            written: Vec::new(),
        }
    }

    /// The container written into.
    pub fn container(&self) -> &DaosContainer {
        &self.container
    }

    /// What was written so far, one summary per RNTuple.
    pub fn summaries(&self) -> &[DaosWriteSummary] {
        &self.written
    }

    /// Checks that an RNTuple `name` may be written: an [`Error::OutputExists`] when its
    /// anchor is there and the options do not replace it, an [`Error::InvalidArgument`]
    /// when another RNTuple has its ntuple index (a caller knowing the name can fail
    /// before the work; the sink checks again when the anchor comes).
    pub fn check_absent(&self, name: &str) -> Result<()> {
        self.may_write(name).map(|_| ())
    }

    /// Whether an RNTuple `name` may be written, and whether one is there (to replace).
    fn may_write(&self, name: &str) -> Result<bool> {
        let here = format!("{}:{name}", self.container.id());
        match self.occupant(name)? {
            None => Ok(false),
            Some(other) if other != name => Err(Error::InvalidArgument(format!(
                "{here}: the ntuple index {:#010x} of \"{name}\" is taken by the RNTuple \
                 \"{other}\" (two names of one index cannot share a container)",
                ntuple_index(name)
            ))),
            Some(_) if self.options.replace => Ok(true),
            Some(_) => Err(Error::OutputExists { path: here }),
        }
    }

    /// The name of the RNTuple whose (valid) anchor is under `name`'s ntuple index, if
    /// any: its header's, or `name` when its header cannot be read.
    fn occupant(&self, name: &str) -> Result<Option<String>> {
        let index = ntuple_index(name);
        let at = key(index, DaosLocation::ANCHOR);
        let Some(anchor) = self
            .container
            .fetch(at.oid, at.dkey, at.akey)?
            .and_then(|bytes| DaosAnchor::parse(&bytes, "DAOS anchor").ok())
            .filter(|a| a.nbytes_header != 0)
        else {
            return Ok(None);
        };
        let at = key(index, DaosLocation::HEADER);
        let stored = self.container.fetch(at.oid, at.dkey, at.akey)?;
        let stored_name = stored.and_then(|bytes| {
            let (payload, _) = unpack_envelope(
                &bytes,
                u64::from(anchor.len_header),
                u64::from(anchor.len_header).max(16),
                EnvelopeType::Header,
                "header envelope",
            )
            .ok()?;
            Header::read(&payload).ok().map(|h| h.name)
        });
        Ok(Some(stored_name.unwrap_or_else(|| name.to_string())))
    }

    /// Stages `parts` as one blob; returns its number.
    fn stage(&mut self, parts: &[&[u8]]) -> Result<u64> {
        let n = self.staged.push(parts)?;
        if object_address(n).is_none() {
            return Err(Error::Unsupported(format!(
                "{}: more than 2^28 blobs in one RNTuple",
                self.container.id()
            )));
        }
        Ok(n)
    }

    /// The staged blob at `address` (an object address this sink handed out), for the
    /// `what` of messages.
    fn blob_at(&self, address: u64, what: &str) -> Result<u64> {
        let n = address >> OBJECT_ADDRESS_BITS;
        if address & ((1 << OBJECT_ADDRESS_BITS) - 1) != 0 || n >= self.staged.count() {
            return Err(Error::InvalidArgument(format!(
                "{}: the {what} is not a blob stored through this sink (address {address:#x})",
                self.container.id()
            )));
        }
        Ok(n)
    }

    /// What the staged RNTuple of `anchor` is: its header, footer, page lists and pages
    /// (blob → the cluster group listing it first, and every (cluster id, column id)
    /// listing it), learnt from anchor, footer and page lists.
    fn plan(&self, anchor: &Anchor) -> Result<Staged> {
        let id = self.container.id().clone();
        let corrupt = |detail: String| Error::InvalidArgument(format!("{id}: {detail}"));
        // Header: stored as sealed; its name is the RNTuple's.
        let header_blob = self.blob_at(anchor.seek_header, "header")?;
        let header_bytes = self.staged.read(header_blob)?;
        let header_payload = unpack(
            &header_bytes,
            anchor.nbytes_header,
            anchor.len_header,
            EnvelopeType::Header,
            "header envelope",
        )?;
        let name = Header::read(&header_payload)?.name;
        // Footer and page lists, as the writer stored them.
        let footer_blob = self.blob_at(anchor.seek_footer, "footer")?;
        let footer_bytes = self.staged.read(footer_blob)?;
        let footer = Footer::read(&unpack(
            &footer_bytes,
            anchor.nbytes_footer,
            anchor.len_footer,
            EnvelopeType::Footer,
            "footer envelope",
        )?)?;
        if !footer.attribute_sets.is_empty() {
            return Err(Error::Unsupported(format!(
                "{id}:{name}: attribute sets have no place in ROOT's DAOS layout"
            )));
        }
        let mut role: HashMap<u64, String> = HashMap::new();
        role.insert(header_blob, "the header".into());
        role.insert(footer_blob, "the footer".into());
        let mut lists = Vec::with_capacity(footer.cluster_groups.len());
        for (g, group) in footer.cluster_groups.iter().enumerate() {
            let what = format!("page list of cluster group {g}");
            let LocatorKind::Object64 { location: blob } = group.page_list.locator.kind else {
                return Err(corrupt(format!(
                    "the {what} was not stored through this sink"
                )));
            };
            if blob >= self.staged.count() || role.insert(blob, what.clone()).is_some() {
                return Err(corrupt(format!(
                    "the {what} names blob {blob}, which is no page list"
                )));
            }
            let stored = self.staged.read(blob)?;
            lists.push(PageList::read(&unpack(
                &stored,
                group.page_list.locator.size,
                group.page_list.length,
                EnvelopeType::PageList,
                &what,
            )?)?);
        }
        let pages = self.listed_pages(&lists, &role).map_err(corrupt)?;
        Ok(Staged {
            name,
            header_bytes,
            footer,
            lists,
            pages,
        })
    }

    /// Blob → (the cluster group listing it first, every (cluster id, column id)
    /// listing it, in order); an error text when a page is not a staged blob of its
    /// listed size.
    fn listed_pages(
        &self,
        lists: &[PageList],
        role: &HashMap<u64, String>,
    ) -> std::result::Result<PagePlaces, String> {
        let mut pages: PagePlaces = HashMap::new();
        let mut cluster = 0u64;
        for (g, list) in lists.iter().enumerate() {
            for columns in &list.columns {
                for (column, column_pages) in columns.iter().enumerate() {
                    for page in &column_pages.pages {
                        let LocatorKind::Object64 { location: blob } = page.locator.kind else {
                            return Err(format!(
                                "a page of column {column} in cluster {cluster} is at a {}, \
                                 not a blob stored through this sink",
                                page.locator.describe()
                            ));
                        };
                        let checksum = if page.has_checksum {
                            PAGE_CHECKSUM_BYTES
                        } else {
                            0
                        };
                        let len = self.staged.len(blob).ok_or_else(|| {
                            format!("a page names blob {blob}, which was not stored")
                        })?;
                        if let Some(other) = role.get(&blob) {
                            return Err(format!("a page names blob {blob}, {other}"));
                        }
                        if len != page.locator.size + checksum {
                            return Err(format!(
                                "a page of column {column} in cluster {cluster} is listed \
                                 with {} bytes, its blob {blob} has {len}",
                                page.locator.size + checksum
                            ));
                        }
                        let listings = &mut pages.entry(blob).or_insert((g, Vec::new())).1;
                        if !listings.contains(&(cluster, column as u64)) {
                            listings.push((cluster, column as u64));
                        }
                    }
                }
                cluster += 1;
            }
        }
        Ok(pages)
    }

    /// Turns the staged RNTuple of `anchor` into DAOS values and writes them: pages and
    /// page lists under ids no value of an RNTuple it replaces has, then header, footer
    /// and anchor together (one update of their dkey), then the replaced RNTuple's pages
    /// and page lists are removed (module documentation).
    fn commit(&mut self, anchor: &Anchor) -> Result<DaosWriteSummary> {
        let Staged {
            name,
            header_bytes,
            mut footer,
            mut lists,
            pages,
        } = self.plan(anchor)?;
        let index = ntuple_index(&name);
        let rntuple = format!("{}:{name}", self.container.id());
        let old = if self.may_write(&name)? {
            let find = self.options.find_replaced.ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{rntuple}: replacing an RNTuple needs the sink's find_replaced \
                     (rntuple::read::daos_extent)"
                ))
            })?;
            find(&self.container, &name)?
        } else {
            None
        };
        // Page ids in the order the writer stored the pages, as ROOT counts them, after
        // those of the RNTuple replaced; its page lists' locations likewise.
        let mut blobs: Vec<u64> = pages.keys().copied().collect();
        blobs.sort_unstable();
        let (first_page, first_group) =
            old.as_ref().map_or((0, 0), |o| (o.next_page, o.next_group));
        let page_id = renumber_pages(&blobs, first_page, &mut lists, &rntuple)?;
        let PackedMetadata {
            lists: packed_lists,
            footer: packed_footer,
            anchor: daos_anchor,
        } = self.pack_metadata(anchor, &lists, &mut footer, first_group, &rntuple)?;

        // Write: per group its pages and page list; then header, footer and anchor at once.
        let mapping = self.options.mapping;
        let mut out = Batch::new(&self.container);
        let mut by_group: Vec<Vec<u64>> = vec![Vec::new(); lists.len()];
        for &blob in &blobs {
            if let Some(&(g, _)) = pages.get(&blob) {
                if let Some(group) = by_group.get_mut(g) {
                    group.push(blob);
                }
            }
        }
        for (g, (group, list)) in by_group.iter().zip(packed_lists).enumerate() {
            for blob in group {
                let (Some((_, listings)), Some(&id)) = (pages.get(blob), page_id.get(blob)) else {
                    continue;
                };
                // Under ROOT 6.40's mapping, a page several columns list is stored under
                // each (ROOT's reader looks under the column it reads); under ROOT main's,
                // once.
                let mut keys: Vec<DaosKey> = Vec::with_capacity(listings.len());
                for &(cluster, column) in listings {
                    let at = key(index, mapping.page_location(cluster, column, id));
                    if !keys.contains(&at) {
                        keys.push(at);
                    }
                }
                let value = self.staged.read(*blob)?;
                for &at in keys.iter().skip(1) {
                    out.push(at, value.clone())?;
                }
                if let Some(&first) = keys.first() {
                    out.push(first, value)?;
                }
            }
            let at = DaosLocation::page_list(first_group + g as u64);
            out.push(key(index, at), list)?;
        }
        // Everything the anchor names is stored before it is.
        out.flush()?;
        let metadata = key(index, DaosLocation::ANCHOR);
        let together: [(u64, &[u8]); 3] = [
            (DaosLocation::HEADER.akey, &header_bytes),
            (DaosLocation::FOOTER.akey, &packed_footer),
            (DaosLocation::ANCHOR.akey, &daos_anchor),
        ];
        self.container
            .update_together(metadata.oid, metadata.dkey, &together)?;
        let written: u64 = together.iter().map(|(_, v)| v.len() as u64).sum();
        // The replaced RNTuple's pages and page lists: referenced by nothing now.
        let removed = old.map_or(Ok(0), |old| {
            self.container
                .punch_many(&old.keys)
                .map(|()| old.keys.len() as u64)
        });
        Ok(DaosWriteSummary {
            name,
            ntuple_index: index,
            mapping,
            pages: blobs.len() as u64,
            cluster_groups: lists.len() as u64,
            values: out.values + 3,
            bytes: out.bytes + written,
            first_page_id: first_page,
            removed: removed.as_ref().map_or(0, |n| *n),
            not_removed: removed.err().map(|e| e.to_string()),
        })
    }

    /// Packs the page lists (page list ids from `first_group`) and the footer again with
    /// the DAOS locators, and makes the DAOS anchor.
    fn pack_metadata(
        &self,
        anchor: &Anchor,
        lists: &[PageList],
        footer: &mut Footer,
        first_group: u64,
        rntuple: &str,
    ) -> Result<PackedMetadata> {
        let mut packed_lists = Vec::with_capacity(lists.len());
        for (g, (list, group)) in lists.iter().zip(&mut footer.cluster_groups).enumerate() {
            let packed = pack_envelope(
                EnvelopeType::PageList,
                &list.write()?,
                self.options.compression,
            )?;
            group.page_list = EnvelopeLink {
                length: packed.length,
                locator: Locator::object(packed.stored.len() as u64, first_group + g as u64),
            };
            packed_lists.push(packed.stored);
        }
        let packed_footer = pack_envelope(
            EnvelopeType::Footer,
            &footer.write(),
            self.options.compression,
        )?;
        let size = |n: u64, what: &str| {
            u32::try_from(n).map_err(|_| {
                Error::Unsupported(format!(
                    "{rntuple}: the {what} of {n} bytes is larger than a DAOS anchor records \
                     (2^32 - 1)"
                ))
            })
        };
        let daos_anchor = DaosAnchor {
            version_epoch: anchor.version_epoch,
            version_major: anchor.version_major,
            version_minor: anchor.version_minor,
            version_patch: anchor.version_patch,
            nbytes_header: size(anchor.nbytes_header, "header envelope")?,
            len_header: size(anchor.len_header, "header envelope")?,
            nbytes_footer: size(packed_footer.stored.len() as u64, "footer envelope")?,
            len_footer: size(packed_footer.length, "footer envelope")?,
            object_class: self.options.object_class.clone(),
        }
        .to_bytes()?;
        Ok(PackedMetadata {
            lists: packed_lists,
            footer: packed_footer.stored,
            anchor: daos_anchor,
        })
    }
}

/// Gives the staged pages `blobs` (in the order the writer stored them) the page ids
/// from `first_page` on, and points the page lists' locators at them.
fn renumber_pages(
    blobs: &[u64],
    first_page: u64,
    lists: &mut [PageList],
    rntuple: &str,
) -> Result<HashMap<u64, u64>> {
    if first_page.saturating_add(blobs.len() as u64) > DAOS_PAGE_IDS {
        return Err(Error::Unsupported(format!(
            "{rntuple}: page ids {first_page} and up would pass 2^28 (what a reader \
             addresses); write the RNTuple under another name"
        )));
    }
    let page_id: HashMap<u64, u64> = blobs
        .iter()
        .enumerate()
        .map(|(i, &b)| (b, first_page + i as u64))
        .collect();
    for list in lists.iter_mut() {
        for page in list.columns.iter_mut().flatten().flat_map(|c| &mut c.pages) {
            if let LocatorKind::Object64 { location } = page.locator.kind {
                if let Some(&id) = page_id.get(&location) {
                    page.locator = Locator::object(page.locator.size, id);
                }
            }
        }
    }
    Ok(page_id)
}

/// The metadata of an RNTuple packed again with its DAOS locators.
struct PackedMetadata {
    /// The page lists, packed.
    lists: Vec<Vec<u8>>,
    /// The footer, packed.
    footer: Vec<u8>,
    /// The DAOS anchor's bytes.
    anchor: Vec<u8>,
}

/// A staged RNTuple, as [`DaosSink::plan`] learns it.
struct Staged {
    name: String,
    header_bytes: Vec<u8>,
    footer: Footer,
    lists: Vec<PageList>,
    pages: PagePlaces,
}

/// Page blob → (the cluster group listing it first, every (cluster id, column id)
/// listing it, in order).
type PagePlaces = HashMap<u64, (usize, Vec<(u64, u64)>)>;

/// Page ids a reader addresses (its `ObjectSpace`: object `n` is page id `n`).
const DAOS_PAGE_IDS: u64 = 1 << 28;

/// The key of a value of the RNTuple of ntuple index `index`.
fn key(index: u32, at: DaosLocation) -> DaosKey {
    DaosKey::new(DaosOid::new(at.oid_lo, u64::from(index)), at.dkey, at.akey)
}

/// Unpacks a staged envelope the writer stored (`nbytes` stored, `length` unpacked).
fn unpack(
    stored: &[u8],
    nbytes: u64,
    length: u64,
    kind: EnvelopeType,
    what: &str,
) -> Result<Vec<u8>> {
    if stored.len() as u64 != nbytes {
        return Err(Error::InvalidArgument(format!(
            "the {what} is listed with {nbytes} bytes, its blob has {}",
            stored.len()
        )));
    }
    // The writer's own envelope: its length is what it says.
    unpack_envelope(stored, length, length.max(16), kind, what).map(|(payload, _)| payload)
}

impl BlobSink for DaosSink {
    fn write_blob(&mut self, payload: &[u8], _max_key_size: u64) -> Result<u64> {
        let n = self.stage(&[payload])?;
        Ok(object_address(n).unwrap_or(u64::MAX))
    }

    fn write_blob_parts(&mut self, parts: &[&[u8]], _max_key_size: u64) -> Result<u64> {
        let n = self.stage(parts)?;
        Ok(object_address(n).unwrap_or(u64::MAX))
    }

    fn write_located(&mut self, parts: &[&[u8]], _max_key_size: u64) -> Result<Vec<Locator>> {
        parts
            .iter()
            .map(|part| Ok(Locator::object(part.len() as u64, self.stage(&[part])?)))
            .collect()
    }

    /// Nothing to hand over: an RNTuple reaches the container only with its anchor.
    fn checkpoint(&mut self) -> Result<()> {
        Ok(())
    }
}

impl RNTupleOutput for DaosSink {
    /// Writes the staged RNTuple (module documentation) under its header's name (`name`,
    /// the path of a file's key, is not used: a container has no directories), anchor
    /// last, and starts staging the next one. The header's name is the RNTuple's.
    fn write_rntuple_anchor(&mut self, _name: &str, anchor: &Anchor) -> Result<()> {
        let result = self.commit(anchor);
        self.staged = Staging::default();
        self.written.push(result?);
        Ok(())
    }
}

/// Values on their way to the container, sent in batches of about [`BATCH_BYTES`].
struct Batch<'c> {
    container: &'c DaosContainer,
    pending: Vec<(DaosKey, Vec<u8>)>,
    pending_bytes: u64,
    /// Values and bytes sent.
    values: u64,
    bytes: u64,
}

impl<'c> Batch<'c> {
    fn new(container: &'c DaosContainer) -> Batch<'c> {
        Batch {
            container,
            pending: Vec::new(),
            pending_bytes: 0,
            values: 0,
            bytes: 0,
        }
    }

    fn push(&mut self, key: DaosKey, value: Vec<u8>) -> Result<()> {
        self.pending_bytes += value.len() as u64;
        self.pending.push((key, value));
        if self.pending_bytes >= BATCH_BYTES {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let values: Vec<(DaosKey, &[u8])> = self
            .pending
            .iter()
            .map(|(k, v)| (*k, v.as_slice()))
            .collect();
        self.container.update_many(&values)?;
        self.values += self.pending.len() as u64;
        self.bytes += self.pending_bytes;
        self.pending.clear();
        self.pending_bytes = 0;
        Ok(())
    }
}

/// Blobs staged until their RNTuple's anchor: one stream of bytes, its start in an
/// unnamed temporary file once more than [`STAGED_IN_MEMORY`] bytes were staged, the
/// rest in memory. A blob is wholly in one or the other.
#[derive(Default)]
struct Staging {
    memory: Vec<u8>,
    file: Option<File>,
    /// Bytes in the file (the stream's first bytes).
    file_len: u64,
    /// Each blob's offset in the stream and length.
    blobs: Vec<(u64, u64)>,
}

impl Staging {
    /// Blobs staged.
    fn count(&self) -> u64 {
        self.blobs.len() as u64
    }

    /// The length of blob `n`.
    fn len(&self, n: u64) -> Option<u64> {
        let i = usize::try_from(n).ok()?;
        self.blobs.get(i).map(|&(_, len)| len)
    }

    /// Stages the concatenation of `parts` as the next blob; returns its number.
    fn push(&mut self, parts: &[&[u8]]) -> Result<u64> {
        let n = self.count();
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let offset = self.file_len + self.memory.len() as u64;
        if self.memory.len() + len > STAGED_IN_MEMORY {
            self.spill()?;
        }
        if len > STAGED_IN_MEMORY {
            for part in parts {
                self.write_file(part)?;
            }
        } else {
            for part in parts {
                self.memory.extend_from_slice(part);
            }
        }
        self.blobs.push((offset, len as u64));
        Ok(n)
    }

    /// Moves the bytes in memory to the end of the file.
    fn spill(&mut self) -> Result<()> {
        let memory = std::mem::take(&mut self.memory);
        if !memory.is_empty() {
            self.write_file(&memory)?;
        }
        Ok(())
    }

    fn write_file(&mut self, bytes: &[u8]) -> Result<()> {
        let file = match &mut self.file {
            Some(file) => file,
            None => self
                .file
                .insert(tempfile::tempfile().map_err(staging_error("create"))?),
        };
        file.write_all(bytes).map_err(staging_error("write"))?;
        self.file_len += bytes.len() as u64;
        Ok(())
    }

    /// The bytes of blob `n`.
    fn read(&self, n: u64) -> Result<Vec<u8>> {
        let missing = || Error::InvalidArgument(format!("no blob {n} was staged"));
        let &(offset, len) = usize::try_from(n)
            .ok()
            .and_then(|i| self.blobs.get(i))
            .ok_or_else(missing)?;
        let size = usize::try_from(len).map_err(|_| missing())?;
        if offset >= self.file_len {
            let start = usize::try_from(offset - self.file_len).map_err(|_| missing())?;
            return self
                .memory
                .get(start..start + size)
                .map(<[u8]>::to_vec)
                .ok_or_else(missing);
        }
        let mut file = self.file.as_ref().ok_or_else(missing)?;
        let mut bytes = vec![0u8; size];
        file.seek(SeekFrom::Start(offset))
            .and_then(|_| file.read_exact(&mut bytes))
            .map_err(staging_error("read"))?;
        Ok(bytes)
    }
}

/// An error of the staging file, for `action` (create, write, read).
fn staging_error(action: &'static str) -> impl Fn(std::io::Error) -> Error {
    move |source| {
        Error::Io(crate::io::Error::Write {
            what: format!("the DAOS sink's staging file (temporary; {action})"),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staged_blobs_read_back_from_memory_and_file() {
        let mut s = Staging::default();
        let small: Vec<u8> = (0..100u8).collect();
        let big = vec![7u8; STAGED_IN_MEMORY + 10];
        assert_eq!(s.push(&[&small[..40], &small[40..]]).unwrap(), 0);
        assert_eq!(s.push(&[&big]).unwrap(), 1);
        assert_eq!(s.push(&[b"after"]).unwrap(), 2);
        assert!(s.file.is_some());
        assert_eq!(s.read(0).unwrap(), small);
        assert_eq!(s.read(1).unwrap(), big);
        assert_eq!(s.read(2).unwrap(), b"after");
        assert_eq!(s.len(1), Some(big.len() as u64));
        assert!(s.read(3).is_err());
        // An empty blob is a blob.
        assert_eq!(s.push(&[]).unwrap(), 3);
        assert_eq!(s.read(3).unwrap(), Vec::<u8>::new());
    }

    #[test]
    fn mappings_parse_by_name() {
        assert_eq!(
            parse_daos_mapping("per-page").unwrap(),
            DaosPageMapping::ObjectPerPage
        );
        assert_eq!(
            parse_daos_mapping(" Per-Cluster ").unwrap(),
            DaosPageMapping::ObjectPerCluster
        );
        assert_eq!(
            parse_daos_mapping("6.40").unwrap(),
            DaosPageMapping::ObjectPerCluster
        );
        let err = parse_daos_mapping("caged").unwrap_err();
        assert!(err.to_string().contains("per-page"), "{err}");
    }
}
