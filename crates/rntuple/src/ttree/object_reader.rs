//! Reading ROOT's object streaming (`TBufferFile`): the bytes of a key's object, or of a
//! basket, as written by `Streamer` methods. All integers are big-endian.
//!
//! * A versioned object starts with a byte count (`0x40000000 | n`, `n` counting the
//!   bytes after the count) and a u16 class version; very old objects have the version
//!   alone.
//! * An object pointer (an element of a `TObjArray`, a `TLeaf*` member) is a byte count,
//!   then a tag: 0 for a null pointer, `0xFFFFFFFF` and a NUL-terminated class name for
//!   the first object of a class, `0x80000000 | position` for a later object of a class
//!   first seen at `position`, or the position of an object already read (a reference).
//! * Positions count from the start of the key (its header included), plus 2.

use crate::container::BeReader;
use crate::error::{Error, Result};
use std::collections::HashMap;

/// Marks a byte count.
const BYTE_COUNT_MASK: u32 = 0x4000_0000;
/// Tag of a class seen for the first time.
const NEW_CLASS_TAG: u32 = 0xFFFF_FFFF;
/// Marks a reference to a class seen before.
const CLASS_MASK: u32 = 0x8000_0000;
/// ROOT's offset added to buffer positions in the object map.
const MAP_OFFSET: u32 = 2;
/// `TObject::fBits` flag: the object is referenced, a process id follows.
const IS_REFERENCED: u32 = 1 << 4;
/// Longest class name accepted in a class tag (hostile input must not make us scan far).
const MAX_CLASS_NAME: usize = 4096;

/// The header of a versioned object: its class version and, when it has a byte count,
/// where it ends.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Versioned {
    /// The class version.
    pub(crate) version: u16,
    /// Position just past the object, when a byte count gave it.
    pub(crate) end: Option<usize>,
}

/// What an object pointer holds.
#[derive(Debug)]
pub(crate) enum Pointer {
    /// A null pointer.
    Null,
    /// A reference to an object read before, by its map position.
    Reference(u32),
    /// A new object of `class`; it is read next. `position` is its map position (for later
    /// references) and `end` where it ends.
    Object {
        /// The object's class name.
        class: String,
        /// Its position in the object map.
        position: u32,
        /// Position just past it, from its byte count.
        end: Option<usize>,
    },
}

/// An element of a `TObjArray`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ArrayItem<'c> {
    /// A new object of a class, at a map position.
    Object(&'c str, u32),
    /// A reference to an object read before, by its map position.
    Reference(u32),
}

/// A reader over streamed objects. `origin` is the length of what precedes the bytes in
/// the key (its header), so that positions agree with the ones ROOT stored.
#[derive(Debug)]
pub(crate) struct ObjectReader<'a> {
    r: BeReader<'a>,
    origin: u32,
    what: &'a str,
    classes: HashMap<u32, String>,
}

impl<'a> ObjectReader<'a> {
    /// A reader over `data`, the object bytes of a key whose header is `origin` bytes long;
    /// `what` names the object in errors.
    pub(crate) fn new(data: &'a [u8], origin: u32, what: &'a str) -> Self {
        ObjectReader {
            r: BeReader::new(data, 0, what),
            origin,
            what,
            classes: HashMap::new(),
        }
    }

    /// A corruption error at the current position.
    pub(crate) fn corrupt(&self, detail: impl std::fmt::Display) -> Error {
        Error::corrupt(
            self.what.to_string(),
            format!("{detail} (at byte {} of the object)", self.r.pos()),
        )
    }

