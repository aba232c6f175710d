//! Where an RNTuple stored as objects lives: ROOT's S3 layout at
//! `ntpl+s3+https://host/bucket/prefix` (or `ntpl+s3+http://` for a local test server),
//! and the same layout in a local directory at `ntpl+file:///dir/prefix` (ours: for
//! tests, debugging and moving datasets between stores). An [`ObjectDataset`] is the
//! store and the anchor's key (`prefix`); object `n` is the key `prefix/n`.

use super::objects::{DirectoryObjects, ObjectStorage};
use super::{ByteRange, IoMetricsSnapshot, ObjectFetcher, SourceOptions};
use crate::error::{Error, Result};
use std::sync::Arc;

/// The URL schemes of object-store layouts (lower case; schemes are matched without
/// regard to case, as ROOT does).
pub const OBJECT_LAYOUT_SCHEMES: [&str; 3] = ["ntpl+s3+http", "ntpl+s3+https", "ntpl+file"];

/// Whether `location` names an RNTuple stored as objects (`ntpl+s3+http(s)://`,
/// `ntpl+file://`).
pub fn is_object_layout(location: &str) -> bool {
    super::url_scheme(location).is_some_and(|s| OBJECT_LAYOUT_SCHEMES.contains(&s.as_str()))
}

/// An RNTuple's objects: the store, and the key of its anchor (every other object is
/// `anchor_key/n`).
#[derive(Debug, Clone)]
pub struct ObjectDataset {
    store: Arc<dyn ObjectStorage>,
    anchor_key: String,
    url: String,
}

impl ObjectDataset {
    /// The dataset whose anchor is `anchor_key` in `store`; `url` names it in messages.
    pub fn new(
        store: Arc<dyn ObjectStorage>,
        anchor_key: impl Into<String>,
        url: impl Into<String>,
    ) -> ObjectDataset {
        ObjectDataset {
            store,
            anchor_key: anchor_key.into(),
            url: url.into(),
        }
    }

    /// Opens the dataset at `url`: for reading, or with `create` for writing (a
    /// directory store's root is created by its first object). A URL that is not
    /// strictly well formed ([`check_layout_url`]) is refused before anything is
    /// opened or created. The S3 store is configured by the environment
    /// (`AWS_*`, ROOT's `S3_ACCESS_KEY`, `S3_SECRET_KEY`, `S3_REGION`) and `options`.
    pub fn open(url: &str, options: &SourceOptions, create: bool) -> Result<ObjectDataset> {
        let parsed = ParsedUrl::parse(url)?;
        let store: Arc<dyn ObjectStorage> = match parsed.kind {
            Kind::S3 { endpoint, bucket } => {
                // Objects named in messages under the URL as typed, not the endpoint.
                let base = &url[..url.len() - parsed.anchor_key.len() - 1];
                s3_store(&endpoint, &bucket, options, base)?
            }
            Kind::Directory { root } => Arc::new(if create {
                DirectoryObjects::create(&root)?
            } else {
                DirectoryObjects::open(&root)?
            }),
        };
        // Messages name the URL as given (it opens the dataset again), not ROOT's base URL.
        Ok(ObjectDataset::new(store, parsed.anchor_key, url))
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn ObjectStorage> {
        &self.store
    }

    /// The anchor's key.
    pub fn anchor_key(&self) -> &str {
        &self.anchor_key
    }

    /// The dataset's URL, as given (`ntpl+s3+https://host/bucket/prefix`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The key of object `n`.
    pub fn object_key(&self, n: u64) -> String {
        format!("{}/{n}", self.anchor_key)
    }

    /// The ids of the dataset's numbered objects that the store holds (of this dataset,
    /// an earlier one at the same place, or a writer that did not finish), sorted: the
    /// keys `anchor_key/N` with `N` a decimal number as written (no sign, no leading
    /// zero). Other keys under the prefix are not the layout's and are left alone.
    pub fn object_ids(&self) -> Result<Vec<u64>> {
        let prefix = format!("{}/", self.anchor_key);
        let mut ids: Vec<u64> = self
            .store
            .list(&prefix)?
            .iter()
            .filter_map(|k| k.strip_prefix(&prefix).and_then(object_id))
            .collect();
        ids.sort_unstable();
        ids.dedup();
        Ok(ids)
    }
}

/// The id of an object named `n` (the key's last segment), if `n` is an id as written:
/// decimal digits without a leading zero (but `0`), within u64.
pub(crate) fn object_id(n: &str) -> Option<u64> {
    let canonical =
        !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) && (n == "0" || !n.starts_with('0'));
    canonical.then(|| n.parse().ok()).flatten()
}

