//! Objects in an S3 bucket (AWS, or an S3-compatible store: SeaweedFS, MinIO, Ceph).

use super::{past_the_end, validate_key, ObjectStorage, ObjectVersion, VersionedGet};
use crate::error::{Error, RemoteKind, Result};
use crate::net::{first_byte, NetRuntime, NoFirstByte};
use crate::retry::Failure;
use crate::s3::{failure, read_body, run_on, s3_builder, scrub, secret_values, RUNTIME_WORKERS};
use crate::{
    redact_url, url_scheme, ByteRange, IoMetrics, IoMetricsSnapshot, NetworkOptions, RetryPolicy,
    SourceOptions, TimeoutKind,
};
use futures_util::StreamExt;
use object_store::aws::AmazonS3;
use object_store::path::Path as ObjectPath;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt, PutPayload};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Gets in flight at once in [`ObjectStorage::get_many`]: objects of the S3 layout are
/// pages of tens of KB to a few MB, each a round trip; S3 serves far more requests at
/// once (thousands per second per prefix).
const GETS_IN_FLIGHT: usize = 64;

/// The slowest upload a put waits for: besides the first-byte timeout, it allows one
/// second for every this many bytes of its object (the answer comes only after the
/// whole body was sent, and the first-byte clock runs while it is).
const SLOWEST_UPLOAD_BYTES_PER_SECOND: u64 = 256 << 10;

/// ROOT's names of the S3 credentials and region (Davix's), used when the `AWS_*` ones
/// are not set.
const ROOT_ACCESS_KEY: &str = "S3_ACCESS_KEY";
/// See [`ROOT_ACCESS_KEY`].
const ROOT_SECRET_KEY: &str = "S3_SECRET_KEY";
/// See [`ROOT_ACCESS_KEY`].
const ROOT_REGION: &str = "S3_REGION";

/// The settings that give the client credentials (after ROOT's names are mapped to
/// `AWS_*`): static keys, a web identity token, a container's credentials.
const CREDENTIAL_SOURCES: [&str; 4] = [
    "AWS_ACCESS_KEY_ID",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
];

/// What a refusal adds when no credentials were found.
const NO_CREDENTIALS: &str = "no S3 credentials were found in the environment \
    (looked for AWS_ACCESS_KEY_ID with AWS_SECRET_ACCESS_KEY, ROOT's S3_ACCESS_KEY with \
    S3_SECRET_KEY, AWS_WEB_IDENTITY_TOKEN_FILE, AWS_CONTAINER_CREDENTIALS_RELATIVE_URI and \
    AWS_CONTAINER_CREDENTIALS_FULL_URI): set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY";

/// Objects in an S3 bucket, over `object_store`'s S3 client built as for
/// [`S3Source`](crate::S3Source) (the same HTTP client, timeouts, retries, error
/// kinds and masking of credentials in messages), on a small tokio runtime of its own
/// whose requests callers wait for on channels, never inside the runtime: any thread
/// may call it.
///
/// # Configuration
///
/// The endpoint (`https://host`, `http://127.0.0.1:8333`) and the bucket are given;
/// keys are object keys in the bucket. Requests are path-style
/// (`ENDPOINT/BUCKET/KEY`, what SeaweedFS, MinIO and Ceph need) unless
/// `AWS_VIRTUAL_HOSTED_STYLE_REQUEST=true`; an `http://` endpoint is allowed as given.
/// The other settings are the `AWS_*` variables of [`S3Source`](crate::S3Source)
/// (credentials, region, proxy; `AWS_ENDPOINT*` are overridden by the endpoint given),
/// and ROOT's `S3_ACCESS_KEY`, `S3_SECRET_KEY` and `S3_REGION` when `AWS_ACCESS_KEY_ID`,
/// respectively `AWS_REGION` and `AWS_DEFAULT_REGION`, are not set. Timeouts and retries
/// are the [`NetworkOptions`]; a put's wait for its answer also allows one second per
/// 256 KiB of the object, since the answer comes once the whole object was sent.
///
/// # Errors
///
/// A missing bucket or object is an [`Error::Remote`] of [`RemoteKind::NotFound`]
/// naming the object (`ENDPOINT/BUCKET/KEY`); faults that may pass are retried as the
/// [`RetryPolicy`] says.
///
/// # Listing
///
/// `object_store` lists by whole segments, so [`ObjectStorage::list`] lists the keys
/// below the prefix's last `/` (the whole bucket for a prefix without one) and keeps
/// those that start with the prefix.
pub struct S3Objects {
    /// `ENDPOINT/BUCKET`, without credentials (or the name [`S3Objects::named`] gave).
    name: String,
    /// Whether any credentials were configured: without, a refusal says so.
    has_credentials: bool,
    inner: Arc<Inner>,
    policy: RetryPolicy,
    // Declared last; shuts the runtime down when the store is dropped.
    runtime: NetRuntime,
}

