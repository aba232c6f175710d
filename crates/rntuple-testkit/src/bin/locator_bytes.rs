//! Our serialized locators as hex, for comparison with ROOT's
//! `RNTupleSerializer::SerializeLocator` (`tests/test_object_layout.py`).
//!
//! ```sh
//! locator_bytes KIND SIZE POSITION [RESERVED] [KIND SIZE POSITION [RESERVED]] ...
//! ```
//!
//! One line of lower-case hex per locator, in argument order. `KIND` is `file` (a
//! standard locator, or a large one, 0x01, when the size needs more than 31 bits or the
//! reserved byte is set), `object` (type 0x02: `POSITION` is the object's location) or
//! `unknownTT` (type `0xTT` in hex, written as its head and zeros: `SIZE` is then the
//! locator's own size in bytes, head included, and `POSITION` is ignored). Numbers are
//! decimal or `0x` hex. A group is three or four arguments: a fourth that is not a kind
//! is its reserved byte. A bad argument is an error naming it (exit status 2).

use rntuple::format::{Locator, LocatorKind, Writer};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match render(&args) {
        Ok(lines) => {
            let mut out = lines.join("\n");
            if !out.is_empty() {
                out.push('\n');
            }
            print!("{out}");
        }
        Err(e) => {
            eprintln!("locator_bytes: {e}");
            eprintln!("usage: locator_bytes KIND SIZE POSITION [RESERVED] ... (KIND: file|object|unknownTT)");
            std::process::exit(2);
        }
    }
}

/// The hex lines of every argument group.
fn render(args: &[String]) -> Result<Vec<String>, String> {
    if args.is_empty() {
        return Err("no locator given".into());
    }
    let mut lines = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let kind = &args[i];
        let (Some(size), Some(position)) = (args.get(i + 1), args.get(i + 2)) else {
            return Err(format!("{kind}: expected SIZE and POSITION after it"));
        };
        let size = number(size)?;
        let position = number(position)?;
        i += 3;
        let mut reserved = 0u8;
        if let Some(next) = args.get(i) {
            if !is_kind(next) {
                reserved = u8::try_from(number(next)?)
                    .map_err(|_| format!("reserved {next}: more than a byte"))?;
                i += 1;
            }
        }
        lines.push(hex(&locator(kind, size, position, reserved)?));
    }
    Ok(lines)
}

/// Whether `arg` starts a new group.
fn is_kind(arg: &str) -> bool {
    arg == "file" || arg == "object" || arg.starts_with("unknown")
}

/// The locator a group describes.
fn locator(kind: &str, size: u64, position: u64, reserved: u8) -> Result<Locator, String> {
    let mut loc = match kind {
        "file" => Locator::file(size, position),
        "object" => Locator::object(size, position),
        other => {
            let code = other
                .strip_prefix("unknown")
                .filter(|c| !c.is_empty())
                .ok_or_else(|| format!("unknown kind {other:?} (file, object or unknownTT)"))?;
            let type_code = u8::from_str_radix(code, 16)
                .ok()
                .filter(|&t| t < 0x80)
                .ok_or_else(|| format!("{other}: TT must be a type code in hex below 0x80"))?;
            let own_size = u16::try_from(size)
                .ok()
                .filter(|&s| s >= 4)
                .ok_or_else(|| format!("{other}: own size {size} must be 4 to 65535"))?;
            Locator {
                size: 0,
                offset: 0,
                kind: LocatorKind::Unknown {
                    type_code,
                    own_size,
                },
                reserved: 0,
            }
        }
    };
    loc.reserved = reserved;
    Ok(loc)
}

/// A decimal or `0x` hex number.
fn number(text: &str) -> Result<u64, String> {
    let parsed = match text.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16),
        None => text.parse(),
    };
    parsed.map_err(|_| format!("{text:?} is not a number"))
}

/// The serialized locator as lower-case hex.
fn hex(loc: &Locator) -> String {
    let mut w = Writer::new();
    loc.write(&mut w);
    w.into_bytes().iter().map(|b| format!("{b:02x}")).collect()
}