    /// The next `n` bytes.
    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        self.r.bytes(n)
    }

    /// One byte.
    pub(crate) fn u8(&mut self) -> Result<u8> {
        self.r.u8()
    }

    /// A big-endian u16.
    pub(crate) fn u16(&mut self) -> Result<u16> {
        self.r.u16()
    }

    /// A big-endian i16.
    pub(crate) fn i16(&mut self) -> Result<i16> {
        Ok(i16::from_be_bytes(self.r.u16()?.to_be_bytes()))
    }

    /// A big-endian u32.
    pub(crate) fn u32(&mut self) -> Result<u32> {
        self.r.u32()
    }

    /// A big-endian i32.
    pub(crate) fn i32(&mut self) -> Result<i32> {
        self.r.i32()
    }

    /// A big-endian i64.
    pub(crate) fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_be_bytes(self.r.u64()?.to_be_bytes()))
    }

    /// A big-endian i32 that must not be negative, named `field` in errors.
    pub(crate) fn count(&mut self, field: &str) -> Result<usize> {
        let v = self.i32()?;
        usize::try_from(v).map_err(|_| self.corrupt(format!("{field} is negative ({v})")))
    }

    /// A big-endian i64 that must not be negative, named `field` in errors.
    pub(crate) fn non_negative_i64(&mut self, field: &str) -> Result<u64> {
        let v = self.i64()?;
        u64::try_from(v).map_err(|_| self.corrupt(format!("{field} is negative ({v})")))
    }

    /// Skips `n` bytes.
    pub(crate) fn skip(&mut self, n: usize) -> Result<()> {
        self.r.bytes(n).map(|_| ())
    }

    /// A TString.
    pub(crate) fn tstring(&mut self) -> Result<String> {
        self.r.tstring()
    }

    /// A NUL-terminated string (class names in class tags).
    fn c_string(&mut self) -> Result<String> {
        let rest = self.r.rest();
        let len = rest
            .iter()
            .take(MAX_CLASS_NAME)
            .position(|&b| b == 0)
            .ok_or_else(|| self.corrupt("a class name is not NUL-terminated"))?;
        let s = String::from_utf8_lossy(&rest[..len]).into_owned();
        self.r.bytes(len + 1)?;
        Ok(s)
    }

    /// Where an object of `count` bytes starting here ends (within the data).
    fn end_after(&self, count: usize) -> Result<usize> {
        let pos = self.r.pos();
        pos.checked_add(count)
            .filter(|_| count <= self.r.remaining())
            .ok_or_else(|| {
                self.corrupt(format!(
                    "a byte count of {count} runs past the end ({} bytes)",
                    pos + self.r.remaining()
                ))
            })
    }

    /// A version header: byte count (if present) and class version.
    pub(crate) fn version(&mut self) -> Result<Versioned> {
        let first = self.u32()?;
        if first & BYTE_COUNT_MASK == 0 {
            // No byte count: the first two bytes were the version.
            self.r.set_pos(self.r.pos() - 4)?;
            return Ok(Versioned {
                version: self.u16()?,
                end: None,
            });
        }
        let count = (first & !BYTE_COUNT_MASK) as usize;
        let end = self.end_after(count)?;
        if count < 2 {
            return Err(self.corrupt(format!("a byte count of {count} holds no version")));
        }
        Ok(Versioned {
            version: self.u16()?,
            end: Some(end),
        })
    }

    /// A version header of `class`, refusing versions outside `known`.
    pub(crate) fn version_of(
        &mut self,
        class: &str,
        known: std::ops::RangeInclusive<u16>,
    ) -> Result<Versioned> {
        let v = self.version()?;
        if !known.contains(&v.version) {
            return Err(Error::Unsupported(format!(
                "{}: {class} of class version {} (this reader knows versions {}-{})",
                self.what,
                v.version,
                known.start(),
                known.end()
            )));
        }
        Ok(v)
    }

    /// Moves to `end` (from a byte count), which must not lie before the position.
    pub(crate) fn finish(&mut self, end: Option<usize>, class: &str) -> Result<()> {
        if let Some(end) = end {
            if end < self.r.pos() {
                return Err(self.corrupt(format!(
                    "a {class} ran {} bytes past its byte count",
                    self.r.pos() - end
                )));
            }
            self.r.set_pos(end)?;
        }
        Ok(())
    }

    /// Skips a versioned object whose content is not needed.
    pub(crate) fn skip_object(&mut self, class: &str) -> Result<()> {
        let v = self.version()?;
        if v.end.is_none() {
            return Err(self.corrupt(format!("a {class} has no byte count to skip it by")));
        }
        self.finish(v.end, class)
    }

    /// A `TObject`: version, unique id, bits (and a process id when referenced); returns
    /// the bits.
    pub(crate) fn tobject(&mut self) -> Result<u32> {
        let v = self.version()?;
        self.u32()?;
        let bits = self.u32()?;
        if bits & IS_REFERENCED != 0 {
            self.u16()?;
        }
        self.finish(v.end, "TObject")?;
        Ok(bits)
    }

    /// A `TNamed`: its `TObject`, name and title.
    pub(crate) fn tnamed(&mut self) -> Result<(String, String)> {
        let (name, title, _) = self.tnamed_with_bits()?;
        Ok((name, title))
    }

    /// A `TNamed`'s name, title and its `TObject`'s bits.
    pub(crate) fn tnamed_with_bits(&mut self) -> Result<(String, String, u32)> {
        let v = self.version()?;
        let bits = self.tobject()?;
        let name = self.tstring()?;
        let title = self.tstring()?;
        self.finish(v.end, "TNamed")?;
        Ok((name, title, bits))
    }

    /// The header of an object pointer (see the module documentation). The caller reads a
    /// new object and then calls [`finish`](Self::finish) with its `end`.
    pub(crate) fn pointer(&mut self) -> Result<Pointer> {
        let start = self.r.pos();
        let first = self.u32()?;
        let (tag, end) = if first & BYTE_COUNT_MASK == 0 || first == NEW_CLASS_TAG {
            (first, None)
        } else {
            let count = (first & !BYTE_COUNT_MASK) as usize;
            let end = self.end_after(count)?;
            (self.u32()?, Some(end))
        };
        if tag & CLASS_MASK == 0 {
            return Ok(if tag == 0 {
                Pointer::Null
            } else {
                Pointer::Reference(tag)
            });
        }
        let class = if tag == NEW_CLASS_TAG {
            // The class tag sits 4 bytes after the start when there is a byte count.
            let tag_pos = if end.is_some() { start + 4 } else { start };
            let name = self.c_string()?;
            self.classes
                .insert(self.map_position(tag_pos), name.clone());
            name
        } else {
            let at = tag & !CLASS_MASK;
            self.classes.get(&at).cloned().ok_or_else(|| {
                self.corrupt(format!("a class tag points to {at}, where no class is"))
            })?
        };
        Ok(Pointer::Object {
            class,
            position: self.map_position(start),
            end,
        })
    }

    /// The map position of data position `pos`.
    fn map_position(&self, pos: usize) -> u32 {
        // Objects are at most 1 GiB (the byte count's 30 bits), so this fits.
        u32::try_from(pos)
            .unwrap_or(u32::MAX)
            .saturating_add(self.origin)
            .saturating_add(MAP_OFFSET)
    }

    /// A `TObjArray` streamed in place; `element` reads each non-null element: a new
    /// object (given its class name and map position) or a reference to one read before.
    /// Elements for which it returns `None` are left out.
    pub(crate) fn tobjarray<T>(
        &mut self,
        mut element: impl FnMut(&mut Self, ArrayItem<'_>) -> Result<Option<T>>,
    ) -> Result<Vec<T>> {
        let v = self.version_of("TObjArray", 3..=3)?;
        self.tobject()?;
        self.tstring()?;
        let n = self.count("TObjArray size")?;
        self.i32()?; // lower bound
                     // Each element takes at least 4 bytes: a hostile size cannot allocate much.
        if n > self.r.remaining() / 4 + 1 {
            return Err(self.corrupt(format!("a TObjArray claims {n} elements")));
        }
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            let item = match self.pointer()? {
                Pointer::Null => None,
                Pointer::Reference(at) => element(self, ArrayItem::Reference(at))?,
                Pointer::Object {
                    class,
                    position,
                    end,
                } => {
                    let t = element(self, ArrayItem::Object(&class, position))?;
                    self.finish(end, &class)?;
                    t
                }
            };
            out.extend(item);
        }
        self.finish(v.end, "TObjArray")?;
        Ok(out)
    }

    /// An array of `n` elements behind a "basic pointer" member (`Long64_t *fX //[fN]`):
    /// a one-byte flag, then the values when the flag is set.
    pub(crate) fn basic_pointer_i64(&mut self, n: usize, field: &str) -> Result<Vec<i64>> {
        if self.u8()? == 0 {
            return Ok(Vec::new());
        }
        let bytes = self
            .r
            .bytes(n.checked_mul(8).ok_or_else(|| self.corrupt(field))?)?;
        Ok(bytes
            .chunks_exact(8)
            .map(|c| i64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect())
    }

    /// Like [`basic_pointer_i64`](Self::basic_pointer_i64) for 32-bit values.
    pub(crate) fn basic_pointer_i32(&mut self, n: usize, field: &str) -> Result<Vec<i32>> {
        if self.u8()? == 0 {
            return Ok(Vec::new());
        }
        let bytes = self
            .r
            .bytes(n.checked_mul(4).ok_or_else(|| self.corrupt(field))?)?;
        Ok(bytes
            .chunks_exact(4)
            .map(|c| i32::from_be_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_with_and_without_byte_count() {
        let data = [0x40, 0, 0, 6, 0, 3, 1, 2, 3, 4, 0, 7];
        let mut r = ObjectReader::new(&data, 0, "test");
        let v = r.version().unwrap();
        assert_eq!((v.version, v.end), (3, Some(10)));
        r.finish(v.end, "x").unwrap();
        let v = r.version().unwrap_err();
        // Only two bytes left: no room for a u32.
        assert!(matches!(v, Error::Truncated { .. }));
    }

    #[test]
    fn byte_count_past_the_end_is_corrupt() {
        let data = [0x40, 0, 0, 60, 0, 3];
        let err = ObjectReader::new(&data, 0, "test").version().unwrap_err();
        assert!(err.to_string().contains("runs past the end"), "{err}");
    }

    #[test]
    fn pointers_new_class_then_class_reference_then_null() {
        // Key header of 10 bytes: map positions are data positions + 12.
        let mut data = vec![0x40, 0, 0, 10, 0xFF, 0xFF, 0xFF, 0xFF];
        data.extend_from_slice(b"Foo\0");
        data.extend_from_slice(&[0, 0]); // the object's content
        let second = data.len();
        data.extend_from_slice(&[0x40, 0, 0, 6, 0x80, 0, 0, 16, 0, 0]);
        data.extend_from_slice(&[0, 0, 0, 0]);
        let mut r = ObjectReader::new(&data, 10, "test");
        match r.pointer().unwrap() {
            Pointer::Object {
                class,
                position,
                end,
            } => {
                assert_eq!((class.as_str(), position), ("Foo", 12));
                r.finish(end, "Foo").unwrap();
            }
            other => panic!("{other:?}"),
        }
        match r.pointer().unwrap() {
            Pointer::Object {
                class, position, ..
            } => assert_eq!((class.as_str(), position), ("Foo", second as u32 + 12)),
            other => panic!("{other:?}"),
        }
        r.skip(2).unwrap();
        assert!(matches!(r.pointer().unwrap(), Pointer::Null));
    }

    #[test]
    fn unknown_class_reference_is_corrupt() {
        let data = [0x40, 0, 0, 4, 0x80, 0, 0, 40];
        let err = ObjectReader::new(&data, 0, "test").pointer().unwrap_err();
        assert!(err.to_string().contains("no class"), "{err}");
    }
}