/// What the requests running on the runtime need.
struct Inner {
    name: String,
    store: AmazonS3,
    /// Credential values to mask in any message.
    secrets: Vec<String>,
    network: NetworkOptions,
    metrics: IoMetrics,
}

impl std::fmt::Debug for S3Objects {
    // Not derived: the client's own Debug would print its credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("S3Objects")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl S3Objects {
    /// The objects of `bucket` at `endpoint`, configured by the environment (`AWS_*`,
    /// ROOT's `S3_*`: see the type's documentation) and `options`' network settings.
    /// Nothing is asked of the server until the first request.
    pub fn open(endpoint: &str, bucket: &str, options: &SourceOptions) -> Result<Self> {
        let vars = crate::credentials::object_store_variables();
        Self::open_with(endpoint, bucket, vars, RetryPolicy::new(options.network))
    }

    /// [`S3Objects::open`] with the given settings instead of the environment's
    /// (same names: `("S3_ACCESS_KEY", "...")`, `("AWS_REGION", "eu-west-1")`) and
    /// retry policy.
    pub fn open_with(
        endpoint: &str,
        bucket: &str,
        vars: impl IntoIterator<Item = (String, String)>,
        policy: RetryPolicy,
    ) -> Result<Self> {
        let endpoint = check_endpoint(endpoint)?;
        if bucket.is_empty() || bucket.contains('/') {
            return Err(Error::InvalidArgument(format!(
                "{bucket:?} is not an S3 bucket name (expected a name without '/')"
            )));
        }
        let name = format!("{}/{bucket}", redact_url(endpoint));
        let settings = client_settings(endpoint, vars);
        let secrets = secret_values(&settings);
        let has_credentials = settings
            .iter()
            .any(|(key, value)| CREDENTIAL_SOURCES.contains(&key.as_str()) && !value.is_empty());
        let runtime = NetRuntime::new(RUNTIME_WORKERS, "rntuple-s3", &name)?;
        let store = {
            // The HTTP client may spawn its connection tasks on the current runtime.
            let _entered = runtime.handle().enter();
            s3_builder(bucket, &settings, policy).build().map_err(|e| {
                Error::remote(
                    RemoteKind::Other,
                    &name,
                    format!(
                        "configuring the S3 client: {}",
                        scrub(&e.to_string(), &secrets)
                    ),
                )
            })?
        };
        Ok(S3Objects {
            name: name.clone(),
            has_credentials,
            inner: Arc::new(Inner {
                name,
                store,
                secrets,
                network: policy.network,
                metrics: IoMetrics::default(),
            }),
            policy,
            runtime,
        })
    }

    /// The store named `name` in messages instead of `ENDPOINT/BUCKET` (an object is
    /// `name/KEY`): a layout's URL names the bucket as the user typed it
    /// (`ntpl+s3+https://host/bucket`). Call it before the store is shared.
    pub fn named(mut self, name: impl Into<String>) -> Self {
        let name = redact_url(&name.into());
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.name.clone_from(&name);
            self.name = name;
        }
        self
    }

    /// `result`, a refusal (HTTP 401 or 403) explained when no credentials were found:
    /// the request went out unsigned.
    fn explain<T>(&self, result: Result<T>) -> Result<T> {
        match result {
            Err(Error::Remote {
                kind: RemoteKind::PermissionDenied,
                what,
                detail,
            }) if !self.has_credentials => Err(Error::Remote {
                kind: RemoteKind::PermissionDenied,
                what,
                detail: format!("{detail}; {NO_CREDENTIALS}"),
            }),
            other => other,
        }
    }

    /// `key` as `object_store` names it, once checked.
    fn path(key: &str) -> Result<ObjectPath> {
        validate_key(key)?;
        ObjectPath::parse(key)
            .map_err(|e| Error::InvalidArgument(format!("{key:?} is not a valid S3 key ({e})")))
    }

    /// Runs `task` on the runtime and waits for it; an attempt of [`RetryPolicy::run`].
    fn run<T: Send + 'static>(
        &self,
        task: impl std::future::Future<Output = std::result::Result<T, Failure>> + Send + 'static,
    ) -> std::result::Result<T, Failure> {
        run_on(self.runtime.handle(), &self.name, task).map_err(Failure::Permanent)?
    }
}

