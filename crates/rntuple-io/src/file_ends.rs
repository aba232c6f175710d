//! A remote source with its first and last bytes read up front, in one vectored request:
//! opening a ROOT file reads the file header, the directory, the keys list, the anchor
//! and the RNTuple's envelopes, which sit at the file's two ends, so opening costs one
//! round trip instead of one per structure.

use super::{
    Access, ByteRange, IoMetricsSnapshot, RangeBuffer, ReadAt, ReadRanges, ReadRequest, Source,
    SourceProfile,
};
use crate::error::Result;

// Small on purpose: what opening needs besides them (a large page list) costs one more
// round trip, while bytes read up front and not needed count against selective reads.

/// Bytes read up front from the start of a remote file (file header, top directory,
/// usually the RNTuple header envelope).
pub(super) const HEAD_BYTES: u64 = 64 << 10;
/// Bytes read up front from the end of a remote file (keys list, streamer info, anchor,
/// footer, often the page lists).
pub(super) const TAIL_BYTES: u64 = 128 << 10;

/// A file's first and last bytes, read when it was opened.
#[derive(Debug, Default, Clone)]
pub struct Edges {
    /// The first bytes.
    pub head: Vec<u8>,
    /// Where `tail` starts in the file.
    pub tail_offset: u64,
    /// The last bytes.
    pub tail: Vec<u8>,
}

impl Edges {
    /// Reads the first `head` and last `tail` bytes of `source` (one vectored read).
    pub fn read(source: &dyn ReadAt, head: u64, tail: u64) -> Result<Edges> {
        let size = source.size();
        let head_len = head.min(size);
        let tail_offset = size.saturating_sub(tail).max(head_len);
        let mut ranges = vec![ByteRange {
            offset: 0,
            len: head_len,
        }];
        if tail_offset < size {
            ranges.push(ByteRange {
                offset: tail_offset,
                len: size - tail_offset,
            });
        }
        let mut parts = source.read_ranges(&ranges)?.into_iter();
        let head = parts.next().unwrap_or_default();
        let tail = parts.next().unwrap_or_default();
        Ok(Edges {
            head,
            tail_offset,
            tail,
        })
    }

    /// The bytes `offset..offset + len` if they are all kept.
    pub fn kept(&self, offset: u64, len: u64) -> Option<&[u8]> {
        let end = offset.checked_add(len)?;
        if end <= self.head.len() as u64 {
            let (start, end) = (usize::try_from(offset).ok()?, usize::try_from(end).ok()?);
            return self.head.get(start..end);
        }
        if offset >= self.tail_offset && end <= self.tail_offset + self.tail.len() as u64 {
            let at = usize::try_from(offset - self.tail_offset).ok()?;
            return self
                .tail
                .get(at..at.checked_add(usize::try_from(len).ok()?)?);
        }
        None
    }
}

/// A source whose first and last bytes are kept in memory; other reads go through.
pub struct EdgeCached {
    inner: Source,
    edges: Edges,
}

impl EdgeCached {
    /// Reads the first `head` and last `tail` bytes of `inner` (one vectored read).
    pub fn new(inner: Source, head: u64, tail: u64) -> Result<EdgeCached> {
        let edges = Edges::read(inner.as_ref(), head, tail)?;
        Ok(EdgeCached { inner, edges })
    }

    /// Keeps `edges` of `inner`, read when it was opened.
    pub fn with_edges(inner: Source, edges: Edges) -> Self {
        EdgeCached { inner, edges }
    }

    /// The bytes `offset..offset + len` if they are all kept.
    fn kept(&self, offset: u64, len: u64) -> Option<&[u8]> {
        self.edges.kept(offset, len)
    }
}

impl ReadAt for EdgeCached {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn size(&self) -> u64 {
        self.inner.size()
    }

    fn read_at(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        match self.kept(offset, len) {
            Some(bytes) => Ok(bytes.to_vec()),
            None => self.inner.read_at(offset, len),
        }
    }

    fn read(&self, request: ReadRequest<'_>) -> Result<Vec<RangeBuffer>> {
        let ReadRequest {
            ranges,
            access,
            spare,
        } = request;
        let missing: Vec<ByteRange> = ranges
            .iter()
            .filter(|r| self.kept(r.offset, r.len).is_none())
            .copied()
            .collect();
        // The others go through, as asked (the spare buffers with them).
        let mut fetched = if missing.is_empty() {
            Vec::new()
        } else {
            let request = ReadRequest::new(&missing).access(access).spare(spare);
            self.inner.read(request)?
        }
        .into_iter();
        if access == Access::WillNeed {
            return Ok(Vec::new());
        }
        ranges
            .iter()
            .map(|r| match self.kept(r.offset, r.len) {
                Some(bytes) => Ok(RangeBuffer::whole(bytes.to_vec())),
                None => fetched.next().ok_or_else(|| crate::error::Error::Remote {
                    kind: crate::error::RemoteKind::Other,
                    what: self.inner.name().to_string(),
                    detail: "a vectored read returned fewer ranges than asked".into(),
                }),
            })
            .collect()
    }

