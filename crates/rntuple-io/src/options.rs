//! How byte sources are opened: the network settings of remote sources (timeouts,
//! the low-speed limit, retries), from the environment, a program's defaults or a
//! caller's options; and who is told of a long transfer (a [`TransferObserver`]).

use super::cache::{parse_byte_size, CacheConfig};
use crate::error::{Error, Result};
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

/// How a remote source connects, waits and retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetworkOptions {
    /// The longest a connection may take to set up (TCP, TLS, the protocol's handshake).
    pub connect_timeout: Duration,
    /// The longest a request may wait for the first byte of its answer.
    pub first_byte_timeout: Duration,
    /// The longest an answer may stall between two bytes.
    pub idle_timeout: Duration,
    /// The low-speed limit, in bytes a second (0: none): an answer that brings fewer
    /// than `speed_limit * speed_time` bytes in any `speed_time` window counted from its
    /// first byte is given up (curl's `--speed-limit`), however it keeps moving.
    pub speed_limit: u64,
    /// The window of the low-speed limit (curl's `--speed-time`).
    pub speed_time: Duration,
    /// How often a request that failed for a reason that may pass (no connection, a
    /// timeout, a server error) is tried again.
    pub retries: u32,
}

impl Default for NetworkOptions {
    fn default() -> Self {
        NetworkOptions {
            connect_timeout: Duration::from_secs(10),
            first_byte_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(30),
            // A server crawling at 1 byte a second is given up after 10 s per attempt:
            // with the 3 retries and their backoff, within a minute.
            speed_limit: 1024,
            speed_time: Duration::from_secs(10),
            retries: 3,
        }
    }
}

/// The environment variables of [`NetworkOptions`], in seconds (fractions allowed) and
/// a count.
pub const CONNECT_TIMEOUT_VARIABLE: &str = "RNTUPLE_CONNECT_TIMEOUT";
/// See [`CONNECT_TIMEOUT_VARIABLE`].
pub const FIRST_BYTE_TIMEOUT_VARIABLE: &str = "RNTUPLE_FIRST_BYTE_TIMEOUT";
/// See [`CONNECT_TIMEOUT_VARIABLE`].
pub const IDLE_TIMEOUT_VARIABLE: &str = "RNTUPLE_IDLE_TIMEOUT";
/// See [`CONNECT_TIMEOUT_VARIABLE`].
pub const RETRIES_VARIABLE: &str = "RNTUPLE_RETRIES";
/// The low-speed limit in bytes a second (a size: `1024`, `10 KiB`; 0 turns it off).
pub const SPEED_LIMIT_VARIABLE: &str = "RNTUPLE_SPEED_LIMIT";
/// The window of the low-speed limit, in seconds.
pub const SPEED_TIME_VARIABLE: &str = "RNTUPLE_SPEED_TIME";

impl NetworkOptions {
    /// The defaults, with what `var` (the environment, `NetworkOptions::from_env`) sets:
    /// `RNTUPLE_CONNECT_TIMEOUT`, `RNTUPLE_FIRST_BYTE_TIMEOUT`, `RNTUPLE_IDLE_TIMEOUT`,
    /// `RNTUPLE_SPEED_TIME` (seconds), `RNTUPLE_SPEED_LIMIT` (bytes a second) and
    /// `RNTUPLE_RETRIES`. A value that does not parse is an error naming the variable.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<NetworkOptions> {
        let mut options = NetworkOptions::default();
        let set = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        if let Some(v) = set(CONNECT_TIMEOUT_VARIABLE) {
            options.connect_timeout = parse_seconds(&v, CONNECT_TIMEOUT_VARIABLE)?;
        }
        if let Some(v) = set(FIRST_BYTE_TIMEOUT_VARIABLE) {
            options.first_byte_timeout = parse_seconds(&v, FIRST_BYTE_TIMEOUT_VARIABLE)?;
        }
        if let Some(v) = set(IDLE_TIMEOUT_VARIABLE) {
            options.idle_timeout = parse_seconds(&v, IDLE_TIMEOUT_VARIABLE)?;
        }
        if let Some(v) = set(SPEED_LIMIT_VARIABLE) {
            options.speed_limit = parse_speed_limit(&v, SPEED_LIMIT_VARIABLE)?;
        }
        if let Some(v) = set(SPEED_TIME_VARIABLE) {
            options.speed_time = parse_seconds(&v, SPEED_TIME_VARIABLE)?;
        }
        if let Some(v) = set(RETRIES_VARIABLE) {
            options.retries = v.trim().parse().map_err(|_| {
                Error::InvalidArgument(format!(
                    "{RETRIES_VARIABLE}=\"{v}\": expected a whole number of retries (0 or more)"
                ))
            })?;
        }
        Ok(options)
    }
}