/// `endpoint` without a trailing `/`, if it is an `http://` or `https://` URL.
fn check_endpoint(endpoint: &str) -> Result<&str> {
    let trimmed = endpoint.trim_end_matches('/');
    match url_scheme(trimmed).as_deref() {
        Some("http" | "https") => Ok(trimmed),
        _ => Err(Error::InvalidArgument(format!(
            "{}: an S3 endpoint is an http:// or https:// URL (e.g. https://s3.example.org)",
            redact_url(endpoint)
        ))),
    }
}

/// Sets `key` to `value` in `settings`, replacing any value it had.
fn set_to(settings: &mut Vec<(String, String)>, key: &str, value: String) {
    settings.retain(|(k, _)| k != key);
    settings.push((key.to_string(), value));
}

/// The `AWS_*` settings of the client of `endpoint`: those of `vars` but the endpoint
/// (the one given wins), ROOT's credentials and region where the `AWS_*` ones are not
/// set, the endpoint, and plain HTTP allowed for an `http://` endpoint.
fn client_settings(
    endpoint: &str,
    vars: impl IntoIterator<Item = (String, String)>,
) -> Vec<(String, String)> {
    let vars: Vec<(String, String)> = vars.into_iter().collect();
    let set = |name: &str| {
        vars.iter()
            .find(|(key, value)| key == name && !value.is_empty())
            .map(|(_, value)| value.clone())
    };
    let mut settings: Vec<(String, String)> = vars
        .iter()
        .filter(|(key, _)| key.starts_with("AWS_"))
        .filter(|(key, _)| {
            !matches!(
                key.as_str(),
                "AWS_ENDPOINT" | "AWS_ENDPOINT_URL" | "AWS_ENDPOINT_URL_S3"
            )
        })
        .cloned()
        .collect();
    if set("AWS_ACCESS_KEY_ID").is_none() {
        if let Some(access) = set(ROOT_ACCESS_KEY) {
            set_to(&mut settings, "AWS_ACCESS_KEY_ID", access);
            // ROOT's secret goes with ROOT's key: an AWS secret or token alone
            // belongs to no key given.
            settings.retain(|(k, _)| {
                !matches!(
                    k.as_str(),
                    "AWS_SECRET_ACCESS_KEY" | "AWS_SESSION_TOKEN" | "AWS_TOKEN"
                )
            });
            if let Some(secret) = set(ROOT_SECRET_KEY) {
                set_to(&mut settings, "AWS_SECRET_ACCESS_KEY", secret);
            }
        }
    }
    if set("AWS_REGION").is_none() && set("AWS_DEFAULT_REGION").is_none() {
        if let Some(region) = set(ROOT_REGION) {
            set_to(&mut settings, "AWS_REGION", region);
        }
    }
    set_to(&mut settings, "AWS_ENDPOINT_URL", endpoint.to_string());
    if url_scheme(endpoint).as_deref() == Some("http") {
        set_to(&mut settings, "AWS_ALLOW_HTTP", "true".to_string());
    }
    settings
}

impl Inner {
    fn object_name(&self, key: &str) -> String {
        format!("{}/{key}", self.name)
    }

