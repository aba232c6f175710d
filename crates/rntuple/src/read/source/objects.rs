//! Opening an RNTuple stored as objects in ROOT's S3 layout ("Mode B": one object per
//! header, page, page list and footer, numbered in the order they were written, and a
//! JSON anchor at the dataset's key, written last). Its objects are read through an
//! [`ObjectSpace`], so the planner and prefetcher read pages of objects as they read a
//! file's: every page of a bunch requested at once, many `GET`s in flight (ROOT's
//! reader fetches one page at a time).

use crate::error::{Error, Result};
use crate::format::{
    object_address, unpack_envelope, Anchor, EnvelopeType, Footer, LocatorKind, PageList, S3Anchor,
    S3_DEFAULT_URL_TEMPLATE,
};
use crate::io::RemoteKind;
use crate::io::{
    checked_slice, ByteRange, CacheConfig, CachedObjects, IoMetricsSnapshot, ObjectDataset,
    ObjectFetcher, ObjectSpace, SourceOptions,
};
use crate::read::RNTupleReader;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Objects an [`ObjectSpace`] addresses (2^28: its whole byte space).
const ADDRESSABLE_OBJECTS: u64 = 1 << 28;

impl RNTupleReader {
    /// Opens the RNTuple at an object-store URL (`ntpl+s3+https://host/bucket/prefix`,
    /// `ntpl+file:///dir/prefix`); `name`, when given, must be the RNTuple's (a dataset
    /// holds one).
    pub fn open_objects_url(
        url: &str,
        name: Option<&str>,
        options: &SourceOptions,
    ) -> Result<RNTupleReader> {
        let dataset = ObjectDataset::open(url, options, false)?;
        Self::open_objects_cached(dataset, name, options.cache.as_ref())
    }

    /// Opens the RNTuple of `dataset` in two round trips, as a file opens: the anchor
    /// (whose checksum is checked) with object 0 (where ROOT's writer puts the header),
    /// then the footer with the object before it (where it puts the last page list);
    /// other page lists, or a header elsewhere, cost a round trip more.
    pub fn open_objects(dataset: ObjectDataset, name: Option<&str>) -> Result<RNTupleReader> {
        Self::open_objects_cached(dataset, name, None)
    }

    /// [`RNTupleReader::open_objects`], its objects read through the cache of remote
    /// reads `cache` describes, where the store tells its objects' versions
    /// ([`CachedObjects`]: the dataset is listed beside the anchor's read).
    pub fn open_objects_cached(
        dataset: ObjectDataset,
        name: Option<&str>,
        cache: Option<&CacheConfig>,
    ) -> Result<RNTupleReader> {
        let anchor_name = dataset.store().object_name(dataset.anchor_key());
        let what = format!("S3 anchor {anchor_name}");
        let (anchor_bytes, cached) = std::thread::scope(|scope| {
            let listing = cache.map(|config| {
                scope.spawn(|| CachedObjects::open(&dataset, config).map_err(Error::from))
            });
            let anchor = dataset
                .store()
                .get(dataset.anchor_key(), None)
                .map_err(Error::from);
            let cached = match listing.map(|l| l.join()) {
                None => Ok(None),
                Some(Ok(cached)) => cached,
                Some(Err(_)) => Err(Error::InvalidArgument(
                    "a thread listing the dataset panicked".into(),
                )),
            };
            (anchor, cached)
        });
        let bytes = match anchor_bytes {
            Ok(bytes) => bytes,
            Err(e) if is_not_found(&e) => return Err(no_anchor(&dataset, &anchor_name)),
            Err(e) => return Err(e),
        };
        let fetcher: Arc<dyn ObjectFetcher> = match cached? {
            Some(cached) => Arc::new(cached),
            None => Arc::new(dataset.clone()),
        };
        let preloaded = Arc::new(Preloaded::new(fetcher));
        let s3 = S3Anchor::parse(&bytes, &what)?;
        if s3.url_template != S3_DEFAULT_URL_TEMPLATE {
            return Err(Error::Unsupported(format!(
                "{what}: objects named by {:?} (this reader reads the default {:?})",
                s3.url_template, S3_DEFAULT_URL_TEMPLATE
            )));
        }
        let version = |v: u64, part: &str| {
            u16::try_from(v)
                .map_err(|_| Error::corrupt(&what, format!("format version {part} {v}")))
        };
        let address = |object: u64, offset: u64, part: &str| {
            object_address(object)
                .filter(|_| offset < 1 << crate::format::OBJECT_ADDRESS_BITS)
                .map(|a| a + offset)
                .ok_or_else(|| {
                    Error::Unsupported(format!(
                        "{what}: the {part} at object {object}, byte {offset}, is beyond what \
                         this reader addresses (2^28 objects of 64 GiB)"
                    ))
                })
        };
        let anchor = Anchor {
            version_epoch: version(s3.version_epoch, "epoch")?,
            version_major: version(s3.version_major, "major")?,
            version_minor: version(s3.version_minor, "minor")?,
            version_patch: version(s3.version_patch, "patch")?,
            seek_header: address(s3.header_obj_id, s3.header_offset, "header")?,
            nbytes_header: s3.nbytes_header,
            len_header: s3.len_header,
            seek_footer: address(s3.footer_obj_id, s3.footer_offset, "footer")?,
            nbytes_footer: s3.nbytes_footer,
            len_footer: s3.len_footer,
            // Objects are whole: no envelope or page is split over keys.
            max_key_size: 0,
        };
        // The header, the footer, and the object before the footer (the last page list,
        // as ROOT writes), at once.
        std::thread::scope(|scope| {
            let preloaded = &preloaded;
            let mut others = vec![s3.header_obj_id];
            others.extend(s3.footer_obj_id.checked_sub(1));
            for n in others {
                scope.spawn(move || preloaded.load(n));
            }
            preloaded.load(s3.footer_obj_id);
        });
        let fetcher: Arc<dyn ObjectFetcher> = preloaded.clone();
        let source: crate::io::Source = Arc::new(ObjectSpace::new(fetcher, ADDRESSABLE_OBJECTS));
        let opened = Self::from_anchor(source, anchor, name.unwrap_or_default().to_string());
        // Reads from now on go to the store; what opening loaded is not kept.
        preloaded.forget();
        let mut reader = opened?;
        let stored = reader.descriptor.name.clone();
        match name {
            Some(n) if !n.is_empty() && n != stored => Err(Error::NotFound(format!(
                "{}: the RNTuple stored here is \"{stored}\", not \"{n}\"",
                dataset.url()
            ))),
            _ => {
                reader.path = stored;
                Ok(reader)
            }
        }
    }
}

