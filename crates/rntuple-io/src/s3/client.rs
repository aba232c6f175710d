//! The S3 client of [`super::S3Source`] and of the object stores: its configuration
//! (`AWS_*` settings, the policy's timeouts, one attempt per call) and the HTTP
//! connector that gives its requests the first-byte and low-speed limits.

use crate::net::TrackConnects;
use crate::RetryPolicy;
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::client::{
    ClientOptions, HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse,
    HttpResponseBody, HttpService,
};
use object_store::{BackoffConfig, ClientConfigKey, RetryConfig};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// The S3 client's configuration: the `AWS_*` settings, the policy's timeouts and
/// retries (over any `AWS_*` timeout), then the bucket and the addressing style.
pub(crate) fn s3_builder(
    bucket: &str,
    aws_vars: &[(String, String)],
    policy: RetryPolicy,
) -> AmazonS3Builder {
    // Retries are RetryPolicy::run's, as for every remote source: deterministic
    // doubling waits. object_store's own loop jitters its waits (each one random between
    // the first wait and twice the last), which for 5 attempts ends the retries after
    // anything from 0.4 s on instead of the policy's 1.5 s; so it makes one attempt.
    let retry = RetryConfig {
        backoff: BackoffConfig::default(),
        max_retries: 0,
        retry_timeout: policy.network.connect_timeout + policy.network.first_byte_timeout,
    };
    let mut builder = AmazonS3Builder::new().with_retry(retry);
    // The same reading of AWS_* names as AmazonS3Builder::from_env.
    for (key, value) in aws_vars {
        if key.starts_with("AWS_") {
            if let Ok(config_key) = key.to_ascii_lowercase().parse() {
                builder = builder.with_config(config_key, value);
            }
        }
    }
    // The HTTP client is S3Connector's: it bounds connections by this connect timeout
    // (object_store asks for a shorter one for the instance metadata service) and
    // requests by the first-byte and idle timeouts.
    let connect = format!("{}ms", policy.network.connect_timeout.as_millis());
    builder = builder
        .with_config(
            AmazonS3ConfigKey::Client(ClientConfigKey::ConnectTimeout),
            connect,
        )
        .with_http_connector(S3Connector {
            connect_timeout: policy.network.connect_timeout,
        });
    let style_chosen = aws_vars
        .iter()
        .any(|(key, _)| key == "AWS_VIRTUAL_HOSTED_STYLE_REQUEST");
    let custom_endpoint = [AmazonS3ConfigKey::Endpoint, AmazonS3ConfigKey::S3Endpoint]
        .iter()
        .any(|key| builder.get_config_value(key).is_some());
    if !style_chosen {
        // Path-style for custom endpoints; virtual-hosted on AWS unless the bucket
        // name has dots (the wildcard certificate covers one label only).
        let virtual_hosted = !custom_endpoint && !bucket.contains('.');
        builder = builder.with_virtual_hosted_style_request(virtual_hosted);
    }
    builder.with_bucket_name(bucket)
}

/// Makes object_store's HTTP clients: reqwest clients with the [`TrackConnects`] layer
/// (so that the first-byte timeout starts once a request's connection is ready), the
/// connect timeout, and the settings of object_store's options that matter for reading
/// (plain HTTP allowed, invalid certificates accepted, proxy, user agent, HTTP/1 or 2,
/// connection pool). No total deadline: the first-byte and idle timeouts are applied
/// around each request ([`Shared::get_range`]).
#[derive(Debug, Clone, Copy)]
struct S3Connector {
    connect_timeout: Duration,
}

