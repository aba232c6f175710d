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
    /// directory is created then). The S3 store is configured by the environment
    /// (`AWS_*`, ROOT's `S3_ACCESS_KEY`, `S3_SECRET_KEY`, `S3_REGION`) and `options`.
    pub fn open(url: &str, options: &SourceOptions, create: bool) -> Result<ObjectDataset> {
        let parsed = ParsedUrl::parse(url)?;
        let store: Arc<dyn ObjectStorage> = match parsed.kind {
            Kind::S3 { endpoint, bucket } => s3_store(&endpoint, &bucket, options)?,
            Kind::Directory { root } => Arc::new(if create {
                DirectoryObjects::create(&root)?
            } else {
                DirectoryObjects::open(&root)?
            }),
        };
        // Messages name the URL as given (it opens the dataset again), not ROOT's base URL.
        Ok(ObjectDataset::new(
            store,
            parsed.anchor_key,
            url.trim_end_matches('/'),
        ))
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

    /// The keys of the dataset's numbered objects that the store holds (of this dataset
    /// or an earlier one at the same place).
    pub fn object_keys(&self) -> Result<Vec<String>> {
        let prefix = format!("{}/", self.anchor_key);
        Ok(self
            .store
            .list(&prefix)?
            .into_iter()
            .filter(|k| {
                k.strip_prefix(&prefix)
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            })
            .collect())
    }
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

    fn metrics(&self) -> IoMetricsSnapshot {
        self.store.metrics()
    }
}

#[cfg(feature = "s3")]
fn s3_store(
    endpoint: &str,
    bucket: &str,
    options: &SourceOptions,
) -> Result<Arc<dyn ObjectStorage>> {
    Ok(Arc::new(super::objects::S3Objects::open(
        endpoint, bucket, options,
    )?))
}

#[cfg(not(feature = "s3"))]
fn s3_store(
    endpoint: &str,
    _bucket: &str,
    _options: &SourceOptions,
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
    /// Parses `url` as ROOT's `RPageSinkS3`/`RPageSourceS3` do: scheme without regard to
    /// case; no user information, query or fragment; trailing slashes dropped; the first
    /// path segment is the bucket and the rest the prefix (which must not be empty).
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
        let rest = rest.trim_end_matches('/');
        match scheme.as_str() {
            "ntpl+s3+http" | "ntpl+s3+https" => {
                let (authority, path) = rest
                    .split_once('/')
                    .ok_or_else(|| bad("no bucket and prefix"))?;
                if authority.is_empty() {
                    return Err(bad("no host"));
                }
                if authority.contains('@') {
                    return Err(bad(
                        "user information is not allowed (credentials come from the \
                         environment)",
                    ));
                }
                let (bucket, prefix) = path
                    .split_once('/')
                    .ok_or_else(|| bad("no prefix after the bucket"))?;
                let prefix = prefix.trim_start_matches('/');
                if bucket.is_empty() || prefix.is_empty() {
                    return Err(bad("an empty bucket or prefix"));
                }
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
                let path = rest
                    .strip_prefix("localhost")
                    .unwrap_or(rest)
                    .trim_end_matches('/');
                let (root, prefix) = path
                    .rsplit_once('/')
                    .ok_or_else(|| bad("no directory and prefix"))?;
                if prefix.is_empty() {
                    return Err(bad("an empty prefix"));
                }
                let root = if root.is_empty() { "/" } else { root };
                Ok(ParsedUrl {
                    kind: Kind::Directory {
                        root: root.to_string(),
                    },
                    anchor_key: prefix.to_string(),
                })
            }
            _ => Err(bad("not an object-store URL")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s3_layout_urls_name_endpoint_bucket_and_prefix() {
        let p = ParsedUrl::parse("NTPL+S3+HTTP://127.0.0.1:8333/bkt/data/run1//").unwrap();
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
    }

    #[test]
    fn bad_s3_layout_urls_are_refused_with_the_reason() {
        for (url, why) in [
            ("ntpl+s3+http://host/bucket", "no prefix"),
            ("ntpl+s3+http://user:pw@host/b/p", "user information"),
            ("ntpl+s3+http://host/b/p?x=1", "query"),
            ("ntpl+s3+http:///b/p", "no host"),
            ("s3://b/p", "not an object-store URL"),
        ] {
            let err = ParsedUrl::parse(url).unwrap_err().to_string();
            assert!(err.contains(why), "{url}: {err}");
        }
    }

    #[test]
    fn directory_urls_name_the_directory_and_prefix() {
        let p = ParsedUrl::parse("ntpl+file:///tmp/store/events").unwrap();
        assert_eq!(
            p.kind,
            Kind::Directory {
                root: "/tmp/store".into()
            }
        );
        assert_eq!(p.anchor_key, "events");
        assert!(is_object_layout("ntpl+file:///tmp/store/events"));
        assert!(is_object_layout("NTPL+S3+HTTPS://h/b/p"));
        assert!(!is_object_layout("s3://b/k"));
    }
}
