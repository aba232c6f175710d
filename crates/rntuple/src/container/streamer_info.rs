//! Writing the StreamerInfo record of a TFile: a streamed `TList` of `TStreamerInfo`
//! objects that describe the layout of the classes stored in the file.
//!
//! A file holding RNTuples needs only the description of the anchor class,
//! `ROOT::RNTuple` ([`StreamerClass::rntuple_anchor`]). The bytes follow ROOT's object
//! streaming (all integers big-endian):
//!
//! * A versioned object starts with a byte count (u32, `0x40000000 | n`, `n` counting the
//!   bytes after the count) and its class version (u16).
//! * A `TObject` is its version (u16, 1), `fUniqueID` (u32) and `fBits` (u32), without a
//!   byte count; a `TNamed` is a versioned `TObject` plus two TStrings (name, title).
//! * An object pointer (an element of a `TList` or `TObjArray`) is a byte count, then a
//!   class tag, then the object. The first time a class appears the tag is `0xFFFFFFFF`
//!   followed by the NUL-terminated class name; later ones are `0x80000000 | position`,
//!   where `position` is the position of the first tag in the key's buffer (which starts
//!   with the key header, so the key length is added) plus 2.
//! * A `TList` is versioned: `TObject`, name, object count, then per object the pointer
//!   and an option TString. A `TObjArray` is versioned: `TObject`, name, object count,
//!   lower bound, then the pointers.
//! * A `TStreamerInfo` is versioned: `TNamed` (class name), checksum (u32), class version
//!   (i32), then a pointer to the `TObjArray` of its members' `TStreamerElement`s.

use super::cursor::write_tstring;
use crate::error::{Error, Result};

/// Class version of `TList` that ROOT writes.
const TLIST_VERSION: u16 = 5;
/// Class version of `TObjArray` that ROOT writes.
const TOBJARRAY_VERSION: u16 = 3;
/// Class version of `TStreamerInfo` that ROOT 6.40 writes.
const TSTREAMERINFO_VERSION: u16 = 10;
/// Class version of `TStreamerElement` that ROOT writes.
const TSTREAMERELEMENT_VERSION: u16 = 4;
/// Class version of `TStreamerBasicType` that ROOT writes.
const TSTREAMERBASICTYPE_VERSION: u16 = 2;
/// Class version of `TNamed`.
const TNAMED_VERSION: u16 = 1;
/// Class version of `TObject`.
const TOBJECT_VERSION: u16 = 1;
/// The `fBits` ROOT writes for a `TStreamerInfo`'s `TObject` part.
const TSTREAMERINFO_BITS: u32 = 0x0001_0000;
/// Marks a byte count.
const BYTE_COUNT_MASK: u32 = 0x4000_0000;
/// Tag of a class seen for the first time.
const NEW_CLASS_TAG: u32 = 0xFFFF_FFFF;
/// Marks a reference to a class seen before.
const CLASS_MASK: u32 = 0x8000_0000;
/// ROOT's offset added to buffer positions in the object map.
const MAP_OFFSET: u32 = 2;

/// ROOT's type code for `unsigned short` (`kUShort`).
pub const TYPE_USHORT: i32 = 12;
/// ROOT's type code for `unsigned long` (`kULong`), which is how ROOT on 64-bit Linux
/// describes `std::uint64_t` members.
pub const TYPE_ULONG: i32 = 14;

/// A data member of a class made of fundamental types, as a `TStreamerBasicType`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamerMember {
    /// The member's name, e.g. `fSeekHeader`.
    pub name: String,
    /// ROOT's type code (`EDataType`), e.g. [`TYPE_USHORT`].
    pub type_code: i32,
    /// Size in bytes.
    pub size: i32,
    /// The C++ type name ROOT records, e.g. `unsigned short`.
    pub type_name: String,
}

/// A class whose layout is described in the file's StreamerInfo record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamerClass {
    /// The class name, e.g. `ROOT::RNTuple`.
    pub name: String,
    /// The class version (`ClassDef`).
    pub class_version: i32,
    /// ROOT's checksum of the class layout (`TClass::GetCheckSum`).
    pub checksum: u32,
    /// The streamed data members, in order.
    pub members: Vec<StreamerMember>,
}

