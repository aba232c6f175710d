//! The anchor of an RNTuple stored as S3 objects (ROOT master's `RNTupleAnchorS3`, the
//! experimental "Mode B" layout): a JSON object at the base URL, uploaded last.
//!
//! Every other object is `<base>/<id>` (by default, [`S3Anchor::url_for`]): id 0 the
//! header envelope, then sealed pages and page lists in commit order, the footer last;
//! hidden clones live under `<base>/_clone/<name>` ([`S3Anchor::clone_base_url`]).
//!
//! The stored form is the object with every member and `checksum`, keys sorted in byte
//! order, pretty-printed with a 2-space indent as nlohmann's `dump(2)` writes it, with no
//! trailing newline. The checksum is XXH3-64 (seed 0) of the compact dump (no
//! whitespace, sorted keys) of all members but `checksum`, unknown ones included. ROOT
//! builds both with nlohmann::json, whose default object is a sorted map; this module
//! writes the same bytes with its own small JSON reader and writer ([`JsonValue`]): ASCII
//! and UTF-8 text as is, `"` and `\` escaped, control characters as `\b \f \n \r \t` or
//! `\u00xx`, `/` not escaped; integers in decimal (never through a double: the checksum
//! is above 2^53); numbers with a fraction or exponent as nlohmann prints doubles (the
//! shortest digits that read back the same, `1.0`, `0.001`, `1e+15`, `1e-05`), non-finite
//! ones as `null`.

use crate::error::{Error, Result};
use std::collections::BTreeMap;
use xxhash_rust::xxh3::xxh3_64;

/// The only anchor version ROOT writes and reads.
pub const S3_ANCHOR_VERSION: u64 = 0;
/// The default URL template: `${baseurl}` is the RNTuple's base URL, `${objid}` the
/// decimal object id.
pub const S3_DEFAULT_URL_TEMPLATE: &str = "${baseurl}/${objid}";
/// The default template of hidden clones' base URLs: `${name}` is the clone's name.
pub const S3_DEFAULT_CLONE_TEMPLATE: &str = "${baseurl}/_clone/${name}";
/// ROOT's reader refuses anchors of this many bytes or more (1 MiB).
pub const S3_ANCHOR_MAX_BYTES: u64 = 1 << 20;
/// ROOT's reader first asks for this many bytes of the anchor (8 KiB), which covers any
/// anchor of default templates; a reply this long is read again up to
/// [`S3_ANCHOR_MAX_BYTES`].
pub const S3_ANCHOR_FIRST_READ_BYTES: u64 = 8 << 10;

const ANCHOR_VERSION: &str = "anchorVersion";
const CHECKSUM: &str = "checksum";
const URL_TEMPLATE: &str = "urlTemplate";
const CLONE_TEMPLATE: &str = "cloneTemplate";
/// How deep arrays and objects may nest in an anchor (nothing in ROOT's nests at all).
const MAX_DEPTH: usize = 128;

/// A JSON value as nlohmann::json holds it: unsigned integers (written without a sign),
/// signed integers (written with a `-`), doubles, and objects as maps sorted by key.
#[derive(Debug, Clone, PartialEq)]
pub enum JsonValue {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// An integer written without a `-` that fits a u64.
    Unsigned(u64),
    /// An integer written with a `-` that fits an i64 (`-0` is 0).
    Integer(i64),
    /// Any other number: one with a fraction or an exponent, or an integer too large.
    Float(f64),
    /// A string.
    String(String),
    /// An array.
    Array(Vec<JsonValue>),
    /// An object, its keys sorted in byte order (a key given twice keeps its last value).
    Object(BTreeMap<String, JsonValue>),
}

impl JsonValue {
    /// The compact text: no whitespace, keys sorted (nlohmann's `dump()`).
    pub fn to_compact(&self) -> String {
        let mut out = String::new();
        write_value(&mut out, self, None, 0);
        out
    }

    /// The pretty text with an indent of `indent` spaces per level (nlohmann's
    /// `dump(indent)`, Python's `json.dumps(v, sort_keys=True, indent=indent,
    /// ensure_ascii=False)`), without a trailing newline.
    pub fn to_pretty(&self, indent: usize) -> String {
        let mut out = String::new();
        write_value(&mut out, self, Some(indent), 0);
        out
    }

    /// Parses one JSON document (RFC 8259, as nlohmann reads it: a UTF-8 byte order mark
    /// skipped, nothing but whitespace after the value). Errors are [`Error::Corrupt`]
    /// naming `what` and the byte where the text goes wrong.
    pub fn parse(bytes: &[u8], what: &str) -> Result<JsonValue> {
        let text = std::str::from_utf8(bytes).map_err(|e| {
            Error::corrupt(
                what,
                format!("not UTF-8 text (byte {} is not)", e.valid_up_to()),
            )
        })?;
        let mut parser = Parser {
            text,
            bytes,
            pos: 0,
            what,
        };
        if text.starts_with('\u{feff}') {
            parser.pos = '\u{feff}'.len_utf8();
        }
        let value = parser.value(0)?;
        parser.skip_whitespace();
        if parser.pos != bytes.len() {
            return Err(parser.error("text after the JSON value"));
        }
        Ok(value)
    }

