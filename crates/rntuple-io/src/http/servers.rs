//! Servers as they are: what opening does when a server refuses several ranges in one
//! request or suffix ranges (single ranges, the size from `Content-Range` or a `HEAD`),
//! or ignores ranges altogether (the whole file copied once, the `whole` module), and
//! what a server was seen to refuse, for its other files.

use super::{header_str, whole, Answer, HttpSource, Probe, Reply};
use crate::error::{Error, RemoteKind, Result};
use crate::retry::Failure;
use crate::{ByteRange, Edges};
use reqwest::header;
use reqwest::StatusCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// What a server was seen to refuse (each set once seen, for every source of the
/// server): opening then skips the requests it would refuse.
#[derive(Default)]
pub(super) struct Refusals {
    /// Several ranges in one request.
    pub(super) multi_range: AtomicBool,
    /// Suffix ranges (`bytes=-N`).
    pub(super) suffix: AtomicBool,
    /// Any range: it answers with the whole file.
    pub(super) ranges: AtomicBool,
}

/// What a single-range `GET` at opening brought.
pub(super) enum Probed {
    /// The bytes asked for (or an empty file).
    Part(Probe),
    /// The whole file (HTTP 200), now in the source's local copy; the probe holds no
    /// data.
    Whole(Probe),
    /// A suffix range the server refuses (HTTP 400, 416, 501, or the whole file: not
    /// read): why.
    Refused(String),
}

impl HttpSource {
    /// The first `head` and last `tail` bytes with single-range requests, for a server
    /// that does not serve both in one multi-range reply: `bytes=0-{head-1}` and
    /// `bytes=-{tail}` at once (one round trip). A suffix range the server refuses is
    /// asked again as `bytes=A-B` once the first reply told the size (one more round
    /// trip, and none for the server's other files). A server that answers with the
    /// whole file has it copied: the copy gives both ends.
    pub(super) fn open_with_parallel_edges(
        mut self,
        head: u64,
        tail: u64,
    ) -> Result<(HttpSource, Edges)> {
        let source = &self;
        let start = Instant::now();
        let first_bytes = format!("bytes=0-{}", head.max(1) - 1);
        let last_bytes = format!("bytes=-{}", tail.max(1));
        let refuses = &source.net.refuses;
        let ask_suffix =
            !refuses.suffix.load(Ordering::Relaxed) && !refuses.ranges.load(Ordering::Relaxed);
        let probe = |range: &str, max: u64, suffix: bool| {
            source
                .retry
                .run(&source.display, |_| source.probe_once(range, max, suffix))
        };
        let (front, back) = std::thread::scope(|scope| {
            let back = ask_suffix.then(|| scope.spawn(|| probe(&last_bytes, tail.max(1), true)));
            let front = probe(&first_bytes, head.max(1), false);
            let back = back.map(|back| {
                back.join().unwrap_or_else(|_| {
                    Err(Error::remote(
                        RemoteKind::Other,
                        &source.display,
                        "opening: a request thread panicked",
                    ))
                })
            });
            (front, back)
        });
        let front = self.opened_with(front?, start)?;
        if self.whole.get().is_some() {
            // The whole file, copied: the ends come from the copy (the suffix request,
            // answered whole too, was dropped; it counts).
            if back.is_some() {
                self.metrics.record(false, 1, 0, start);
            }
            self.adopt(&front);
            let edges = Edges::read(&self, head, tail)?;
            return Ok((self, edges));
        }
        let fail = |detail: String| {
            Error::remote(
                RemoteKind::Other,
                &self.display,
                format!("opening: {detail}"),
            )
        };
        if front.first != 0 {
            return Err(fail(
                "the server did not send the requested ends of the file".into(),
            ));
        }
        let covered = front.data.len() as u64 >= front.total;
        let back = match back.transpose()? {
            Some(Probed::Part(back)) => Some(self.opened_with(Probed::Part(back), start)?),
            // The front holds the whole (small) file: no tail to ask for.
            _ if covered => None,
            refused => {
                if matches!(refused, Some(Probed::Refused(_))) {
                    // The refused request counts: it went to the server.
                    self.metrics.record(false, 1, 0, start);
                    self.net.refuses.suffix.store(true, Ordering::Relaxed);
                }
                let first = front.total.saturating_sub(tail.max(1));
                let range = format!("bytes={first}-{}", front.total - 1);
                let probed = probe(&range, tail.max(1), false)?;
                let back = self.opened_with(probed, start)?;
                if self.whole.get().is_some() {
                    self.adopt(&back);
                    let edges = Edges::read(&self, head, tail)?;
                    return Ok((self, edges));
                }
                Some(back)
            }
        };
        if let Some(back) = &back {
            if front.total != back.total || !front.version.same_version(&back.version) {
                return Err(fail(format!(
                    "the file changed at its origin while being opened (size {} and {})",
                    front.total, back.total
                )));
            }
            if back.first + back.data.len() as u64 != back.total {
                return Err(fail(
                    "the server did not send the requested ends of the file".into(),
                ));
            }
        }
        self.adopt(&front);
        let edges = match back {
            Some(back) => Edges {
                head: front.data,
                tail_offset: back.first,
                tail: back.data,
            },
            None => Edges {
                tail_offset: front.data.len() as u64,
                head: front.data,
                tail: Vec::new(),
            },
        };
        Ok((self, edges))
    }

