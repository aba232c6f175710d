//! Opening an RNTuple stored in ROOT's DAOS layout (`RPageSourceDaos`; the layout is
//! described in `format::daos`): the anchor under the RNTuple's ntuple index, then header
//! and footer in one request, then every page list in one request; the pages are read
//! through an [`ObjectSpace`] whose object `n` is the page of page id `n` (the location
//! its Object64 locator holds), so the planner and prefetcher fetch a bunch's pages in
//! one [`DaosContainer::fetch_many`].
//!
//! **Page mappings.** ROOT 6.40 keeps a page under (OID.lo = cluster id, dkey = physical
//! column id, akey = page id), ROOT's main branch under (OID.lo = page id, fixed dkey and
//! akey). The anchor does not say which; the reader looks for the first page the page
//! lists list (first cluster group, first cluster, lowest column) under both keys, in one
//! request, and takes the mapping whose key holds it: a value of the page's stored length
//! (and, when the page has a checksum, whose checksum matches). Both keys hold a value
//! only when one RNTuple name was written twice, once with each mapping; then the value
//! that is the page wins, and per page when both are (ROOT's main mapping). A page listed
//! by several columns (one locator, as same-page merging shares them) is, under ROOT
//! 6.40's mapping, the value of the first column listing it.

use super::{check_header_reference, Storage};
use crate::error::{Error, Result};
use crate::format::{
    ntuple_index, stored_page_len, unpack_envelope, Anchor, DaosAnchor, DaosLocation,
    DaosPageMapping, EnvelopeType, Footer, Header, LocatorKind, PageInfo, PageList,
};
use crate::io::{
    open_daos_uri_in, ByteRange, DaosContainer, DaosExtent, DaosKey, DaosOid, IoMetrics,
    IoMetricsSnapshot, ObjectFetcher, ObjectSpace, Source, SourceOptions,
};
use crate::read::RNTupleReader;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

/// Objects an [`ObjectSpace`] addresses (2^28: its whole byte space).
const ADDRESSABLE_OBJECTS: u64 = 1 << 28;

/// The largest factor by which an envelope may decompress: bounds the allocation a
/// corrupt length could ask for.
const MAX_ENVELOPE_RATIO: u64 = 1 << 16;

impl RNTupleReader {
    /// Opens the RNTuple `name` of a DAOS container in ROOT's DAOS layout, written with
    /// either page mapping (ROOT 6.40's object per cluster, ROOT main's object per page;
    /// see the module documentation of `read::source::daos` for how the mapping is found).
    /// No anchor under `name`'s ntuple index is an [`Error::NotFound`] (no such RNTuple, or
    /// a writer that did not finish); an RNTuple of another name at the same index (a
    /// collision of the 32-bit hash) is refused, as ROOT refuses it.
    pub fn open_daos(container: DaosContainer, name: &str) -> Result<RNTupleReader> {
        let ntuple = DaosNTuple::new(container, name);
        let daos_anchor = ntuple.anchor()?;
        let (header, footer, header_checksum) = ntuple.header_and_footer(&daos_anchor)?;
        let page_lists = ntuple.page_lists(&footer, header_checksum)?;
        let mapping = ntuple.detect_mapping(&page_lists)?;
        let places = match mapping {
            DaosPageMapping::ObjectPerCluster => Some(page_places(&page_lists)),
            DaosPageMapping::ObjectPerPage => None,
        };
        let anchor = Anchor {
            version_epoch: daos_anchor.version_epoch,
            version_major: daos_anchor.version_major,
            version_minor: daos_anchor.version_minor,
            version_patch: daos_anchor.version_patch,
            seek_header: 0,
            nbytes_header: u64::from(daos_anchor.nbytes_header),
            len_header: u64::from(daos_anchor.len_header),
            seek_footer: 0,
            nbytes_footer: u64::from(daos_anchor.nbytes_footer),
            len_footer: u64::from(daos_anchor.len_footer),
            // Values are whole: no page is split over keys.
            max_key_size: 0,
        };
        let fetcher = DaosPages {
            label: format!("{}:{}", ntuple.container.id(), ntuple.name),
            ntuple,
            mapping,
            places,
            metrics: IoMetrics::default(),
        };
        let source: Source = Arc::new(ObjectSpace::new(Arc::new(fetcher), ADDRESSABLE_OBJECTS));
        let storage = Storage::new(source, 0);
        Self::from_metadata(
            storage,
            anchor,
            name.to_string(),
            header,
            footer,
            page_lists,
        )
    }

