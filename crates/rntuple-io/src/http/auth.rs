//! Who an HTTP(S) request says it is, and whom it trusts: the bearer token found as the
//! WLCG tools find it, and the grid's CA directory.

use crate::error::{Error, Result};
use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The most bytes a bearer-token file may hold (real tokens are a few KiB).
const MAX_TOKEN_FILE: u64 = 64 << 10;

/// The bearer token of this process, found as the WLCG Bearer Token Discovery document
/// says: `$BEARER_TOKEN`, else the file named by `$BEARER_TOKEN_FILE`, else
/// `$XDG_RUNTIME_DIR/bt_u<uid>`, else `/tmp/bt_u<uid>`. Surrounding white space is
/// removed; an empty token counts as none.
pub(crate) fn bearer_token_from_env() -> Result<Option<String>> {
    discover_bearer_token(crate::credentials::token_variable, current_uid())
}

/// The real user id of this process.
fn current_uid() -> u32 {
    // SAFETY: getuid has no preconditions, touches no memory of ours and cannot fail
    // (POSIX); tested against the owner of /proc/self below.
    unsafe { libc::getuid() }
}

fn discover_bearer_token(
    var: impl Fn(&str) -> Option<OsString>,
    uid: u32,
) -> Result<Option<String>> {
    let non_empty = |name: &str| var(name).filter(|v| !v.is_empty());
    if let Some(token) = non_empty("BEARER_TOKEN") {
        let token = token.to_string_lossy().trim().to_string();
        if !token.is_empty() {
            return Ok(Some(token));
        }
    }
    if let Some(path) = non_empty("BEARER_TOKEN_FILE") {
        // Named explicitly: a file that cannot be read is an error, not "no token".
        return read_token_file(Path::new(&path), "BEARER_TOKEN_FILE");
    }
    let mut candidates = Vec::new();
    if let Some(dir) = non_empty("XDG_RUNTIME_DIR") {
        candidates.push(PathBuf::from(dir).join(format!("bt_u{uid}")));
    }
    candidates.push(PathBuf::from(format!("/tmp/bt_u{uid}")));
    for path in candidates {
        if path.is_file() {
            return read_token_file(&path, "the default bearer token file");
        }
    }
    Ok(None)
}

fn read_token_file(path: &Path, origin: &str) -> Result<Option<String>> {
    let io_err = |source| Error::Io {
        what: format!("{} ({origin})", path.display()),
        source,
    };
    let mut text = String::new();
    std::fs::File::open(path)
        .map_err(io_err)?
        .take(MAX_TOKEN_FILE)
        .read_to_string(&mut text)
        .map_err(io_err)?;
    let token = text.trim();
    Ok((!token.is_empty()).then(|| token.to_string()))
}

/// Certificates from the files `*.pem` in `$X509_CERT_DIR` (the grid's CA directory), to
/// trust besides the system's roots (`SSL_CERT_FILE`/`SSL_CERT_DIR` are honoured by the
/// system-root loader itself). Files that are not certificates are skipped.
pub(super) fn grid_ca_certificates() -> Vec<reqwest::Certificate> {
    let Some(dir) = crate::credentials::x509_cert_dir() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut certificates = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "pem") {
            continue;
        }
        let mut pem = Vec::new();
        let read = std::fs::File::open(&path).and_then(|f| f.take(1 << 20).read_to_end(&mut pem));
        if read.is_ok() {
            if let Ok(found) = reqwest::Certificate::from_pem_bundle(&pem) {
                certificates.extend(found);
            }
        }
    }
    certificates
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn bearer_token_discovery_follows_the_wlcg_order() {
        let dir = std::env::temp_dir().join(format!("rntuple-bt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let uid = 4_000_000_123; // no /tmp/bt_u file exists for it
        let file = dir.join("token");
        std::fs::write(&file, "  from-file\n").unwrap();
        std::fs::write(dir.join(format!("bt_u{uid}")), "from-xdg\n").unwrap();
        let env = |pairs: &[(&str, &str)]| {
            let map: HashMap<String, OsString> = pairs
                .iter()
                .map(|(k, v)| (k.to_string(), OsString::from(v)))
                .collect();
            move |name: &str| map.get(name).cloned()
        };
        let file_s = file.to_str().unwrap();
        let dir_s = dir.to_str().unwrap();
        let all = [
            ("BEARER_TOKEN", " direct "),
            ("BEARER_TOKEN_FILE", file_s),
            ("XDG_RUNTIME_DIR", dir_s),
        ];
        let found = |pairs: &[(&str, &str)]| discover_bearer_token(env(pairs), uid).unwrap();
        assert_eq!(found(&all).as_deref(), Some("direct"));
        assert_eq!(found(&all[1..]).as_deref(), Some("from-file"));
        assert_eq!(found(&all[2..]).as_deref(), Some("from-xdg"));
        assert_eq!(found(&[("BEARER_TOKEN", "  ")]), None);
        assert_eq!(found(&[]), None);
        // An explicitly named file that is missing is an error naming the file only.
        let err = discover_bearer_token(env(&[("BEARER_TOKEN_FILE", "/nonexistent/tok")]), uid)
            .unwrap_err()
            .to_string();
        assert!(err.contains("/nonexistent/tok"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn current_uid_is_the_owner_of_this_process() {
        use std::os::unix::fs::MetadataExt;
        let owner = std::fs::metadata("/proc/self").unwrap().uid();
        assert_eq!(current_uid(), owner);
    }
}