impl NetworkOptions {
    /// The attempts a request gets: the first one and [`NetworkOptions::retries`].
    pub fn attempts(&self) -> u32 {
        self.retries.saturating_add(1)
    }

    /// The value of the timeout `kind` (the low-speed limit: its window).
    pub fn timeout(&self, kind: TimeoutKind) -> Duration {
        match kind {
            TimeoutKind::Connect => self.connect_timeout,
            TimeoutKind::FirstByte => self.first_byte_timeout,
            TimeoutKind::Idle => self.idle_timeout,
            TimeoutKind::LowSpeed => self.speed_time,
        }
    }

    /// What running out of the timeout `kind` means, with its value and the setting
    /// that controls it (the low-speed limit: both of its values).
    pub fn describe(&self, kind: TimeoutKind) -> String {
        match kind {
            TimeoutKind::LowSpeed => format!(
                "fewer than {} bytes a second arrived over {} (low-speed limit, \
                 {SPEED_LIMIT_VARIABLE} and {SPEED_TIME_VARIABLE} or --speed-limit and \
                 --speed-time)",
                self.speed_limit,
                format_seconds(self.speed_time)
            ),
            _ => kind.describe(self.timeout(kind)),
        }
    }
}

/// A low-speed limit (`"1024"`, `"10 KiB"`, `"0"` for none) in bytes a second; else an
/// error naming `what` (a variable or an option).
pub fn parse_speed_limit(text: &str, what: &str) -> Result<u64> {
    parse_byte_size(text).map_err(|_| {
        Error::InvalidArgument(format!(
            "{what}=\"{text}\": expected bytes a second (1024, 10 KiB; 0 for no limit)"
        ))
    })
}

/// One of the timeouts of [`NetworkOptions`]: which one ran out, for messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeoutKind {
    /// [`NetworkOptions::connect_timeout`].
    Connect,
    /// [`NetworkOptions::first_byte_timeout`].
    FirstByte,
    /// [`NetworkOptions::idle_timeout`].
    Idle,
    /// The low-speed limit: [`NetworkOptions::speed_limit`] over
    /// [`NetworkOptions::speed_time`].
    LowSpeed,
}

impl TimeoutKind {
    /// Its name in messages: `"first-byte timeout"`.
    pub fn name(self) -> &'static str {
        match self {
            TimeoutKind::Connect => "connect timeout",
            TimeoutKind::FirstByte => "first-byte timeout",
            TimeoutKind::Idle => "idle timeout",
            TimeoutKind::LowSpeed => "low-speed limit",
        }
    }

    /// The environment variable that sets it.
    pub fn variable(self) -> &'static str {
        match self {
            TimeoutKind::Connect => CONNECT_TIMEOUT_VARIABLE,
            TimeoutKind::FirstByte => FIRST_BYTE_TIMEOUT_VARIABLE,
            TimeoutKind::Idle => IDLE_TIMEOUT_VARIABLE,
            TimeoutKind::LowSpeed => SPEED_TIME_VARIABLE,
        }
    }

    /// The option of the `rntuple` command that sets it.
    pub fn flag(self) -> &'static str {
        match self {
            TimeoutKind::Connect => "--connect-timeout",
            TimeoutKind::FirstByte => "--first-byte-timeout",
            TimeoutKind::Idle => "--idle-timeout",
            TimeoutKind::LowSpeed => "--speed-time",
        }
    }

    /// What running out of it after `value` means, with the setting that controls it:
    /// `no answer within 30 s (first-byte timeout, RNTUPLE_FIRST_BYTE_TIMEOUT or
    /// --first-byte-timeout)`. [`NetworkOptions::describe`] also names the low-speed
    /// limit's rate.
    pub fn describe(self, value: Duration) -> String {
        let what = match self {
            TimeoutKind::Connect => "no connection within",
            TimeoutKind::FirstByte => "no answer within",
            TimeoutKind::Idle => "the answer stalled for",
            TimeoutKind::LowSpeed => "the answer was slower than the low-speed limit over",
        };
        format!(
            "{what} {} ({}, {} or {})",
            format_seconds(value),
            self.name(),
            self.variable(),
            self.flag()
        )
    }
}