    fn metrics(&self) -> IoMetricsSnapshot {
        self.inner.metrics()
    }

    fn profile(&self) -> SourceProfile {
        self.inner.profile()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MemorySource;
    use std::sync::Arc;

    #[test]
    fn kept_edges_answer_without_the_source() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let inner: Source = Arc::new(MemorySource::new("m", data.clone()));
        let cached = EdgeCached::new(inner.clone(), 1000, 2000).unwrap();
        let after_open = inner.metrics().requests;
        for (offset, len) in [(0u64, 10u64), (990, 10), (8000, 2000), (9999, 1)] {
            let got = cached.read_at(offset, len).unwrap();
            assert_eq!(got, data[offset as usize..(offset + len) as usize]);
        }
        assert_eq!(
            inner.metrics().requests,
            after_open,
            "served from the edges"
        );
        // Reads that leave the edges go to the source, and are right too.
        let ranges = [
            ByteRange { offset: 5, len: 5 },
            ByteRange {
                offset: 995,
                len: 10,
            },
            ByteRange {
                offset: 9000,
                len: 1000,
            },
            ByteRange {
                offset: 4000,
                len: 3,
            },
        ];
        let got = cached.read_ranges(&ranges).unwrap();
        for (r, g) in ranges.iter().zip(got) {
            assert_eq!(g, data[r.offset as usize..(r.offset + r.len) as usize]);
        }
        assert_eq!(
            inner.metrics().requests,
            after_open + 2,
            "only the two outside"
        );
        assert!(cached.read_at(9999, 2).is_err(), "past the end");
    }

    /// What a request asked: its ranges, access and spare buffers.
    type Request = (Vec<ByteRange>, Access, Vec<Vec<u8>>);

    /// A source that keeps what each request asked.
    #[derive(Default)]
    struct Asked(std::sync::Mutex<Vec<Request>>);

    impl ReadAt for Asked {
        fn name(&self) -> &str {
            "asked"
        }
        fn size(&self) -> u64 {
            10_000
        }
        fn read_at(&self, _: u64, len: u64) -> Result<Vec<u8>> {
            Ok(vec![1; len as usize])
        }
        fn read(&self, request: ReadRequest<'_>) -> Result<Vec<RangeBuffer>> {
            let answer = crate::read_each(self, &request);
            let ReadRequest {
                ranges,
                access,
                spare,
            } = request;
            self.0
                .lock()
                .unwrap()
                .push((ranges.to_vec(), access, spare));
            answer
        }
        fn metrics(&self) -> IoMetricsSnapshot {
            IoMetricsSnapshot::default()
        }
    }

    #[test]
    fn requests_go_through_with_their_access_and_spare_buffers() {
        let inner = Arc::new(Asked::default());
        let cached = EdgeCached::new(inner.clone(), 1000, 2000).unwrap();
        inner.0.lock().unwrap().clear();
        let (kept, outside) = (
            ByteRange { offset: 5, len: 5 },
            ByteRange {
                offset: 4000,
                len: 3,
            },
        );
        let both = [kept, outside];
        for access in [Access::Normal, Access::Uncached, Access::WillNeed] {
            let request = ReadRequest::new(&both)
                .access(access)
                .spare(vec![vec![9; 64]]);
            let got = cached.read(request).unwrap();
            let asked = inner.0.lock().unwrap().pop().unwrap();
            assert_eq!(asked, (vec![outside], access, vec![vec![9; 64]]));
            if access == Access::WillNeed {
                assert!(got.is_empty(), "a hint returns nothing");
            } else {
                let bytes: Vec<Vec<u8>> = got.into_iter().map(RangeBuffer::into_bytes).collect();
                assert_eq!(bytes, [vec![1; 5], vec![1; 3]]);
            }
        }
        // Only kept ranges: nothing asked of the source.
        cached.read(ReadRequest::new(&[kept])).unwrap();
        assert!(inner.0.lock().unwrap().is_empty());
    }

    #[test]
    fn small_sources_are_kept_whole() {
        let data = vec![7u8; 100];
        let inner: Source = Arc::new(MemorySource::new("m", data.clone()));
        let cached = EdgeCached::new(inner, 1000, 2000).unwrap();
        assert_eq!(cached.read_at(0, 100).unwrap(), data);
    }
}