    /// The size of the object at `path` (`key`), `None` if there is none.
    async fn head(
        &self,
        path: &ObjectPath,
        key: &str,
    ) -> std::result::Result<Option<u64>, Failure> {
        let operation = format!("HEAD {key}");
        let answer = first_byte(self.store.head(path), self.network.first_byte_timeout)
            .await
            .map_err(|NoFirstByte| Failure::TimedOut {
                kind: TimeoutKind::FirstByte,
                doing: operation.clone(),
            })?;
        match answer {
            Ok(meta) => Ok(Some(meta.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(failure(
                e,
                &self.object_name(key),
                &self.secrets,
                &operation,
            )),
        }
    }

    /// `range` (all for `None`) of the object at `path` (`key`), of version `if_match`
    /// when given: exactly its bytes and the version they are of (its ETag, empty if the
    /// store sent none), or an error.
    async fn get(
        &self,
        path: &ObjectPath,
        key: &str,
        range: Option<ByteRange>,
        if_match: Option<&str>,
    ) -> std::result::Result<(Vec<u8>, String), Failure> {
        let object = self.object_name(key);
        let bounded = match range {
            None => None,
            Some(r) => match r.offset.checked_add(r.len) {
                Some(end) if r.len > 0 => Some(r.offset..end),
                // S3 has no empty range, and none past every end: the size tells.
                _ => {
                    let size = self.head(path, key).await?.ok_or_else(|| {
                        Failure::Permanent(Error::remote(
                            RemoteKind::NotFound,
                            &object,
                            format!("HEAD {key}: no such bucket or key"),
                        ))
                    })?;
                    return match r.offset.checked_add(r.len) {
                        Some(end) if end <= size && if_match.is_none() => {
                            Ok((Vec::new(), String::new()))
                        }
                        // An empty range of a version: the whole object tells it.
                        Some(end) if end <= size => {
                            let (_, etag) = Box::pin(self.get(path, key, None, if_match)).await?;
                            Ok((Vec::new(), etag))
                        }
                        _ => Err(Failure::Permanent(past_the_end(&object, size, r))),
                    };
                }
            },
        };
        let operation = match &bounded {
            Some(asked) => format!("GET {key} bytes {}..{}", asked.start, asked.end),
            None => format!("GET {key}"),
        };
        let options = GetOptions {
            range: bounded.clone().map(GetRange::Bounded),
            if_match: if_match.map(str::to_string),
            ..GetOptions::default()
        };
        let answer = first_byte(
            self.store.get_opts(path, options),
            self.network.first_byte_timeout,
        )
        .await
        .map_err(|NoFirstByte| Failure::TimedOut {
            kind: TimeoutKind::FirstByte,
            doing: operation.clone(),
        })?;
        let result = match answer {
            Ok(result) => result,
            Err(e) => {
                let failed = failure(e, &object, &self.secrets, &operation);
                // A range that starts past the end (HTTP 416): the size tells.
                if let (
                    Some(r),
                    Failure::Permanent(Error::Remote {
                        kind: RemoteKind::Other,
                        ..
                    }),
                ) = (range, &failed)
                {
                    if let Some(size) = self.head(path, key).await? {
                        if r.offset.saturating_add(r.len) > size {
                            return Err(Failure::Permanent(past_the_end(&object, size, r)));
                        }
                    }
                }
                return Err(failed);
            }
        };
        if let (Some(r), Some(asked)) = (range, &bounded) {
            // A range that ends past the end: the store sends what there is.
            if result.range != *asked {
                let size = result.meta.size;
                return Err(Failure::Permanent(if asked.end > size {
                    past_the_end(&object, size, r)
                } else {
                    Error::remote(
                        RemoteKind::Other,
                        &object,
                        format!(
                            "{operation}: the server sent bytes {}..{} instead",
                            result.range.start, result.range.end
                        ),
                    )
                }));
            }
        }
        let etag = result.meta.e_tag.clone().unwrap_or_default();
        // A store that ignores If-Match still says which version it sent.
        if let Some(wanted) = if_match {
            if etag != wanted {
                return Err(Failure::Permanent(crate::s3::changed(&object, &operation)));
            }
        }
        let len = result.range.end - result.range.start;
        let bytes = read_body(
            result,
            len,
            &operation,
            &self.network,
            &object,
            &self.secrets,
        )
        .await?;
        Ok((bytes, etag))
    }

    /// The gets of `requests` (index, path, key, range), at most [`GETS_IN_FLIGHT`] at
    /// once, every one tried: each outcome by index.
    async fn get_all(
        &self,
        requests: Vec<(usize, ObjectPath, VersionedGet)>,
    ) -> Vec<(usize, std::result::Result<(Vec<u8>, String), Failure>)> {
        let gets = requests.into_iter().map(|(index, path, get)| async move {
            let got = self
                .get(&path, &get.key, get.range, get.if_match.as_deref())
                .await;
            (index, got)
        });
        let mut done = futures_util::stream::iter(gets).buffer_unordered(GETS_IN_FLIGHT);
        let mut outcomes = Vec::new();
        // Each get is charged the time since the previous one finished, so the waits
        // recorded for one call add up to its wall time (as S3Source counts).
        let mut since = Instant::now();
        while let Some((index, outcome)) = done.next().await {
            if let Ok((bytes, _)) = &outcome {
                self.metrics.record(false, 1, bytes.len() as u64, since);
                since = Instant::now();
            }
            outcomes.push((index, outcome));
        }
        outcomes
    }
}

impl ObjectStorage for S3Objects {
    fn name(&self) -> &str {
        &self.name
    }

    fn object_name(&self, key: &str) -> String {
        self.inner.object_name(key)
    }

    fn put(&self, key: &str, bytes: Vec<u8>) -> Result<()> {
        let path = Self::path(key)?;
        let object = self.object_name(key);
        let len = bytes.len() as u64;
        // Shared by the attempts, not copied.
        let payload = PutPayload::from(bytes);
        let limit = self.inner.network.first_byte_timeout
            + Duration::from_secs(len / SLOWEST_UPLOAD_BYTES_PER_SECOND);
        let operation = format!("PUT {key} ({len} bytes)");
        let put = self.policy.run(&object, |_| {
            let (inner, path, payload) = (Arc::clone(&self.inner), path.clone(), payload.clone());
            let (object, operation) = (object.clone(), operation.clone());
            self.run(async move {
                let answer = first_byte(inner.store.put(&path, payload), limit)
                    .await
                    .map_err(|NoFirstByte| Failure::TimedOut {
                        kind: TimeoutKind::FirstByte,
                        doing: format!("{operation}, waited {} s for the upload", limit.as_secs()),
                    })?;
                answer
                    .map(|_| ())
                    .map_err(|e| failure(e, &object, &inner.secrets, &operation))
            })
        });
        self.explain(put)
    }

    fn get(&self, key: &str, range: Option<ByteRange>) -> Result<Vec<u8>> {
        let mut bytes = self.get_many(&[(key.to_string(), range)])?;
        bytes
            .pop()
            .ok_or_else(|| Error::remote(RemoteKind::Other, self.object_name(key), "no answer"))
    }

    fn get_many(&self, requests: &[(String, Option<ByteRange>)]) -> Result<Vec<Vec<u8>>> {
        let gets: Vec<VersionedGet> = requests
            .iter()
            .map(|(key, range)| VersionedGet {
                key: key.clone(),
                range: *range,
                if_match: None,
            })
            .collect();
        let got = self.get_versioned(&gets)?;
        Ok(got.into_iter().map(|(bytes, _)| bytes).collect())
    }

    fn get_versioned(&self, requests: &[VersionedGet]) -> Result<Vec<(Vec<u8>, String)>> {
        let paths = requests
            .iter()
            .map(|get| Self::path(&get.key))
            .collect::<Result<Vec<_>>>()?;
        // A single object's errors name it; many objects' name the store, and the
        // detail the key.
        let what = match requests {
            [get] => self.object_name(&get.key),
            _ => self.name.clone(),
        };
        let mut results: Vec<Option<(Vec<u8>, String)>> = vec![None; requests.len()];
        // After a fault, only the objects still missing are asked for again; the
        // error is the first failing request's, in the order of `requests`.
        let got = self.policy.run(&what, |_| {
            let missing: Vec<_> = results
                .iter()
                .enumerate()
                .filter(|(_, result)| result.is_none())
                .map(|(index, _)| (index, paths[index].clone(), requests[index].clone()))
                .collect();
            let inner = Arc::clone(&self.inner);
            let outcomes = self.run(async move { Ok(inner.get_all(missing).await) })?;
            let mut first: Option<(usize, Failure)> = None;
            for (index, outcome) in outcomes {
                match outcome {
                    Ok(bytes) => results[index] = Some(bytes),
                    Err(fault) => {
                        if first.as_ref().is_none_or(|(i, _)| index < *i) {
                            first = Some((index, fault));
                        }
                    }
                }
            }
            first.map_or(Ok(()), |(_, fault)| Err(fault))
        });
        self.explain(got)?;
        results
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| Error::remote(RemoteKind::Other, what, "an object was left unread"))
    }

    fn size_of(&self, key: &str) -> Result<Option<u64>> {
        let path = Self::path(key)?;
        let size = self.policy.run(&self.object_name(key), |_| {
            let (inner, path, key) = (Arc::clone(&self.inner), path.clone(), key.to_string());
            self.run(async move { inner.head(&path, &key).await })
        });
        self.explain(size)
    }

    fn delete(&self, key: &str) -> Result<()> {
        let path = Self::path(key)?;
        let object = self.object_name(key);
        let operation = format!("DELETE {key}");
        let deleted = self.policy.run(&object, |_| {
            let (inner, path) = (Arc::clone(&self.inner), path.clone());
            let (object, operation) = (object.clone(), operation.clone());
            self.run(async move {
                let answer =
                    first_byte(inner.store.delete(&path), inner.network.first_byte_timeout)
                        .await
                        .map_err(|NoFirstByte| Failure::TimedOut {
                            kind: TimeoutKind::FirstByte,
                            doing: operation.clone(),
                        })?;
                match answer {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
                    Err(e) => Err(failure(e, &object, &inner.secrets, &operation)),
                }
            })
        });
        self.explain(deleted)
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        let listed = self.listing(prefix)?;
        Ok(listed.into_iter().map(|(key, _, _)| key).collect())
    }

    fn list_versions(&self, prefix: &str) -> Result<Option<Vec<ObjectVersion>>> {
        // S3's ETag hashes the object's content: a version. A store that gives none for
        // some object cannot be cached.
        let listed = self.listing(prefix)?;
        Ok(listed
            .into_iter()
            .map(|(key, size, etag)| {
                Some(ObjectVersion {
                    key,
                    size,
                    etag: etag?,
                })
            })
            .collect())
    }

    fn metrics(&self) -> IoMetricsSnapshot {
        self.inner.metrics.snapshot()
    }
}

impl S3Objects {
    /// The objects whose keys start with `prefix`, sorted by key, with their sizes and
    /// ETags.
    fn listing(&self, prefix: &str) -> Result<Vec<(String, u64, Option<String>)>> {
        // object_store lists whole segments: the keys below the prefix's last '/'.
        let parent = match prefix.rsplit_once('/') {
            None => None,
            Some(("", _)) => return Ok(Vec::new()),
            // A parent no key can have: no key starts with this prefix.
            Some((parent, _)) => match Self::path(parent) {
                Ok(path) => Some(path),
                Err(_) => return Ok(Vec::new()),
            },
        };
        let operation = format!("LIST {prefix}");
        // Messages name what is listed: a dataset's objects `ds/` by the dataset.
        let what = match prefix.trim_end_matches('/') {
            "" => self.name.clone(),
            listed => self.object_name(listed),
        };
        // Each page of the listing is one request and its small answer.
        let limit = self.inner.network.first_byte_timeout + self.inner.network.idle_timeout;
        let listed = self.policy.run(&what, |_| {
            let (inner, parent) = (Arc::clone(&self.inner), parent.clone());
            let (prefix, operation, what) = (prefix.to_string(), operation.clone(), what.clone());
            self.run(async move {
                let mut listing = inner.store.list(parent.as_ref());
                let mut keys = Vec::new();
                loop {
                    let next = first_byte(listing.next(), limit)
                        .await
                        .map_err(|NoFirstByte| Failure::TimedOut {
                            kind: TimeoutKind::FirstByte,
                            doing: operation.clone(),
                        })?;
                    match next {
                        None => break,
                        Some(Ok(meta)) => {
                            let key = meta.location.as_ref();
                            if key.starts_with(&prefix) {
                                keys.push((key.to_string(), meta.size, meta.e_tag));
                            }
                        }
                        Some(Err(e)) => {
                            return Err(failure(e, &what, &inner.secrets, &operation));
                        }
                    }
                }
                Ok(keys)
            })
        });
        let mut keys = self.explain(listed)?;
        keys.sort();
        Ok(keys)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn value<'a>(settings: &'a [(String, String)], key: &str) -> Option<&'a str> {
        let mut found = settings.iter().filter(|(k, _)| k == key);
        let first = found.next().map(|(_, v)| v.as_str());
        assert!(found.next().is_none(), "{key} set twice: {settings:?}");
        first
    }

