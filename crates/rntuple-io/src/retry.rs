//! What remote sources share: retries with exponential backoff for transient faults, and
//! URLs with their credentials removed (for messages and logs).

use crate::error::{Error, RemoteKind, Result};
use crate::options::{format_seconds, NetworkOptions, TimeoutKind, RETRIES_VARIABLE};
use std::time::{Duration, Instant};

/// How a remote source waits and retries: the [`NetworkOptions`] (timeouts and
/// retries, the one source of those settings), and the backoff between attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// The timeouts of every request and the retries of a failed one.
    pub network: NetworkOptions,
    /// The wait before the first retry; it doubles after every retry.
    pub initial_backoff: Duration,
    /// The longest wait between two attempts.
    pub max_backoff: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy::new(NetworkOptions::default())
    }
}

impl From<NetworkOptions> for RetryPolicy {
    fn from(network: NetworkOptions) -> Self {
        RetryPolicy::new(network)
    }
}

impl RetryPolicy {
    /// The policy of `network`'s timeouts and retries, with the usual backoff: 100 ms
    /// before the first retry, doubling, at most 5 s.
    pub fn new(network: NetworkOptions) -> RetryPolicy {
        RetryPolicy {
            network,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
        }
    }

    /// Attempts in total (the first one included).
    pub fn attempts(&self) -> u32 {
        self.network.attempts()
    }

    /// What a timeout of `kind` means, with its value and the setting that controls it.
    pub fn describe_timeout(&self, kind: TimeoutKind) -> String {
        self.network.describe(kind)
    }
}

/// The outcome of one failed attempt: worth retrying or not.
#[derive(Debug)]
pub enum Failure {
    /// A fault that may pass: connection refused or reset, HTTP 5xx, XRootD
    /// kXR_wait. Retried after the backoff (or after `after`, when the server said).
    Transient {
        /// What sort of fault (the kind of the error if it is the last one).
        kind: RemoteKind,
        /// What went wrong (no credentials).
        detail: String,
        /// The wait the server asked for, if any.
        after: Option<Duration>,
    },
    /// One of the [`NetworkOptions`] timeouts ran out while `doing` something: retried
    /// after the backoff; the message names the timeout, its value and its setting.
    TimedOut {
        /// Which timeout.
        kind: TimeoutKind,
        /// What was being done (`"opening"`, `"waiting for host:1094"`; no credentials).
        doing: String,
    },
    /// A fault that will not pass (not found, forbidden, the object changed): returned
    /// at once.
    Permanent(Error),
}

impl RetryPolicy {
    /// Runs `attempt` until it succeeds, fails permanently, or the attempts are used up;
    /// then the last transient fault becomes an [`Error::Remote`] of its kind (a timeout:
    /// [`RemoteKind::TimedOut`]) about `what` (which
    /// must not hold credentials: see [`redact_url`]) that says what was tried: the
    /// fault (a timeout with its value and setting), the attempts, the time they took and
    /// the retries allowed.
    pub fn run<T>(
        &self,
        what: &str,
        mut attempt: impl FnMut(u32) -> std::result::Result<T, Failure>,
    ) -> Result<T> {
        let started = Instant::now();
        let attempts = self.attempts();
        let mut backoff = self.initial_backoff;
        let mut last = String::new();
        let mut last_kind = RemoteKind::Other;
        for n in 0..attempts {
            let after = match attempt(n) {
                Ok(v) => return Ok(v),
                Err(Failure::Permanent(e)) => return Err(e),
                Err(Failure::Transient {
                    kind,
                    detail,
                    after,
                }) => {
                    last = detail;
                    last_kind = kind;
                    after
                }
                Err(Failure::TimedOut { kind, doing }) => {
                    last = format!("{doing}: {}", self.describe_timeout(kind));
                    last_kind = RemoteKind::TimedOut;
                    None
                }
            };
            if n + 1 < attempts {
                std::thread::sleep(after.unwrap_or(backoff).min(self.max_backoff));
                backoff = (backoff * 2).min(self.max_backoff);
            }
        }
        Err(Error::remote(
            last_kind,
            what,
            format!("{last}; {}", self.tried(attempts, started.elapsed())),
        ))
    }

    /// `4 attempts over 92 s (3 retries, RNTUPLE_RETRIES)`.
    fn tried(&self, attempts: u32, took: Duration) -> String {
        let retries = self.network.retries;
        format!(
            "{attempts} attempt{} over {} ({retries} retr{}, {RETRIES_VARIABLE} or --retries)",
            if attempts == 1 { "" } else { "s" },
            format_seconds(took),
            if retries == 1 { "y" } else { "ies" },
        )
    }
}

