//! How the command reads remote files: the timeouts, the low-speed limit and the retries
//! (options over the `RNTUPLE_*` variables over the defaults), and what it shows of a
//! long transfer (a progress bar on a terminal) and of a slow path (a warning).

use super::Failure;
use clap::Args;
use rntuple_io::{
    parse_seconds, parse_speed_limit, Observer, SourceOptions, Transfer, TransferObserver,
    CONNECT_TIMEOUT_VARIABLE, FIRST_BYTE_TIMEOUT_VARIABLE, IDLE_TIMEOUT_VARIABLE, RETRIES_VARIABLE,
    SPEED_LIMIT_VARIABLE, SPEED_TIME_VARIABLE,
};
use std::sync::Arc;
use std::time::Duration;

/// How remote files (http(s)://, root(s)://, s3://) are read: timeouts and retries.
/// Each option overrides its environment variable, which overrides the default.
#[derive(Args)]
#[command(next_help_heading = "Remote files")]
pub(crate) struct NetworkArgs {
    /// Seconds a new connection may take to set up: TCP connect, TLS handshake, and
    /// XRootD's handshake, login and authentication [env: RNTUPLE_CONNECT_TIMEOUT;
    /// default: 10]
    #[arg(long, global = true, value_name = "SECS", allow_hyphen_values = true)]
    connect_timeout: Option<Seconds>,
    /// Seconds a request may wait for the first byte of its answer (HTTP and S3: the
    /// response headers; XRootD: a response frame) [env: RNTUPLE_FIRST_BYTE_TIMEOUT;
    /// default: 30]
    #[arg(long, global = true, value_name = "SECS", allow_hyphen_values = true)]
    first_byte_timeout: Option<Seconds>,
    /// Seconds an answer may stall between two of its bytes [env: RNTUPLE_IDLE_TIMEOUT;
    /// default: 30]
    #[arg(long, global = true, value_name = "SECS", allow_hyphen_values = true)]
    idle_timeout: Option<Seconds>,
    /// The low-speed limit, in bytes a second (1024, 10KiB; 0: none): an answer that
    /// brings fewer in any --speed-time window from its first byte is given up, however
    /// it keeps moving (as curl's --speed-limit) [env: RNTUPLE_SPEED_LIMIT; default:
    /// 1024]
    #[arg(long, global = true, value_name = "BYTES", allow_hyphen_values = true)]
    speed_limit: Option<BytesPerSecond>,
    /// Seconds of the low-speed limit's window (as curl's --speed-time); a stall that
    /// long also ends an answer [env: RNTUPLE_SPEED_TIME; default: 10]
    #[arg(long, global = true, value_name = "SECS", allow_hyphen_values = true)]
    speed_time: Option<Seconds>,
    /// How often a request that failed for a reason that may pass (refused or reset
    /// connection, a timeout, HTTP 5xx, 408, 429, XRootD kXR_wait) is tried again, with
    /// waits of 0.1 s doubling up to 5 s [env: RNTUPLE_RETRIES; default: 3]
    #[arg(long, global = true, value_name = "N", allow_hyphen_values = true)]
    retries: Option<Retries>,
}

/// A value of a timeout option: seconds, more than 0 and at most a day.
#[derive(Clone, Copy)]
struct Seconds(Duration);

impl std::str::FromStr for Seconds {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        parse_seconds(text, "x")
            .map(Seconds)
            .map_err(|_| "expected a number of seconds, more than 0 and at most 86400".to_string())
    }
}

/// A value of `--speed-limit`.
#[derive(Clone, Copy)]
struct BytesPerSecond(u64);

impl std::str::FromStr for BytesPerSecond {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        parse_speed_limit(text, "x")
            .map(BytesPerSecond)
            .map_err(|_| "expected bytes a second (1024, 10KiB; 0 for no limit)".to_string())
    }
}

/// A value of `--retries`.
#[derive(Clone, Copy)]
struct Retries(u32);

impl std::str::FromStr for Retries {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        text.trim()
            .parse()
            .map(Retries)
            .map_err(|_| "expected a whole number of retries (0 or more)".to_string())
    }
}

impl NetworkArgs {
    /// The options of every source the command opens: these options, over the
    /// environment's (a variable an option overrides is not even read), over the
    /// defaults, with the command's observer of long transfers. A bad variable is a
    /// usage error naming it.
    pub(crate) fn source_options(&self) -> Result<SourceOptions, Failure> {
        let overridden = |name: &str| match name {
            CONNECT_TIMEOUT_VARIABLE => self.connect_timeout.is_some(),
            FIRST_BYTE_TIMEOUT_VARIABLE => self.first_byte_timeout.is_some(),
            IDLE_TIMEOUT_VARIABLE => self.idle_timeout.is_some(),
            SPEED_LIMIT_VARIABLE => self.speed_limit.is_some(),
            SPEED_TIME_VARIABLE => self.speed_time.is_some(),
            RETRIES_VARIABLE => self.retries.is_some(),
            _ => false,
        };
        let mut options = SourceOptions::from_vars(|name| {
            (!overridden(name)).then(|| std::env::var(name).ok())?
        })
        .map_err(|e| Failure::Usage(e.to_string()))?;
        let network = &mut options.network;
        if let Some(Seconds(t)) = self.connect_timeout {
            network.connect_timeout = t;
        }
        if let Some(Seconds(t)) = self.first_byte_timeout {
            network.first_byte_timeout = t;
        }
        if let Some(Seconds(t)) = self.idle_timeout {
            network.idle_timeout = t;
        }
        if let Some(BytesPerSecond(limit)) = self.speed_limit {
            network.speed_limit = limit;
        }
        if let Some(Seconds(t)) = self.speed_time {
            network.speed_time = t;
        }
        if let Some(Retries(n)) = self.retries {
            network.retries = n;
        }
        options.observer = Some(Observer(Arc::new(Terminal)));
        Ok(options)
    }
}

/// Shows long transfers as progress bars on standard error, when it is a terminal, and
/// prints warnings there.
struct Terminal;

impl TransferObserver for Terminal {
    fn transfer(&self, what: &str, total: Option<u64>) -> Box<dyn Transfer> {
        use std::io::IsTerminal;
        if !std::io::stderr().is_terminal() {
            return Box::new(Bar(indicatif::ProgressBar::hidden()));
        }
        let bar = match total {
            Some(total) => indicatif::ProgressBar::new(total),
            None => indicatif::ProgressBar::no_length(),
        };
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{msg} {bar:30} {bytes}/{total_bytes} ({bytes_per_sec}, {eta} left)",
        ) {
            bar.set_style(style);
        }
        bar.set_message(format!("downloading {what}"));
        Box::new(Bar(bar))
    }

    fn warning(&self, message: &str) {
        eprintln!("rntuple: warning: {message}");
    }
}

/// One transfer's bar, cleared when the transfer ends.
struct Bar(indicatif::ProgressBar);

impl Transfer for Bar {
    fn advance(&mut self, bytes: u64) {
        self.0.inc(bytes);
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        self.0.finish_and_clear();
    }
}