    /// Checks the value `settings` give each key of `expected` (`None`: not set).
    fn assert_values(settings: &[(String, String)], expected: &[(&str, Option<&str>)]) {
        for (key, want) in expected {
            assert_eq!(value(settings, key), *want, "{key}");
        }
    }

    #[test]
    fn root_credentials_are_used_when_the_aws_ones_are_absent() {
        let settings = client_settings(
            "http://127.0.0.1:8333",
            vars(&[
                ("S3_ACCESS_KEY", "root-key"),
                ("S3_SECRET_KEY", "root-secret"),
                ("S3_REGION", "eu-central-1"),
                ("AWS_SESSION_TOKEN", "stray-token"),
            ]),
        );
        assert_values(
            &settings,
            &[
                ("AWS_ACCESS_KEY_ID", Some("root-key")),
                ("AWS_SECRET_ACCESS_KEY", Some("root-secret")),
                ("AWS_REGION", Some("eu-central-1")),
                // A token of other credentials is not sent with ROOT's.
                ("AWS_SESSION_TOKEN", None),
                ("AWS_ENDPOINT_URL", Some("http://127.0.0.1:8333")),
                ("AWS_ALLOW_HTTP", Some("true")),
            ],
        );
        // ROOT's secret is masked like the AWS one.
        assert_eq!(secret_values(&settings), vec!["root-secret".to_string()]);
    }