impl ObjectFetcher for ObjectDataset {
    fn name(&self) -> &str {
        &self.url
    }

    fn fetch(&self, requests: &[(u64, ByteRange)]) -> Result<Vec<Vec<u8>>> {
        let keyed: Vec<(String, Option<ByteRange>)> = requests
            .iter()
            .map(|&(n, range)| (self.object_key(n), Some(range)))
            .collect();
        self.store.get_many(&keyed)
    }

    fn fetch_object(&self, n: u64) -> Result<Vec<u8>> {
        self.store.get(&self.object_key(n), None)
    }

    fn metrics(&self) -> IoMetricsSnapshot {
        self.store.metrics()
    }
}

#[cfg(feature = "s3")]
fn s3_store(
    endpoint: &str,
    bucket: &str,
    options: &SourceOptions,
    name: &str,
) -> Result<Arc<dyn ObjectStorage>> {
    Ok(Arc::new(
        super::objects::S3Objects::open(endpoint, bucket, options)?.named(name),
    ))
}

#[cfg(not(feature = "s3"))]
fn s3_store(
    endpoint: &str,
    _bucket: &str,
    _options: &SourceOptions,
    _name: &str,
) -> Result<Arc<dyn ObjectStorage>> {
    Err(Error::Unsupported(format!(
        "{endpoint}: this build of rntuple has no S3 support (cargo feature \"s3\")"
    )))
}

/// Where a layout URL points.
#[derive(Debug, PartialEq)]
enum Kind {
    /// An S3 endpoint (`http://host:port`) and bucket.
    S3 { endpoint: String, bucket: String },
    /// A directory of objects.
    Directory { root: String },
}

/// A layout URL taken apart.
#[derive(Debug, PartialEq)]
struct ParsedUrl {
    kind: Kind,
    /// The anchor's key in the store.
    anchor_key: String,
}

