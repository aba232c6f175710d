//! A version's `meta` file: what identifies the cached file, as JSON.
//!
//! ```json
//! {"format": 1, "identity": "<32 hex>", "size": 123, "etag": "\"abc\"" | null,
//!  "last_modified": "..." | null, "mtime": 1700000000 | null,
//!  "probe": [{"offset": 0, "len": 100, "xxh3": "<16 hex>"}, ...], "url": "https://h/f"}
//! ```
//!
//! Checksums and the identity are hex strings: JSON readers in other languages keep
//! 64-bit numbers as doubles.

use crate::ByteRange;
use serde_json::{json, Value};

/// The `format` of the files this code writes.
const FORMAT: u64 = 1;

/// What identifies one version of a remote file, as cached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct VersionMeta {
    /// The version's identity, computed by the caller from the file's content probe and
    /// validators; it names the version's directory.
    pub(crate) identity: u128,
    /// The file's size in bytes.
    pub(crate) size: u64,
    /// The origin's ETag when the version was cached.
    pub(crate) etag: Option<String>,
    /// The origin's Last-Modified when the version was cached.
    pub(crate) last_modified: Option<String>,
    /// The origin's modification time (seconds since the epoch) when cached.
    pub(crate) mtime: Option<i64>,
    /// Ranges of the file used to identify it, each with the xxh3-64 of its bytes.
    pub(crate) probe: Vec<(ByteRange, u64)>,
    /// The URL, redacted (`io::redact_url`), for display.
    pub(crate) url: String,
}

/// An identity as it names a directory: 32 lower-case hex digits.
pub(super) fn identity_hex(identity: u128) -> String {
    format!("{identity:032x}")
}

/// The identity a directory name or `current` file names: exactly 32 lower-case hex
/// digits.
pub(super) fn parse_identity(text: &str) -> Option<u128> {
    let canonical = text.len() == 32
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    canonical
        .then(|| u128::from_str_radix(text, 16).ok())
        .flatten()
}

impl VersionMeta {
    /// The `meta` file's text.
    pub(super) fn to_json(&self) -> String {
        let probe: Vec<Value> = self
            .probe
            .iter()
            .map(|(range, sum)| {
                json!({"offset": range.offset, "len": range.len, "xxh3": format!("{sum:016x}")})
            })
            .collect();
        json!({
            "format": FORMAT,
            "identity": identity_hex(self.identity),
            "size": self.size,
            "etag": self.etag,
            "last_modified": self.last_modified,
            "mtime": self.mtime,
            "probe": probe,
            "url": self.url,
        })
        .to_string()
    }

    /// The meta a `meta` file's text holds, or `None` when it is not one.
    pub(super) fn from_json(text: &str) -> Option<VersionMeta> {
        let v: Value = serde_json::from_str(text).ok()?;
        if v.get("format")?.as_u64()? != FORMAT {
            return None;
        }
        let optional_string = |key: &str| -> Option<Option<String>> {
            match v.get(key)? {
                Value::Null => Some(None),
                Value::String(s) => Some(Some(s.clone())),
                _ => None,
            }
        };
        let mtime = match v.get("mtime")? {
            Value::Null => None,
            m => Some(m.as_i64()?),
        };
        let probe = v
            .get("probe")?
            .as_array()?
            .iter()
            .map(|p| {
                let range = ByteRange {
                    offset: p.get("offset")?.as_u64()?,
                    len: p.get("len")?.as_u64()?,
                };
                let sum = p.get("xxh3")?.as_str()?;
                (sum.len() == 16).then_some(())?;
                Some((range, u64::from_str_radix(sum, 16).ok()?))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(VersionMeta {
            identity: parse_identity(v.get("identity")?.as_str()?)?,
            size: v.get("size")?.as_u64()?,
            etag: optional_string("etag")?,
            last_modified: optional_string("last_modified")?,
            mtime,
            probe,
            url: v.get("url")?.as_str()?.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> VersionMeta {
        VersionMeta {
            identity: 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210,
            size: 1 << 40,
            etag: Some("\"5f3e-1a2b\"".to_string()),
            last_modified: None,
            mtime: Some(-5),
            probe: vec![
                (
                    ByteRange {
                        offset: 0,
                        len: 100,
                    },
                    u64::MAX,
                ),
                (
                    ByteRange {
                        offset: 5000,
                        len: 64,
                    },
                    7,
                ),
            ],
            url: "https://***@h/f.root?***".to_string(),
        }
    }

    #[test]
    fn meta_round_trips_and_garbage_is_refused() {
        let meta = sample();
        let text = meta.to_json();
        assert!(
            text.contains("\"0123456789abcdeffedcba9876543210\""),
            "{text}"
        );
        assert!(text.contains("\"ffffffffffffffff\""), "{text}");
        assert_eq!(VersionMeta::from_json(&text), Some(meta.clone()));
        // Torn, empty, or of another format or shape.
        for n in [0, 1, text.len() / 2, text.len() - 1] {
            assert_eq!(VersionMeta::from_json(&text[..n]), None, "{n}");
        }
        assert_eq!(VersionMeta::from_json(&"\0".repeat(50)), None);
        let other = text.replace("\"format\":1", "\"format\":2");
        assert_ne!(other, text);
        assert_eq!(VersionMeta::from_json(&other), None);
        let bad_sum = text.replace("\"0000000000000007\"", "\"7\"");
        assert_ne!(bad_sum, text);
        assert_eq!(VersionMeta::from_json(&bad_sum), None);
    }

    #[test]
    fn identities_are_32_lower_hex_digits() {
        let id = 0xabcu128;
        assert_eq!(identity_hex(id), "00000000000000000000000000000abc");
        assert_eq!(parse_identity(&identity_hex(id)), Some(id));
        assert_eq!(parse_identity(&identity_hex(u128::MAX)), Some(u128::MAX));
        assert_eq!(parse_identity("abc"), None);
        assert_eq!(parse_identity("00000000000000000000000000000ABC"), None);
        assert_eq!(parse_identity("+0000000000000000000000000000abc"), None);
        assert_eq!(parse_identity("0000000000000000000000000000abc\n"), None);
    }
}