/// A dataset's objects with some of them loaded whole ahead of their reading (opening:
/// the header and the last page list fetched beside the footer).
struct Preloaded {
    /// The dataset's objects (through the cache, or straight from the store).
    fetcher: Arc<dyn ObjectFetcher>,
    loaded: Mutex<HashMap<u64, Arc<Vec<u8>>>>,
}

impl Preloaded {
    fn new(fetcher: Arc<dyn ObjectFetcher>) -> Preloaded {
        Preloaded {
            fetcher,
            loaded: Mutex::default(),
        }
    }

    /// Loads object `n` whole, if it is there (a guess: a failure is forgotten, and a
    /// read of the object asks the store again, which then says what is wrong).
    fn load(&self, n: u64) {
        if let Ok(bytes) = self.fetcher.fetch_object(n) {
            self.lock().insert(n, Arc::new(bytes));
        }
    }

    /// Drops what was loaded.
    fn forget(&self) {
        self.lock().clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<Vec<u8>>>> {
        self.loaded.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ObjectFetcher for Preloaded {
    fn name(&self) -> &str {
        self.fetcher.name()
    }

    fn fetch(&self, requests: &[(u64, ByteRange)]) -> crate::io::Result<Vec<Vec<u8>>> {
        let loaded: Vec<Option<Arc<Vec<u8>>>> = {
            let map = self.lock();
            requests.iter().map(|(n, _)| map.get(n).cloned()).collect()
        };
        let missing: Vec<(u64, ByteRange)> = requests
            .iter()
            .zip(&loaded)
            .filter(|(_, l)| l.is_none())
            .map(|(r, _)| *r)
            .collect();
        let mut fetched = if missing.is_empty() {
            Vec::new()
        } else {
            self.fetcher.fetch(&missing)?
        }
        .into_iter();
        requests
            .iter()
            .zip(loaded)
            .map(|(&(n, range), object)| match object {
                Some(object) => {
                    let key = format!("{}/{n}", self.fetcher.name());
                    checked_slice(&object, range.offset, range.len, &key).map(<[u8]>::to_vec)
                }
                None => fetched.next().ok_or_else(|| {
                    crate::io::Error::remote(
                        RemoteKind::Other,
                        self.fetcher.name(),
                        "a read of many objects returned fewer than asked",
                    )
                }),
            })
            .collect()
    }

    fn metrics(&self) -> IoMetricsSnapshot {
        self.fetcher.metrics()
    }
}

/// Whether `e` says that an object (or its bucket) is not there.
fn is_not_found(e: &Error) -> bool {
    e.remote_kind() == Some(RemoteKind::NotFound) || matches!(e.root_cause(), Error::NotFound(_))
}

/// The error for a dataset without an anchor: no bucket (listing says so, where a `GET`
/// cannot tell a missing bucket from a missing key), nothing there, or a write that did
/// not finish (its objects are invisible until the anchor is written, last).
fn no_anchor(dataset: &ObjectDataset, anchor_name: &str) -> Error {
    match dataset.object_ids() {
        Err(e) => e.into(),
        Ok(ids) if ids.is_empty() => Error::NotFound(format!(
            "{}: no RNTuple here: there is no anchor object {anchor_name}",
            dataset.url()
        )),
        Ok(ids) => Error::NotFound(format!(
            "{}: no RNTuple here: there is no anchor object {anchor_name}, but {} {} of a \
             dataset whose writer did not finish (the anchor is written last); `rntuple \
             verify --repair {}` removes them",
            dataset.url(),
            ids.len(),
            plural(ids.len(), "object"),
            dataset.url()
        )),
    }
}

/// `word`, with an `s` unless `n` is 1.
fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}

/// A dataset's objects: those its store holds under the prefix, and those its anchor
/// references (through the footer, every page list and page).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DatasetObjects {
    /// Whether the anchor is there.
    pub anchored: bool,
    /// The ids of the numbered objects stored under the prefix, sorted.
    pub stored: Vec<u64>,
    /// The ids the anchor references (header, footer, page lists, pages), sorted.
    pub referenced: Vec<u64>,
}

impl DatasetObjects {
    /// The objects stored that the anchor does not reference: left by writers that did
    /// not finish (or, without an anchor, every object).
    pub fn leftovers(&self) -> Vec<u64> {
        self.stored
            .iter()
            .copied()
            .filter(|n| self.referenced.binary_search(n).is_err())
            .collect()
    }