/// A duration for people: `30 s`, `0.5 s`, `1.25 s`.
pub fn format_seconds(duration: Duration) -> String {
    let seconds = duration.as_secs_f64();
    let text = if seconds >= 10.0 {
        format!("{seconds:.0}")
    } else {
        let text = format!("{seconds:.2}");
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    };
    format!("{text} s")
}

/// Seconds (`"30"`, `"2.5"`), more than 0 and at most a day, as a duration; else an error
/// naming `what` (a variable or an option).
pub fn parse_seconds(text: &str, what: &str) -> Result<Duration> {
    let bad = || {
        Error::InvalidArgument(format!(
            "{what}=\"{text}\": expected a number of seconds, more than 0 and at most 86400"
        ))
    };
    let seconds: f64 = text.trim().parse().map_err(|_| bad())?;
    if !(seconds > 0.0 && seconds <= 86_400.0) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// Who is told what a source does that takes long or could be faster: a front end
/// draws a progress bar and prints warnings. Called on the threads that read; the calls
/// must return quickly.
pub trait TransferObserver: Send + Sync {
    /// A long transfer of `what` (a URL without credentials) starts, `total` bytes when
    /// known: a whole file streamed from a server that ignores byte ranges. The returned
    /// value is told of its progress and dropped when it ends (complete or not).
    fn transfer(&self, what: &str, total: Option<u64>) -> Box<dyn Transfer>;
    /// A warning for the user (a read that works, but slowly, and why).
    fn warning(&self, message: &str);
}

/// One transfer a [`TransferObserver`] watches; dropped when it ends.
pub trait Transfer: Send {
    /// `bytes` more arrived.
    fn advance(&mut self, bytes: u64);
}

/// A [`TransferObserver`] to share among options (equal only to itself).
#[derive(Clone)]
pub struct Observer(pub Arc<dyn TransferObserver>);

impl PartialEq for Observer {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl std::fmt::Debug for Observer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Observer")
    }
}

/// How byte sources are opened, and the settings of the reads and writes through them:
/// every setting of the library as a value (the docs' table lists each with its variable
/// and default). Built with defaults (`SourceOptions::default()`), from the environment
/// (`SourceOptions::from_env`, what the command line and Python call) or by a program;
/// two files opened with different options are read each with its own.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SourceOptions {
    /// Timeouts and retries of remote sources.
    pub network: NetworkOptions,
    /// The cache of remote reads on local disk (`None`: none).
    pub cache: Option<CacheConfig>,
    /// Who is told of long transfers and slow paths (`None`: nobody; the warnings are
    /// then lost).
    pub observer: Option<Observer>,
    /// How far planned reads fetch ahead.
    pub read_ahead: ReadAhead,
    /// When planned reads of local files bypass the page cache.
    pub direct_io: DirectIo,
    /// Whether large decoded columns ask for transparent huge pages.
    pub huge_pages: bool,
    /// The directory holding the DAOS pools of the directory store (`None`: no DAOS
    /// store: this build has no libdaos).
    pub daos_dir: Option<PathBuf>,
    /// The page mapping of DAOS writes, as named (`per-page`, `per-cluster`; `None`:
    /// the writer's default); the writer checks the name.
    pub daos_mapping: Option<String>,
}

/// How far planned reads fetch ahead ([`BUNCH_BYTES_VARIABLE`],
/// [`READ_AHEAD_BYTES_VARIABLE`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadAhead {
    /// The page bytes decoded together and fetched ahead as a unit (`None`: the
    /// source's own, 32 MiB for remote sources), as ROOT's
    /// `ROOT_RNTUPLE_CLUSTERBUNCHSIZE` sets its cluster bunch.
    pub bunch_bytes: Option<u64>,
    /// The most page bytes fetched ahead of the decoder (the window grows up to it on
    /// links with a large bandwidth-delay product).
    pub max_bytes: u64,
}