    /// Opens the RNTuple `name` in the container a `daos://POOL/CONTAINER` URI names
    /// ([`RNTupleReader::open_daos`]). This build has no `libdaos`: the container is a
    /// directory store under `$RNTUPLE_DAOS_DIR` ([`crate::io::open_daos_uri`]). The name
    /// is required: a container holds RNTuples by name (`daos://POOL/CONTAINER:NAME` on
    /// the command line).
    pub fn open_daos_uri(uri: &str, name: Option<&str>) -> Result<RNTupleReader> {
        Self::open_daos_uri_with(uri, name, &SourceOptions::current()?)
    }

    /// [`RNTupleReader::open_daos_uri`] with `options`: the directory store's directory
    /// ([`SourceOptions::daos_dir`]) and the read settings.
    pub fn open_daos_uri_with(
        uri: &str,
        name: Option<&str>,
        options: &SourceOptions,
    ) -> Result<RNTupleReader> {
        let Some(name) = name else {
            return Err(Error::InvalidArgument(format!(
                "{uri}: a DAOS container holds RNTuples by name; name one as \
                 daos://POOL/CONTAINER:NAME"
            )));
        };
        let container = open_daos_uri_in(uri, options.daos_dir.clone(), false)?;
        Ok(Self::open_daos(container, name)?.with_settings(options))
    }
}

/// An RNTuple's values in a DAOS container: the container, the name and its index.
struct DaosNTuple {
    container: DaosContainer,
    name: String,
    /// `OID.hi` of every object of the RNTuple.
    hi: u64,
}

impl DaosNTuple {
    fn new(container: DaosContainer, name: &str) -> DaosNTuple {
        DaosNTuple {
            container,
            name: name.to_string(),
            hi: u64::from(ntuple_index(name)),
        }
    }

    /// The key of a value of the RNTuple.
    fn key(&self, at: DaosLocation) -> DaosKey {
        DaosKey::new(DaosOid::new(at.oid_lo, self.hi), at.dkey, at.akey)
    }

    /// Where a value is, for messages: `DAOS container daos://p/c (object …, dkey …,
    /// akey …)`.
    fn describe(&self, key: &DaosKey) -> String {
        format!("DAOS container {} ({key})", self.container.id())
    }

    /// `what` of the RNTuple, for messages.
    fn what(&self, what: &str) -> String {
        format!("{what} of RNTuple \"{}\"", self.name)
    }

    /// Fetches `wanted` values in one request; a missing one is an [`Error::NotFound`]
    /// naming it.
    fn fetch_all(&self, wanted: &[(DaosKey, String)]) -> Result<Vec<Vec<u8>>> {
        let keys: Vec<DaosKey> = wanted.iter().map(|(k, _)| *k).collect();
        let values = self.container.fetch_many(&keys)?;
        if values.len() != wanted.len() {
            return Err(Error::InvalidArgument(format!(
                "DAOS container {}: {} values asked for, {} returned",
                self.container.id(),
                wanted.len(),
                values.len()
            )));
        }
        values
            .into_iter()
            .zip(wanted)
            .map(|(value, (key, what))| {
                value.ok_or_else(|| {
                    Error::NotFound(format!("{what} is not in {}", self.describe(key)))
                })
            })
            .collect()
    }

    /// The anchor; none (or one whose header size is 0, which ROOT takes for none) is an
    /// [`Error::NotFound`].
    fn anchor(&self) -> Result<DaosAnchor> {
        let key = self.key(DaosLocation::ANCHOR);
        let missing = || {
            Error::NotFound(format!(
                "{}: no RNTuple \"{}\" here: there is no anchor under its ntuple index \
                 {:#010x} ({key}); a writer that did not finish leaves none",
                self.container.id(),
                self.name,
                self.hi
            ))
        };
        let bytes = self
            .container
            .fetch(key.oid, key.dkey, key.akey)?
            .ok_or_else(missing)?;
        let anchor = DaosAnchor::parse(&bytes, &self.what("DAOS anchor"))?;
        if anchor.nbytes_header == 0 {
            return Err(missing());
        }
        Ok(anchor)
    }