    #[test]
    fn aws_credentials_win_and_the_given_endpoint_overrides_the_environment() {
        let settings = client_settings(
            "https://s3.example.org",
            vars(&[
                ("AWS_ACCESS_KEY_ID", "aws-key"),
                ("AWS_SECRET_ACCESS_KEY", "aws-secret"),
                ("AWS_DEFAULT_REGION", "us-west-2"),
                ("AWS_ENDPOINT_URL", "http://elsewhere:9000"),
                ("AWS_ENDPOINT_URL_S3", "http://elsewhere:9001"),
                ("S3_ACCESS_KEY", "root-key"),
                ("S3_SECRET_KEY", "root-secret"),
                ("S3_REGION", "eu-central-1"),
            ]),
        );
        assert_values(
            &settings,
            &[
                ("AWS_ACCESS_KEY_ID", Some("aws-key")),
                ("AWS_SECRET_ACCESS_KEY", Some("aws-secret")),
                ("AWS_REGION", None),
                ("AWS_DEFAULT_REGION", Some("us-west-2")),
                ("AWS_ENDPOINT_URL", Some("https://s3.example.org")),
                ("AWS_ENDPOINT_URL_S3", None),
                ("AWS_ALLOW_HTTP", None),
            ],
        );
        assert!(
            settings.iter().all(|(k, _)| k.starts_with("AWS_")),
            "{settings:?}"
        );
    }

