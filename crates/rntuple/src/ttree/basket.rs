//! Baskets: the unit of TTree storage, one key per basket holding a range of entries of
//! one branch.
//!
//! A basket's key header (a TKey of class `TBasket`) ends with the basket's own fields:
//! version (u16), buffer size, entry size for fixed-size entries (`fNevBufSize`), number
//! of entries (`fNevBuf`) and the end of the entries' bytes (`fLast`), all i32, and a flag
//! byte. The object (compressed like any key) holds the entries' bytes from `fKeylen` to
//! `fLast` and, when entries vary in size, an entry-offset table: an i32 count and one i32
//! per entry, the position of the entry's first byte counted from the start of the key.
//!
//! A basket still in memory when its tree was written (without a flush first, as
//! `TDirectory::WriteTObject` and ROOT's file recovery do) is streamed into the branch's
//! `fBaskets` array in the tree's own key ([`parse_embedded_basket`]): its key header,
//! the same fields, a flag saying what follows, the entry offsets and the buffer
//! (uncompressed: the tree's key is compressed as a whole).

use crate::compression::decompress;
use crate::container::KeyHeader;
use crate::error::{to_usize, Error, Result};
use crate::io::ReadAt;
use crate::ttree::object_reader::ObjectReader;

/// Size of the basket's fields after the TKey header.
const BASKET_FIELDS_LEN: usize = 19;

/// One basket, decompressed.
#[derive(Debug, Clone, PartialEq)]
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

/// Where a basket is and what it holds, as its branch's basket table says.
pub(crate) struct BasketPlace {
    /// The basket's bytes on disk (key included).
    pub(crate) nbytes: u32,
    /// Where its key starts.
    pub(crate) seek: u64,
    /// Its first entry.
    pub(crate) first_entry: u64,
    /// The first entry of the next basket.
    pub(crate) next_entry: u64,
}

/// Reads and decompresses the basket at `place`; `what` names it in errors.
pub(crate) fn read_basket_at(
    source: &dyn ReadAt,
    what: &str,
    place: &BasketPlace,
) -> Result<Basket> {
    let BasketPlace {
        nbytes,
        seek,
        first_entry,
        next_entry,
    } = *place;
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
    let key = KeyHeader::parse(&raw, seek).map_err(|e| e.at(location(what, seek)))?;
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
    let obj_len = to_usize(u64::from(key.obj_len), what)?;
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
    let mut data = decompress(stored, obj_len, what)?;
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
    let table = tail
        .get(4..4 + 4 * entries as usize)
        .ok_or_else(|| "its entry-offset table is cut short".to_string())?;
    let raw = table
        .chunks_exact(4)
        .map(|c| i32::from_be_bytes([c[0], c[1], c[2], c[3]]));
    offsets_from(raw, key_len, border)
}

