//! Telling versions of a remote file apart: what a source's validators say about
//! whether a rewrite of the file would change them.
//!
//! A remote file is read in many responses. Bytes of different responses belong to the
//! same file only when every response names the same version, and a validator names a
//! version only when every rewrite changes it:
//!
//! - an ETag that follows the content (S3's is a hash of it) does;
//! - a modification time (HTTP's `Last-Modified`, nginx's ETag, which is the same time
//!   in hex with the size, XRootD's `kXR_stat`) has a resolution of one second, so a
//!   rewrite within the second it names keeps it. As HTTP caches do (RFC 9110, 8.8.2.2),
//!   such a time identifies the file only once the origin's clock is more than a second
//!   past it: then any later write gets a later time;
//! - an ETag of a server that sends no `Last-Modified` is all it says: taken as strong
//!   (a weak one, `W/"..."`, is not).
//!
//! A source whose version is [`Freshness::Young`] at opening is opened again once the
//! second has passed ([`super::open_with_edges`]): what it served before may have been
//! one of several files written in that second. A version that cannot be identified
//! ([`Freshness::Unknown`]) is read, but its bytes are never kept in a cache.

use super::{Source, Validators};
use crate::error::{Error, RemoteKind, Result};
use std::time::Duration;

/// Seconds a modification time must lie in the past (by the origin's clock) before it
/// identifies the file: its own second, and one more for the clocks' rounding.
const SETTLED_AFTER_SECONDS: i64 = 2;

/// What a source's validators say about its version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// Every rewrite of the file changes a validator: bytes of any response that names
    /// the same validators are the same file's.
    Identified,
    /// The file was modified within the last second by the origin's clock: another
    /// rewrite in that second would keep every validator. It identifies the file after
    /// `settles_in`.
    Young {
        /// How long until the modification time identifies the file.
        settles_in: Duration,
    },
    /// Nothing tells a rewrite apart (no validators, or a modification time in the
    /// future of the origin's clock).
    Unknown,
}

impl Validators {
    /// What these validators say about the version, with `now` (seconds since 1970) as
    /// this machine's clock, used where the origin did not say its own (`answered`).
    pub fn freshness(&self, now: i64) -> Freshness {
        if self.etag_follows_content && self.etag.is_some() {
            return Freshness::Identified;
        }
        if let Some(modified) = self.modified {
            let clock = self.answered.unwrap_or(now);
            let age = clock.saturating_sub(modified);
            return if age >= SETTLED_AFTER_SECONDS {
                Freshness::Identified
            } else if age >= 0 {
                Freshness::Young {
                    settles_in: Duration::from_secs((SETTLED_AFTER_SECONDS - age).unsigned_abs()),
                }
            } else {
                // Modified in the origin's future (another host's clock on a shared
                // file system): no second can be trusted to have passed.
                Freshness::Unknown
            };
        }
        match &self.etag {
            Some(etag) if !etag.starts_with("W/") => Freshness::Identified,
            _ => Freshness::Unknown,
        }
    }

    /// Whether `other` names the same version: every validator equal (both absent
    /// counts as equal; the caller decides with [`Validators::freshness`] whether they
    /// identify the file at all).
    pub fn same_version(&self, other: &Validators) -> bool {
        self.etag == other.etag
            && self.last_modified == other.last_modified
            && self.modified == other.modified
    }
}

/// Openings of a young file ([`Freshness::Young`]) after the first, each once its
/// second has passed: two give a file being written one more chance to be complete.
const SETTLE_ROUNDS: usize = 2;

