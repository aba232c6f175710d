//! Baskets: the unit of TTree storage, one key per basket holding a range of entries of
//! one branch.
//!
//! A basket's key header (a TKey of class `TBasket`) ends with the basket's own fields:
//! version (u16), buffer size, entry size for fixed-size entries (`fNevBufSize`), number
//! of entries (`fNevBuf`) and the end of the entries' bytes (`fLast`), all i32, and a flag
//! byte. The object (compressed like any key) holds the entries' bytes from `fKeylen` to
//! `fLast` and, when entries vary in size, an entry-offset table: an i32 count and one i32
//! per entry, the position of the entry's first byte counted from the start of the key.

use super::meta::Branch;
use crate::compression::decompress;
use crate::container::KeyHeader;
use crate::error::{to_usize, Error, Result};
use crate::io::ReadAt;

/// Size of the basket's fields after the TKey header.
const BASKET_FIELDS_LEN: usize = 19;

/// One basket, decompressed.
#[derive(Debug, Clone)]
pub struct Basket {
    /// The entries' bytes.
    pub data: Vec<u8>,
    /// The first entry.
    pub first_entry: u64,
    /// Where each entry starts in `data`, plus the end (entries + 1 values); `None` when
    /// every entry has the same size.
    pub offsets: Option<Vec<u32>>,
    /// Number of entries.
    pub entries: u32,
}

impl Basket {
    /// The bytes of entry `i` (counted from the basket's first entry) for a basket with
    /// an offset table.
    pub fn entry(&self, i: usize) -> Option<&[u8]> {
        let offsets = self.offsets.as_ref()?;
        let (a, b) = (*offsets.get(i)? as usize, *offsets.get(i + 1)? as usize);
        self.data.get(a..b)
    }
}

/// Reads and decompresses basket `index` of `branch` from `source`.
pub fn read_basket(source: &dyn ReadAt, branch: &Branch, index: usize) -> Result<Basket> {
    let what = format!("basket {index} of branch \"{}\"", branch.name);
    let (Some(&nbytes), Some(&seek), Some(&first_entry), Some(&next_entry)) = (
        branch.basket_bytes.get(index),
        branch.basket_seek.get(index),
        branch.basket_entry.get(index),
        branch.basket_entry.get(index + 1),
    ) else {
        return Err(Error::InvalidArgument(format!("{what} does not exist")));
    };
    let end = seek.checked_add(u64::from(nbytes));
    if seek == 0 || end.is_none_or(|e| e > source.size()) {
        return Err(Error::Truncated {
            what: format!("{what} in {}", source.name()),
            offset: seek,
            needed: u64::from(nbytes),
            available: source.size().saturating_sub(seek),
        });
    }
    let raw = source.read_at(seek, u64::from(nbytes))?;
    let key = KeyHeader::parse(&raw, seek).map_err(|e| e.at(location(&what, seek)))?;
    let corrupt = |detail: String| Error::corrupt(format!("{what} at byte offset {seek}"), detail);
    if key.class_name != "TBasket" {
        return Err(corrupt(format!(
            "its key is of class \"{}\"",
            key.class_name
        )));
    }
    let fields_at = key.encoded_len();
    let key_len = usize::from(key.key_len);
    if key_len != fields_at + BASKET_FIELDS_LEN || key_len > raw.len() {
        return Err(corrupt(format!(
            "its key is {key_len} bytes long, {} were expected",
            fields_at + BASKET_FIELDS_LEN
        )));
    }
    let f = &raw[fields_at..key_len];
    let i32_at = |at: usize| i32::from_be_bytes([f[at], f[at + 1], f[at + 2], f[at + 3]]);
    let (nev_buf, last) = (i32_at(10), i32_at(14));
    let entries =
        u32::try_from(nev_buf).map_err(|_| corrupt(format!("it claims {nev_buf} entries")))?;
    if u64::from(entries) != next_entry - first_entry {
        return Err(corrupt(format!(
            "it holds {entries} entries, the branch's basket table says {}",
            next_entry - first_entry
        )));
    }
    let border = usize::try_from(last)
        .ok()
        .and_then(|l| l.checked_sub(key_len))
        .ok_or_else(|| corrupt(format!("its fLast {last} lies before its data")))?;
    let obj_len = to_usize(u64::from(key.obj_len), &what)?;
    if border > obj_len {
        return Err(corrupt(format!(
            "its entries end at {border}, past its {obj_len} bytes"
        )));
    }
    let stored = &raw[key_len..];
    if stored.len() > obj_len {
        return Err(corrupt(format!(
            "{} bytes on disk for {obj_len} bytes of content",
            stored.len()
        )));
    }
    let mut data = decompress(stored, obj_len, &what)?;
    let offsets = if obj_len > border {
        Some(parse_offsets(&data[border..], entries, key_len, border).map_err(corrupt)?)
    } else {
        None
    };
    data.truncate(border);
    Ok(Basket {
        data,
        first_entry,
        offsets,
        entries,
    })
}

fn location(what: &str, offset: u64) -> crate::error::Location {
    crate::error::Location {
        structure: Some(what.to_string()),
        offset: Some(offset),
        ..Default::default()
    }
}

/// Parses the entry-offset table that follows the entries (`tail`), relative to the key's
/// start, into positions in the entries' bytes with the end appended.
fn parse_offsets(
    tail: &[u8],
    entries: u32,
    key_len: usize,
    border: usize,
) -> std::result::Result<Vec<u32>, String> {
    let count_bytes = tail
        .get(..4)
        .ok_or_else(|| "its entry-offset table is cut short".to_string())?;
    let count = i32::from_be_bytes([
        count_bytes[0],
        count_bytes[1],
        count_bytes[2],
        count_bytes[3],
    ]);
    if u32::try_from(count).ok() != Some(entries) && u32::try_from(count).ok() != Some(entries + 1)
    {
        return Err(format!(
            "its entry-offset table has {count} entries for {entries} entries"
        ));
    }
    let n = entries as usize;
    let table = tail
        .get(4..4 + 4 * n)
        .ok_or_else(|| "its entry-offset table is cut short".to_string())?;
    let mut out = Vec::with_capacity(n + 1);
    let mut prev = 0u32;
    for c in table.chunks_exact(4) {
        let raw = i32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        let at = usize::try_from(raw)
            .ok()
            .and_then(|r| r.checked_sub(key_len))
            .filter(|&a| a <= border)
            .and_then(|a| u32::try_from(a).ok())
            .filter(|&a| a >= prev)
            .ok_or_else(|| format!("its entry-offset table holds {raw}, outside its entries"))?;
        out.push(at);
        prev = at;
    }
    if out.first().is_some_and(|&f| f != 0) {
        return Err("its first entry does not start at its data".to_string());
    }
    out.push(u32::try_from(border).map_err(|_| "its entries exceed 4 GiB".to_string())?);
    Ok(out)
}