impl Default for ReadAhead {
    fn default() -> Self {
        ReadAhead {
            bunch_bytes: None,
            max_bytes: 512 << 20,
        }
    }
}

/// The environment variable of [`ReadAhead::bunch_bytes`]: bytes, or a number with a
/// unit (`8 MiB`).
pub const BUNCH_BYTES_VARIABLE: &str = "RNTUPLE_BUNCH_BYTES";
/// The environment variable of [`ReadAhead::max_bytes`] (default 512 MiB).
pub const READ_AHEAD_BYTES_VARIABLE: &str = "RNTUPLE_READ_AHEAD_BYTES";
/// The environment variable of [`SourceOptions::huge_pages`]: `never` (the default) or
/// `always`.
pub const HUGE_PAGES_VARIABLE: &str = "RNTUPLE_HUGE_PAGES";
/// The environment variable of [`SourceOptions::daos_mapping`].
pub const DAOS_MAPPING_VARIABLE: &str = "RNTUPLE_DAOS_MAPPING";

/// A size of more than 0 bytes (`"8 MiB"`), else an error naming `what`.
pub fn parse_positive_size(text: &str, what: &str) -> Result<u64> {
    parse_byte_size(text)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{what}={text:?}: expected a size of more than 0 bytes (bytes, or a number \
                 with a unit: 8 MiB, 64MB)"
            ))
        })
}

/// Huge pages as a value names them (`never`, `always`; empty: never), else an error
/// naming `what`.
pub fn parse_huge_pages(value: &str, what: &str) -> Result<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "" | "never" | "0" | "off" => Ok(false),
        "always" | "1" | "on" => Ok(true),
        _ => Err(Error::InvalidArgument(format!(
            "{what}={value:?}: expected never (0) or always (1)"
        ))),
    }
}

/// Options a program set for every source it opens without options of its own.
static PROCESS_DEFAULT: RwLock<Option<SourceOptions>> = RwLock::new(None);

impl SourceOptions {
    /// The options [`crate::open_source`] uses: those a program set with
    /// [`SourceOptions::set_process_default`] (the command line does, from its options
    /// and the environment), else the environment's.
    pub fn current() -> Result<SourceOptions> {
        let set = PROCESS_DEFAULT
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        match set {
            Some(options) => Ok(options),
            None => Self::from_env(),
        }
    }

    /// Makes `options` what every source opened without options of its own uses.
    pub fn set_process_default(options: SourceOptions) {
        *PROCESS_DEFAULT
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(options);
    }
}

/// The environment variable that says when planned reads bypass the page cache.
pub const DIRECT_IO_VARIABLE: &str = "RNTUPLE_DIRECT_IO";

/// When planned reads of local pages mostly not in the page cache bypass it (direct
/// I/O): the setting [`DIRECT_IO_VARIABLE`] gives.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DirectIo {
    /// Reads of at least a quarter of the machine's memory (`auto`, the default).
    #[default]
    Auto,
    /// Never (`never`, `0`, `off`).
    Never,
    /// Every such read (`always`, `1`, `on`).
    Always,
}