    /// The objects the anchor references that are not stored.
    pub fn missing(&self) -> Vec<u64> {
        self.referenced
            .iter()
            .copied()
            .filter(|n| self.stored.binary_search(n).is_err())
            .collect()
    }

    /// What to tell a user about the leftovers, if there are any: how many, and the
    /// command that removes them.
    pub fn leftover_note(&self, url: &str) -> Option<String> {
        let n = self.leftovers().len();
        (n > 0).then(|| {
            format!(
                "{n} {} under the prefix that the anchor does not reference (left by a \
                 writer that did not finish); `rntuple verify --repair {url}` removes them",
                plural(n, "object")
            )
        })
    }
}

/// Most an envelope may expand by (bounds what a corrupt length can allocate).
const MAX_ENVELOPE_RATIO: u64 = 1 << 16;

/// Takes stock of `dataset`: the ids stored under its prefix and those its anchor
/// references, read from the anchor, the footer and every page list (a dataset without
/// an anchor references nothing). A referenced envelope that cannot be read is an
/// error: nothing can then be said of what is referenced.
pub fn dataset_objects(dataset: &ObjectDataset) -> Result<DatasetObjects> {
    let stored = dataset.object_ids()?;
    let store = dataset.store();
    let anchor_name = store.object_name(dataset.anchor_key());
    let bytes = match store.get(dataset.anchor_key(), None).map_err(Error::from) {
        Ok(bytes) => bytes,
        Err(e) if is_not_found(&e) => {
            return Ok(DatasetObjects {
                anchored: false,
                stored,
                referenced: Vec::new(),
            })
        }
        Err(e) => return Err(e),
    };
    let s3 = S3Anchor::parse(&bytes, &format!("S3 anchor {anchor_name}"))?;
    let mut referenced = vec![s3.header_obj_id, s3.footer_obj_id];
    let footer = read_envelope(
        dataset,
        (s3.footer_obj_id, s3.footer_offset),
        s3.nbytes_footer,
        s3.len_footer,
        EnvelopeType::Footer,
    )?;
    let footer = Footer::read(&footer)?;
    let mut lists = Vec::new();
    for group in &footer.cluster_groups {
        if let LocatorKind::Object64 { location } = group.page_list.locator.kind {
            referenced.push(location);
            lists.push((
                location,
                group.page_list.locator.size,
                group.page_list.length,
            ));
        }
    }
    for (object, size, length) in lists {
        let list = read_envelope(dataset, (object, 0), size, length, EnvelopeType::PageList)?;
        let list = PageList::read(&list)?;
        for page in list.columns.iter().flatten().flat_map(|c| &c.pages) {
            if let LocatorKind::Object64 { location } = page.locator.kind {
                referenced.push(location);
            }
        }
    }
    referenced.sort_unstable();
    referenced.dedup();
    Ok(DatasetObjects {
        anchored: true,
        stored,
        referenced,
    })
}

/// The payload of the envelope of `nbytes` stored at `(object, offset)` of `dataset`,
/// `length` bytes unpacked.
fn read_envelope(
    dataset: &ObjectDataset,
    (object, offset): (u64, u64),
    nbytes: u64,
    length: u64,
    kind: EnvelopeType,
) -> Result<Vec<u8>> {
    let key = dataset.object_key(object);
    let name = match kind {
        EnvelopeType::Header => "header",
        EnvelopeType::Footer => "footer",
        EnvelopeType::PageList => "page list",
    };
    let what = format!("{name} envelope (object {object} of {})", dataset.url());
    let bytes = dataset.store().get(
        &key,
        Some(ByteRange {
            offset,
            len: nbytes,
        }),
    )?;
    let most = nbytes.saturating_mul(MAX_ENVELOPE_RATIO).max(16);
    Ok(unpack_envelope(&bytes, length, most, kind, &what)?.0)
}
