//! [`RootFile`]: a ROOT file opened for reading its directories and RNTuple anchors.

use super::blob::read_blob;
use super::directory::{parse_keys_list, DirectoryRecord};
use super::file_header::FileHeader;
use super::key::KeyHeader;
use super::{ANCHOR_CLASS_NAMES, DIRECTORY_CLASS_NAMES};
use crate::error::{Error, Result};
use crate::io::Source;
use std::collections::{HashMap, HashSet};

/// Directories nested deeper than this are treated as corrupt (a loop or a hostile file).
pub const MAX_DIRECTORY_DEPTH: usize = 64;

/// One RNTuple anchor found in a ROOT file.
///
/// `object` is the anchor key's object payload, uncompressed. It is ROOT's streamed
/// `ROOT::RNTuple` object: a big-endian u32 byte count `0x40000000 | n` (n = bytes of the
/// streamed members that follow it, the checksum not included: 66 for class version 2),
/// a big-endian u16 class version (2 for format 1.0), then the anchor's fields,
/// all big-endian: version epoch, major, minor, patch (u16 each); seek, nbytes and length
/// of the header envelope (u64 each); the same three for the footer; MaxKeySize (u64);
/// and last an xxh3-64 checksum (u64) of the fields after the class version. That is 78
/// bytes for class version 2; later versions may append fields before the checksum. The
/// `format` layer decodes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AnchorKey {
    /// The RNTuple's path in the file: `"name"` in the top directory, `"dir/sub/name"`
    /// in sub-directories.
    pub path: String,
    /// The key's class name: `ROOT::RNTuple` or the older `ROOT::Experimental::RNTuple`.
    pub class_name: String,
    /// The key's cycle (the highest one of that name in its directory).
    pub cycle: u16,
    /// File offset of the anchor's key.
    pub seek_key: u64,
    /// The anchor object's bytes, uncompressed (see the type's documentation).
    pub object: Vec<u8>,
}

/// Where a key of a wanted class sits (an RNTuple anchor, a TTree), before its object is
/// read: see [`RootFile::anchor_entries`], [`RootFile::entries_of_class`] and
/// [`RootFile::load_anchor`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyEntry {
    /// The object's path in the file, as in [`AnchorKey::path`].
    pub path: String,
    /// The key header, from its directory's keys list.
    pub key: KeyHeader,
}

/// A ROOT file (TFile) opened for reading: its header, top directory and keys.
pub struct RootFile {
    source: Source,
    header: FileHeader,
    top: DirectoryRecord,
    top_keys: Vec<KeyHeader>,
}

impl std::fmt::Debug for RootFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RootFile")
            .field("source", &self.source.name())
            .field("header", &self.header)
            .field("top", &self.top)
            .field("top_keys", &self.top_keys.len())
            .finish()
    }
}

fn is_directory_class(class_name: &str) -> bool {
    DIRECTORY_CLASS_NAMES.contains(&class_name)
}

fn is_anchor_class(class_name: &str) -> bool {
    ANCHOR_CLASS_NAMES.contains(&class_name)
}

/// Splits `"name;cycle"` into its parts; a missing or unparsable cycle is `None`.
fn split_cycle(component: &str) -> (&str, Option<u16>) {
    match component.rsplit_once(';') {
        Some((name, cycle)) => match cycle.parse::<u16>() {
            Ok(c) => (name, Some(c)),
            Err(_) => (component, None),
        },
        None => (component, None),
    }
}

/// The key of `name` among `keys` that passes `filter`: the given cycle, or the highest.
fn pick_key<'a>(
    keys: &'a [KeyHeader],
    name: &str,
    cycle: Option<u16>,
    filter: impl Fn(&KeyHeader) -> bool,
) -> Option<&'a KeyHeader> {
    keys.iter()
        .filter(|k| k.name == name && filter(k))
        .filter(|k| cycle.is_none_or(|c| k.cycle == c))
        .max_by_key(|k| k.cycle)
}

impl RootFile {
    /// Opens a ROOT file: reads and checks the file header, the top directory record and
    /// its keys list. Every error names the file.
    pub fn open(source: Source) -> Result<RootFile> {
        let name = source.name().to_string();
        Self::open_unnamed(source).map_err(|e| e.in_file(&name))
    }