    /// Header and footer (one request), their envelopes checked; the header's name must
    /// be the RNTuple's. Returns them and the header envelope's checksum.
    fn header_and_footer(&self, anchor: &DaosAnchor) -> Result<(Header, Footer, u64)> {
        let header_key = self.key(DaosLocation::HEADER);
        let footer_key = self.key(DaosLocation::FOOTER);
        let header_what = self.what("header envelope");
        let footer_what = self.what("footer envelope");
        let mut values = self
            .fetch_all(&[
                (header_key, header_what.clone()),
                (footer_key, footer_what.clone()),
            ])?
            .into_iter();
        let (Some(header_bytes), Some(footer_bytes)) = (values.next(), values.next()) else {
            return Err(Error::InvalidArgument(format!(
                "DAOS container {}: a fetch of header and footer came back short",
                self.container.id()
            )));
        };
        let (header_payload, header_checksum) = self.unpack(
            &header_bytes,
            u64::from(anchor.nbytes_header),
            u64::from(anchor.len_header),
            EnvelopeType::Header,
            &header_what,
            &header_key,
        )?;
        let (footer_payload, _) = self.unpack(
            &footer_bytes,
            u64::from(anchor.nbytes_footer),
            u64::from(anchor.len_footer),
            EnvelopeType::Footer,
            &footer_what,
            &footer_key,
        )?;
        let header = Header::read(&header_payload).map_err(|e| self.at(e, &header_key))?;
        if header.name != self.name {
            return Err(Error::NotFound(format!(
                "{}: no RNTuple \"{}\" here: the RNTuple under its ntuple index {:#010x} is \
                 \"{}\" (two names of one index cannot share a container; ROOT refuses it too)",
                self.container.id(),
                self.name,
                self.hi,
                header.name
            )));
        }
        let footer = Footer::read(&footer_payload).map_err(|e| self.at(e, &footer_key))?;
        let footer_what = self.what("footer envelope");
        check_header_reference(&footer_what, footer.header_checksum, header_checksum)?;
        Ok((header, footer, header_checksum))
    }

    /// Every page list of `footer` (one request), each checked to belong to the header.
    fn page_lists(&self, footer: &Footer, header_checksum: u64) -> Result<Vec<PageList>> {
        let mut wanted = Vec::with_capacity(footer.cluster_groups.len());
        for (g, group) in footer.cluster_groups.iter().enumerate() {
            let what = self.what(&format!("page list envelope of cluster group {g}"));
            let LocatorKind::Object64 { location } = group.page_list.locator.kind else {
                return Err(Error::corrupt(
                    self.what("footer envelope"),
                    format!(
                        "cluster group {g}'s page list is at a {}, not in a DAOS object",
                        group.page_list.locator.describe()
                    ),
                ));
            };
            wanted.push((self.key(DaosLocation::page_list(location)), what));
        }
        let values = self.fetch_all(&wanted)?;
        values
            .iter()
            .zip(&wanted)
            .zip(&footer.cluster_groups)
            .map(|((stored, (key, what)), group)| {
                let (payload, _) = self.unpack(
                    stored,
                    group.page_list.locator.size,
                    group.page_list.length,
                    EnvelopeType::PageList,
                    what,
                    key,
                )?;
                let list = PageList::read(&payload).map_err(|e| self.at(e, key))?;
                check_header_reference(what, list.header_checksum, header_checksum)?;
                Ok(list)
            })
            .collect()
    }

    /// Checks a stored envelope's size and unpacks it.
    fn unpack(
        &self,
        stored: &[u8],
        nbytes: u64,
        length: u64,
        kind: EnvelopeType,
        what: &str,
        key: &DaosKey,
    ) -> Result<(Vec<u8>, u64)> {
        if stored.len() as u64 != nbytes {
            return Err(Error::corrupt(
                format!("{what} in {}", self.describe(key)),
                format!(
                    "the value has {} bytes where {nbytes} are announced",
                    stored.len()
                ),
            ));
        }
        let max = (stored.len() as u64)
            .saturating_mul(MAX_ENVELOPE_RATIO)
            .max(1 << 20);
        unpack_envelope(stored, length, max, kind, what).map_err(|e| self.at(e, key))
    }

    /// Wraps `e` with the value it was found in.
    fn at(&self, e: Error, key: &DaosKey) -> Error {
        e.at(crate::error::Location {
            structure: Some(self.describe(key)),
            ..Default::default()
        })
    }