    /// A short name of the value's kind, for messages.
    fn kind(&self) -> &'static str {
        match self {
            JsonValue::Null => "null",
            JsonValue::Bool(_) => "a boolean",
            JsonValue::Unsigned(_) => "an unsigned integer",
            JsonValue::Integer(_) => "a negative integer",
            JsonValue::Float(_) => "a floating-point number",
            JsonValue::String(_) => "a string",
            JsonValue::Array(_) => "an array",
            JsonValue::Object(_) => "an object",
        }
    }
}

/// The anchor of an RNTuple stored as S3 objects (ROOT's `RNTupleAnchorS3`). See the
/// module documentation for its stored form.
#[derive(Debug, Clone, PartialEq)]
pub struct S3Anchor {
    /// `anchorVersion`: [`S3_ANCHOR_VERSION`].
    pub anchor_version: u64,
    /// `formatVersionEpoch`: the writer's format version epoch.
    pub version_epoch: u64,
    /// `formatVersionMajor`.
    pub version_major: u64,
    /// `formatVersionMinor`.
    pub version_minor: u64,
    /// `formatVersionPatch`.
    pub version_patch: u64,
    /// `urlTemplate`: how an object id becomes a URL ([`S3Anchor::url_for`]).
    pub url_template: String,
    /// `cloneTemplate`: how a hidden clone's name becomes its base URL
    /// ([`S3Anchor::clone_base_url`]).
    pub clone_template: String,
    /// `headerObjId`: the object holding the header envelope (0).
    pub header_obj_id: u64,
    /// `headerOffset`: where in its object the header envelope starts (0).
    pub header_offset: u64,
    /// `nBytesHeader`: compressed size of the header envelope.
    pub nbytes_header: u64,
    /// `lenHeader`: uncompressed size of the header envelope.
    pub len_header: u64,
    /// `footerObjId`: the object holding the footer envelope (the last id).
    pub footer_obj_id: u64,
    /// `footerOffset`: where in its object the footer envelope starts (0).
    pub footer_offset: u64,
    /// `nBytesFooter`: compressed size of the footer envelope.
    pub nbytes_footer: u64,
    /// `lenFooter`: uncompressed size of the footer envelope.
    pub len_footer: u64,
    /// Members this version does not know, kept as read: they are part of the checksum.
    /// A key naming one of the members above, or `checksum`, is ignored when writing.
    pub extra: BTreeMap<String, JsonValue>,
}

impl Default for S3Anchor {
    /// Anchor version 0, the default templates, every number 0 (the writer sets the
    /// format version and the envelopes), no extra members.
    fn default() -> Self {
        S3Anchor {
            anchor_version: S3_ANCHOR_VERSION,
            version_epoch: 0,
            version_major: 0,
            version_minor: 0,
            version_patch: 0,
            url_template: S3_DEFAULT_URL_TEMPLATE.to_string(),
            clone_template: S3_DEFAULT_CLONE_TEMPLATE.to_string(),
            header_obj_id: 0,
            header_offset: 0,
            nbytes_header: 0,
            len_header: 0,
            footer_obj_id: 0,
            footer_offset: 0,
            nbytes_footer: 0,
            len_footer: 0,
            extra: BTreeMap::new(),
        }
    }
}