    /// [`RootFile::open`], with errors that may not name the file.
    fn open_unnamed(source: Source) -> Result<RootFile> {
        let size = source.size();
        if size < 4 {
            return Err(Error::corrupt(
                "TFile header",
                format!(
                    "{} is not a ROOT file: it has only {size} bytes",
                    source.name()
                ),
            ));
        }
        let head = source.read_at(0, size.min(FileHeader::LARGE_LEN as u64))?;
        let header = FileHeader::parse(&head)?;
        if header.end > size {
            return Err(Error::Truncated {
                what: format!("file {} (fEND in the file header)", source.name()),
                offset: 0,
                needed: header.end,
                available: size,
            });
        }
        if u64::from(header.begin) < header.encoded_len() as u64 || u64::from(header.begin) >= size
        {
            return Err(Error::corrupt(
                "TFile header",
                format!("fBEGIN {} is outside the file (size {size})", header.begin),
            ));
        }
        let top_offset = u64::from(header.begin) + u64::from(header.nbytes_name);
        let mut file = RootFile {
            source,
            header,
            top: DirectoryRecord::default(),
            top_keys: Vec::new(),
        };
        file.top = file.read_directory_record(top_offset, "top directory")?;
        file.top_keys = file.read_keys_list(&file.top, "top directory")?;
        Ok(file)
    }

    /// The byte source.
    pub fn source(&self) -> &Source {
        &self.source
    }

    /// The file header.
    pub fn header(&self) -> &FileHeader {
        &self.header
    }

    /// The top directory's record.
    pub fn top_directory(&self) -> &DirectoryRecord {
        &self.top
    }

    fn check_range(&self, offset: u64, len: u64, what: &str) -> Result<()> {
        let size = self.source.size();
        match offset.checked_add(len) {
            Some(end) if end <= size => Ok(()),
            _ => Err(Error::Truncated {
                what: format!("{what} in {}", self.source.name()),
                offset,
                needed: len,
                available: size.saturating_sub(offset),
            }),
        }
    }

    /// Reads the directory record at file offset `offset`.
    fn read_directory_record(&self, offset: u64, what: &str) -> Result<DirectoryRecord> {
        let size = self.source.size();
        if offset >= size {
            return Err(Error::Truncated {
                what: format!("{what} record in {}", self.source.name()),
                offset,
                needed: DirectoryRecord::SMALL_FIXED_LEN as u64,
                available: 0,
            });
        }
        let len = (size - offset).min(DirectoryRecord::ENCODED_LEN as u64);
        let data = self.source.read_at(offset, len)?;
        DirectoryRecord::parse(&data, offset)
    }

    /// Reads the keys list of a directory.
    fn read_keys_list(&self, dir: &DirectoryRecord, what: &str) -> Result<Vec<KeyHeader>> {
        if dir.seek_keys == 0 {
            // A directory whose keys were never written has no keys.
            return Ok(Vec::new());
        }
        let len = u64::from(dir.nbytes_keys);
        self.check_range(dir.seek_keys, len, &format!("keys list of the {what}"))?;
        let data = self.source.read_at(dir.seek_keys, len)?;
        let (_, keys) = parse_keys_list(&data, dir.seek_keys)?;
        Ok(keys)
    }

    /// Reads the directory record stored as the object of the sub-directory key `key`.
    fn sub_directory(&self, key: &KeyHeader, path: &str) -> Result<DirectoryRecord> {
        let offset = key.data_offset()?;
        self.read_directory_record(offset, &format!("directory \"{path}\""))
    }

    /// Follows `dir_path` (`""` or `"/"` for the top directory, else `"a/b"`; a
    /// component may name a cycle as `"a;2"`) and returns the directory's record and keys.
    fn resolve_directory(&self, dir_path: &str) -> Result<(DirectoryRecord, Vec<KeyHeader>)> {
        let mut dir = self.top.clone();
        let mut keys = self.top_keys.clone();
        let mut walked = String::new();
        for (depth, component) in dir_path.split('/').filter(|c| !c.is_empty()).enumerate() {
            if depth >= MAX_DIRECTORY_DEPTH {
                return Err(Error::InvalidArgument(format!(
                    "directory path \"{dir_path}\" is deeper than {MAX_DIRECTORY_DEPTH} levels"
                )));
            }
            let (name, cycle) = split_cycle(component);
            let key = pick_key(&keys, name, cycle, |k| is_directory_class(&k.class_name))
                .ok_or_else(|| {
                    Error::NotFound(format!(
                        "no directory \"{component}\" in \"{}\" of {}",
                        if walked.is_empty() { "/" } else { &walked },
                        self.source.name()
                    ))
                })?;
            if !walked.is_empty() {
                walked.push('/');
            }
            walked.push_str(name);
            dir = self.sub_directory(key, &walked)?;
            keys = self.read_keys_list(&dir, &format!("directory \"{walked}\""))?;
        }
        Ok((dir, keys))
    }

    /// The keys of the directory at `dir_path` (`""` or `"/"` for the top directory, else
    /// e.g. `"a/b"`), in the order of its keys list (all cycles).
    pub fn keys(&self, dir_path: &str) -> Result<Vec<KeyHeader>> {
        Ok(self.resolve_directory(dir_path)?.1)
    }