impl HttpConnector for S3Connector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let value = |key: ClientConfigKey| options.get_config_value(&key);
        let flag =
            |key: ClientConfigKey| value(key).is_some_and(|v| v.eq_ignore_ascii_case("true"));
        let fail = |e: reqwest::Error| object_store::Error::Generic {
            store: "S3",
            source: Box::new(e),
        };
        // object_store asks for its own connect timeout for some clients (1 s for the
        // instance metadata service); the S3 client's is ours (see `s3_builder`).
        let connect = value(ClientConfigKey::ConnectTimeout)
            .and_then(|v| parse_duration(&v))
            .map_or(self.connect_timeout, |d| d.min(self.connect_timeout));
        let mut builder = reqwest::Client::builder()
            .connect_timeout(connect)
            .connector_layer(TrackConnects)
            .https_only(!flag(ClientConfigKey::AllowHttp))
            .user_agent(
                value(ClientConfigKey::UserAgent)
                    .unwrap_or_else(|| concat!("rntuple/", env!("CARGO_PKG_VERSION")).into()),
            );
        if let Some(headers) = options.get_default_headers() {
            builder = builder.default_headers(headers.clone());
        }
        if let Some(url) = value(ClientConfigKey::ProxyUrl) {
            let mut proxy = reqwest::Proxy::all(url).map_err(fail)?;
            if let Some(excludes) = value(ClientConfigKey::ProxyExcludes) {
                proxy = proxy.no_proxy(reqwest::NoProxy::from_string(&excludes));
            }
            if let Some(pem) = value(ClientConfigKey::ProxyCaCertificate) {
                builder = builder.add_root_certificate(
                    reqwest::Certificate::from_pem(pem.as_bytes()).map_err(fail)?,
                );
            }
            builder = builder.proxy(proxy);
        }
        if flag(ClientConfigKey::AllowInvalidCertificates) {
            builder = builder.danger_accept_invalid_certs(true);
        }
        if flag(ClientConfigKey::Http2Only) {
            builder = builder.http2_prior_knowledge();
        } else if value(ClientConfigKey::Http1Only).is_none_or(|v| v.eq_ignore_ascii_case("true")) {
            builder = builder.http1_only();
        }
        if let Some(idle) = value(ClientConfigKey::PoolIdleTimeout).and_then(|v| parse_duration(&v))
        {
            builder = builder.pool_idle_timeout(idle);
        }
        if let Some(max) = value(ClientConfigKey::PoolMaxIdlePerHost).and_then(|v| v.parse().ok()) {
            builder = builder.pool_max_idle_per_host(max);
        }
        let client = builder.build().map_err(fail)?;
        Ok(HttpClient::new(S3Http(client)))
    }
}

/// `500ms`, `10s`, `1.5s` (what object_store prints and `s3_builder` writes).
fn parse_duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    if let Some(ms) = text.strip_suffix("ms") {
        return ms.trim().parse().ok().map(Duration::from_millis);
    }
    let seconds: f64 = text.strip_suffix('s')?.trim().parse().ok()?;
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
}

/// object_store's requests on one of [`S3Connector`]'s clients.
#[derive(Debug)]
struct S3Http(reqwest::Client);

/// The kind object_store's retry logic and messages give a reqwest error.
fn http_error(e: reqwest::Error) -> HttpError {
    let kind = if e.is_timeout() {
        HttpErrorKind::Timeout
    } else if e.is_connect() {
        HttpErrorKind::Connect
    } else if e.is_body() || e.is_decode() {
        HttpErrorKind::Interrupted
    } else {
        HttpErrorKind::Request
    };
    HttpError::new(kind, e.without_url())
}

impl HttpService for S3Http {
    // What `#[async_trait]` makes of `async fn call(&self, req) -> Result<..>`.
    fn call<'life0, 'async_trait>(
        &'life0 self,
        req: HttpRequest,
    ) -> Pin<
        Box<
            dyn Future<Output = std::result::Result<HttpResponse, HttpError>> + Send + 'async_trait,
        >,
    >
    where
        'life0: 'async_trait,
        Self: 'async_trait,
    {
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            let url = reqwest::Url::parse(&parts.uri.to_string())
                .map_err(|e| HttpError::new(HttpErrorKind::Request, e))?;
            let mut request = reqwest::Request::new(parts.method, url);
            *request.headers_mut() = parts.headers;
            // By its length: object_store's `is_empty` is true for an upload's payload
            // that holds bytes.
            if body.content_length() > 0 {
                // Credential requests carry one buffer; uploads (`io::objects`) a
                // payload held in memory, sent as one buffer.
                let bytes = match body.as_bytes() {
                    Some(bytes) => bytes.clone(),
                    None => http_body_util::BodyExt::collect(body).await?.to_bytes(),
                };
                *request.body_mut() = Some(reqwest::Body::from(bytes));
            }
            let response = self.0.execute(request).await.map_err(http_error)?;
            let (parts, body) = http::Response::<reqwest::Body>::from(response).into_parts();
            let body = http_body_util::BodyExt::map_err(body, http_error);
            Ok(HttpResponse::from_parts(parts, HttpResponseBody::new(body)))
        })
    }
}