impl StreamerClass {
    /// The description of the RNTuple anchor class `ROOT::RNTuple` (class version 2), as
    /// ROOT 6.34 and later write it: four `unsigned short` version fields and seven
    /// 64-bit fields (header and footer locations and sizes, MaxKeySize).
    pub fn rntuple_anchor() -> StreamerClass {
        let ushort = |name: &str| StreamerMember {
            name: name.to_string(),
            type_code: TYPE_USHORT,
            size: 2,
            type_name: "unsigned short".to_string(),
        };
        let ulong = |name: &str| StreamerMember {
            name: name.to_string(),
            type_code: TYPE_ULONG,
            size: 8,
            type_name: "unsigned long".to_string(),
        };
        let mut members: Vec<StreamerMember> = [
            "fVersionEpoch",
            "fVersionMajor",
            "fVersionMinor",
            "fVersionPatch",
        ]
        .into_iter()
        .map(ushort)
        .collect();
        members.extend(
            [
                "fSeekHeader",
                "fNBytesHeader",
                "fLenHeader",
                "fSeekFooter",
                "fNBytesFooter",
                "fLenFooter",
                "fMaxKeySize",
            ]
            .into_iter()
            .map(ulong),
        );
        StreamerClass {
            name: "ROOT::RNTuple".to_string(),
            class_version: 2,
            checksum: 0x28E6_32EC,
            members,
        }
    }
}

/// Streams objects the way ROOT's `TBufferFile` does, keeping track of class tags.
struct ObjectBuffer {
    out: Vec<u8>,
    /// Position of the buffer's first byte in ROOT's buffer (the key length).
    displacement: u32,
    /// Classes seen so far and the map position of their first tag.
    classes: Vec<(&'static str, u32)>,
    /// The first count, size or position that did not fit its field, if any: the
    /// streamed bytes are then wrong and [`streamer_info_list`] refuses them.
    overflow: Option<String>,
}

/// The byte count field of an object of `n` bytes: `n` must stay below the mask bit.
fn byte_count(n: usize) -> Option<u32> {
    u32::try_from(n).ok().filter(|&n| n < BYTE_COUNT_MASK)
}

/// The map tag of a class first seen at buffer position `pos`, if a reference
/// (`CLASS_MASK | tag`) can hold it.
fn class_tag(displacement: u32, pos: usize) -> Option<u32> {
    u32::try_from(pos)
        .ok()
        .and_then(|p| p.checked_add(displacement))
        .and_then(|p| p.checked_add(MAP_OFFSET))
        .filter(|&t| t < CLASS_MASK)
}

impl ObjectBuffer {
    fn u16(&mut self, v: u16) {
        self.out.extend_from_slice(&v.to_be_bytes());
    }

    fn u32(&mut self, v: u32) {
        self.out.extend_from_slice(&v.to_be_bytes());
    }

    fn i32(&mut self, v: i32) {
        self.out.extend_from_slice(&v.to_be_bytes());
    }

    /// Records the first overflow (the bytes streamed from then on are not used).
    fn fail(&mut self, why: String) {
        self.overflow.get_or_insert(why);
    }

    /// An object count (i32 in ROOT's collections).
    fn count(&mut self, n: usize, what: &str) {
        match i32::try_from(n) {
            Ok(n) => self.i32(n),
            Err(_) => {
                self.fail(format!("{n} {what}, more than a count holds (2^31 - 1)"));
                self.i32(0);
            }
        }
    }

    fn tstring(&mut self, s: &str) {
        write_tstring(&mut self.out, s);
    }

    /// Reserves a byte count; returns where it goes.
    fn begin_count(&mut self) -> usize {
        let at = self.out.len();
        self.u32(0);
        at
    }

    /// Fills in the byte count reserved at `at`.
    fn end_count(&mut self, at: usize) {
        let len = self.out.len() - at - 4;
        let n = byte_count(len).unwrap_or_else(|| {
            self.fail(format!(
                "an object of {len} bytes, more than a byte count holds (2^30 - 1)"
            ));
            0
        });
        self.out[at..at + 4].copy_from_slice(&(BYTE_COUNT_MASK | n).to_be_bytes());
    }

    /// A versioned object: byte count, version, then `body`.
    fn versioned(&mut self, version: u16, body: impl FnOnce(&mut ObjectBuffer)) {
        let at = self.begin_count();
        self.u16(version);
        body(self);
        self.end_count(at);
    }

    fn tobject(&mut self, bits: u32) {
        self.u16(TOBJECT_VERSION);
        self.u32(0); // fUniqueID
        self.u32(bits);
    }

    fn tnamed(&mut self, name: &str, title: &str, bits: u32) {
        self.versioned(TNAMED_VERSION, |b| {
            b.tobject(bits);
            b.tstring(name);
            b.tstring(title);
        });
    }