impl S3Anchor {
    /// The unsigned members by their JSON names, in the struct's order.
    fn numbers(&self) -> [(&'static str, u64); 13] {
        [
            (ANCHOR_VERSION, self.anchor_version),
            ("formatVersionEpoch", self.version_epoch),
            ("formatVersionMajor", self.version_major),
            ("formatVersionMinor", self.version_minor),
            ("formatVersionPatch", self.version_patch),
            ("headerObjId", self.header_obj_id),
            ("headerOffset", self.header_offset),
            ("nBytesHeader", self.nbytes_header),
            ("lenHeader", self.len_header),
            ("footerObjId", self.footer_obj_id),
            ("footerOffset", self.footer_offset),
            ("nBytesFooter", self.nbytes_footer),
            ("lenFooter", self.len_footer),
        ]
    }

    /// Every member but `checksum`, extra ones included.
    fn members(&self) -> BTreeMap<String, JsonValue> {
        let mut map = self.extra.clone();
        map.remove(CHECKSUM);
        for (name, value) in self.numbers() {
            map.insert(name.to_string(), JsonValue::Unsigned(value));
        }
        map.insert(
            URL_TEMPLATE.to_string(),
            JsonValue::String(self.url_template.clone()),
        );
        map.insert(
            CLONE_TEMPLATE.to_string(),
            JsonValue::String(self.clone_template.clone()),
        );
        map
    }

    /// The checksum of the anchor: XXH3-64 of the compact dump of every member but
    /// `checksum`.
    pub fn checksum(&self) -> u64 {
        checksum_of(&self.members())
    }

    /// The stored form: every member and the checksum, keys sorted, pretty-printed with
    /// a 2-space indent, no trailing newline (byte for byte what ROOT writes).
    pub fn to_json(&self) -> String {
        let mut map = self.members();
        let sum = checksum_of(&map);
        map.insert(CHECKSUM.to_string(), JsonValue::Unsigned(sum));
        JsonValue::Object(map).to_pretty(2)
    }

    /// Parses a stored anchor; `what` names it in errors. Checks, in this order, that it
    /// is a JSON object ([`Error::Corrupt`]), its `anchorVersion` (another one is
    /// [`Error::Unsupported`]), its `checksum` ([`Error::ChecksumMismatch`]), and that
    /// every member is there with its type: unsigned integers, and strings for the
    /// templates ([`Error::Corrupt`] naming the member). Members it does not know are
    /// kept in [`S3Anchor::extra`]. The format version is not checked here.
    pub fn parse(bytes: &[u8], what: &str) -> Result<S3Anchor> {
        let JsonValue::Object(mut map) = JsonValue::parse(bytes, what)? else {
            return Err(Error::corrupt(what, "the S3 anchor is not a JSON object"));
        };
        let anchor_version = unsigned_member(&map, ANCHOR_VERSION, what)?;
        if anchor_version != S3_ANCHOR_VERSION {
            return Err(Error::Unsupported(format!(
                "S3 anchor version {anchor_version} in {what} (this reader reads version \
                 {S3_ANCHOR_VERSION})"
            )));
        }
        let stored = unsigned_member(&map, CHECKSUM, what)?;
        map.remove(CHECKSUM);
        let computed = checksum_of(&map);
        if stored != computed {
            return Err(Error::ChecksumMismatch {
                what: what.to_string(),
                stored,
                computed,
            });
        }
        let mut take_unsigned = |name: &str| -> Result<u64> {
            let value = unsigned_member(&map, name, what)?;
            map.remove(name);
            Ok(value)
        };
        let mut anchor = S3Anchor {
            anchor_version: take_unsigned(ANCHOR_VERSION)?,
            version_epoch: take_unsigned("formatVersionEpoch")?,
            version_major: take_unsigned("formatVersionMajor")?,
            version_minor: take_unsigned("formatVersionMinor")?,
            version_patch: take_unsigned("formatVersionPatch")?,
            header_obj_id: take_unsigned("headerObjId")?,
            header_offset: take_unsigned("headerOffset")?,
            nbytes_header: take_unsigned("nBytesHeader")?,
            len_header: take_unsigned("lenHeader")?,
            footer_obj_id: take_unsigned("footerObjId")?,
            footer_offset: take_unsigned("footerOffset")?,
            nbytes_footer: take_unsigned("nBytesFooter")?,
            len_footer: take_unsigned("lenFooter")?,
            ..S3Anchor::default()
        };
        anchor.url_template = string_member(&mut map, URL_TEMPLATE, what)?;
        anchor.clone_template = string_member(&mut map, CLONE_TEMPLATE, what)?;
        anchor.extra = map;
        Ok(anchor)
    }

    /// The URL template with `${baseurl}` replaced by `base_url` (its first occurrence,
    /// as ROOT does once per source).
    pub fn resolved_url_template(&self, base_url: &str) -> String {
        self.url_template.replacen("${baseurl}", base_url, 1)
    }

    /// The URL of object `object_id` of the RNTuple at `base_url`: the URL template with
    /// `${baseurl}` and then `${objid}` (the id in decimal) replaced, the first
    /// occurrence of each, as ROOT does.
    pub fn url_for(&self, base_url: &str, object_id: u64) -> String {
        self.resolved_url_template(base_url)
            .replacen("${objid}", &object_id.to_string(), 1)
    }

    /// The base URL of the hidden clone `name` of the RNTuple at `base_url`: the clone
    /// template with `${baseurl}` and then `${name}` replaced (the first occurrence of
    /// each).
    pub fn clone_base_url(&self, base_url: &str, name: &str) -> String {
        self.clone_template
            .replacen("${baseurl}", base_url, 1)
            .replacen("${name}", name, 1)
    }
}

/// XXH3-64 of the compact dump of `members`.
fn checksum_of(members: &BTreeMap<String, JsonValue>) -> u64 {
    let mut canonical = String::new();
    write_object(&mut canonical, members, None, 0);
    xxh3_64(canonical.as_bytes())
}

/// The member `name` of an anchor, an unsigned integer.
fn unsigned_member(map: &BTreeMap<String, JsonValue>, name: &str, what: &str) -> Result<u64> {
    match map.get(name) {
        Some(JsonValue::Unsigned(v)) => Ok(*v),
        // nlohmann's reading of `-0`.
        Some(JsonValue::Integer(0)) => Ok(0),
        Some(other) => Err(Error::corrupt(
            what,
            format!(
                "S3 anchor member \"{name}\" is {}, not an unsigned integer",
                other.kind()
            ),
        )),
        None => Err(Error::corrupt(
            what,
            format!("S3 anchor member \"{name}\" is missing"),
        )),
    }
}

/// Takes the member `name` of an anchor, a string.
fn string_member(map: &mut BTreeMap<String, JsonValue>, name: &str, what: &str) -> Result<String> {
    match map.remove(name) {
        Some(JsonValue::String(s)) => Ok(s),
        Some(other) => Err(Error::corrupt(
            what,
            format!(
                "S3 anchor member \"{name}\" is {}, not a string",
                other.kind()
            ),
        )),
        None => Err(Error::corrupt(
            what,
            format!("S3 anchor member \"{name}\" is missing"),
        )),
    }
}

/// Writes `value`, compact (`indent` None) or pretty, at nesting `level`.
fn write_value(out: &mut String, value: &JsonValue, indent: Option<usize>, level: usize) {
    match value {
        JsonValue::Null => out.push_str("null"),
        JsonValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        JsonValue::Unsigned(v) => out.push_str(&v.to_string()),
        JsonValue::Integer(v) => out.push_str(&v.to_string()),
        JsonValue::Float(v) => write_float(out, *v),
        JsonValue::String(s) => write_string(out, s),
        JsonValue::Array(items) => {
            if items.is_empty() {
                out.push_str("[]");
                return;
            }
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                new_line(out, indent, level + 1);
                write_value(out, item, indent, level + 1);
            }
            new_line(out, indent, level);
            out.push(']');
        }
        JsonValue::Object(map) => write_object(out, map, indent, level),
    }
}

