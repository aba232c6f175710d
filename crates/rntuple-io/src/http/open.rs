//! Opening an HTTP(S) source: the probe of the file's first bytes (or both ends in one
//! multi-range request), what the reply tells (size, ranges served, validators), and
//! the client shared by the sources of one origin.

use super::*;

/// What a ranged `GET` at opening told.
pub(super) struct Probe {
    /// The file offset of `data`.
    pub(super) first: u64,
    /// The file size.
    pub(super) total: u64,
    /// The bytes the reply held.
    pub(super) data: Vec<u8>,
    /// The validators of the reply.
    pub(super) version: Validators,
}

impl HttpSource {
    /// Opens `url` (`http://` or `https://`) with the defaults and the bearer token of
    /// the environment ([`HttpOptions::from_env`]).
    pub fn open(url: &str) -> Result<HttpSource> {
        Self::open_with(url, HttpOptions::from_env()?)
    }

    /// Opens `url` with `options`: one request (for byte 0) learns the size and the
    /// validators (a server that answers with the whole file has it copied).
    pub fn open_with(url: &str, options: HttpOptions) -> Result<HttpSource> {
        let mut source = Self::client_for(url, options)?;
        let start = Instant::now();
        let probed = source.retry.run(&source.display, |_| {
            source.probe_once("bytes=0-0", 1, false)
        })?;
        let probe = source.opened_with(probed, start)?;
        if probe.first != 0 {
            return Err(Error::Remote {
                kind: RemoteKind::Other,
                what: source.display.clone(),
                detail: format!(
                    "opening: asked for byte 0, the server sent bytes from {}",
                    probe.first
                ),
            });
        }
        source.adopt(&probe);
        Ok(source)
    }

    /// Opens `url` (with the environment's bearer token) and reads the file's first
    /// `head` and last `tail` bytes: the size, the validators and the two ends in one
    /// request (`Range: bytes=0-{head-1},-{tail}`).
    pub fn open_with_edges(url: &str, head: u64, tail: u64) -> Result<(HttpSource, Edges)> {
        Self::open_with_edges_using(url, HttpOptions::from_env()?, head, tail)
    }

    /// [`HttpSource::open_with_edges`] with `options`. A server that does not serve both
    /// ends in one multi-range reply (it refuses the request, sends the whole file, or
    /// one of the ranges) gets single-range requests instead (the first bytes and the
    /// suffix at once; a refused suffix again by its offsets), and from then on, as do
    /// the other files of the server opened while this one is; a server that ignores
    /// ranges has the whole file copied (see the module documentation).
    pub fn open_with_edges_using(
        url: &str,
        options: HttpOptions,
        head: u64,
        tail: u64,
    ) -> Result<(HttpSource, Edges)> {
        let mut source = Self::client_for(url, options)?;
        let (head, tail) = (head.max(1), tail.max(1));
        let refuses = &source.net.refuses;
        if refuses.multi_range.load(Ordering::Relaxed) || refuses.ranges.load(Ordering::Relaxed) {
            source.multi_range_refused.store(true, Ordering::Relaxed);
            return source.open_with_parallel_edges(head, tail);
        }
        let start = Instant::now();
        let range = format!("bytes=0-{},-{tail}", head - 1);
        let reply = source
            .retry
            .run(&source.display, |_| source.edges_once(&range, head, tail))?;
        let Some((probe, edges, body_bytes)) = reply else {
            // The refused request counts: it went to the server.
            source.metrics.record(true, 2, 0, start);
            source.multi_range_refused.store(true, Ordering::Relaxed);
            source
                .net
                .refuses
                .multi_range
                .store(true, Ordering::Relaxed);
            return source.open_with_parallel_edges(head, tail);
        };
        source.metrics.record(true, 2, body_bytes, start);
        source.adopt(&probe);
        Ok((source, edges))
    }

