//! What remote sources share: retries with exponential backoff for transient faults, and
//! URLs with their credentials removed (for messages and logs).

use crate::error::{Error, Result};
use std::time::Duration;

/// How often and how patiently a remote source retries a failed request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in total (the first one included).
    pub attempts: u32,
    /// The wait before the first retry; it doubles after every retry.
    pub initial_backoff: Duration,
    /// The longest wait between two attempts.
    pub max_backoff: Duration,
    /// The time one request may take (connecting, or waiting for the next bytes).
    pub timeout: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            attempts: 5,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            timeout: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The policy of `network`'s settings: its retries, and its longest wait as the
    /// time one request may take.
    pub fn from_network(network: &crate::io::NetworkOptions) -> RetryPolicy {
        RetryPolicy {
            attempts: network.retries.saturating_add(1),
            timeout: network
                .first_byte_timeout
                .max(network.idle_timeout)
                .max(network.connect_timeout),
            ..RetryPolicy::default()
        }
    }
}

/// The outcome of one failed attempt: worth retrying or not.
#[derive(Debug)]
pub enum Failure {
    /// A fault that may pass: connection refused or reset, timeout, HTTP 5xx, XRootD
    /// kXR_wait. Retried after the backoff (or after `after`, when the server said).
    Transient {
        /// What went wrong (no credentials).
        detail: String,
        /// The wait the server asked for, if any.
        after: Option<Duration>,
    },
    /// A fault that will not pass (not found, forbidden, the object changed): returned
    /// at once.
    Permanent(Error),
}

impl RetryPolicy {
    /// Runs `attempt` until it succeeds, fails permanently, or the attempts are used up;
    /// then the last transient fault becomes an [`Error::Remote`] about `what` (which
    /// must not hold credentials: see [`redact_url`]).
    pub fn run<T>(
        &self,
        what: &str,
        mut attempt: impl FnMut(u32) -> std::result::Result<T, Failure>,
    ) -> Result<T> {
        let mut backoff = self.initial_backoff;
        let mut last = String::new();
        for n in 0..self.attempts.max(1) {
            match attempt(n) {
                Ok(v) => return Ok(v),
                Err(Failure::Permanent(e)) => return Err(e),
                Err(Failure::Transient { detail, after }) => {
                    last = detail;
                    if n + 1 < self.attempts {
                        std::thread::sleep(after.unwrap_or(backoff).min(self.max_backoff));
                        backoff = (backoff * 2).min(self.max_backoff);
                    }
                }
            }
        }
        Err(Error::Remote {
            what: what.to_string(),
            detail: format!("{last} (gave up after {} attempts)", self.attempts.max(1)),
        })
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
            attempts: 3,
            initial_backoff: Duration::from_millis(1),
            max_backoff: Duration::from_millis(2),
            timeout: Duration::from_secs(1),
        };
        let calls = Cell::new(0);
        let ok = policy.run("x", |n| {
            calls.set(calls.get() + 1);
            if n < 2 {
                Err(Failure::Transient {
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
                    detail: "connection refused".into(),
                    after: None,
                })
            })
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("http://h/f") && err.contains("connection refused"),
            "{err}"
        );
        assert!(err.contains("3 attempts"), "{err}");

        calls.set(0);
        let err = policy.run::<()>("x", |_| {
            calls.set(calls.get() + 1);
            Err(Failure::Permanent(Error::NotFound("gone".into())))
        });
        assert!(matches!(err, Err(Error::NotFound(_))));
        assert_eq!(calls.get(), 1, "permanent faults are not retried");
    }
}