    /// Which mapping the pages were written with (module documentation): ObjectPerPage
    /// when the RNTuple lists no page.
    fn detect_mapping(&self, page_lists: &[PageList]) -> Result<DaosPageMapping> {
        let Some((cluster, column, page)) = first_page(page_lists) else {
            return Ok(DaosPageMapping::ObjectPerPage);
        };
        let LocatorKind::Object64 { location } = page.locator.kind else {
            return Err(Error::corrupt(
                self.what("page list"),
                format!(
                    "the page of column {column} in cluster {cluster} is at a {}, not in a \
                     DAOS object",
                    page.locator.describe()
                ),
            ));
        };
        let mappings = [
            DaosPageMapping::ObjectPerPage,
            DaosPageMapping::ObjectPerCluster,
        ];
        let keys: Vec<DaosKey> = mappings
            .iter()
            .map(|m| self.key(m.page_location(cluster, column, location)))
            .collect();
        let values = self.container.fetch_many(&keys)?;
        let is_page = |v: &Option<Vec<u8>>| v.as_deref().is_some_and(|v| holds_page(v, page));
        if let Some(i) = values.iter().position(is_page) {
            return Ok(mappings[i]);
        }
        let tried = mappings
            .iter()
            .zip(&keys)
            .map(|(m, k)| format!("{} ({k})", m.name()))
            .collect::<Vec<_>>()
            .join(" nor ");
        let what = format!(
            "page {location} (cluster {cluster}, column {column}) of RNTuple \"{}\" in DAOS \
             container {}",
            self.name,
            self.container.id()
        );
        if values.iter().all(Option::is_none) {
            Err(Error::NotFound(format!(
                "{what} is in neither page mapping: not at {tried}"
            )))
        } else {
            Err(Error::corrupt(
                what,
                format!(
                    "the values at {tried} are not the page ({} bytes{})",
                    stored_page_len(page),
                    if page.has_checksum {
                        " with its checksum"
                    } else {
                        ""
                    }
                ),
            ))
        }
    }
}

/// The [`DaosExtent`] of the RNTuple `name` in `container`: `None` if there is none, or
/// it cannot be read (a damaged RNTuple: nothing of it can be found to protect or
/// remove); a failure of the store itself is an error.
pub fn daos_extent(container: &DaosContainer, name: &str) -> Result<Option<DaosExtent>> {
    let ntuple = DaosNTuple::new(container.clone(), name);
    let read = || -> Result<DaosExtent> {
        let anchor = ntuple.anchor()?;
        let (_, footer, header_checksum) = ntuple.header_and_footer(&anchor)?;
        let lists = ntuple.page_lists(&footer, header_checksum)?;
        let mapping = ntuple.detect_mapping(&lists)?;
        let mut extent = DaosExtent::default();
        for group in &footer.cluster_groups {
            if let LocatorKind::Object64 { location } = group.page_list.locator.kind {
                extent.next_group = extent.next_group.max(location.saturating_add(1));
                extent
                    .keys
                    .push(ntuple.key(DaosLocation::page_list(location)));
            }
        }
        for (cluster, column, page) in listed_pages(&lists) {
            if let LocatorKind::Object64 { location } = page.locator.kind {
                extent.next_page = extent.next_page.max(location.saturating_add(1));
                let at = mapping.page_location(cluster, column, location);
                extent.keys.push(ntuple.key(at));
            }
        }
        extent.keys.sort_unstable();
        extent.keys.dedup();
        Ok(extent)
    };
    match read() {
        Ok(extent) => Ok(Some(extent)),
        Err(e)
            if matches!(
                e.root_cause(),
                Error::Io(crate::io::Error::Io { .. } | crate::io::Error::Remote { .. })
            ) =>
        {
            Err(e)
        }
        Err(_) => Ok(None),
    }
}

/// Whether `value` is the stored page `page`: its length, and its checksum if it has one.
fn holds_page(value: &[u8], page: &PageInfo) -> bool {
    if value.len() as u64 != stored_page_len(page) {
        return false;
    }
    if !page.has_checksum {
        return true;
    }
    let Some(split) = value.len().checked_sub(8) else {
        return false;
    };
    let (data, sum) = value.split_at(split);
    let mut stored = [0u8; 8];
    stored.copy_from_slice(sum);
    xxhash_rust::xxh3::xxh3_64(data) == u64::from_le_bytes(stored)
}

