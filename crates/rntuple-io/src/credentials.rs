//! Where credentials are discovered: the one module of the byte sources that reads the
//! process's environment for them (the settings are read in `settings.rs`, the other).
//! Credentials are not settings a caller passes: they belong to the user, and the
//! protocols' own conventions say where they live (`AWS_*` and ROOT's `S3_*` for S3, the
//! WLCG bearer token discovery, the grid's `X509_CERT_DIR`, `$USER`).

/// The `AWS_*` variables (S3 sources: keys, region, endpoint, session token, ...).
#[cfg(feature = "s3")]
pub(crate) fn aws_variables() -> impl Iterator<Item = (String, String)> {
    std::env::vars().filter(|(key, _)| key.starts_with("AWS_"))
}

/// The `AWS_*` and ROOT's `S3_*` variables (object stores on S3).
#[cfg(feature = "s3")]
pub(crate) fn object_store_variables() -> impl Iterator<Item = (String, String)> {
    std::env::vars().filter(|(key, _)| key.starts_with("AWS_") || key.starts_with("S3_"))
}

/// A variable of the bearer token discovery (`BEARER_TOKEN`, `BEARER_TOKEN_FILE`,
/// `XDG_RUNTIME_DIR`): the names its callers ask for, nothing else.
#[cfg(any(feature = "http", feature = "xrootd"))]
pub(crate) fn token_variable(name: &str) -> Option<std::ffi::OsString> {
    match name {
        "BEARER_TOKEN" | "BEARER_TOKEN_FILE" | "XDG_RUNTIME_DIR" => std::env::var_os(name),
        _ => None,
    }
}

/// The grid's CA directory, `$X509_CERT_DIR` (unset or empty: `None`).
#[cfg(any(feature = "http", feature = "xrootd"))]
pub(crate) fn x509_cert_dir() -> Option<std::ffi::OsString> {
    std::env::var_os("X509_CERT_DIR").filter(|d| !d.is_empty())
}

/// `$USER` (unset or empty: `None`), the user name where the system's files do not say.
#[cfg(feature = "xrootd")]
pub(crate) fn user_variable() -> Option<String> {
    std::env::var("USER").ok().filter(|u| !u.is_empty())
}