impl ParsedUrl {
    /// Parses `url` strictly. The scheme is matched without regard to case (as ROOT
    /// does); no user information, query or fragment. `ntpl+s3+http(s)://HOST[:PORT]/
    /// BUCKET/PREFIX`: the first path segment is the bucket, the rest the prefix.
    /// `ntpl+file:///DIR/PREFIX` (or `ntpl+file://localhost/DIR/PREFIX`): an absolute
    /// path, no other host; its last segment is the prefix, the rest the directory. In
    /// the prefix and the path, every segment is a name: no empty segment (`a//b`), no
    /// trailing `/`, no `.` or `..` (ROOT drops trailing slashes; a URL that could name
    /// two places is refused here instead).
    fn parse(url: &str) -> Result<ParsedUrl> {
        let bad = |why: &str| {
            Error::InvalidArgument(format!(
                "{url}: {why} (expected ntpl+s3+https://HOST/BUCKET/PREFIX, \
                 ntpl+s3+http://HOST:PORT/BUCKET/PREFIX or ntpl+file:///DIR/PREFIX)"
            ))
        };
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| bad("not an object-store URL"))?;
        let scheme = scheme.to_ascii_lowercase();
        if rest.contains(['?', '#']) {
            return Err(bad("a query or fragment is not allowed"));
        }
        if rest.chars().any(char::is_control) {
            return Err(bad("a control character is not allowed"));
        }
        match scheme.as_str() {
            "ntpl+s3+http" | "ntpl+s3+https" => {
                let (authority, path) = rest
                    .split_once('/')
                    .ok_or_else(|| bad("no bucket and prefix"))?;
                if authority.contains('@') {
                    return Err(bad(
                        "user information is not allowed (credentials come from the \
                         environment)",
                    ));
                }
                check_authority(authority).map_err(|why| bad(&why))?;
                let (bucket, prefix) = path
                    .split_once('/')
                    .ok_or_else(|| bad("no prefix after the bucket"))?;
                if bucket.is_empty() || bucket == "." || bucket == ".." {
                    return Err(bad("an empty bucket, or one named '.' or '..'"));
                }
                check_segments(prefix, "prefix").map_err(|why| bad(&why))?;
                let http = scheme.trim_start_matches("ntpl+s3+");
                Ok(ParsedUrl {
                    kind: Kind::S3 {
                        endpoint: format!("{http}://{authority}"),
                        bucket: bucket.to_string(),
                    },
                    anchor_key: prefix.to_string(),
                })
            }
            "ntpl+file" => {
                let (authority, path) = rest.find('/').map_or((rest, ""), |i| rest.split_at(i));
                if !authority.is_empty() && !authority.eq_ignore_ascii_case("localhost") {
                    return Err(bad(&if authority.starts_with(['.', '~']) {
                        "a relative path: ntpl+file URLs are absolute (three slashes: \
                         ntpl+file:///DIR/PREFIX)"
                            .to_string()
                    } else {
                        format!(
                            "the host \"{authority}\": an ntpl+file URL names a directory of \
                             this machine, with no host (ntpl+file:///DIR/PREFIX) or localhost"
                        )
                    }));
                }
                let path = path
                    .strip_prefix('/')
                    .ok_or_else(|| bad("no directory and prefix"))?;
                check_segments(path, "path").map_err(|why| bad(&why))?;
                let (root, prefix) = path.rsplit_once('/').unwrap_or(("", path));
                Ok(ParsedUrl {
                    kind: Kind::Directory {
                        root: format!("/{root}"),
                    },
                    anchor_key: prefix.to_string(),
                })
            }
            _ => Err(bad("not an object-store URL")),
        }
    }
}

/// Checks `HOST[:PORT]` (a name, an IPv4 address or a bracketed IPv6 one).
fn check_authority(authority: &str) -> std::result::Result<(), String> {
    if authority.is_empty() {
        return Err("no host".into());
    }
    let (host_ok, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (addr, after) = v6
                .split_once(']')
                .ok_or_else(|| format!("the host \"{authority}\" has no closing ']'"))?;
            let port =
                match after {
                    "" => None,
                    _ => Some(after.strip_prefix(':').ok_or_else(|| {
                        format!("\"{authority}\": expected :PORT after the address")
                    })?),
                };
            let ok = !addr.is_empty()
                && addr
                    .chars()
                    .all(|c| c.is_ascii_hexdigit() || c == ':' || c == '.');
            (ok, port)
        }
        None => {
            let (host, port) = match authority.split_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (authority, None),
            };
            let ok = !host.is_empty()
                && host
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'));
            (ok, port)
        }
    };
    if !host_ok {
        return Err(format!("\"{authority}\" is not a host name or address"));
    }
    if let Some(port) = port {
        let valid =
            port.bytes().all(|b| b.is_ascii_digit()) && port.parse::<u16>().is_ok_and(|p| p > 0);
        if !valid {
            return Err(format!("\"{port}\" is not a port (1 to 65535)"));
        }
    }
    Ok(())
}