    /// The record of the directory at `dir_path` (see [`RootFile::keys`]).
    pub fn directory(&self, dir_path: &str) -> Result<DirectoryRecord> {
        Ok(self.resolve_directory(dir_path)?.0)
    }

    /// Visits every directory below `dir` (depth-first, in keys-list order) and collects
    /// the keys whose class is `wanted` (highest cycle per name) with their paths.
    fn collect_keys(
        &self,
        keys: &[KeyHeader],
        prefix: &str,
        depth: usize,
        wanted: &dyn Fn(&str) -> bool,
        visited: &mut HashSet<u64>,
        out: &mut Vec<KeyEntry>,
    ) -> Result<()> {
        if depth > MAX_DIRECTORY_DEPTH {
            return Err(Error::corrupt(
                format!("directory \"{prefix}\""),
                format!("directories nest deeper than {MAX_DIRECTORY_DEPTH} levels"),
            ));
        }
        // The highest cycle of each anchor name and of each directory name here.
        let mut best_wanted: HashMap<&str, &KeyHeader> = HashMap::new();
        let mut best_dir: HashMap<&str, &KeyHeader> = HashMap::new();
        for k in keys {
            let best = if wanted(&k.class_name) {
                &mut best_wanted
            } else if is_directory_class(&k.class_name) {
                &mut best_dir
            } else {
                continue;
            };
            let entry = best.entry(k.name.as_str()).or_insert(k);
            if k.cycle > entry.cycle {
                *entry = k;
            }
        }
        let join = |name: &str| {
            if prefix.is_empty() {
                name.to_string()
            } else {
                format!("{prefix}/{name}")
            }
        };
        for k in keys {
            let is_best = |best: &HashMap<&str, &KeyHeader>| {
                best.get(k.name.as_str())
                    .is_some_and(|b| std::ptr::eq(*b, k))
            };
            if wanted(&k.class_name) && is_best(&best_wanted) {
                out.push(KeyEntry {
                    path: join(&k.name),
                    key: k.clone(),
                });
            } else if is_directory_class(&k.class_name) && is_best(&best_dir) {
                let path = join(&k.name);
                let dir = self.sub_directory(k, &path)?;
                if dir.seek_keys != 0 && !visited.insert(dir.seek_keys) {
                    return Err(Error::corrupt(
                        format!("directory \"{path}\" (key at byte offset {})", k.seek_key),
                        format!(
                            "its keys list at byte offset {} is reached twice (a directory loop)",
                            dir.seek_keys
                        ),
                    ));
                }
                let sub_keys = self.read_keys_list(&dir, &format!("directory \"{path}\""))?;
                self.collect_keys(&sub_keys, &path, depth + 1, wanted, visited, out)?;
            }
        }
        Ok(())
    }

    /// Every RNTuple anchor key (class `ROOT::RNTuple` or `ROOT::Experimental::RNTuple`) in
    /// all directories, the highest cycle of each name, without reading the anchor
    /// objects. Depth-first, in keys-list order.
    pub fn anchor_entries(&self) -> Result<Vec<KeyEntry>> {
        self.entries_where(&is_anchor_class)
    }

    /// Every key whose class is one of `class_names`, in all directories, the highest
    /// cycle of each name. Depth-first, in keys-list order.
    pub fn entries_of_class(&self, class_names: &[&str]) -> Result<Vec<KeyEntry>> {
        self.entries_where(&|c: &str| class_names.contains(&c))
    }

    fn entries_where(&self, wanted: &dyn Fn(&str) -> bool) -> Result<Vec<KeyEntry>> {
        let mut visited = HashSet::new();
        visited.insert(self.top.seek_keys);
        let mut out = Vec::new();
        self.collect_keys(&self.top_keys, "", 0, wanted, &mut visited, &mut out)?;
        Ok(out)
    }

    /// Reads the anchor object of `entry`.
    pub fn load_anchor(&self, entry: &KeyEntry) -> Result<AnchorKey> {
        Ok(AnchorKey {
            path: entry.path.clone(),
            class_name: entry.key.class_name.clone(),
            cycle: entry.key.cycle,
            seek_key: entry.key.seek_key,
            object: self.read_object(&entry.key)?,
        })
    }

    /// Every RNTuple anchor in the file (keys of class `ROOT::RNTuple` or
    /// `ROOT::Experimental::RNTuple`), in all directories, the highest cycle of each name,
    /// with their objects.
    pub fn rntuple_anchors(&self) -> Result<Vec<AnchorKey>> {
        self.anchor_entries()?
            .iter()
            .map(|e| self.load_anchor(e))
            .collect()
    }