    #[test]
    fn endpoints_and_buckets_are_checked_before_any_request() {
        let open = |endpoint: &str, bucket: &str| {
            S3Objects::open_with(endpoint, bucket, Vec::new(), RetryPolicy::default())
        };
        for endpoint in ["s3://bucket", "127.0.0.1:8333", "ftp://user:pw@host"] {
            let err = open(endpoint, "b").unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
            assert!(!err.to_string().contains("pw"), "{err}");
        }
        for bucket in ["", "a/b"] {
            let err = open("http://127.0.0.1:1", bucket).unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        }
        let store = open("http://alice:pw@127.0.0.1:1/", "bucket").unwrap();
        assert_eq!(store.name(), "http://***@127.0.0.1:1/bucket");
        assert_eq!(
            store.object_name("ds/0"),
            "http://***@127.0.0.1:1/bucket/ds/0"
        );
        // Keys are checked before any request.
        for key in ["", "/abs", "a//b", "a/../b"] {
            let err = store.get(key, None).unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{key}: {err}");
            let err = store.put(key, vec![1]).unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{key}: {err}");
        }
        // A prefix no key can start with lists nothing, without a request.
        assert_eq!(store.list("/x").unwrap(), Vec::<String>::new());
        assert_eq!(store.list("a/../").unwrap(), Vec::<String>::new());
    }