/// `url` without credentials: no user or password, and no query (signatures, tokens
/// and `authz=` live there). Safe to put in errors and logs.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (authority_and_path, had_query) = match rest.split_once(['?', '#']) {
        Some((before, _)) => (before, true),
        None => (rest, false),
    };
    let (authority, path) = match authority_and_path.find('/') {
        Some(i) => authority_and_path.split_at(i),
        None => (authority_and_path, ""),
    };
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let user = if authority.contains('@') { "***@" } else { "" };
    let query = if had_query { "?***" } else { "" };
    format!("{scheme}://{user}{host}{path}{query}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tried::{expect_tried, tried, Tried};
    use std::cell::Cell;

    #[test]
    fn credentials_never_survive_redaction() {
        assert_eq!(
            redact_url("https://alice:s3cret@host:8443/a/b.root?authz=tok&x=1"),
            "https://***@host:8443/a/b.root?***"
        );
        assert_eq!(
            redact_url("root://host//eos/f.root"),
            "root://host//eos/f.root"
        );
        assert_eq!(redact_url("s3://bucket/key.root"), "s3://bucket/key.root");
        assert_eq!(redact_url("/local/path.root"), "/local/path.root");
        let r = redact_url("roots://u@h:1094//p?xrd.wantprot=ztn&authz=Bearer%20abc");
        assert!(
            !r.contains("abc") && !r.contains("authz") && !r.contains("u@"),
            "{r}"
        );
    }

    #[test]
    fn transient_faults_are_retried_then_reported() {
        let policy = RetryPolicy {
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(2),
            ..RetryPolicy::new(NetworkOptions {
                retries: 2,
                ..NetworkOptions::default()
            })
        };
        let calls = Cell::new(0);
        let ok = policy.run("x", |n| {
            calls.set(calls.get() + 1);
            if n < 2 {
                Err(Failure::Transient {
                    kind: RemoteKind::ConnectionReset,
                    detail: "reset".into(),
                    after: None,
                })
            } else {
                Ok(7)
            }
        });
        assert_eq!(ok.unwrap(), 7);
        assert_eq!(calls.get(), 3);

        let err = policy
            .run::<()>("http://h/f", |_| {
                Err(Failure::Transient {
                    kind: RemoteKind::ConnectionRefused,
                    detail: "connection refused".into(),
                    after: None,
                })
            })
            .unwrap_err();
        // The last fault's kind is the error's.
        assert_eq!(err.remote_kind(), Some(RemoteKind::ConnectionRefused));
        assert_eq!(
            err.io_error_kind(),
            Some(std::io::ErrorKind::ConnectionRefused)
        );
        let err = err.to_string();
        let tried = expect_tried(&err);
        assert_eq!(
            tried.fault,
            "remote read of http://h/f failed: connection refused"
        );
        assert_eq!((tried.attempts, tried.retries), (3, 2));

        // A timeout is named, with its value and setting.
        let err = policy
            .run::<()>("root://h//f", |_| {
                Err(Failure::TimedOut {
                    kind: TimeoutKind::FirstByte,
                    doing: "waiting for h:1094".into(),
                })
            })
            .unwrap_err();
        assert_eq!(err.remote_kind(), Some(RemoteKind::TimedOut));
        let err = err.to_string();
        let tried = expect_tried(&err);
        assert!(
            tried.fault.ends_with(
                "waiting for h:1094: no answer within 30 s (first-byte timeout, \
                 RNTUPLE_FIRST_BYTE_TIMEOUT or --first-byte-timeout)"
            ),
            "{err}"
        );
        assert_eq!((tried.attempts, tried.retries), (3, 2));

        calls.set(0);
        let err = policy.run::<()>("x", |_| {
            calls.set(calls.get() + 1);
            Err(Failure::Permanent(Error::NotFound("gone".into())))
        });
        assert!(matches!(err, Err(Error::NotFound(_))));
        assert_eq!(calls.get(), 1, "permanent faults are not retried");
    }

    #[test]
    fn the_attempts_are_read_from_a_message_the_seconds_only_checked() {
        // The policy's own messages, one attempt and several (a sleep between them).
        for (retries, attempts) in [(0u32, 1u32), (1, 2), (3, 4)] {
            let policy = RetryPolicy {
                initial_backoff: Duration::from_millis(1),
                max_backoff: Duration::from_millis(1),
                ..RetryPolicy::new(NetworkOptions {
                    retries,
                    ..NetworkOptions::default()
                })
            };
            let err = policy
                .run::<()>("root://h//f", |_| {
                    Err(Failure::Transient {
                        kind: RemoteKind::ConnectionReset,
                        detail: "reset; by the peer".into(),
                        after: None,
                    })
                })
                .unwrap_err()
                .to_string();
            assert_eq!(
                tried(&err),
                Some(Tried {
                    fault: "remote read of root://h//f failed: reset; by the peer",
                    attempts,
                    retries,
                }),
                "{err}"
            );
        }
        for seconds in ["0", "0.5", "1.25", "92"] {
            let message =
                format!("x; 2 attempts over {seconds} s (1 retry, RNTUPLE_RETRIES or --retries)");
            assert_eq!(tried(&message).map(|t| t.attempts), Some(2), "{message}");
        }
        // Anything else in that place is not the wording.
        for bad in [
            "x; 2 attempt over 1 s (1 retry, RNTUPLE_RETRIES or --retries)",
            "x; 1 attempts over 1 s (0 retries, RNTUPLE_RETRIES or --retries)",
            "x; 2 attempts over 1 s (1 retries, RNTUPLE_RETRIES or --retries)",
            "x; 2 attempts over s (1 retry, RNTUPLE_RETRIES or --retries)",
            "x; 2 attempts over 1. s (1 retry, RNTUPLE_RETRIES or --retries)",
            "x; 2 attempts over .5 s (1 retry, RNTUPLE_RETRIES or --retries)",
            "x; 2 attempts over 1 ms (1 retry, RNTUPLE_RETRIES or --retries)",
            "x; 2 attempts over 1 s (1 retry, RNTUPLE_RETRIES)",
            "x; 2 attempts over 1 s (1 retry, RNTUPLE_RETRIES or --retries) and more",
            "x 2 attempts over 1 s (1 retry, RNTUPLE_RETRIES or --retries)",
            "x; -2 attempts over 1 s (1 retry, RNTUPLE_RETRIES or --retries)",
        ] {
            assert_eq!(tried(bad), None, "{bad}");
        }
    }
}
