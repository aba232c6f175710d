//! What the cache needs of the system beyond `std`: the host's name, whether a process
//! lives, an exclusive `flock`, unique names and clocks.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// This host's name, reduced to `[A-Za-z0-9_-]` (at most 64 of them) so that it can
/// start a file name whose parts are separated by dots.
pub(super) fn host_name() -> &'static str {
    static HOST: OnceLock<String> = OnceLock::new();
    HOST.get_or_init(|| {
        let mut buf = [0u8; 256];
        // SAFETY: gethostname writes at most `buf.len()` bytes into `buf`, a live local
        // array valid for writes of that many bytes for the whole call.
        let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
        let raw = if rc == 0 {
            let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
            String::from_utf8_lossy(&buf[..end]).into_owned()
        } else {
            String::new()
        };
        sanitize_host(&raw)
    })
}

/// `raw` as it appears in file names: characters other than ASCII letters, digits, `-`
/// and `_` become `_`; at most 64 of them; `localhost` when empty.
pub(super) fn sanitize_host(raw: &str) -> String {
    let name: String = raw
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if name.is_empty() {
        "localhost".to_string()
    } else {
        name
    }
}

/// Whether process `pid` of this host may still live: false only when `kill(pid, 0)`
/// says there is no such process (ESRCH). A pid that is not a single process's (0, or
/// too large) is taken as alive, so nothing of it is ever deleted as a dead writer's.
pub(super) fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return true;
    };
    if pid <= 0 {
        return true;
    }
    // SAFETY: signal 0 is not sent: kill only checks that the process exists and may be
    // signalled. `pid > 0` names one process, never a process group; no memory is
    // passed.
    let rc = unsafe { libc::kill(pid, 0) };
    rc == 0 || io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Takes an exclusive `flock` on `file`: waiting for it when `wait`, else `Ok(false)`
/// when another holds it. The lock goes with the file's last descriptor.
pub(super) fn lock_exclusive(file: &File, wait: bool) -> io::Result<bool> {
    let operation = if wait {
        libc::LOCK_EX
    } else {
        libc::LOCK_EX | libc::LOCK_NB
    };
    loop {
        // SAFETY: flock takes a descriptor, which `file` keeps open for the whole call;
        // no memory is passed.
        let rc = unsafe { libc::flock(file.as_raw_fd(), operation) };
        if rc == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => {}
            Some(libc::EWOULDBLOCK) if !wait => return Ok(false),
            _ => return Err(e),
        }
    }
}

/// A token unlikely to repeat on any host: 16 hex digits from the time, the process,
/// a per-process counter and the thread. Callers still create files with `O_EXCL`.
pub(super) fn unique_token() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let thread = format!("{:?}", std::thread::current().id());
    let mut seed = Vec::with_capacity(64);
    seed.extend_from_slice(&nanos.to_le_bytes());
    seed.extend_from_slice(&std::process::id().to_le_bytes());
    seed.extend_from_slice(&n.to_le_bytes());
    seed.extend_from_slice(thread.as_bytes());
    seed.extend_from_slice(host_name().as_bytes());
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&seed))
}

/// The name of user `uid` from the user database (`getpwuid_r`), if it has one.
pub(super) fn user_name(uid: u32) -> Option<String> {
    let mut size = 1024usize;
    loop {
        let mut buf: Vec<libc::c_char> = vec![0; size];
        // SAFETY: `passwd` is a C struct of integers and pointers, for which all zero
        // bits are a valid value.
        let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: every pointer is to a live local (`entry`, `found`) or to `buf`, valid
        // for writes of `buf.len()` bytes; getpwuid_r writes only there, and sets
        // `found` to `&entry` or to null.
        let rc =
            unsafe { libc::getpwuid_r(uid, &mut entry, buf.as_mut_ptr(), buf.len(), &mut found) };
        if rc == libc::ERANGE && size < 1 << 20 {
            size *= 4;
            continue;
        }
        if rc != 0 || found.is_null() || entry.pw_name.is_null() {
            return None;
        }
        // SAFETY: on success `pw_name` points to a NUL-terminated string inside `buf`,
        // which lives until the end of this block.
        let name = unsafe { std::ffi::CStr::from_ptr(entry.pw_name) };
        return Some(name.to_string_lossy().into_owned());
    }
}

