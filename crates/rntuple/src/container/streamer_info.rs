//! Writing the StreamerInfo record of a TFile: a streamed `TList` of `TStreamerInfo`
//! objects that describe the layout of the classes stored in the file.
//!
//! A file holding RNTuples needs only the description of the anchor class,
//! `ROOT::RNTuple` ([`StreamerInfo::rntuple_anchor`]); an RNTuple with streamer fields adds
//! the classes they store, and carries them in its own extra type information
//! ([`streamer_info_object`]). The bytes follow ROOT's object
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

/// One member (or base class) of a class, as its `TStreamerElement` describes it: every
/// field ROOT streams, so that an element read from one file is written to another as
/// it was.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StreamerElement {
    /// The element's class: `TStreamerBase`, `TStreamerBasicType`, `TStreamerSTL`, ...
    pub element_class: String,
    /// The version of the element's class it was streamed with.
    pub version: u16,
    /// For `TStreamerSTLstring`: the version of its `TStreamerSTL` part.
    pub stl_version: u16,
    /// The member's name (the base class's name for a base).
    pub name: String,
    /// The member's title (its comment; carries `[min,max,bits]` of `Double32_t`).
    pub title: String,
    /// The `fBits` of the element's `TObject` part.
    pub bits: u32,
    /// ROOT's type code (`TVirtualStreamerInfo::EReadWrite`): 1-19 fundamentals, 20+n fixed
    /// arrays of them, 40+n pointers to arrays, 61-69 objects, 300 STL, 365 string...
    pub type_code: i32,
    /// Size in bytes in memory.
    pub size: i32,
    /// Total number of values of a fixed array (0 if not an array).
    pub array_length: i32,
    /// Number of dimensions of a fixed array.
    pub array_dim: i32,
    /// Each dimension's length (a `TStreamerBase` keeps its base's checksum in the second).
    pub max_index: [i32; 5],
    /// The member's C++ type name.
    pub type_name: String,
    /// For `TStreamerSTL`: the container kind (1 vector, 6 list, 4 map, 365 string, ...).
    pub stl_type: i32,
    /// For `TStreamerSTL`: the type code of the contained type.
    pub content_type: i32,
    /// For `TStreamerBase`: the base class's version.
    pub base_version: i32,
    /// For `TStreamerBasicPointer`/`TStreamerLoop`: the version of the class holding the
    /// length.
    pub count_version: i32,
    /// For `TStreamerBasicPointer`/`TStreamerLoop`: the member holding the length.
    pub count_name: String,
    /// For `TStreamerBasicPointer`/`TStreamerLoop`: the class holding the length.
    pub count_class: String,
}

impl StreamerElement {
    /// A `TStreamerBasicType` of a scalar member.
    pub fn basic(name: &str, type_code: i32, size: i32, type_name: &str) -> StreamerElement {
        StreamerElement {
            element_class: "TStreamerBasicType".to_string(),
            version: TSTREAMERBASICTYPE_VERSION,
            name: name.to_string(),
            type_code,
            size,
            type_name: type_name.to_string(),
            ..StreamerElement::default()
        }
    }
}

/// One class's layout, as its `TStreamerInfo` describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamerInfo {
    /// The class name.
    pub class_name: String,
    /// ROOT's checksum of the class layout (`TClass::GetCheckSum`).
    pub checksum: u32,
    /// The class version this layout belongs to.
    pub class_version: i32,
    /// Its bases and members, in streaming order.
    pub elements: Vec<StreamerElement>,
}

impl StreamerInfo {
    /// The description of the RNTuple anchor class `ROOT::RNTuple` (class version 2), as
    /// ROOT 6.34 and later write it: four `unsigned short` version fields and seven
    /// 64-bit fields (header and footer locations and sizes, MaxKeySize).
    pub fn rntuple_anchor() -> StreamerInfo {
        let ushort = |name: &str| StreamerElement::basic(name, TYPE_USHORT, 2, "unsigned short");
        let ulong = |name: &str| StreamerElement::basic(name, TYPE_ULONG, 8, "unsigned long");
        let mut elements: Vec<StreamerElement> = [
            "fVersionEpoch",
            "fVersionMajor",
            "fVersionMinor",
            "fVersionPatch",
        ]
        .into_iter()
        .map(ushort)
        .collect();
        elements.extend(
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
        StreamerInfo {
            class_name: "ROOT::RNTuple".to_string(),
            class_version: 2,
            checksum: 0x28E6_32EC,
            elements,
        }
    }
}

/// Streams objects the way ROOT's `TBufferFile` does, keeping track of class tags.
struct ObjectBuffer {
    out: Vec<u8>,
    /// Position of the buffer's first byte in ROOT's buffer (the key length).
    displacement: u32,
    /// Classes seen so far and the map position of their first tag.
    classes: Vec<(String, u32)>,
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
    fn new(displacement: u32, classes: usize) -> ObjectBuffer {
        ObjectBuffer {
            out: Vec::with_capacity(1300 * classes.max(1)),
            displacement,
            classes: Vec::new(),
            overflow: None,
        }
    }

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
    fn object(&mut self, class: &str, body: impl FnOnce(&mut ObjectBuffer)) {
        let at = self.begin_count();
        match self.classes.iter().find(|(name, _)| name == class) {
            Some(&(_, tag)) => self.u32(CLASS_MASK | tag),
            None => {
                let pos = self.out.len();
                let tag = class_tag(self.displacement, pos).unwrap_or_else(|| {
                    self.fail(format!(
                        "class {class} first streamed at byte {pos}, past the 2^31 - 1 a class reference holds"
                    ));
                    0
                });
                self.classes.push((class.to_string(), tag));
                self.u32(NEW_CLASS_TAG);
                self.out.extend_from_slice(class.as_bytes());
                self.out.push(0);
            }
        }
        body(self);
        self.end_count(at);
    }

