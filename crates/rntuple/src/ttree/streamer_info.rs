//! The file's streamer infos (the key at `fSeekInfo`): a `TList` of `TStreamerInfo`, one
//! per class stored in the file, each listing the class's members as
//! `TStreamerElement`s. They say how objects in `TBranchElement` baskets are laid out,
//! without dictionaries.

use super::stream::{ArrayItem, ObjectReader, Pointer};
use crate::error::{Error, Result};

/// One member (or base class) of a class, as its `TStreamerElement` describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamerElement {
    /// The element's class: `TStreamerBase`, `TStreamerBasicType`, `TStreamerSTL`, ...
    pub element_class: String,
    /// The member's name (the base class's name for a base).
    pub name: String,
    /// The member's title (its comment; carries `[min,max,bits]` of `Double32_t`).
    pub title: String,
    /// ROOT's type code (`TVirtualStreamerInfo::EReadWrite`): 1-19 fundamentals, 20+n fixed
    /// arrays of them, 40+n pointers to arrays, 61-69 objects, 300 STL, 365 string...
    pub type_code: i32,
    /// Size in bytes in memory.
    pub size: i32,
    /// Total number of values of a fixed array (0 if not an array).
    pub array_length: i32,
    /// Number of dimensions of a fixed array.
    pub array_dim: i32,
    /// Each dimension's length.
    pub max_index: [i32; 5],
    /// The member's C++ type name.
    pub type_name: String,
    /// For `TStreamerSTL`: the container kind (1 vector, 6 list, 4 map, 365 string, ...).
    pub stl_type: i32,
    /// For `TStreamerSTL`: the type code of the contained type.
    pub content_type: i32,
    /// For `TStreamerBase`: the base class's version.
    pub base_version: i32,
    /// For `TStreamerBasicPointer`/`TStreamerLoop`: the member holding the length.
    pub count_name: String,
}

/// One class's layout.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamerInfo {
    /// The class name.
    pub class_name: String,
    /// The class's checksum.
    pub checksum: u32,
    /// The class version this layout belongs to.
    pub class_version: i32,
    /// Its bases and members, in streaming order.
    pub elements: Vec<StreamerElement>,
}

/// Parses the streamer-info key's object (`key_len`: its key header's length).
pub fn parse_streamer_infos(data: &[u8], key_len: u32, what: &str) -> Result<Vec<StreamerInfo>> {
    let mut r = ObjectReader::new(data, key_len, what);
    let v = r.version_of("TList", 4..=5)?;
    r.tobject()?;
    r.tstring()?;
    let n = r.count("TList size")?;
    let mut out = Vec::new();
    for _ in 0..n {
        match r.pointer()? {
            Pointer::Object { class, end, .. } => {
                if class == "TStreamerInfo" {
                    out.push(parse_info(&mut r)?);
                }
                // Other records (the list of I/O rules, a TList of strings) are skipped.
                r.finish(end, &class)?;
            }
            Pointer::Null | Pointer::Reference(_) => {}
        }
        let option_len = usize::from(r.u8()?);
        r.skip(option_len)?;
    }
    r.finish(v.end, "TList")?;
    Ok(out)
}

fn parse_info(r: &mut ObjectReader<'_>) -> Result<StreamerInfo> {
    let v = r.version_of("TStreamerInfo", 2..=10)?;
    let (class_name, _) = r.tnamed()?;
    let checksum = r.u32()?;
    let class_version = r.i32()?;
    let elements = match r.pointer()? {
        Pointer::Object { class, end, .. } if class == "TObjArray" => {
            let e = r.tobjarray(|r, item| match item {
                ArrayItem::Object(class, _) => parse_element(r, class).map(Some),
                ArrayItem::Reference(_) => Ok(None),
            })?;
            r.finish(end, &class)?;
            e
        }
        Pointer::Null => Vec::new(),
        _ => {
            return Err(r.corrupt(format!(
                "the streamer info of {class_name} has no element list"
            )))
        }
    };
    r.finish(v.end, "TStreamerInfo")?;
    Ok(StreamerInfo {
        class_name,
        checksum,
        class_version,
        elements,
    })
}

fn parse_element(r: &mut ObjectReader<'_>, class: &str) -> Result<StreamerElement> {
    let outer = r.version()?;
    // A TStreamerSTLstring is a TStreamerSTL, itself a TStreamerElement.
    let stl = if class == "TStreamerSTLstring" {
        Some(r.version()?)
    } else {
        None
    };
    let base = r.version_of("TStreamerElement", 2..=4)?;
    let (name, title) = r.tnamed()?;
    let type_code = r.i32()?;
    let size = r.i32()?;
    let array_length = r.i32()?;
    let array_dim = r.i32()?;
    let mut max_index = [0i32; 5];
    for m in &mut max_index {
        *m = r.i32()?;
    }
    let type_name = r.tstring()?;
    r.finish(base.end, "TStreamerElement")?;
    let mut e = StreamerElement {
        element_class: class.to_string(),
        name,
        title,
        // ROOT stores `bool` members as kUChar (11) in old files; it means kBool (18).
        type_code: if type_code == 11 && matches!(type_name.as_str(), "Bool_t" | "bool") {
            18
        } else {
            type_code
        },
        size,
        array_length,
        array_dim,
        max_index,
        type_name,
        stl_type: 0,
        content_type: 0,
        base_version: 0,
        count_name: String::new(),
    };
    match class {
        "TStreamerBase" if outer.version >= 3 => e.base_version = r.i32()?,
        "TStreamerBasicPointer" | "TStreamerLoop" => {
            r.i32()?; // fCountVersion
            e.count_name = r.tstring()?;
            r.tstring()?; // fCountClass
        }
        "TStreamerSTL" | "TStreamerSTLstring" => {
            e.stl_type = r.i32()?;
            e.content_type = r.i32()?;
            if let Some(stl) = stl {
                r.finish(stl.end, "TStreamerSTL")?;
            }
        }
        _ => {}
    }
    r.finish(outer.end, class)?;
    if e.array_dim < 0 || e.array_dim > 5 {
        return Err(Error::corrupt(
            format!("streamer element \"{}\"", e.name),
            format!("{} array dimensions", e.array_dim),
        ));
    }
    Ok(e)
}
