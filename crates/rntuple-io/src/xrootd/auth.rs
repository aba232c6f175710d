//! Credentials for `kXR_auth`: `unix` (user and group names) and `ztn` (a WLCG bearer
//! token, sent only over TLS). Tokens never appear in messages.

use std::path::{Path, PathBuf};

/// The largest token file read.
const MAX_TOKEN_BYTES: u64 = 64 << 10;

/// The credentials for `protocol`, or `None` (with the reason pushed to `failures`) if
/// this client cannot offer them. `token`: the bearer token to use instead of searching.
pub(super) fn credentials(
    protocol: &str,
    encrypted: bool,
    token: Option<&str>,
    failures: &mut Vec<String>,
) -> Option<Vec<u8>> {
    match protocol {
        "unix" => Some(unix_credentials()),
        "ztn" if !encrypted => {
            failures.push("ztn: tokens are only sent over TLS (use roots://)".into());
            None
        }
        "ztn" => match token.map_or_else(find_token, |t| Ok(t.to_string())) {
            Ok(token) => Some(ztn_credentials(&token)),
            Err(why) => {
                failures.push(format!("ztn: {why}"));
                None
            }
        },
        _ => None,
    }
}

/// `unix` credentials: `"unix\0" user [" " group] "\0"`.
pub(super) fn unix_credentials() -> Vec<u8> {
    let ids = effective_ids();
    let user = ids
        .and_then(|(uid, _)| name_of(Path::new("/etc/passwd"), uid))
        .or_else(crate::credentials::user_variable)
        .unwrap_or_else(|| "nobody".to_string());
    let group = ids.and_then(|(_, gid)| name_of(Path::new("/etc/group"), gid));
    let mut out = b"unix\0".to_vec();
    out.extend_from_slice(user.as_bytes());
    if let Some(g) = group {
        out.push(b' ');
        out.extend_from_slice(g.as_bytes());
    }
    out.push(0);
    out
}

/// The user name to log in with: the effective user's name, else `$USER`.
pub(super) fn login_name() -> String {
    effective_ids()
        .and_then(|(uid, _)| name_of(Path::new("/etc/passwd"), uid))
        .or_else(crate::credentials::user_variable)
        .unwrap_or_else(|| "nobody".to_string())
}