/// A user as messages name one: `user bob (uid 1001)`, or `uid 1001` without a name.
pub(super) fn describe_user(uid: u32) -> String {
    match user_name(uid) {
        Some(name) => format!("user {name} (uid {uid})"),
        None => format!("uid {uid}"),
    }
}

/// Milliseconds on a monotonic clock (since the first call in this process).
pub(super) fn now_ms() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    let start = START.get_or_init(Instant::now);
    u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Seconds since the Unix epoch of `time` (0 before it).
pub(super) fn unix_seconds(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// Who wrote a temporary or stats file, from its name `<host>.<pid>.<token>.<kind>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Writer {
    /// The writer's host, as [`host_name`] gave it.
    pub(super) host: String,
    /// The writer's process id.
    pub(super) pid: u32,
}

impl Writer {
    /// The writer of a file named `<host>.<pid>.<token>.<kind>`, if the name is one.
    pub(super) fn from_name(name: &str, kind: &str) -> Option<Writer> {
        let stem = name.strip_suffix(kind)?.strip_suffix('.')?;
        let mut parts = stem.split('.');
        let (host, pid, token) = (parts.next()?, parts.next()?, parts.next()?);
        if parts.next().is_some() || host.is_empty() || token.is_empty() {
            return None;
        }
        Some(Writer {
            host: host.to_string(),
            pid: pid.parse().ok()?,
        })
    }

    /// Whether this writer is a process of this host that no longer exists.
    pub(super) fn is_dead(&self) -> bool {
        self.host == host_name() && !process_alive(self.pid)
    }
}

/// A file name `<host>.<pid>.<token>.<kind>` for a file this process writes.
pub(super) fn own_name(kind: &str) -> String {
    format!(
        "{}.{}.{}.{kind}",
        host_name(),
        std::process::id(),
        unique_token()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_fit_in_dotted_file_names() {
        assert_eq!(sanitize_host("node1.cern.ch"), "node1_cern_ch");
        assert_eq!(sanitize_host(""), "localhost");
        assert_eq!(sanitize_host(&"a".repeat(100)).len(), 64);
        let host = host_name();
        assert!(!host.is_empty() && !host.contains('.'), "{host}");
        let name = own_name("tmp");
        let writer = Writer::from_name(&name, "tmp").unwrap();
        assert_eq!(writer.host, host);
        assert_eq!(writer.pid, std::process::id());
        assert!(!writer.is_dead());
        assert_eq!(Writer::from_name(&name, "stats"), None);
        assert_eq!(Writer::from_name("h.12.tok.tmp", "tmp").unwrap().pid, 12);
        assert_eq!(Writer::from_name("h.x.tok.tmp", "tmp"), None);
        assert_eq!(Writer::from_name("h.1.2.3.tmp", "tmp"), None);
        assert_ne!(unique_token(), unique_token());
    }

    #[test]
    fn users_are_named_from_the_user_database() {
        assert_eq!(user_name(0).as_deref(), Some("root"));
        assert_eq!(describe_user(0), "user root (uid 0)");
        // A uid no database holds.
        assert_eq!(user_name(4_000_000_123), None);
        assert_eq!(describe_user(4_000_000_123), "uid 4000000123");
    }

    #[test]
    fn a_finished_process_is_dead_and_this_one_alive() {
        assert!(process_alive(std::process::id()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Alive (or a zombie, which kill still finds) until it is reaped.
        assert!(process_alive(pid));
        child.wait().unwrap();
        assert!(!process_alive(pid));
        // Never a group or every process.
        assert!(process_alive(0));
        assert!(process_alive(u32::MAX));
        let dead = Writer {
            host: host_name().to_string(),
            pid,
        };
        assert!(dead.is_dead());
        let elsewhere = Writer {
            host: "another-host".to_string(),
            pid,
        };
        assert!(!elsewhere.is_dead(), "another host's processes are unknown");
    }

    #[test]
    fn the_exclusive_lock_excludes_until_released() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("lock");
        let a = File::create(&path).unwrap();
        let b = File::open(&path).unwrap();
        assert!(lock_exclusive(&a, false).unwrap());
        assert!(
            !lock_exclusive(&b, false).unwrap(),
            "held by another descriptor"
        );
        drop(a);
        assert!(lock_exclusive(&b, false).unwrap());
        let c = File::open(&path).unwrap();
        let waiter = std::thread::spawn(move || lock_exclusive(&c, true).unwrap());
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!waiter.is_finished(), "a waiting lock waits");
        drop(b);
        assert!(waiter.join().unwrap());
    }
}