    /// The probe of an opening request that was answered (recorded in the metrics: its
    /// bytes, those of the whole file when it came whole); a refusal is an error (only
    /// a suffix range may be refused, and is handled before).
    pub(super) fn opened_with(&self, probed: Probed, start: Instant) -> Result<Probe> {
        let (probe, bytes) = match probed {
            Probed::Part(probe) => {
                let bytes = probe.data.len() as u64;
                (probe, bytes)
            }
            Probed::Whole(probe) => {
                let bytes = probe.total;
                (probe, bytes)
            }
            Probed::Refused(why) => {
                return Err(Error::remote(
                    RemoteKind::Other,
                    &self.display,
                    format!("opening: the server refused a byte range ({why})"),
                ))
            }
        };
        self.metrics.record(false, 1, bytes, start);
        Ok(probe)
    }

    /// The size of the file from a `HEAD` (its `Content-Length`), for a server whose
    /// `Content-Range` does not tell it.
    pub(super) fn length_from_head(&self, doing: &str) -> std::result::Result<u64, Failure> {
        let request = self.with_credentials(self.net.client.head(self.url.clone()));
        let response = self.send(request, doing)?;
        if response.status() != StatusCode::OK {
            return Err(self.status_failure(&response, doing));
        }
        header_str(response.headers(), header::CONTENT_LENGTH)
            .and_then(|v| v.trim().parse().ok())
            .ok_or_else(|| {
                self.permanent(format!(
                    "{doing}: the server tells the file's size neither in Content-Range nor \
                     in the Content-Length of a HEAD"
                ))
            })
    }

    /// Streams `response` (the whole file, HTTP 200, to a request of a range) into the
    /// source's local copy, unless one exists; `size`: the size the file was opened with
    /// (`None` while opening), which the answer must have.
    pub(super) fn take_whole(
        &self,
        mut response: Answer<'_>,
        size: Option<u64>,
        doing: &str,
    ) -> std::result::Result<&whole::WholeFile, Failure> {
        if let Some(copy) = self.whole.get() {
            return Ok(copy);
        }
        let sent = response.content_length();
        if let (Some(size), Some(sent)) = (size, sent) {
            if size != sent {
                return Err(self.changed(format!("size {size} became {sent}")));
            }
        }
        self.net.refuses.ranges.store(true, Ordering::Relaxed);
        let server = self.url.origin().ascii_serialization();
        let expected = sent.or(size);
        match self
            .whole
            .fill(&mut response, expected, &self.display, &server)
        {
            Ok(copy) => Ok(copy),
            Err(whole::FillError::Body(e)) => Err(self.body_failure(doing, e)),
            Err(whole::FillError::Length { got, expected }) if got < expected => {
                Err(Failure::Transient {
                    kind: RemoteKind::ConnectionReset,
                    detail: format!("{doing}: the reply ended after {got} of {expected} bytes"),
                    after: None,
                })
            }
            Err(whole::FillError::Length { expected, .. }) => Err(self.permanent(format!(
                "{doing}: the reply is longer than its {expected} bytes"
            ))),
            Err(whole::FillError::Local(e)) => Err(Failure::Permanent(e)),
        }
    }

    /// The `wanted` ranges from the answer of a server that ignores ranges (the whole
    /// file, HTTP 200): the file opened (the same validators and size) is copied and
    /// serves every read from now on; another is a change, never used.
    pub(super) fn reply_from_copy(
        &self,
        response: Answer<'_>,
        wanted: &[ByteRange],
        doing: &str,
    ) -> std::result::Result<Reply, Failure> {
        self.check_reply_headers(response.headers())?;
        let copy = self.take_whole(response, Some(self.size), doing)?;
        let data = wanted
            .iter()
            .map(|r| copy.read_at(r.offset, r.len))
            .collect::<Result<Vec<_>>>()
            .map_err(Failure::Permanent)?;
        Ok(Reply::Ranges {
            data,
            body_bytes: copy.size(),
        })
    }
}