/// Opens a remote file with `open` so that what it read names one version: a file
/// modified within the last second at its origin (a rewrite in that second would keep
/// its validators) is opened again once the second has passed (waiting with `sleep`, at
/// most two seconds a round), and what the earlier opening read is dropped. A file that
/// changes in every round is an error of kind [`RemoteKind::Changed`]; one whose
/// validators stay young without changing (the origin's clock or ours astray) is read,
/// and a cache keeps nothing of it. `now` is this machine's clock, `name` the URL for
/// messages.
///
/// [`RemoteKind::Changed`]: crate::error::RemoteKind::Changed
pub(crate) fn open_settled<T>(
    name: &str,
    mut open: impl FnMut() -> Result<(Source, T)>,
    now: impl Fn() -> i64,
    sleep: impl Fn(Duration),
) -> Result<(Source, T)> {
    let mut opened = open()?;
    let mut changes = 0;
    for _ in 0..SETTLE_ROUNDS {
        let before = opened.0.profile().validators;
        let Freshness::Young { settles_in } = before.freshness(now()) else {
            return Ok(opened);
        };
        sleep(settles_in);
        let again = open()?;
        if again.0.size() != opened.0.size() || !again.0.profile().validators.same_version(&before)
        {
            changes += 1;
        }
        opened = again;
    }
    let young = matches!(
        opened.0.profile().validators.freshness(now()),
        Freshness::Young { .. }
    );
    if young && changes == SETTLE_ROUNDS {
        return Err(Error::remote(
            RemoteKind::Changed,
            name,
            format!(
                "the file changed at its origin while being opened: it was rewritten \
                 {changes} times in the {} seconds waited for it to be complete; read it again \
                 once its writer is done",
                2 * SETTLE_ROUNDS
            ),
        ));
    }
    Ok(opened)
}