/// `ztn` credentials: header `"ztn\0"`, version 0, `'T'`, 2 reserved bytes, the token
/// length (with its NUL) as a big-endian u16, then the token and a NUL.
pub(super) fn ztn_credentials(token: &str) -> Vec<u8> {
    let mut out = b"ztn\0".to_vec();
    out.extend_from_slice(&[0, b'T', 0, 0]);
    let len = u16::try_from(token.len() + 1).unwrap_or(u16::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(token.as_bytes());
    out.push(0);
    out
}

/// The bearer token, found as WLCG specifies: `$BEARER_TOKEN`, the file
/// `$BEARER_TOKEN_FILE`, `$XDG_RUNTIME_DIR/bt_u<uid>`, `/tmp/bt_u<uid>`.
pub(super) fn find_token() -> Result<String, String> {
    find_token_in(
        &|name| crate::credentials::token_variable(name).and_then(|v| v.into_string().ok()),
        effective_ids().map(|(u, _)| u),
    )
}

fn find_token_in(env: &dyn Fn(&str) -> Option<String>, uid: Option<u32>) -> Result<String, String> {
    if let Some(t) = env("BEARER_TOKEN").and_then(|t| strip_token(&t)) {
        return Ok(t);
    }
    let mut files: Vec<PathBuf> = Vec::new();
    if let Some(f) = env("BEARER_TOKEN_FILE").filter(|f| !f.is_empty()) {
        files.push(f.into());
    }
    if let Some(uid) = uid {
        if let Some(dir) = env("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
            files.push(Path::new(&dir).join(format!("bt_u{uid}")));
        }
        files.push(format!("/tmp/bt_u{uid}").into());
    }
    for file in &files {
        match std::fs::metadata(file) {
            Err(_) => continue,
            Ok(m) if m.len() > MAX_TOKEN_BYTES => {
                return Err(format!("token file {} is too large", file.display()))
            }
            Ok(_) => {}
        }
        let text = std::fs::read_to_string(file)
            .map_err(|e| format!("cannot read token file {}: {e}", file.display()))?;
        if let Some(t) = strip_token(&text) {
            return Ok(t);
        }
    }
    Err("no token found (BEARER_TOKEN, BEARER_TOKEN_FILE, $XDG_RUNTIME_DIR/bt_u<uid>, /tmp/bt_u<uid>)".into())
}

/// The token without surrounding white space, or `None` if empty.
fn strip_token(raw: &str) -> Option<String> {
    let t = raw.trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// The effective user and group ids of this process (the owner of `/proc/self`).
fn effective_ids() -> Option<(u32, u32)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata("/proc/self").ok()?;
        Some((m.uid(), m.gid()))
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// The name with numeric id `id` in a `name:x:id:...` file (`/etc/passwd`, `/etc/group`).
fn name_of(file: &Path, id: u32) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    name_in(&text, id)
}

fn name_in(text: &str, id: u32) -> Option<String> {
    text.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let _password = fields.next()?;
        let found: u32 = fields.next()?.parse().ok()?;
        (found == id && !name.is_empty()).then(|| name.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_credentials_layout() {
        let c = unix_credentials();
        assert!(c.starts_with(b"unix\0"));
        assert_eq!(c.last(), Some(&0));
        let names = std::str::from_utf8(&c[5..c.len() - 1]).unwrap();
        assert!(!names.is_empty() && !names.contains('\0'), "{names:?}");
    }

    #[test]
    fn ztn_credentials_layout() {
        assert_eq!(
            ztn_credentials("abc"),
            b"ztn\0\0T\0\0\0\x04abc\0".to_vec(),
            "header, version 0, 'T', reserved, length 4 (with the NUL), token, NUL"
        );
    }

    #[test]
    fn names_from_passwd_lines() {
        let passwd = "root:x:0:0:root:/root:/bin/bash\nbad line\nalice:x:1000:1000::/h:/bin/sh\n";
        assert_eq!(name_in(passwd, 1000).as_deref(), Some("alice"));
        assert_eq!(name_in(passwd, 0).as_deref(), Some("root"));
        assert_eq!(name_in(passwd, 5), None);
    }

    #[test]
    fn token_discovery_order() {
        let dir = std::env::temp_dir().join(format!("rntuple-bt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("tok");
        std::fs::write(&file, "  from-file\n").unwrap();
        std::fs::write(dir.join("bt_u4242"), "from-xdg\n").unwrap();
        let dir_s = dir.to_string_lossy().to_string();
        let file_s = file.to_string_lossy().to_string();

        let env = |vars: &'static [&'static str]| {
            let dir_s = dir_s.clone();
            let file_s = file_s.clone();
            move |name: &str| -> Option<String> {
                if !vars.contains(&name) {
                    return None;
                }
                match name {
                    "BEARER_TOKEN" => Some(" from-env ".to_string()),
                    "BEARER_TOKEN_FILE" => Some(file_s.clone()),
                    "XDG_RUNTIME_DIR" => Some(dir_s.clone()),
                    _ => None,
                }
            }
        };
        let all = env(&["BEARER_TOKEN", "BEARER_TOKEN_FILE", "XDG_RUNTIME_DIR"]);
        assert_eq!(find_token_in(&all, Some(4242)).unwrap(), "from-env");
        let no_env = env(&["BEARER_TOKEN_FILE", "XDG_RUNTIME_DIR"]);
        assert_eq!(find_token_in(&no_env, Some(4242)).unwrap(), "from-file");
        let xdg = env(&["XDG_RUNTIME_DIR"]);
        assert_eq!(find_token_in(&xdg, Some(4242)).unwrap(), "from-xdg");
        let none = env(&[]);
        let err = find_token_in(&none, Some(4_000_000_000)).unwrap_err();
        assert!(err.contains("no token found"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