/// Checks that every `/`-separated segment of `path` (the URL's `what`) is a name: no
/// empty segment, none at the end, no `.` or `..`.
fn check_segments(path: &str, what: &str) -> std::result::Result<(), String> {
    if path.is_empty() {
        return Err(format!("an empty {what}"));
    }
    if path.ends_with('/') {
        return Err(format!(
            "a trailing '/' (the {what} ends with the dataset's name: drop the slash)"
        ));
    }
    for segment in path.split('/') {
        match segment {
            "" => return Err(format!("an empty segment ('//') in the {what}")),
            "." | ".." => {
                return Err(format!(
                    "a '{segment}' segment in the {what} (segments are names, never resolved)"
                ))
            }
            _ => {}
        }
    }
    Ok(())
}

/// Checks that `url` is a well-formed object-store URL (see [`ObjectDataset::open`]),
/// without opening anything: an [`Error::InvalidArgument`] saying what is wrong.
pub fn check_layout_url(url: &str) -> Result<()> {
    ParsedUrl::parse(url).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s3_layout_urls_name_endpoint_bucket_and_prefix() {
        let p = ParsedUrl::parse("NTPL+S3+HTTP://127.0.0.1:8333/bkt/data/run1").unwrap();
        assert_eq!(
            p,
            ParsedUrl {
                kind: Kind::S3 {
                    endpoint: "http://127.0.0.1:8333".into(),
                    bucket: "bkt".into()
                },
                anchor_key: "data/run1".into(),
            }
        );
        let p = ParsedUrl::parse("ntpl+s3+https://s3.example.org/b/p").unwrap();
        assert_eq!(
            p.kind,
            Kind::S3 {
                endpoint: "https://s3.example.org".into(),
                bucket: "b".into()
            }
        );
        let p = ParsedUrl::parse("ntpl+s3+http://[::1]:9000/b/p").unwrap();
        assert_eq!(
            p.kind,
            Kind::S3 {
                endpoint: "http://[::1]:9000".into(),
                bucket: "b".into()
            }
        );
    }

    /// Every URL refused, with the reason the message gives: hosts, relative paths,
    /// `.`/`..`, empty and trailing segments, in both kinds.
    pub(crate) const REFUSED: &[(&str, &str)] = &[
        ("ntpl+s3+http://host/bucket", "no prefix"),
        ("ntpl+s3+http://user:pw@host/b/p", "user information"),
        ("ntpl+s3+http://host/b/p?x=1", "query"),
        ("ntpl+s3+http://host/b/p#f", "fragment"),
        ("ntpl+s3+http:///b/p", "no host"),
        ("ntpl+s3+http://host:http/b/p", "not a port"),
        ("ntpl+s3+http://host:0/b/p", "not a port"),
        ("ntpl+s3+http://host:70000/b/p", "not a port"),
        ("ntpl+s3+http://ho st/b/p", "not a host name"),
        ("ntpl+s3+http://host/b/p/", "trailing '/'"),
        ("ntpl+s3+http://host/b/p//", "trailing '/'"),
        ("ntpl+s3+http://host/b//p", "empty segment"),
        ("ntpl+s3+http://host/b/a//p", "empty segment"),
        ("ntpl+s3+http://host/b/../p", "'..' segment"),
        ("ntpl+s3+http://host/b/a/./p", "'.' segment"),
        ("ntpl+s3+http://host/b/..", "'..' segment"),
        ("ntpl+s3+http://host/../p", "bucket"),
        ("ntpl+s3+http://host//p", "bucket"),
        ("ntpl+s3+https://host/b/p\n", "control character"),
        ("ntpl+file://evil.host/tmp/x", "the host \"evil.host\""),
        ("ntpl+file://127.0.0.1/tmp/x", "the host \"127.0.0.1\""),
        ("ntpl+file://../x", "a relative path"),
        ("ntpl+file://./x", "a relative path"),
        ("ntpl+file://~/x", "a relative path"),
        ("ntpl+file://x", "the host \"x\""),
        ("ntpl+file://", "no directory and prefix"),
        ("ntpl+file:///", "an empty path"),
        ("ntpl+file:///tmp/store/", "trailing '/'"),
        ("ntpl+file:///tmp//store/ds", "empty segment"),
        ("ntpl+file:///tmp/../etc/ds", "'..' segment"),
        ("ntpl+file:///tmp/store/..", "'..' segment"),
        ("ntpl+file:///tmp/./ds", "'.' segment"),
        ("ntpl+file:///tmp/ds?x", "query"),
        ("s3://b/p", "not an object-store URL"),
    ];

    /// URLs accepted: the directory (or endpoint) and prefix they name.
    pub(crate) const ACCEPTED: &[(&str, &str, &str)] = &[
        ("ntpl+file:///tmp/store/events", "/tmp/store", "events"),
        (
            "ntpl+file://localhost/tmp/store/events",
            "/tmp/store",
            "events",
        ),
        ("NTPL+FILE://LOCALHOST/tmp/events", "/tmp", "events"),
        ("ntpl+file:///events", "/", "events"),
        ("ntpl+file:///tmp/a.b/..x/ev_1", "/tmp/a.b/..x", "ev_1"),
        (
            "ntpl+s3+http://127.0.0.1:8333/bkt/a/b",
            "http://127.0.0.1:8333",
            "a/b",
        ),
        (
            "ntpl+s3+https://s3.example.org/b/x.y",
            "https://s3.example.org",
            "x.y",
        ),
    ];

    #[test]
    fn bad_layout_urls_are_refused_with_the_reason() {
        for (url, why) in REFUSED {
            let err = ParsedUrl::parse(url).unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{url}: {err}");
            let err = err.to_string();
            assert!(err.contains(why), "{url}: {err}");
            assert!(err.contains(url.trim_end_matches('\n')), "{url}: {err}");
            assert!(check_layout_url(url).is_err());
        }
    }

    #[test]
    fn good_layout_urls_name_a_place_and_a_prefix() {
        for (url, place, prefix) in ACCEPTED {
            let p = ParsedUrl::parse(url).unwrap_or_else(|e| panic!("{url}: {e}"));
            let got = match p.kind {
                Kind::Directory { root } => root,
                Kind::S3 { endpoint, .. } => endpoint,
            };
            assert_eq!(
                (got.as_str(), p.anchor_key.as_str()),
                (*place, *prefix),
                "{url}"
            );
        }
        assert!(is_object_layout("ntpl+file:///tmp/store/events"));
        assert!(is_object_layout("NTPL+S3+HTTPS://h/b/p"));
        assert!(!is_object_layout("s3://b/k"));
    }

    #[test]
    fn a_refused_url_creates_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().display().to_string();
        for url in [
            format!("ntpl+file://{base}/new/../ds"),
            format!("ntpl+file://{base}/new//ds"),
            format!("ntpl+file://{base}/new/ds/"),
        ] {
            let err = ObjectDataset::open(&url, &SourceOptions::default(), true).unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{url}: {err}");
        }
        // A good URL creates nothing either until an object is stored.
        let url = format!("ntpl+file://{base}/new/deeper/ds");
        let dataset = ObjectDataset::open(&url, &SourceOptions::default(), true).unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        dataset.store().put("ds/0", vec![1]).unwrap();
        assert!(dir.path().join("new/deeper/ds.d/0.obj").is_file());
        dataset.store().delete("ds/0").unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn object_ids_are_numbers_as_written() {
        for (n, id) in [("0", Some(0)), ("17", Some(17)), ("007", None), ("", None)] {
            assert_eq!(object_id(n), id, "{n:?}");
        }
        assert_eq!(object_id("18446744073709551615"), Some(u64::MAX));
        assert_eq!(object_id("18446744073709551616"), None);
        assert_eq!(object_id("+1"), None);
        assert_eq!(object_id("_clone"), None);
    }
}