    /// An object pointer: byte count, class tag (new or reference), then `body`.
    fn object(&mut self, class: &'static str, body: impl FnOnce(&mut ObjectBuffer)) {
        let at = self.begin_count();
        match self.classes.iter().find(|(name, _)| *name == class) {
            Some(&(_, tag)) => self.u32(CLASS_MASK | tag),
            None => {
                let pos = self.out.len();
                let tag = class_tag(self.displacement, pos).unwrap_or_else(|| {
                    self.fail(format!(
                        "class {class} first streamed at byte {pos}, past the 2^31 - 1 a class reference holds"
                    ));
                    0
                });
                self.classes.push((class, tag));
                self.u32(NEW_CLASS_TAG);
                self.out.extend_from_slice(class.as_bytes());
                self.out.push(0);
            }
        }
        body(self);
        self.end_count(at);
    }

    fn streamer_info(&mut self, class: &StreamerClass) {
        self.object("TStreamerInfo", |b| {
            b.versioned(TSTREAMERINFO_VERSION, |b| {
                b.tnamed(&class.name, "", TSTREAMERINFO_BITS);
                b.u32(class.checksum);
                b.i32(class.class_version);
                b.object("TObjArray", |b| {
                    b.versioned(TOBJARRAY_VERSION, |b| {
                        b.tobject(0);
                        b.tstring("");
                        b.count(class.members.len(), "members");
                        b.i32(0); // lower bound
                        for m in &class.members {
                            b.basic_type(m);
                        }
                    });
                });
            });
        });
    }

    fn basic_type(&mut self, m: &StreamerMember) {
        self.object("TStreamerBasicType", |b| {
            b.versioned(TSTREAMERBASICTYPE_VERSION, |b| {
                b.versioned(TSTREAMERELEMENT_VERSION, |b| {
                    b.tnamed(&m.name, "", 0);
                    b.i32(m.type_code);
                    b.i32(m.size);
                    b.i32(0); // fArrayLength
                    b.i32(0); // fArrayDim
                    for _ in 0..5 {
                        b.i32(0); // fMaxIndex
                    }
                    b.tstring(&m.type_name);
                });
            });
        });
    }
}

/// Streams the StreamerInfo record's object: a `TList` of one `TStreamerInfo` per class
/// (uncompressed). `key_len` is the length of the header of the key that will hold it:
/// class references inside the list count positions from the start of that header.
///
/// An [`Error::InvalidArgument`] if a count, byte count or class position does not fit
/// ROOT's streaming (an object of 2^30 bytes or more, 2^31 classes or members).
pub fn streamer_info_list(classes: &[StreamerClass], key_len: u16) -> Result<Vec<u8>> {
    let mut b = ObjectBuffer {
        out: Vec::with_capacity(1300 * classes.len().max(1)),
        displacement: u32::from(key_len),
        classes: Vec::new(),
        overflow: None,
    };
    b.versioned(TLIST_VERSION, |b| {
        b.tobject(0);
        b.tstring(""); // fName
        b.count(classes.len(), "classes");
        for class in classes {
            b.streamer_info(class);
            b.tstring(""); // option
        }
    });
    match b.overflow {
        None => Ok(b.out),
        Some(why) => Err(Error::InvalidArgument(format!(
            "cannot stream the StreamerInfo record: {why}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_stop_below_the_mask_bit() {
        assert_eq!(byte_count(0x3FFF_FFFF), Some(0x3FFF_FFFF));
        assert_eq!(byte_count(0x4000_0000), None);
    }

    #[test]
    fn class_tags_stop_below_the_reference_bit() {
        // The last position a reference can name, then one past it.
        assert_eq!(class_tag(100, 0x7FFF_FFFF - 102), Some(0x7FFF_FFFF));
        assert_eq!(class_tag(100, 0x7FFF_FFFF - 101), None);
        assert_eq!(class_tag(u32::MAX, 0), None);
    }

    #[test]
    fn too_many_members_is_an_error() {
        let mut b = ObjectBuffer {
            out: Vec::new(),
            displacement: 0,
            classes: Vec::new(),
            overflow: None,
        };
        b.count(i32::MAX as usize, "members");
        assert!(b.overflow.is_none());
        b.count(i32::MAX as usize + 1, "members");
        assert!(b
            .overflow
            .as_deref()
            .is_some_and(|w| w.contains("2147483648 members")));
    }
}