    /// One request for the first `head` and last `tail` bytes (`range`, a two-range
    /// header): what it told (the size and validators in a [`Probe`] without data), the
    /// two ends, and the body bytes; `None` when the server did not send them as two
    /// parts or as the whole (small) file.
    #[allow(clippy::type_complexity)] // One reply's three parts, read together.
    fn edges_once(
        &self,
        range: &str,
        head: u64,
        tail: u64,
    ) -> std::result::Result<Option<(Probe, Edges, u64)>, Failure> {
        let doing = "opening";
        let response = self.send(self.request(range), doing)?;
        let headers = response.headers();
        let version = reply_validators(headers);
        let probe = |total: u64| Probe {
            first: 0,
            total,
            data: Vec::new(),
            version: version.clone(),
        };
        let transient = |e: std::io::Error| self.body_failure(doing, e);
        let most = head.saturating_add(tail).saturating_add(64 << 10);
        let status = response.status();
        let boundary = header_str(headers, header::CONTENT_TYPE).and_then(multipart::boundary_of);
        let content_range = header_str(headers, header::CONTENT_RANGE).map(str::to_string);
        let content_length = response.content_length();
        if matches!(status, StatusCode::PARTIAL_CONTENT | StatusCode::OK) {
            self.check_encoding(headers)?;
        }
        match status {
            StatusCode::PARTIAL_CONTENT => {
                let mut body = BufReader::with_capacity(
                    64 << 10,
                    CountingReader {
                        inner: response,
                        count: 0,
                    },
                );
                let (parts, total) = if let Some(boundary) = boundary {
                    let limits = Limits {
                        max_parts: 4,
                        max_data_bytes: most,
                    };
                    let (parts, total) =
                        multipart::read_all_parts(&mut body, &boundary, limits, &|n| vec![0; n])
                            .map_err(|e| match e {
                                MultipartError::Io(e) => transient(e),
                                MultipartError::SizeChanged { claimed } => self.permanent(format!(
                                    "{doing}: the parts of one reply name sizes {claimed} and \
                                     another"
                                )),
                                MultipartError::Malformed(m) => self.permanent(format!(
                                    "{doing}: bad multipart/byteranges reply: {m}"
                                )),
                            })?;
                    std::io::copy(&mut body.by_ref().take(MAX_EPILOGUE), &mut std::io::sink())
                        .map_err(transient)?;
                    (parts, total)
                } else {
                    // One part for both ranges: usable when it is the whole file.
                    let Some((first, last, Some(total))) = content_range
                        .as_deref()
                        .and_then(multipart::parse_content_range)
                    else {
                        return Err(self
                            .permanent(format!("{doing}: a reply without a valid Content-Range")));
                    };
                    if first != 0 || last + 1 != total || total > most {
                        return Ok(None);
                    }
                    let mut data =
                        Vec::with_capacity(to_usize(total, doing).map_err(Failure::Permanent)?);
                    body.by_ref()
                        .take(total)
                        .read_to_end(&mut data)
                        .map_err(transient)?;
                    if data.len() as u64 != total {
                        return Err(Failure::Transient {
                            kind: RemoteKind::ConnectionReset,
                            detail: format!(
                                "{doing}: the reply ended after {} of {total} bytes",
                                data.len()
                            ),
                            after: None,
                        });
                    }
                    (vec![Part { start: 0, data }], Some(total))
                };
                let Some(total) = total else {
                    return Err(
                        self.permanent(format!("{doing}: a multipart reply without a part"))
                    );
                };
                let body_bytes = body.get_ref().count;
                let edges = edges_from_parts(parts, total).ok_or_else(|| {
                    self.permanent(format!(
                        "{doing}: the server did not send the requested ends of the file"
                    ))
                })?;
                Ok(Some((probe(total), edges, body_bytes)))
            }
            // The whole file: fine when small, else the server ignores multi-range
            // requests (the connection is dropped unread).
            StatusCode::OK => match content_length {
                Some(len) if len <= most => {
                    let mut data =
                        Vec::with_capacity(to_usize(len, doing).map_err(Failure::Permanent)?);
                    response
                        .take(len + 1)
                        .read_to_end(&mut data)
                        .map_err(transient)?;
                    if data.len() as u64 != len {
                        return Err(self.permanent(format!(
                            "{doing}: {} bytes came for a reply of {len}",
                            data.len()
                        )));
                    }
                    let edges = edges_from_parts(vec![Part { start: 0, data }], len)
                        .ok_or_else(|| self.permanent(format!("{doing}: an empty reply")))?;
                    Ok(Some((probe(len), edges, len)))
                }
                _ => Ok(None),
            },
            StatusCode::RANGE_NOT_SATISFIABLE
                if content_range.is_some_and(|v| v.replace(' ', "") == "bytes*/0") =>
            {
                Ok(Some((probe(0), Edges::default(), 0)))
            }
            // A server that refuses several ranges, or suffix ranges, in one request (or
            // such a long Range header): single ranges then.
            _ if matches!(status.as_u16(), 400 | 413 | 414 | 416 | 431 | 501) => Ok(None),
            _ => Err(self.status_failure(&response, doing)),
        }
    }