/// This machine's clock, in seconds since 1970 (0 if it is before).
pub(crate) fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// An HTTP date (`Last-Modified`, `Date`: IMF-fixdate and the two obsolete forms) in
/// seconds since 1970; `None` if it is not one.
#[cfg(feature = "http")]
pub(crate) fn parse_http_date(text: &str) -> Option<i64> {
    let time = httpdate::parse_http_date(text.trim()).ok()?;
    let seconds = time.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs();
    i64::try_from(seconds).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(etag: Option<&str>, modified: Option<i64>, answered: Option<i64>) -> Validators {
        Validators {
            etag: etag.map(str::to_string),
            last_modified: modified.map(|m| format!("t{m}")),
            modified,
            answered,
            etag_follows_content: false,
        }
    }

    #[test]
    fn a_modification_time_identifies_the_file_once_more_than_a_second_old() {
        // nginx: an ETag of the time and size, Last-Modified, Date.
        let etag = Some("\"6571a9b0-2710\"");
        assert_eq!(
            http(etag, Some(1000), Some(1000)).freshness(0),
            Freshness::Young {
                settles_in: Duration::from_secs(2)
            }
        );
        assert_eq!(
            http(etag, Some(1000), Some(1001)).freshness(0),
            Freshness::Young {
                settles_in: Duration::from_secs(1)
            }
        );
        assert_eq!(
            http(etag, Some(1000), Some(1002)).freshness(0),
            Freshness::Identified
        );
        // Without Date, this machine's clock.
        assert_eq!(
            http(None, Some(1000), None).freshness(1001),
            Freshness::Young {
                settles_in: Duration::from_secs(1)
            }
        );
        assert_eq!(
            http(None, Some(1000), None).freshness(5000),
            Freshness::Identified
        );
        // In the origin's future: nothing can be trusted.
        assert_eq!(
            http(etag, Some(1000), Some(990)).freshness(0),
            Freshness::Unknown
        );
    }

    #[test]
    fn an_etag_alone_is_strong_unless_weak_and_a_content_etag_always() {
        assert_eq!(
            http(Some("\"abc\""), None, Some(5)).freshness(0),
            Freshness::Identified
        );
        assert_eq!(
            http(Some("W/\"abc\""), None, Some(5)).freshness(0),
            Freshness::Unknown
        );
        assert_eq!(http(None, None, Some(5)).freshness(0), Freshness::Unknown);
        // S3: the ETag hashes the content, whatever the modification time says.
        let s3 = Validators {
            etag_follows_content: true,
            ..http(
                Some("\"d41d8cd98f00b204e9800998ecf8427e\""),
                Some(1000),
                Some(1000),
            )
        };
        assert_eq!(s3.freshness(0), Freshness::Identified);
    }

    #[test]
    fn versions_are_the_same_only_with_every_validator_equal() {
        let a = http(Some("\"1\""), Some(10), Some(20));
        assert!(a.same_version(&http(Some("\"1\""), Some(10), Some(99))));
        assert!(!a.same_version(&http(Some("\"2\""), Some(10), Some(20))));
        assert!(!a.same_version(&http(Some("\"1\""), Some(11), Some(20))));
        assert!(!a.same_version(&http(None, Some(10), Some(20))));
    }

    /// A source that only has validators (and a size).
    struct Versioned(Validators, u64);

    impl super::super::ReadAt for Versioned {
        fn name(&self) -> &str {
            "v"
        }
        fn size(&self) -> u64 {
            self.1
        }
        fn read_at(&self, _: u64, _: u64) -> Result<Vec<u8>> {
            Ok(Vec::new())
        }
        fn metrics(&self) -> super::super::IoMetricsSnapshot {
            super::super::IoMetricsSnapshot::default()
        }
        fn profile(&self) -> super::super::SourceProfile {
            super::super::SourceProfile {
                validators: self.0.clone(),
                ..super::super::SourceProfile::default()
            }
        }
    }

    /// Opens through `open_settled` a file whose successive openings answer as
    /// `answers` say ((modified, answered) each), the clock at 0; the openings made,
    /// the sleeps and the result's validators or error.
    fn settle(answers: &[(i64, i64)]) -> (usize, Vec<u64>, Result<Validators>) {
        let next = std::cell::Cell::new(0);
        let slept = std::cell::RefCell::new(Vec::new());
        let result = open_settled(
            "http://h/f",
            || {
                let (modified, answered) = answers[next.get().min(answers.len() - 1)];
                next.set(next.get() + 1);
                let v = http(Some("\"e\""), Some(modified), Some(answered));
                Ok((std::sync::Arc::new(Versioned(v, 10)) as Source, ()))
            },
            || 0,
            |d| slept.borrow_mut().push(d.as_secs()),
        );
        (
            next.get(),
            slept.into_inner(),
            result.map(|(s, ())| s.profile().validators),
        )
    }

    #[test]
    fn a_young_file_is_opened_again_once_its_second_has_passed() {
        // Settled at once: one opening, no wait.
        let (opened, slept, got) = settle(&[(100, 105)]);
        assert_eq!((opened, slept), (1, vec![]));
        assert_eq!(got.unwrap().modified, Some(100));
        // Young, the same version later: opened again after the second, that one kept.
        let (opened, slept, got) = settle(&[(100, 100), (100, 102)]);
        assert_eq!((opened, slept), (2, vec![2]));
        assert_eq!(got.unwrap().answered, Some(102));
        // Young, rewritten once, then settled: the new version.
        let (opened, slept, got) = settle(&[(100, 101), (102, 102), (102, 104)]);
        assert_eq!((opened, slept), (3, vec![1, 2]));
        assert_eq!(got.unwrap().modified, Some(102));
        // Rewritten in every round: changed at its origin.
        let (opened, _, got) = settle(&[(100, 100), (102, 102), (104, 104)]);
        assert_eq!(opened, 3);
        let err = got.unwrap_err();
        assert_eq!(err.remote_kind(), Some(RemoteKind::Changed), "{err}");
        assert!(err.to_string().contains("changed at its origin"), "{err}");
        // Young without changing (a clock that does not move): read, still young.
        let (opened, _, got) = settle(&[(100, 100), (100, 100), (100, 100)]);
        assert_eq!(opened, 3);
        assert!(matches!(got.unwrap().freshness(0), Freshness::Young { .. }));
    }

    #[cfg(feature = "http")]
    #[test]
    fn http_dates_parse_in_their_three_forms() {
        // RFC 9110's examples of one moment.
        for text in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
        ] {
            assert_eq!(parse_http_date(text), Some(784_111_777), "{text}");
        }
        assert_eq!(parse_http_date("yesterday"), None);
        assert_eq!(parse_http_date(""), None);
    }
}
