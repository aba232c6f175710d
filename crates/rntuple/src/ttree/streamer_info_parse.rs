//! The file's streamer infos (the key at `fSeekInfo`): a `TList` of `TStreamerInfo`, one
//! per class stored in the file, each listing the class's members as
//! `TStreamerElement`s. They say how objects in `TBranchElement` baskets are laid out,
//! without dictionaries.

use super::object_reader::{ArrayItem, ObjectReader, Pointer};
pub use crate::container::{StreamerElement, StreamerInfo};
use crate::error::{Error, Result};

/// Parses the streamer-info key's object (`key_len`: its key header's length).
pub fn parse_streamer_infos(data: &[u8], key_len: u32, what: &str) -> Result<Vec<StreamerInfo>> {
    let mut r = ObjectReader::new(data, key_len, what);
    parse_info_list(&mut r)
}

/// Parses a `TList` of streamer infos streamed as `TBuffer::WriteObject` does (byte
/// count and class tag first): an RNTuple's streamer-info extra type information.
pub fn parse_streamer_info_object(data: &[u8], what: &str) -> Result<Vec<StreamerInfo>> {
    let mut r = ObjectReader::new(data, 0, what);
    match r.pointer()? {
        Pointer::Object { class, end, .. } if class == "TList" => {
            let infos = parse_info_list(&mut r)?;
            r.finish(end, "TList")?;
            Ok(infos)
        }
        _ => Err(r.corrupt("no TList of streamer infos".to_string())),
    }
}

fn parse_info_list(r: &mut ObjectReader<'_>) -> Result<Vec<StreamerInfo>> {
    let v = r.version_of("TList", 4..=5)?;
    r.tobject()?;
    r.tstring()?;
    let n = r.count("TList size")?;
    let mut out = Vec::new();
    for _ in 0..n {
        match r.pointer()? {
            Pointer::Object { class, end, .. } => {
                if class == "TStreamerInfo" {
                    out.push(parse_info(r)?);
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
    let (name, title, bits) = r.tnamed_with_bits()?;
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
        version: outer.version,
        stl_version: stl.as_ref().map_or(0, |v| v.version),
        name,
        title,
        bits,
        type_code,
        size,
        array_length,
        array_dim,
        max_index,
        type_name,
        // Read below, by the element's class.
        ..StreamerElement::default()
    };
    match class {
        "TStreamerBase" if outer.version >= 3 => e.base_version = r.i32()?,
        "TStreamerBasicPointer" | "TStreamerLoop" => {
            e.count_version = r.i32()?;
            e.count_name = r.tstring()?;
            e.count_class = r.tstring()?;
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