/// Every page the page lists list, in order (cluster groups, their clusters, columns by
/// id, pages): with its cluster id (clusters counted over the groups) and physical
/// column id.
fn listed_pages(page_lists: &[PageList]) -> impl Iterator<Item = (u64, u64, &PageInfo)> {
    page_lists
        .iter()
        .flat_map(|list| list.columns.iter())
        .enumerate()
        .flat_map(|(cluster, columns)| {
            columns.iter().enumerate().flat_map(move |(column, pages)| {
                pages
                    .pages
                    .iter()
                    .map(move |p| (cluster as u64, column as u64, p))
            })
        })
}

/// The first page listed.
fn first_page(page_lists: &[PageList]) -> Option<(u64, u64, &PageInfo)> {
    listed_pages(page_lists).next()
}

/// Page id → (cluster id, physical column id) of the first column listing it.
fn page_places(page_lists: &[PageList]) -> HashMap<u64, (u64, u64)> {
    let mut places = HashMap::new();
    for (cluster, column, page) in listed_pages(page_lists) {
        if let LocatorKind::Object64 { location } = page.locator.kind {
            places.entry(location).or_insert((cluster, column));
        }
    }
    places
}

/// The pages of an RNTuple in a DAOS container, by page id: what its [`ObjectSpace`]
/// reads through.
struct DaosPages {
    ntuple: DaosNTuple,
    mapping: DaosPageMapping,
    /// Page id → (cluster id, physical column id), for ROOT 6.40's mapping.
    places: Option<HashMap<u64, (u64, u64)>>,
    /// `daos://POOL/CONTAINER:NAME`.
    label: String,
    metrics: IoMetrics,
}

impl DaosPages {
    /// The key of page `page_id`.
    fn page_key(&self, page_id: u64) -> Result<DaosKey> {
        let (cluster, column) = match &self.places {
            None => (0, 0),
            Some(places) => *places.get(&page_id).ok_or_else(|| {
                Error::NotFound(format!(
                    "{}: no page list lists a page {page_id}",
                    self.label
                ))
            })?,
        };
        Ok(self
            .ntuple
            .key(self.mapping.page_location(cluster, column, page_id)))
    }
}

impl ObjectFetcher for DaosPages {
    fn name(&self) -> &str {
        &self.label
    }

    fn fetch(&self, requests: &[(u64, ByteRange)]) -> crate::io::Result<Vec<Vec<u8>>> {
        Ok(self.fetch_pages(requests)?)
    }

    fn metrics(&self) -> IoMetricsSnapshot {
        self.metrics.snapshot()
    }
}

impl DaosPages {
    /// The bytes of each `(page, range within it)`, in order (the fetcher's `fetch`).
    fn fetch_pages(&self, requests: &[(u64, ByteRange)]) -> Result<Vec<Vec<u8>>> {
        let start = Instant::now();
        let keys = requests
            .iter()
            .map(|&(page_id, _)| self.page_key(page_id))
            .collect::<Result<Vec<_>>>()?;
        let values = self.ntuple.container.fetch_many(&keys)?;
        if values.len() != requests.len() {
            return Err(Error::InvalidArgument(format!(
                "{}: {} pages asked for, {} returned",
                self.label,
                requests.len(),
                values.len()
            )));
        }
        let mut bytes = 0u64;
        let out = values
            .into_iter()
            .zip(requests)
            .zip(&keys)
            .map(|((value, &(page_id, range)), key)| {
                let what = || {
                    format!(
                        "page {page_id} of RNTuple \"{}\" ({})",
                        self.ntuple.name,
                        self.ntuple.describe(key)
                    )
                };
                let mut value =
                    value.ok_or_else(|| Error::NotFound(format!("{} is not there", what())))?;
                let len = value.len() as u64;
                let end = range.offset.checked_add(range.len).filter(|&e| e <= len);
                let Some(end) = end else {
                    return Err(Error::Truncated {
                        what: what(),
                        offset: range.offset,
                        needed: range.len,
                        available: len.saturating_sub(range.offset),
                    });
                };
                bytes += range.len;
                if range.offset == 0 && end == len {
                    return Ok(value);
                }
                // Within the value: both ends are at most its length, a usize.
                let from = usize::try_from(range.offset).unwrap_or(usize::MAX);
                let to = usize::try_from(end).unwrap_or(usize::MAX);
                value.truncate(to);
                Ok(value.split_off(from.min(value.len())))
            })
            .collect::<Result<Vec<_>>>()?;
        self.metrics
            .record(requests.len() > 1, requests.len() as u64, bytes, start);
        Ok(out)
    }
}