/// The entries' start positions `raw` (counted from the key's start) as positions in the
/// entries' bytes (`border` of them, after a `key_len`-byte key), with the end appended.
fn offsets_from(
    raw: impl ExactSizeIterator<Item = i32>,
    key_len: usize,
    border: usize,
) -> std::result::Result<Vec<u32>, String> {
    let mut out = Vec::with_capacity(raw.len() + 1);
    let mut prev = 0u32;
    for raw in raw {
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

/// The high byte of an entry offset that baskets written by old ROOT versions (flag 21
/// to 39) used for the entry's displacement.
const DISPLACEMENT_MASK: i32 = 0xFF00_0000_u32 as i32;

/// Reads a basket streamed into its branch's `fBaskets` array (the reader `r` at the
/// object's first byte; `branch` names it in errors): its entries, with `first_entry`
/// 0 (the caller places it).
pub(crate) fn parse_embedded_basket(r: &mut ObjectReader<'_>, branch: &str) -> Result<Basket> {
    let corrupt = |r: &ObjectReader<'_>, detail: String| {
        r.corrupt(format!(
            "branch \"{branch}\": a basket kept in the tree's metadata: {detail}"
        ))
    };
    // The key header (TKey::Streamer): fNbytes, fVersion, fObjlen, fDatime, fKeylen,
    // fCycle, fSeekKey and fSeekPdir (8 bytes each past version 1000), class, name, title.
    r.i32()?;
    let key_version = r.i16()?;
    r.i32()?;
    r.u32()?;
    let key_len = r.i16()?;
    r.i16()?;
    r.skip(if key_version > 1000 { 16 } else { 8 })?;
    let class = r.tstring()?;
    r.tstring()?;
    r.tstring()?;
    if class != "TBasket" {
        return Err(corrupt(r, format!("its key is of class \"{class}\"")));
    }
    let version = r.version()?.version;
    r.i32()?; // fBufferSize
    r.i32()?; // fNevBufSize
    let nev_buf = r.i32()?;
    let last = r.i32()?;
    let flag = r.u8()?;
    let entries =
        u32::try_from(nev_buf).map_err(|_| corrupt(r, format!("it claims {nev_buf} entries")))?;
    let key_len =
        usize::try_from(key_len).map_err(|_| corrupt(r, format!("its key length is {key_len}")))?;
    let last_at = usize::try_from(last)
        .ok()
        .filter(|&l| l >= key_len)
        .ok_or_else(|| corrupt(r, format!("its fLast {last} lies before its data")))?;
    let border = last_at - key_len;
    if flag == 0 {
        // Only the header: no entries were kept.
        if entries > 0 {
            return Err(corrupt(r, format!("{entries} entries but no buffer")));
        }
        return Ok(Basket {
            data: Vec::new(),
            first_entry: 0,
            offsets: None,
            entries: 0,
        });
    }
    // Each value takes 4 bytes: a hostile count cannot allocate more than the key holds.
    let read_array = |r: &mut ObjectReader<'_>, what: &str| -> Result<Vec<i32>> {
        let n = r.count(what)?;
        let bytes = r.bytes(n.checked_mul(4).ok_or_else(|| r.corrupt(what))?)?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| i32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    };
    let mut starts = None;
    if flag % 10 != 2 {
        let mut table = read_array(r, "TBasket fEntryOffset")?;
        if table.len() != entries as usize {
            return Err(corrupt(
                r,
                format!("{} entry offsets for {entries} entries", table.len()),
            ));
        }
        if 20 < flag && flag < 40 {
            for v in &mut table {
                *v &= !DISPLACEMENT_MASK;
            }
        }
        if flag > 40 {
            read_array(r, "TBasket fDisplacement")?;
        }
        starts = Some(table);
    }
    if !(flag == 1 || flag > 10) {
        return Err(corrupt(
            r,
            format!("flag {flag}: its entries were not kept"),
        ));
    }
    let buffer = if version > 1 {
        r.bytes(last_at)?
    } else {
        let n = r.count("TBasket buffer")?;
        let bytes = r.bytes(n)?;
        bytes
            .get(..last_at)
            .ok_or_else(|| corrupt(r, format!("{n} bytes kept for an fLast of {last}")))?
    };
    let offsets = match starts {
        Some(table) => {
            Some(offsets_from(table.into_iter(), key_len, border).map_err(|e| corrupt(r, e))?)
        }
        None => None,
    };
    Ok(Basket {
        data: buffer[key_len..].to_vec(),
        first_entry: 0,
        offsets,
        entries,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A basket as TBasket::Streamer writes it into a branch's fBaskets: the key header
    /// (`key_len` bytes long as the basket's buffer has it), the fields, `flag`, then the
    /// entry offsets (when given) and the buffer (a copy of the key header, then `data`).
    fn streamed(flag: u8, entries: i32, starts: Option<&[i32]>, data: &[u8]) -> (Vec<u8>, i32) {
        let key_len = 40i32;
        let last = key_len + i32::try_from(data.len()).unwrap();
        let mut b = Vec::new();
        b.extend(100i32.to_be_bytes()); // fNbytes
        b.extend(4i16.to_be_bytes()); // fVersion (32-bit seeks)
        b.extend(60i32.to_be_bytes()); // fObjlen
        b.extend(0u32.to_be_bytes()); // fDatime
        b.extend((key_len as i16).to_be_bytes());
        b.extend(1i16.to_be_bytes()); // fCycle
        b.extend([0u8; 8]); // fSeekKey, fSeekPdir
        for s in ["TBasket", "x", "t"] {
            b.push(s.len() as u8);
            b.extend(s.as_bytes());
        }
        b.extend(3u16.to_be_bytes()); // TBasket version
        b.extend(32000i32.to_be_bytes()); // fBufferSize
        b.extend(10i32.to_be_bytes()); // fNevBufSize
        b.extend(entries.to_be_bytes());
        b.extend(last.to_be_bytes());
        b.push(flag);
        if let Some(starts) = starts {
            b.extend(i32::try_from(starts.len()).unwrap().to_be_bytes());
            for s in starts {
                b.extend(s.to_be_bytes());
            }
            if flag > 40 {
                b.extend(i32::try_from(starts.len()).unwrap().to_be_bytes());
                b.extend(vec![0u8; 4 * starts.len()]);
            }
        }
        b.extend(vec![0xAAu8; 40]);
        b.extend(data);
        (b, key_len)
    }

    fn parse(bytes: &[u8]) -> Result<Basket> {
        parse_embedded_basket(&mut ObjectReader::new(bytes, 0, "test tree"), "x")
    }

    #[test]
    fn fixed_size_entries_without_offsets() {
        let (bytes, _) = streamed(12, 3, None, &[1, 2, 3, 4, 5, 6]);
        let b = parse(&bytes).unwrap();
        assert_eq!(
            (b.entries, b.data.as_slice(), b.offsets),
            (3, &[1u8, 2, 3, 4, 5, 6][..], None)
        );
    }

    #[test]
    fn entry_offsets_count_from_the_key_and_old_displacement_bits_are_masked() {
        let data = [9u8, 8, 7, 6, 5];
        for flag in [11u8, 51] {
            let (bytes, k) = streamed(flag, 3, Some(&[40, 42, 42]), &data);
            assert_eq!(k, 40);
            let b = parse(&bytes).unwrap();
            assert_eq!(b.offsets, Some(vec![0, 2, 2, 5]), "flag {flag}");
            assert_eq!(b.entry(0), Some(&[9u8, 8][..]));
            assert_eq!(b.entry(1), Some(&[][..]));
            assert_eq!(b.entry(2), Some(&[7u8, 6, 5][..]));
        }
        let high = 0x0100_0000;
        let (bytes, _) = streamed(31, 2, Some(&[40 | high, 43 | high]), &data);
        assert_eq!(parse(&bytes).unwrap().offsets, Some(vec![0, 3, 5]));
    }

    #[test]
    fn a_header_only_basket_is_empty() {
        let (mut bytes, _) = streamed(0, 0, None, &[]);
        bytes.truncate(bytes.len() - 40);
        assert_eq!(parse(&bytes).unwrap().entries, 0);
    }

    #[test]
    fn damaged_baskets_are_errors_naming_the_branch() {
        let data = [1u8, 2, 3, 4];
        let cases = [
            streamed(11, 3, Some(&[40, 42]), &data).0, // 2 offsets for 3 entries
            streamed(11, 2, Some(&[41, 42]), &data).0, // first entry not at the data
            streamed(11, 2, Some(&[40, 99]), &data).0, // past the entries
            streamed(11, 2, Some(&[42, 40]), &data).0, // backwards
            streamed(11, -2, Some(&[40, 41]), &data).0, // negative entries
            streamed(12, 2, None, &data).0[..80].to_vec(), // buffer cut short
            streamed(2, 2, None, &data).0,             // flag without a buffer
        ];
        for (i, bytes) in cases.iter().enumerate() {
            let err = parse(bytes).unwrap_err().to_string();
            assert!(err.contains("test tree"), "{i}: {err}");
            if !err.contains("past the end") && !err.contains("truncated") {
                assert!(
                    err.contains("branch \"x\": a basket kept in the tree's metadata"),
                    "{i}: {err}"
                );
            }
        }
    }
}