    /// The anchor entry at `name_or_path`: a path such as `"dir/sub/name"` (a leading `/`
    /// is ignored), or a bare name that is unique among all directories.
    pub fn find_anchor_entry(&self, name_or_path: &str) -> Result<KeyEntry> {
        let wanted = name_or_path.trim_start_matches('/');
        let all = self.anchor_entries()?;
        if let Some(e) = all.iter().find(|e| e.path == wanted) {
            return Ok(e.clone());
        }
        if !wanted.contains('/') {
            let matches: Vec<&KeyEntry> = all
                .iter()
                .filter(|e| e.path.rsplit('/').next() == Some(wanted))
                .collect();
            match matches.as_slice() {
                [e] => return Ok((*e).clone()),
                [] => {}
                many => {
                    let paths: Vec<&str> = many.iter().map(|e| e.path.as_str()).collect();
                    return Err(Error::InvalidArgument(format!(
                        "RNTuple name \"{wanted}\" is ambiguous in {}: {}",
                        self.source.name(),
                        paths.join(", ")
                    )));
                }
            }
        }
        let paths: Vec<&str> = all.iter().map(|e| e.path.as_str()).collect();
        Err(Error::NotFound(format!(
            "no RNTuple \"{wanted}\" in {} (it has: {})",
            self.source.name(),
            if paths.is_empty() {
                "none".to_string()
            } else {
                paths.join(", ")
            }
        )))
    }

    /// The anchor at `name_or_path` (see [`RootFile::find_anchor_entry`]) with its object.
    pub fn find_anchor(&self, name_or_path: &str) -> Result<AnchorKey> {
        self.load_anchor(&self.find_anchor_entry(name_or_path)?)
    }

    /// The key header at file offset `offset` (a key not listed in any directory, such as
    /// the streamer infos' at `fSeekInfo`).
    pub fn key_at(&self, offset: u64) -> Result<KeyHeader> {
        let size = self.source.size();
        if offset >= size {
            return Err(Error::Truncated {
                what: format!("key in {}", self.source.name()),
                offset,
                needed: KeyHeader::SMALL_FIXED_LEN as u64,
                available: 0,
            });
        }
        // A key header is its fixed part and three TStrings of at most 255 + 5 bytes each.
        let len = (size - offset).min(KeyHeader::LARGE_FIXED_LEN as u64 + 3 * 260);
        KeyHeader::parse(&self.source.read_at(offset, len)?, offset)
    }

    /// The object payload of `key` (a key from a keys list), uncompressed. The key header
    /// is read again at its SeekKey and must agree with the keys-list entry.
    pub fn read_object(&self, key: &KeyHeader) -> Result<Vec<u8>> {
        let what = format!("key \"{}\" (class {})", key.name, key.class_name);
        let key_len = u64::from(key.key_len);
        self.check_range(key.seek_key, key_len, &format!("header of {what}"))?;
        let raw = self.source.read_at(key.seek_key, key_len)?;
        let disk = KeyHeader::parse(&raw, key.seek_key)?;
        if disk.class_name != key.class_name
            || disk.name != key.name
            || disk.seek_key != key.seek_key
        {
            return Err(Error::corrupt(
                format!("{what} at byte offset {}", key.seek_key),
                format!(
                    "the key there is \"{}\" (class {}, SeekKey {})",
                    disk.name, disk.class_name, disk.seek_key
                ),
            ));
        }
        let data_offset = disk.data_offset()?;
        let stored = disk.stored_len()?;
        let obj_len = u64::from(disk.obj_len);
        if stored >= obj_len {
            self.check_range(data_offset, obj_len, &format!("object of {what}"))?;
            return Ok(self.source.read_at(data_offset, obj_len)?);
        }
        self.check_range(data_offset, stored, &format!("compressed object of {what}"))?;
        // A compressed object: every 9-byte block header expands to at most 16 MiB - 1,
        // which bounds the allocation by the stored size before decompressing.
        let max_len = stored.saturating_mul(crate::compression::MAX_CHUNK_SIZE as u64) / 9;
        if obj_len > max_len {
            return Err(Error::corrupt(
                format!("{what} at byte offset {}", key.seek_key),
                format!("object length {obj_len} cannot come from {stored} compressed bytes"),
            ));
        }
        let data = self.source.read_at(data_offset, stored)?;
        let obj_len = crate::error::to_usize(obj_len, &format!("object length of {what}"))?;
        crate::compression::decompress(&data, obj_len, &what)
    }

    /// Reads an RNTuple payload (page or envelope) of `nbytes` at `offset`, split over
    /// several RBlob keys if larger than `max_key_size` (see [`read_blob`]).
    pub fn read_blob(&self, offset: u64, nbytes: u64, max_key_size: u64) -> Result<Vec<u8>> {
        read_blob(self.source.as_ref(), offset, nbytes, max_key_size)
    }
}