fn write_object(
    out: &mut String,
    map: &BTreeMap<String, JsonValue>,
    indent: Option<usize>,
    level: usize,
) {
    if map.is_empty() {
        out.push_str("{}");
        return;
    }
    out.push('{');
    for (i, (key, item)) in map.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        new_line(out, indent, level + 1);
        write_string(out, key);
        out.push(':');
        if indent.is_some() {
            out.push(' ');
        }
        write_value(out, item, indent, level + 1);
    }
    new_line(out, indent, level);
    out.push('}');
}

/// In pretty output, a new line indented for `level`.
fn new_line(out: &mut String, indent: Option<usize>, level: usize) {
    if let Some(indent) = indent {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', indent * level));
    }
}

/// A string as nlohmann writes it with `ensure_ascii` off.
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if u32::from(c) < 0x20 => out.push_str(&format!("\\u{:04x}", u32::from(c))),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A double as nlohmann writes it: the shortest digits that read back as `v`, in fixed
/// notation when the decimal point falls within 15 digits before and 3 zeros after the
/// digits' start (`100.0`, `0.001`), else as `d.ddde+XX` with at least two exponent
/// digits; `-` for negative values and -0.0; `null` for infinities and NaN.
fn write_float(out: &mut String, v: f64) {
    if !v.is_finite() {
        out.push_str("null");
        return;
    }
    if v.is_sign_negative() {
        out.push('-');
    }
    let v = v.abs();
    if v == 0.0 {
        out.push_str("0.0");
        return;
    }
    // Rust's shortest round-trip digits, as `d.ddde<exp>`.
    let scientific = format!("{v:e}");
    let (mantissa, exponent) = scientific
        .split_once('e')
        .unwrap_or((scientific.as_str(), "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exponent: i64 = exponent.parse().unwrap_or(0);
    // The value is 0.DIGITS × 10^point.
    let k = digits.len() as i64;
    let point = exponent + 1;
    const MAX_FIXED: i64 = 15;
    const MIN_FIXED: i64 = -4;
    let zeros = |n: i64| "0".repeat(usize::try_from(n).unwrap_or(0));
    if k <= point && point <= MAX_FIXED {
        out.push_str(&digits);
        out.push_str(&zeros(point - k));
        out.push_str(".0");
    } else if 0 < point && point <= MAX_FIXED {
        let (int, frac) = digits.split_at(usize::try_from(point).unwrap_or(0));
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    } else if MIN_FIXED < point && point <= 0 {
        out.push_str("0.");
        out.push_str(&zeros(-point));
        out.push_str(&digits);
    } else {
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let e = point - 1;
        out.push_str(&format!("e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs()));
    }
}

/// A recursive-descent reader of JSON text.
struct Parser<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    what: &'a str,
}

impl Parser<'_> {
    fn error(&self, detail: &str) -> Error {
        Error::corrupt(
            self.what,
            format!("invalid JSON at byte {}: {detail}", self.pos),
        )
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn skip_whitespace(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    fn expect(&mut self, byte: u8, detail: &str) -> Result<()> {
        if self.peek() == Some(byte) {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.error(detail))
        }
    }

    fn value(&mut self, depth: usize) -> Result<JsonValue> {
        self.skip_whitespace();
        match self.peek() {
            None => Err(self.error("the text ends where a value should be")),
            Some(b'{') => self.object(depth),
            Some(b'[') => self.array(depth),
            Some(b'"') => Ok(JsonValue::String(self.string()?)),
            Some(b't') => self.literal("true", JsonValue::Bool(true)),
            Some(b'f') => self.literal("false", JsonValue::Bool(false)),
            Some(b'n') => self.literal("null", JsonValue::Null),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => Err(self.error("unexpected character where a value should be")),
        }
    }

    fn literal(&mut self, word: &str, value: JsonValue) -> Result<JsonValue> {
        if self.bytes[self.pos..].starts_with(word.as_bytes()) {
            self.pos += word.len();
            Ok(value)
        } else {
            Err(self.error("unknown literal"))
        }
    }

    fn nested(&self, depth: usize) -> Result<usize> {
        if depth >= MAX_DEPTH {
            return Err(self.error(&format!("nested more than {MAX_DEPTH} levels deep")));
        }
        Ok(depth + 1)
    }

    fn object(&mut self, depth: usize) -> Result<JsonValue> {
        let depth = self.nested(depth)?;
        let mut map = BTreeMap::new();
        self.items(b'}', "an object", |p| {
            p.skip_whitespace();
            if p.peek() != Some(b'"') {
                return Err(p.error("expected a member name (a string)"));
            }
            let key = p.string()?;
            p.skip_whitespace();
            p.expect(b':', "expected ':' after a member name")?;
            let value = p.value(depth)?;
            // As nlohmann: a name given twice keeps its last value.
            map.insert(key, value);
            Ok(())
        })?;
        Ok(JsonValue::Object(map))
    }

    fn array(&mut self, depth: usize) -> Result<JsonValue> {
        let depth = self.nested(depth)?;
        let mut items = Vec::new();
        self.items(b']', "an array", |p| {
            items.push(p.value(depth)?);
            Ok(())
        })?;
        Ok(JsonValue::Array(items))
    }

    /// The items of an object or array (`what`), from its opening byte to its `close`,
    /// separated by commas; `item` reads each.
    fn items(
        &mut self,
        close: u8,
        what: &str,
        mut item: impl FnMut(&mut Self) -> Result<()>,
    ) -> Result<()> {
        self.pos += 1;
        self.skip_whitespace();
        if self.peek() == Some(close) {
            self.pos += 1;
            return Ok(());
        }
        loop {
            item(self)?;
            self.skip_whitespace();
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(c) if c == close => {
                    self.pos += 1;
                    return Ok(());
                }
                _ => {
                    return Err(self.error(&format!(
                        "expected ',' or '{}' in {what}",
                        char::from(close)
                    )))
                }
            }
        }
    }

    /// Four hex digits of a `\u` escape.
    fn hex4(&mut self) -> Result<u32> {
        let digits = self
            .text
            .get(self.pos..self.pos + 4)
            .filter(|d| d.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| self.error("expected four hex digits after \\u"))?;
        let value =
            u32::from_str_radix(digits, 16).map_err(|_| self.error("invalid \\u escape"))?;
        self.pos += 4;
        Ok(value)
    }

    fn string(&mut self) -> Result<String> {
        self.pos += 1;
        let mut out = String::new();
        loop {
            // Copy the run up to the next quote, backslash or control character.
            let start = self.pos;
            while let Some(b) = self.peek() {
                if b == b'"' || b == b'\\' || b < 0x20 {
                    break;
                }
                self.pos += 1;
            }
            // The run ends at an ASCII byte or the end: a character boundary.
            out.push_str(self.text.get(start..self.pos).unwrap_or_default());
            match self.peek() {
                None => return Err(self.error("the text ends inside a string")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.pos += 1;
                    let escape = self.peek();
                    self.pos += 1;
                    match escape {
                        Some(b'"') => out.push('"'),
                        Some(b'\\') => out.push('\\'),
                        Some(b'/') => out.push('/'),
                        Some(b'b') => out.push('\u{08}'),
                        Some(b'f') => out.push('\u{0c}'),
                        Some(b'n') => out.push('\n'),
                        Some(b'r') => out.push('\r'),
                        Some(b't') => out.push('\t'),
                        Some(b'u') => out.push(self.unicode_escape()?),
                        _ => {
                            self.pos -= 1;
                            return Err(self.error("invalid escape in a string"));
                        }
                    }
                }
                Some(_) => return Err(self.error("control character in a string")),
            }
        }
    }

    /// The character of a `\uXXXX` escape (after the `u`), a surrogate pair taking two.
    fn unicode_escape(&mut self) -> Result<char> {
        let first = self.hex4()?;
        let code = match first {
            0xd800..=0xdbff => {
                if !self.bytes[self.pos..].starts_with(b"\\u") {
                    return Err(self.error("a high surrogate must be followed by a low one"));
                }
                self.pos += 2;
                let second = self.hex4()?;
                if !(0xdc00..=0xdfff).contains(&second) {
                    return Err(self.error("a high surrogate must be followed by a low one"));
                }
                0x10000 + ((first - 0xd800) << 10) + (second - 0xdc00)
            }
            0xdc00..=0xdfff => return Err(self.error("a low surrogate without a high one")),
            other => other,
        };
        char::from_u32(code).ok_or_else(|| self.error("invalid \\u escape"))
    }

    fn digits(&mut self) -> usize {
        let start = self.pos;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        self.pos - start
    }

    /// A number: integers as u64 (no sign) or i64 (with `-`) when they fit, as nlohmann
    /// reads them; everything else as the nearest double.
    fn number(&mut self) -> Result<JsonValue> {
        let start = self.pos;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
        }
        match self.peek() {
            Some(b'0') => self.pos += 1,
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.error("expected a digit")),
        }
        let mut integral = true;
        if self.peek() == Some(b'.') {
            integral = false;
            self.pos += 1;
            if self.digits() == 0 {
                return Err(self.error("expected a digit after '.'"));
            }
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            integral = false;
            self.pos += 1;
            if matches!(self.peek(), Some(b'+' | b'-')) {
                self.pos += 1;
            }
            if self.digits() == 0 {
                return Err(self.error("expected a digit in the exponent"));
            }
        }
        let text = self.text.get(start..self.pos).unwrap_or_default();
        if integral {
            if negative {
                if let Ok(v) = text.parse::<i64>() {
                    return Ok(JsonValue::Integer(v));
                }
            } else if let Ok(v) = text.parse::<u64>() {
                return Ok(JsonValue::Unsigned(v));
            }
        }
        text.parse::<f64>()
            .map(JsonValue::Float)
            .map_err(|_| self.error("invalid number"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference's vector: ROOT's anchor of format 1.0.2.0, default templates,
    /// header in object 0 (1234 B, 5678 B uncompressed), footer in object 9 (321 B,
    /// 654 B), offsets 0.
    fn vector_anchor() -> S3Anchor {
        S3Anchor {
            version_epoch: 1,
            version_major: 0,
            version_minor: 2,
            version_patch: 0,
            header_obj_id: 0,
            nbytes_header: 1234,
            len_header: 5678,
            footer_obj_id: 9,
            nbytes_footer: 321,
            len_footer: 654,
            ..S3Anchor::default()
        }
    }

    const VECTOR_CHECKSUM: u64 = 11945761863780303168;

    /// The stored form of the vector, as nlohmann's `dump(2)` writes it.
    const VECTOR_JSON: &str = r#"{
  "anchorVersion": 0,
  "checksum": 11945761863780303168,
  "cloneTemplate": "${baseurl}/_clone/${name}",
  "footerObjId": 9,
  "footerOffset": 0,
  "formatVersionEpoch": 1,
  "formatVersionMajor": 0,
  "formatVersionMinor": 2,
  "formatVersionPatch": 0,
  "headerObjId": 0,
  "headerOffset": 0,
  "lenFooter": 654,
  "lenHeader": 5678,
  "nBytesFooter": 321,
  "nBytesHeader": 1234,
  "urlTemplate": "${baseurl}/${objid}"
}"#;

    #[test]
    fn reference_vector_checksum_and_stored_form() {
        let anchor = vector_anchor();
        assert_eq!(
            JsonValue::Object(anchor.members()).to_compact(),
            "{\"anchorVersion\":0,\"cloneTemplate\":\"${baseurl}/_clone/${name}\",\
             \"footerObjId\":9,\"footerOffset\":0,\"formatVersionEpoch\":1,\
             \"formatVersionMajor\":0,\"formatVersionMinor\":2,\"formatVersionPatch\":0,\
             \"headerObjId\":0,\"headerOffset\":0,\"lenFooter\":654,\"lenHeader\":5678,\
             \"nBytesFooter\":321,\"nBytesHeader\":1234,\"urlTemplate\":\"${baseurl}/${objid}\"}"
        );
        assert_eq!(anchor.checksum(), VECTOR_CHECKSUM);
        assert_eq!(anchor.to_json(), VECTOR_JSON);
        let parsed = S3Anchor::parse(VECTOR_JSON.as_bytes(), "anchor").unwrap();
        assert_eq!(parsed, anchor);
    }

    #[test]
    fn anchors_round_trip_with_extra_members() {
        let mut anchor = vector_anchor();
        anchor.version_patch = 7;
        anchor.footer_obj_id = u64::MAX;
        anchor.url_template = "${baseurl}/obj-${objid}.bin".into();
        anchor.extra.insert(
            "zNote".into(),
            JsonValue::String("é \"quoted\" \\ / \u{1}".into()),
        );
        anchor.extra.insert(
            "aList".into(),
            JsonValue::Array(vec![
                JsonValue::Integer(-3),
                JsonValue::Float(0.5),
                JsonValue::Null,
                JsonValue::Bool(true),
                JsonValue::Object(BTreeMap::new()),
            ]),
        );
        let json = anchor.to_json();
        let parsed = S3Anchor::parse(json.as_bytes(), "anchor").unwrap();
        assert_eq!(parsed, anchor);
        assert_eq!(parsed.to_json(), json);
        // Extra members are part of the checksum.
        assert_ne!(anchor.checksum(), {
            let mut other = anchor.clone();
            other.extra.remove("zNote");
            other.checksum()
        });
        // Extra members named like known ones do not override them.
        let mut shadow = vector_anchor();
        shadow
            .extra
            .insert("lenHeader".into(), JsonValue::Unsigned(1));
        shadow
            .extra
            .insert("checksum".into(), JsonValue::Unsigned(1));
        assert_eq!(shadow.to_json(), VECTOR_JSON);
    }

    /// An anchor with members a later writer might add, built with nlohmann::json as
    /// ROOT's `ToJSON` builds one, its checksum by xxHash's `XXH3_64bits` (the
    /// reference's anchor gave 11945761863780303168 there too).
    const EXTRA_JSON: &str = r#"{
  "anchorVersion": 0,
  "checksum": 11778987965564529705,
  "cloneTemplate": "${baseurl}/_clone/${name}",
  "footerObjId": 9,
  "footerOffset": 0,
  "formatVersionEpoch": 1,
  "formatVersionMajor": 0,
  "formatVersionMinor": 2,
  "formatVersionPatch": 0,
  "headerObjId": 0,
  "headerOffset": 0,
  "hints": {
    "none": null,
    "ranges": [
      0.5,
      -1,
      1e+20
    ],
    "sorted": true
  },
  "lenFooter": 654,
  "lenHeader": 5678,
  "nBytesFooter": 321,
  "nBytesHeader": 1234,
  "urlTemplate": "${baseurl}/${objid}",
  "writer": "ROOT 6.99 \"é\"\n"
}"#;

    #[test]
    fn extra_members_are_read_hashed_and_written_as_root_does() {
        let anchor = S3Anchor::parse(EXTRA_JSON.as_bytes(), "anchor").unwrap();
        assert_eq!(
            S3Anchor {
                extra: BTreeMap::new(),
                ..anchor.clone()
            },
            vector_anchor()
        );
        assert_eq!(anchor.extra.keys().collect::<Vec<_>>(), ["hints", "writer"]);
        assert_eq!(
            anchor.extra["writer"],
            JsonValue::String("ROOT 6.99 \"é\"\n".into())
        );
        assert_eq!(anchor.checksum(), 11778987965564529705);
        assert_eq!(anchor.to_json(), EXTRA_JSON);
    }

    #[test]
    fn checksums_above_2_to_the_53_are_exact() {
        // One more than the vector's checksum is a different double-free integer.
        let tampered = VECTOR_JSON.replace("11945761863780303168", "11945761863780303169");
        let err = S3Anchor::parse(tampered.as_bytes(), "anchor of ntpl").unwrap_err();
        match err {
            Error::ChecksumMismatch {
                what,
                stored,
                computed,
            } => {
                assert_eq!(what, "anchor of ntpl");
                assert_eq!(stored, VECTOR_CHECKSUM + 1);
                assert_eq!(computed, VECTOR_CHECKSUM);
            }
            other => panic!("{other}"),
        }
    }

    #[test]
    fn changed_members_fail_the_checksum() {
        let tampered = VECTOR_JSON.replace("\"lenHeader\": 5678", "\"lenHeader\": 5679");
        let err = S3Anchor::parse(tampered.as_bytes(), "anchor").unwrap_err();
        assert!(matches!(err, Error::ChecksumMismatch { .. }), "{err}");
        // Whitespace and key order are not part of the checksum.
        let compact = VECTOR_JSON.replace(['\n', ' '], "");
        let reordered = compact.replacen(
            "{\"anchorVersion\":0,",
            "{\"zzz\":null,\"anchorVersion\":0,",
            1,
        );
        assert!(S3Anchor::parse(compact.as_bytes(), "anchor").is_ok());
        // An added member is.
        let err = S3Anchor::parse(reordered.as_bytes(), "anchor").unwrap_err();
        assert!(matches!(err, Error::ChecksumMismatch { .. }), "{err}");
    }

    /// `members` with its checksum, pretty-printed.
    fn sealed(mut members: BTreeMap<String, JsonValue>) -> String {
        let sum = checksum_of(&members);
        members.insert(CHECKSUM.into(), JsonValue::Unsigned(sum));
        JsonValue::Object(members).to_pretty(2)
    }

    #[test]
    fn missing_or_mistyped_members_are_corrupt() {
        for name in ["cloneTemplate", "lenFooter", "urlTemplate", "headerOffset"] {
            let mut members = vector_anchor().members();
            members.remove(name);
            let err = S3Anchor::parse(sealed(members).as_bytes(), "anchor of ntpl").unwrap_err();
            assert!(matches!(err, Error::Corrupt { .. }), "{err}");
            assert_eq!(
                err.to_string(),
                format!("corrupt data in anchor of ntpl: S3 anchor member \"{name}\" is missing")
            );
        }
        for (name, value, kind) in [
            (
                "lenHeader",
                JsonValue::Float(5678.0),
                "a floating-point number",
            ),
            ("nBytesFooter", JsonValue::Integer(-1), "a negative integer"),
            ("footerObjId", JsonValue::String("9".into()), "a string"),
            ("urlTemplate", JsonValue::Unsigned(1), "an unsigned integer"),
        ] {
            let mut members = vector_anchor().members();
            members.insert(name.into(), value);
            let err = S3Anchor::parse(sealed(members).as_bytes(), "anchor").unwrap_err();
            assert!(matches!(err, Error::Corrupt { .. }), "{err}");
            assert!(err.to_string().contains(name), "{err}");
            assert!(err.to_string().contains(kind), "{err}");
        }
        // No checksum at all.
        let members = vector_anchor().members();
        let err = S3Anchor::parse(JsonValue::Object(members).to_pretty(2).as_bytes(), "anchor")
            .unwrap_err();
        assert!(err.to_string().contains("\"checksum\" is missing"), "{err}");
    }

    #[test]
    fn other_anchor_versions_are_unsupported() {
        let mut anchor = vector_anchor();
        anchor.anchor_version = 1;
        let err = S3Anchor::parse(anchor.to_json().as_bytes(), "anchor of ntpl").unwrap_err();
        assert!(matches!(err, Error::Unsupported(_)), "{err}");
        assert!(
            err.to_string()
                .contains("S3 anchor version 1 in anchor of ntpl"),
            "{err}"
        );
        // Checked before the checksum: a newer version may hash differently.
        let other = VECTOR_JSON.replace("\"anchorVersion\": 0", "\"anchorVersion\": 2");
        let err = S3Anchor::parse(other.as_bytes(), "anchor").unwrap_err();
        assert!(matches!(err, Error::Unsupported(_)), "{err}");
    }

    #[test]
    fn truncated_and_malformed_anchors_are_corrupt() {
        for len in [0, 1, 40, VECTOR_JSON.len() - 1] {
            let err = S3Anchor::parse(&VECTOR_JSON.as_bytes()[..len], "anchor").unwrap_err();
            assert!(matches!(err, Error::Corrupt { .. }), "{len}: {err}");
            assert!(err.to_string().contains("invalid JSON at byte"), "{err}");
        }
        for bad in [
            "[1, 2]",
            "\"anchor\"",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{\"a\":01}",
            "{\"a\":1.}",
            "{\"a\":.5}",
            "{\"a\":+1}",
            "{\"a\":tru}",
            "{\"a\":\"\t\"}",
            "{\"a\":\"\\x\"}",
            "{\"a\":\"\\ud800\"}",
            "{\"a\":\"\\udc00\"}",
            "{} {}",
            "{\"a\":1} x",
        ] {
            let err = S3Anchor::parse(bad.as_bytes(), "anchor").unwrap_err();
            assert!(matches!(err, Error::Corrupt { .. }), "{bad}: {err}");
        }
        let err = S3Anchor::parse(b"{\"a\":\"\xff\"}", "anchor").unwrap_err();
        assert!(err.to_string().contains("not UTF-8"), "{err}");
        let deep = format!("{}{}", "[".repeat(1000), "]".repeat(1000));
        let err = JsonValue::parse(deep.as_bytes(), "anchor").unwrap_err();
        assert!(err.to_string().contains("nested"), "{err}");
        // A byte order mark and surrounding whitespace are accepted.
        let bom = format!("\u{feff}\n {VECTOR_JSON}\r\n");
        assert_eq!(
            S3Anchor::parse(bom.as_bytes(), "anchor").unwrap(),
            vector_anchor()
        );
    }

    /// nlohmann::json 3.x (the header ROOT 6.40 ships) read this text and wrote it
    /// back compact and with `dump(2)`; the expected strings are its output.
    #[test]
    fn json_text_is_written_as_nlohmann_writes_it() {
        const INPUT: &str = r#"{"b": [1.5, -2, -0, 0.1, 1e15, 1e14, 123456789012345678901234, 1e-5, 1e-4, 0.0001, -0.0, 18446744073709551615, 18446744073709551616, -9223372036854775808, -9223372036854775809, 2.5e-300, 1.7976931348623157e308, 5e-324, 100, 1E2, 123.456, 0.30000000000000004, 1e21, 12345678901234567890.0, 999999999999999.9, 9999999999999998.0],
  "a": {"z": true, "y": false, "x": null, "w": {}, "v": [], "u": [[]]},
  "s": "q\" b\\ s/ \b\f\n\r\t \u0001 \u001f \u007f é \ud83d\ude00 \u2028",
  "\u00e9key": 1, "Zkey": 2, "_key": 3, "key": 4, "dup": 1, "dup": 2}"#;
        const COMPACT: &str = "{\"Zkey\":2,\"_key\":3,\"a\":{\"u\":[[]],\"v\":[],\"w\":{},\"x\":null,\"y\":false,\"z\":true},\"b\":[1.5,-2,0,0.1,1e+15,100000000000000.0,1.2345678901234569e+23,1e-05,0.0001,0.0001,-0.0,18446744073709551615,1.8446744073709552e+19,-9223372036854775808,-9.223372036854776e+18,2.5e-300,1.7976931348623157e+308,5e-324,100,100.0,123.456,0.30000000000000004,1e+21,1.2345678901234567e+19,999999999999999.9,9.999999999999998e+15],\"dup\":2,\"key\":4,\"s\":\"q\\\" b\\\\ s/ \\b\\f\\n\\r\\t \\u0001 \\u001f \u{7f} é 😀 \u{2028}\",\"ékey\":1}";
        const PRETTY: &str = "{\n  \"Zkey\": 2,\n  \"_key\": 3,\n  \"a\": {\n    \"u\": [\n      []\n    ],\n    \"v\": [],\n    \"w\": {},\n    \"x\": null,\n    \"y\": false,\n    \"z\": true\n  },\n  \"b\": [\n    1.5,\n    -2,\n    0,\n    0.1,\n    1e+15,\n    100000000000000.0,\n    1.2345678901234569e+23,\n    1e-05,\n    0.0001,\n    0.0001,\n    -0.0,\n    18446744073709551615,\n    1.8446744073709552e+19,\n    -9223372036854775808,\n    -9.223372036854776e+18,\n    2.5e-300,\n    1.7976931348623157e+308,\n    5e-324,\n    100,\n    100.0,\n    123.456,\n    0.30000000000000004,\n    1e+21,\n    1.2345678901234567e+19,\n    999999999999999.9,\n    9.999999999999998e+15\n  ],\n  \"dup\": 2,\n  \"key\": 4,\n  \"s\": \"q\\\" b\\\\ s/ \\b\\f\\n\\r\\t \\u0001 \\u001f \u{7f} é 😀 \u{2028}\",\n  \"ékey\": 1\n}";
        let value = JsonValue::parse(INPUT.as_bytes(), "test").unwrap();
        assert_eq!(value.to_compact(), COMPACT);
        assert_eq!(value.to_pretty(2), PRETTY);
        // Its own output reads back and is written again the same (`-0` reads as a
        // signed 0 and is written as `0`, which reads as an unsigned 0).
        for text in [COMPACT, PRETTY] {
            let again = JsonValue::parse(text.as_bytes(), "test").unwrap();
            assert_eq!(again.to_compact(), COMPACT);
            assert_eq!(again.to_pretty(2), PRETTY);
        }
    }

    #[test]
    fn urls_follow_the_templates() {
        let anchor = vector_anchor();
        let base = "https://s3.example.org/bucket/data/run1";
        assert_eq!(
            anchor.url_for(base, 0),
            "https://s3.example.org/bucket/data/run1/0"
        );
        assert_eq!(
            anchor.url_for(base, u64::MAX),
            "https://s3.example.org/bucket/data/run1/18446744073709551615"
        );
        assert_eq!(
            anchor.clone_base_url(base, "attrs"),
            "https://s3.example.org/bucket/data/run1/_clone/attrs"
        );
        let custom = S3Anchor {
            url_template: "https://mirror/${objid}?of=${baseurl}&again=${objid}".into(),
            ..anchor
        };
        // One substitution of each, as ROOT does.
        assert_eq!(
            custom.url_for("b", 12),
            "https://mirror/12?of=b&again=${objid}"
        );
        assert_eq!(
            custom.resolved_url_template("b"),
            "https://mirror/${objid}?of=b&again=${objid}"
        );
    }
}
