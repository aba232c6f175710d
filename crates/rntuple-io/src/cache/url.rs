//! The key of a URL in the cache: the URL as it names a file, without what names the
//! reader (credentials, signatures, tokens) or how it connects (client options).
//!
//! Two spellings of one file share an entry: scheme and host in lower case, the default
//! port left out, query parameters sorted, an XRootD path's leading slashes as one. A
//! credential never reaches the key (which is hashed anyway) nor any file of the cache
//! (the `url` file holds [`redact_url`](crate::redact_url)'s form).

/// Query parameters whose name starts with one of these (compared in lower case) carry
/// credentials or signatures (S3 and GCS presigned URLs, XRootD's security options), or
/// set up the client (`xrdcl.`): they never name another file.
const DROPPED_PREFIXES: [&str; 4] = ["x-amz-", "x-goog-", "xrd.", "xrdcl."];

/// Query parameters with these names (compared in lower case) carry credentials.
const DROPPED_NAMES: [&str; 7] = [
    "authz",
    "signature",
    "expires",
    "awsaccesskeyid",
    "token",
    "access_token",
    "bearer_token",
];

/// The schemes of XRootD, whose paths may start with any number of slashes.
fn is_xrootd(scheme: &str) -> bool {
    matches!(scheme, "root" | "roots" | "xroot" | "xroots")
}

/// The port a scheme uses when the URL names none.
fn default_port(scheme: &str) -> Option<&'static str> {
    match scheme {
        "http" => Some("80"),
        "https" => Some("443"),
        s if is_xrootd(s) => Some("1094"),
        _ => None,
    }
}

/// `url` normalized for the cache key: scheme and host in lower case, user and
/// password removed, the scheme's default port removed, the fragment removed, query
/// parameters that carry credentials or client options removed and the others sorted.
/// For `root://`, `roots://`, `xroot://` and `xroots://` the path's leading slashes
/// become one, and a proxy's path that is itself a URL (`root://proxy//root://origin/f`)
/// is kept as that URL, normalized the same way. A string without `://` is returned as
/// it is.
pub(crate) fn normalize_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let scheme = scheme.to_ascii_lowercase();
    let rest = rest.split_once('#').map_or(rest, |(before, _)| before);
    let (location, query) = match rest.split_once('?') {
        Some((location, query)) => (location, Some(query)),
        None => (rest, None),
    };
    let (authority, path) = location.split_at(location.find('/').unwrap_or(location.len()));
    let host = authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host)
        .to_ascii_lowercase();
    let host = match default_port(&scheme).and_then(|port| {
        host.strip_suffix(port)
            .and_then(|h| h.strip_suffix(':'))
            .map(str::to_string)
    }) {
        Some(without_port) => without_port,
        None => host,
    };
    let path = if is_xrootd(&scheme) {
        xrootd_path(path)
    } else {
        path.to_string()
    };
    format!("{scheme}://{host}{path}{}", normalize_query(query))
}

/// An XRootD path with its leading slashes as one; a path that is a URL (a proxy's
/// origin) normalized as one.
fn xrootd_path(path: &str) -> String {
    let inner = path.trim_start_matches('/');
    if inner.is_empty() {
        return String::new();
    }
    let is_url = inner.split_once("://").is_some_and(|(scheme, _)| {
        !scheme.is_empty()
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    if is_url {
        format!("/{}", normalize_url(inner))
    } else {
        format!("/{inner}")
    }
}

/// The query without credentials and client options, its parameters sorted: `""` when
/// none is left, else `?` and the parameters.
fn normalize_query(query: Option<&str>) -> String {
    let mut kept: Vec<&str> = query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .filter(|p| {
            let name = p.split_once('=').map_or(*p, |(name, _)| name);
            let name = name.to_ascii_lowercase();
            !(DROPPED_NAMES.contains(&name.as_str())
                || DROPPED_PREFIXES
                    .iter()
                    .any(|prefix| name.starts_with(prefix)))
        })
        .collect();
    if kept.is_empty() {
        return String::new();
    }
    kept.sort_unstable();
    format!("?{}", kept.join("&"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_one_file_share_a_key() {
        let same = [
            (
                "HTTPS://Example.COM/Data/f.root",
                "https://example.com/Data/f.root",
            ),
            (
                "https://alice:s3cret@example.com:443/a.root#frag",
                "https://example.com/a.root",
            ),
            ("http://h:80/a.root", "http://h/a.root"),
            ("http://h:8080/a.root", "http://h:8080/a.root"),
            ("root://h//a/b.root", "root://h/a/b.root"),
            ("root://h:1094///a/b.root", "root://h/a/b.root"),
            ("roots://u@H//a", "roots://h/a"),
            ("xroot://h/a", "xroot://h/a"),
            ("https://h/f?b=2&a=1", "https://h/f?a=1&b=2"),
            ("https://h/f?&a=1&", "https://h/f?a=1"),
            ("s3://bucket/key/f.root", "s3://bucket/key/f.root"),
            ("/local/path.root", "/local/path.root"),
        ];
        for (url, key) in same {
            assert_eq!(normalize_url(url), key, "{url}");
        }
        // The path of HTTP keeps its slashes and its case: they may name another file.
        assert_ne!(normalize_url("https://h//a"), normalize_url("https://h/a"));
        assert_ne!(normalize_url("https://h/A"), normalize_url("https://h/a"));
        // A parameter that is not a credential names another object.
        assert_ne!(
            normalize_url("https://h/f?versionId=1"),
            normalize_url("https://h/f?versionId=2")
        );
    }

    #[test]
    fn credentials_never_reach_the_key() {
        let secrets = [
            "https://bob:hunter2@h/f.root?X-Amz-Signature=SECRETSIG&X-Amz-Credential=AKIDSECRET&x-amz-date=1&X-Amz-Expires=60",
            "https://h/f.root?X-Goog-Signature=SECRETSIG&x-goog-credential=SECRET",
            "https://h/f.root?AWSAccessKeyId=AKIDSECRET&Signature=SECRETSIG&Expires=99",
            "https://h/f.root?token=SECRET&access_token=SECRET2&bearer_token=SECRET3",
            "root://h//f.root?authz=SECRET&xrd.wantprot=krb5&xrdcl.requuid=SECRET",
            "roots://user:SECRET@h//f.root?AUTHZ=Bearer%20SECRET",
            "root://proxy//root://u:SECRET@origin//f.root?authz=SECRET",
        ];
        for url in secrets {
            let key = normalize_url(url);
            for secret in ["SECRET", "hunter2", "bob", "AKID", "krb5", "u:"] {
                assert!(!key.contains(secret), "{url} -> {key}");
            }
            assert!(!key.contains('?'), "{url} -> {key}");
        }
        assert_eq!(
            normalize_url("https://h/f.root?X-Amz-Signature=s&part=3&X-Amz-Date=d"),
            "https://h/f.root?part=3"
        );
    }

    #[test]
    fn a_proxy_keeps_its_origin_url() {
        assert_eq!(
            normalize_url("root://Proxy:1094//root://Origin:1094//store/f.root"),
            "root://proxy/root://origin/store/f.root"
        );
        assert_eq!(
            normalize_url("root://proxy//root://origin//store/f.root"),
            normalize_url("root://proxy/root://origin/store/f.root")
        );
        // Another proxy, or the origin read directly, is another entry.
        assert_ne!(
            normalize_url("root://proxy//root://origin//f"),
            normalize_url("root://origin//f")
        );
        assert_eq!(
            normalize_url("root://proxy//https://origin:443/f"),
            "root://proxy/https://origin/f"
        );
    }
}