    #[test]
    fn a_refusal_without_credentials_says_none_were_found_under_the_typed_name() {
        let open = |vars: &[(&str, &str)]| {
            S3Objects::open_with(
                "http://127.0.0.1:1",
                "bkt",
                vars.iter().map(|(k, v)| (k.to_string(), v.to_string())),
                RetryPolicy::default(),
            )
            .unwrap()
            .named("NTPL+S3+HTTP://127.0.0.1:1/bkt")
        };
        let refused = || -> Result<()> {
            Err(Error::remote(
                RemoteKind::PermissionDenied,
                "x",
                "GET ds: HTTP 403 Forbidden",
            ))
        };
        let none = open(&[]);
        assert_eq!(
            none.object_name("ds/0"),
            "NTPL+S3+HTTP://127.0.0.1:1/bkt/ds/0"
        );
        let err = none.explain(refused()).unwrap_err().to_string();
        assert!(
            err.contains("HTTP 403 Forbidden; no S3 credentials were found in the environment")
                && err.contains("S3_ACCESS_KEY")
                && err.contains("AWS_ACCESS_KEY_ID"),
            "{err}"
        );
        // Other errors, and refusals of given credentials, are left as they are.
        let other = none.explain::<()>(Err(Error::remote(RemoteKind::NotFound, "x", "404")));
        assert!(!other.unwrap_err().to_string().contains("credentials"));
        for vars in [
            &[("S3_ACCESS_KEY", "k"), ("S3_SECRET_KEY", "s")][..],
            &[("AWS_ACCESS_KEY_ID", "k"), ("AWS_SECRET_ACCESS_KEY", "s")][..],
        ] {
            let err = open(vars).explain(refused()).unwrap_err().to_string();
            assert!(!err.contains("credentials"), "{vars:?}: {err}");
        }
    }

    #[test]
    fn a_missing_object_is_not_found_naming_it() {
        let object = "http://127.0.0.1:1/bucket/ds/0";
        let err = object_store::Error::NotFound {
            path: "ds/0".into(),
            source: "404".into(),
        };
        let Failure::Permanent(err) = failure(err, object, &[], "GET ds/0") else {
            panic!("not permanent");
        };
        assert_eq!(err.remote_kind(), Some(RemoteKind::NotFound));
        assert!(err.to_string().contains(object), "{err}");
    }

    #[test]
    fn a_refused_server_is_a_remote_error_naming_the_object() {
        // Nothing listens on port 1: connection refused, after the retries.
        let policy = RetryPolicy {
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(1),
            ..RetryPolicy::new(NetworkOptions {
                retries: 1,
                ..NetworkOptions::default()
            })
        };
        let store = S3Objects::open_with(
            "http://127.0.0.1:1",
            "bucket",
            vars(&[("S3_ACCESS_KEY", "k"), ("S3_SECRET_KEY", "s3cr3t-value")]),
            policy,
        )
        .unwrap();
        let err = store.get("ds/0", None).unwrap_err();
        assert_eq!(
            err.remote_kind(),
            Some(RemoteKind::ConnectionRefused),
            "{err}"
        );
        let message = err.to_string();
        assert!(
            message.contains("http://127.0.0.1:1/bucket/ds/0"),
            "{message}"
        );
        assert!(message.contains("2 attempts"), "{message}");
        assert!(!message.contains("s3cr3t-value"), "{message}");
        let err = store.put("ds/0", vec![1, 2, 3]).unwrap_err();
        assert_eq!(
            err.remote_kind(),
            Some(RemoteKind::ConnectionRefused),
            "{err}"
        );
        let err = store
            .get_many(&[("a".into(), None), ("b".into(), None)])
            .unwrap_err();
        assert!(err.to_string().contains("GET a"), "{err}");
        assert_eq!(store.metrics(), IoMetricsSnapshot::default());
    }
}