    /// The source for `url` with `options`, before anything was asked of the server.
    pub(super) fn client_for(url: &str, options: HttpOptions) -> Result<HttpSource> {
        let display = redact_url(url);
        let mut parsed = reqwest::Url::parse(url)
            .map_err(|e| Error::InvalidArgument(format!("bad URL {display}: {e}")))?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(Error::InvalidArgument(format!(
                "{display} is not an http:// or https:// URL"
            )));
        }
        let decode = |s: &str| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        };
        let credentials = if !parsed.username().is_empty() || parsed.password().is_some() {
            let user = decode(parsed.username());
            let password = parsed.password().map(decode);
            // Both only fail for URLs without a host, which http(s) URLs always have.
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            Some(Credentials::Basic { user, password })
        } else if let Some(token) = &options.bearer_token {
            let mut value = HeaderValue::from_str(&format!("Bearer {token}")).map_err(|_| {
                Error::InvalidArgument(
                    "the bearer token holds characters not allowed in an HTTP header".into(),
                )
            })?;
            value.set_sensitive(true);
            Some(Credentials::Bearer(value))
        } else {
            None
        };
        // No total deadline per request (it would cut a long transfer) and no read
        // timeout (it would also bound the wait for the headers): the first-byte and
        // idle timeouts are `send`'s and `Answer`'s (see the `net` module).
        let mut builder = Client::builder()
            .user_agent(concat!("rntuple/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(options.retry.network.connect_timeout)
            .connector_layer(TrackConnects)
            .tcp_nodelay(true);
        let key = (
            parsed.origin().ascii_serialization(),
            options.retry.network.connect_timeout,
        );
        let net = SharedClient::get(key, &display, || {
            for certificate in auth::grid_ca_certificates() {
                builder = builder.add_root_certificate(certificate);
            }
            builder.build()
        })?;
        let ranges_per_request = options.hints.max_ranges_per_request.max(1);
        Ok(HttpSource {
            url: parsed,
            display,
            net,
            credentials,
            size: 0,
            version: Validators::default(),
            retry: options.retry,
            hints: options.hints,
            multi_range_refused: AtomicBool::new(false),
            ranges_per_request: AtomicUsize::new(ranges_per_request),
            metrics: IoMetrics::default(),
            spare: SpareBuffers::default(),
            whole: whole::Fallback::new(options.observer, options.whole_in_memory),
        })
    }

    /// Takes the size and validators of an opening reply.
    pub(super) fn adopt(&mut self, probe: &Probe) {
        self.size = probe.total;
        self.version = probe.version.clone();
    }

    /// One `GET` of `range` (at most `max` bytes) at opening: where the bytes start, the
    /// file size, the bytes, the `ETag` and the `Last-Modified` of the file.
    pub(super) fn probe_once(
        &self,
        range: &str,
        max: u64,
        suffix: bool,
    ) -> std::result::Result<Probed, Failure> {
        let doing = "opening";
        let response = self.send(self.request(range), doing)?;
        let headers = response.headers();
        let version = reply_validators(headers);
        let status = response.status();
        if matches!(status, StatusCode::PARTIAL_CONTENT | StatusCode::OK) {
            self.check_encoding(headers)?;
        }
        match status {
            StatusCode::PARTIAL_CONTENT => {
                let bad = || {
                    self.permanent(format!(
                        "{doing}: the reply to a request for {range} has no valid \
                         Content-Range with the file size"
                    ))
                };
                let (first, last, total) = header_str(headers, header::CONTENT_RANGE)
                    .and_then(multipart::parse_content_range)
                    .filter(|&(first, last, _)| first <= last && last - first < max)
                    .ok_or_else(bad)?;
                // `bytes A-B/*`: the size from a HEAD.
                let total = match total {
                    Some(total) => total,
                    None => self.length_from_head(doing)?,
                };
                if last >= total {
                    return Err(bad());
                }
                let len = last - first + 1;
                // Bounded by `max`: one byte more tells a reply longer than it says.
                let mut data =
                    Vec::with_capacity(to_usize(len, doing).map_err(Failure::Permanent)?);
                response
                    .take(len + 1)
                    .read_to_end(&mut data)
                    .map_err(|e| self.body_failure(doing, e))?;
                if data.len() as u64 != len {
                    return Err(self.permanent(format!(
                        "{doing}: {} bytes came for bytes {first}-{last}",
                        data.len()
                    )));
                }
                Ok(Probed::Part(Probe {
                    first,
                    total,
                    data,
                    version,
                }))
            }
            // An empty file: no byte to serve. Servers say so with `416` and
            // `Content-Range: bytes */0`, or (nginx) with `200` and no bytes.
            StatusCode::RANGE_NOT_SATISFIABLE | StatusCode::OK
                if header_str(headers, header::CONTENT_RANGE)
                    .is_some_and(|v| v.replace(' ', "") == "bytes*/0")
                    || (response.status() == StatusCode::OK
                        && response.content_length() == Some(0)) =>
            {
                Ok(Probed::Part(Probe {
                    first: 0,
                    total: 0,
                    data: Vec::new(),
                    version: version.clone(),
                }))
            }
            // A suffix range refused, or not served (not read: the first bytes' request
            // tells what to do).
            _ if suffix && matches!(status.as_u16(), 200 | 400 | 416 | 501) => {
                Ok(Probed::Refused(format!("HTTP {status}")))
            }
            // A server that ignores ranges: the whole file, copied.
            StatusCode::OK => {
                let total = self.take_whole(response, None, doing)?.size();
                Ok(Probed::Whole(Probe {
                    first: 0,
                    total,
                    data: Vec::new(),
                    version: version.clone(),
                }))
            }
            _ => Err(self.status_failure(&response, doing)),
        }
    }
}

/// A file's two ends from the parts of a reply: the part at offset 0 is the head, the
/// part that ends at `total` the tail (one part may be both: the whole file). `None`
/// when either is missing.
fn edges_from_parts(parts: Vec<Part>, total: u64) -> Option<Edges> {
    let mut head = None;
    let mut tail = None;
    for part in parts {
        let end = part.start + part.data.len() as u64;
        match (part.start == 0, end == total) {
            (true, true) => {
                let data = part.data;
                return Some(Edges {
                    tail_offset: data.len() as u64,
                    head: data,
                    tail: Vec::new(),
                });
            }
            (true, false) => head = Some(part.data),
            (false, true) => tail = Some((part.start, part.data)),
            (false, false) => {}
        }
    }
    let (head, (tail_offset, tail)) = (head?, tail?);
    Some(Edges {
        head,
        tail_offset,
        tail,
    })
}