    /// A `TList` of one `TStreamerInfo` per class, each with an empty option.
    fn info_list(&mut self, infos: &[StreamerInfo]) {
        self.versioned(TLIST_VERSION, |b| {
            b.tobject(0);
            b.tstring(""); // fName
            b.count(infos.len(), "classes");
            for info in infos {
                b.streamer_info(info);
                b.tstring(""); // option
            }
        });
    }

    fn streamer_info(&mut self, info: &StreamerInfo) {
        self.object("TStreamerInfo", |b| {
            b.versioned(TSTREAMERINFO_VERSION, |b| {
                b.tnamed(&info.class_name, "", TSTREAMERINFO_BITS);
                b.u32(info.checksum);
                b.i32(info.class_version);
                b.object("TObjArray", |b| {
                    b.versioned(TOBJARRAY_VERSION, |b| {
                        b.tobject(0);
                        b.tstring("");
                        b.count(info.elements.len(), "members");
                        b.i32(0); // lower bound
                        for e in &info.elements {
                            b.element(e);
                        }
                    });
                });
            });
        });
    }

    /// A `TStreamerElement` of any kind: its class's part around the element's fields.
    fn element(&mut self, e: &StreamerElement) {
        self.object(&e.element_class, |b| {
            b.versioned(e.version, |b| {
                if e.element_class == "TStreamerSTLstring" {
                    // A TStreamerSTL inside: its version, the element, its own fields.
                    b.versioned(e.stl_version, |b| {
                        b.element_fields(e);
                        b.i32(e.stl_type);
                        b.i32(e.content_type);
                    });
                    return;
                }
                b.element_fields(e);
                match e.element_class.as_str() {
                    "TStreamerBase" if e.version >= 3 => b.i32(e.base_version),
                    "TStreamerBasicPointer" | "TStreamerLoop" => {
                        b.i32(e.count_version);
                        b.tstring(&e.count_name);
                        b.tstring(&e.count_class);
                    }
                    "TStreamerSTL" => {
                        b.i32(e.stl_type);
                        b.i32(e.content_type);
                    }
                    _ => {}
                }
            });
        });
    }

    /// The `TStreamerElement` part every element kind starts with.
    fn element_fields(&mut self, e: &StreamerElement) {
        self.versioned(TSTREAMERELEMENT_VERSION, |b| {
            b.tnamed(&e.name, &e.title, e.bits);
            b.i32(e.type_code);
            b.i32(e.size);
            b.i32(e.array_length);
            b.i32(e.array_dim);
            for m in e.max_index {
                b.i32(m);
            }
            b.tstring(&e.type_name);
        });
    }

    fn finish(self) -> Result<Vec<u8>> {
        match self.overflow {
            None => Ok(self.out),
            Some(why) => Err(Error::InvalidArgument(format!(
                "cannot stream the streamer infos: {why}"
            ))),
        }
    }
}

/// Streams the StreamerInfo record's object: a `TList` of one `TStreamerInfo` per class
/// (uncompressed). `key_len` is the length of the header of the key that will hold it:
/// class references inside the list count positions from the start of that header.
///
/// An [`Error::InvalidArgument`] if a count, byte count or class position does not fit
/// ROOT's streaming (an object of 2^30 bytes or more, 2^31 classes or members).
pub fn streamer_info_list(infos: &[StreamerInfo], key_len: u16) -> Result<Vec<u8>> {
    let mut b = ObjectBuffer::new(u32::from(key_len), infos.len());
    b.info_list(infos);
    b.finish()
}

/// Streams a `TList` of one `TStreamerInfo` per class as `TBuffer::WriteObject` does (a
/// byte count and the list's class tag first; positions from the buffer's start): the
/// content of an RNTuple's streamer-info extra type information.
pub fn streamer_info_object(infos: &[StreamerInfo]) -> Result<Vec<u8>> {
    let mut b = ObjectBuffer::new(0, infos.len());
    b.object("TList", |b| b.info_list(infos));
    b.finish()
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
        let mut b = ObjectBuffer::new(0, 0);
        b.count(i32::MAX as usize, "members");
        assert!(b.overflow.is_none());
        b.count(i32::MAX as usize + 1, "members");
        assert!(b
            .overflow
            .as_deref()
            .is_some_and(|w| w.contains("2147483648 members")));
    }
}