impl DirectIo {
    /// The setting `value` names (`auto`, `always`, `never`; empty: `auto`); another
    /// value is an error naming `what` (a variable or an option).
    pub fn parse(value: &str, what: &str) -> Result<DirectIo> {
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Ok(DirectIo::Auto),
            "never" | "0" | "off" => Ok(DirectIo::Never),
            "always" | "1" | "on" => Ok(DirectIo::Always),
            _ => Err(Error::InvalidArgument(format!(
                "{what}={value:?}: expected auto, always (1) or never (0)"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn the_environment_sets_each_network_option_and_a_bad_value_names_its_variable() {
        let vars: HashMap<&str, &str> = [
            (CONNECT_TIMEOUT_VARIABLE, "2.5"),
            (FIRST_BYTE_TIMEOUT_VARIABLE, "7"),
            (IDLE_TIMEOUT_VARIABLE, " 11 "),
            (SPEED_LIMIT_VARIABLE, "2 KiB"),
            (SPEED_TIME_VARIABLE, "4.5"),
            (RETRIES_VARIABLE, "0"),
        ]
        .into_iter()
        .collect();
        let options = NetworkOptions::from_vars(|n| vars.get(n).map(|v| v.to_string())).unwrap();
        assert_eq!(options.connect_timeout, Duration::from_millis(2500));
        assert_eq!(options.first_byte_timeout, Duration::from_secs(7));
        assert_eq!(options.idle_timeout, Duration::from_secs(11));
        assert_eq!(options.speed_limit, 2048);
        assert_eq!(options.speed_time, Duration::from_millis(4500));
        assert_eq!(options.retries, 0);
        assert_eq!(
            NetworkOptions::from_vars(|_| None).unwrap(),
            NetworkOptions::default()
        );
        for (name, value) in [
            (CONNECT_TIMEOUT_VARIABLE, "soon"),
            (IDLE_TIMEOUT_VARIABLE, "0"),
            (FIRST_BYTE_TIMEOUT_VARIABLE, "-3"),
            (RETRIES_VARIABLE, "2.5"),
            (SPEED_LIMIT_VARIABLE, "fast"),
            (SPEED_LIMIT_VARIABLE, "-1"),
            (SPEED_TIME_VARIABLE, "0"),
        ] {
            let err = NetworkOptions::from_vars(|n| (n == name).then(|| value.to_string()))
                .unwrap_err()
                .to_string();
            assert!(err.contains(name) && err.contains(value), "{err}");
        }
    }

    #[test]
    fn the_huge_pages_variable_takes_never_or_always_and_names_itself_otherwise() {
        for (value, huge) in [
            ("", false),
            ("never", false),
            ("0", false),
            (" Always ", true),
        ] {
            let parsed = parse_huge_pages(value, HUGE_PAGES_VARIABLE).unwrap();
            assert_eq!(parsed, huge, "{value:?}");
        }
        assert!(parse_huge_pages("1", HUGE_PAGES_VARIABLE).unwrap());
        let bad = parse_huge_pages("sometimes", HUGE_PAGES_VARIABLE)
            .unwrap_err()
            .to_string();
        assert!(bad.contains("RNTUPLE_HUGE_PAGES=\"sometimes\""), "{bad}");
    }

    #[test]
    fn the_environment_sets_every_setting_of_the_source_options() {
        let vars: HashMap<&str, &str> = [
            (BUNCH_BYTES_VARIABLE, "8 MiB"),
            (READ_AHEAD_BYTES_VARIABLE, "64 MiB"),
            ("RNTUPLE_DIRECT_IO", "never"),
            (HUGE_PAGES_VARIABLE, "always"),
            ("RNTUPLE_DAOS_DIR", "/pools"),
            (DAOS_MAPPING_VARIABLE, "per-cluster"),
            (RETRIES_VARIABLE, "5"),
        ]
        .into_iter()
        .collect();
        let options = SourceOptions::from_vars(|n| vars.get(n).map(|v| v.to_string())).unwrap();
        assert_eq!(options.read_ahead.bunch_bytes, Some(8 << 20));
        assert_eq!(options.read_ahead.max_bytes, 64 << 20);
        assert_eq!(options.direct_io, DirectIo::Never);
        assert!(options.huge_pages);
        assert_eq!(options.daos_dir, Some(PathBuf::from("/pools")));
        assert_eq!(options.daos_mapping.as_deref(), Some("per-cluster"));
        assert_eq!(options.network.retries, 5);
        let defaults = SourceOptions::from_vars(|_| None).unwrap();
        assert_eq!(defaults.read_ahead, ReadAhead::default());
        assert_eq!(defaults.direct_io, DirectIo::Auto);
        assert!(!defaults.huge_pages);
        for name in [BUNCH_BYTES_VARIABLE, READ_AHEAD_BYTES_VARIABLE] {
            let err = SourceOptions::from_vars(|n| (n == name).then(|| "0".to_string()))
                .unwrap_err()
                .to_string();
            assert!(err.contains(name), "{err}");
        }
    }
}
