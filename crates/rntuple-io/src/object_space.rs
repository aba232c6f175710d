//! A store's objects as one byte source: object `n` of a layout lies at
//! [`object_address`]`(n)` (`n << 36`), so the reader's planner, prefetcher and caches,
//! which think in byte ranges, read objects as they read a file's ranges. Each range is
//! one object's bytes (ranges 64 GiB apart are never merged), fetched by the layout's
//! [`ObjectFetcher`], many at once.
//!
//! [`object_address`]: https://docs.rs/rntuple/latest/rntuple/format/fn.object_address.html

use super::{
    ByteRange, IoMetricsSnapshot, RangeBuffer, ReadAt, ReadHints, ReadRequest, SourceProfile,
};
use crate::error::{Error, Result};
use std::sync::Arc;

/// Bits of an address that give the byte within its object (the format's
/// `OBJECT_ADDRESS_BITS`, repeated here because this crate names no layer above it; a
/// test of the core checks that they agree).
pub const OBJECT_BITS: u32 = 36;

/// Fetches a layout's objects by number: what an [`ObjectSpace`] reads through.
pub trait ObjectFetcher: Send + Sync {
    /// The dataset, for messages (its URL).
    fn name(&self) -> &str;
    /// The bytes of each `(object, range within it)`, in order; the requests go out
    /// together (as many at once as the store serves well). A missing object, or a
    /// range past an object's end, is an error naming the object.
    fn fetch(&self, requests: &[(u64, ByteRange)]) -> Result<Vec<Vec<u8>>>;
    /// Object `n` whole (its size need not be known), for a fetcher whose objects are
    /// read whole (a layout's header and footer at opening); others refuse.
    fn fetch_object(&self, n: u64) -> Result<Vec<u8>> {
        Err(Error::Unsupported(format!(
            "{}: object {n} is read by its ranges, not whole",
            self.name()
        )))
    }
    /// The store's counters.
    fn metrics(&self) -> IoMetricsSnapshot;
}

/// How a reader plans reads of objects: no merging (neighbouring ranges are other
/// objects), many ranges per call, fetched concurrently by the fetcher; several calls
/// in flight.
pub const OBJECT_HINTS: ReadHints = ReadHints {
    merge_gap: 0,
    max_waste: 0.0,
    max_range_bytes: 64 << 20,
    max_ranges_per_request: 4096,
    max_request_bytes: 32 << 20,
    parallel_requests: 8,
    remote: true,
    bunch_bytes: 32 << 20,
};

/// The objects `0..count` of a layout as one byte source ([`SourceProfile::holds_objects`]).
pub struct ObjectSpace {
    fetcher: Arc<dyn ObjectFetcher>,
    size: u64,
}

impl ObjectSpace {
    /// The objects numbered below `count` of `fetcher`'s layout.
    pub fn new(fetcher: Arc<dyn ObjectFetcher>, count: u64) -> ObjectSpace {
        let size = count.saturating_mul(1 << OBJECT_BITS);
        ObjectSpace { fetcher, size }
    }

    /// The object and the range within it that `range` addresses; a range that would
    /// cross into the next object is an error.
    fn split(&self, range: ByteRange) -> Result<(u64, ByteRange)> {
        let object = range.offset >> OBJECT_BITS;
        let within = range.offset & ((1 << OBJECT_BITS) - 1);
        if within
            .checked_add(range.len)
            .is_none_or(|end| end > 1 << OBJECT_BITS)
        {
            // The range comes from the dataset's metadata (its anchor, a locator): bad
            // data, not a bad call.
            return Err(Error::corrupt(
                self.fetcher.name(),
                format!(
                    "{} bytes at byte {within} of object {object} run past the largest size \
                     of an object (64 GiB)",
                    range.len
                ),
            ));
        }
        Ok((
            object,
            ByteRange {
                offset: within,
                len: range.len,
            },
        ))
    }
}

impl ObjectSpace {
    /// Reads `ranges`, each inside one object, in one fetch of the store.
    fn read_vectored(&self, ranges: &[ByteRange]) -> Result<Vec<Vec<u8>>> {
        let requests = ranges
            .iter()
            .map(|r| self.split(*r))
            .collect::<Result<Vec<_>>>()?;
        self.fetcher.fetch(&requests)
    }
}

impl ReadAt for ObjectSpace {
    fn name(&self) -> &str {
        self.fetcher.name()
    }

    fn size(&self) -> u64 {
        self.size
    }

    fn read_at(&self, offset: u64, len: u64) -> Result<Vec<u8>> {
        let mut bytes = self.read_vectored(&[ByteRange { offset, len }])?;
        bytes.pop().ok_or_else(|| {
            Error::InvalidArgument(format!("{}: a read returned nothing", self.name()))
        })
    }

    fn read(&self, request: ReadRequest<'_>) -> Result<Vec<RangeBuffer>> {
        request.serve(drop, |r| self.read_vectored(r))
    }

    fn metrics(&self) -> IoMetricsSnapshot {
        self.fetcher.metrics()
    }

    fn profile(&self) -> SourceProfile {
        SourceProfile {
            holds_objects: true,
            ..SourceProfile::with_hints(OBJECT_HINTS)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ReadRanges;
    use std::sync::Mutex;

    /// Objects of 100 bytes whose byte `i` is `object + i`; records the requests.
    struct Numbers(Mutex<Vec<(u64, ByteRange)>>);

    impl ObjectFetcher for Numbers {
        fn name(&self) -> &str {
            "numbers"
        }
        fn fetch(&self, requests: &[(u64, ByteRange)]) -> Result<Vec<Vec<u8>>> {
            self.0.lock().unwrap().extend_from_slice(requests);
            requests
                .iter()
                .map(|&(n, r)| {
                    if r.offset + r.len > 100 {
                        return Err(Error::NotFound(format!("object {n} has 100 bytes")));
                    }
                    Ok((r.offset..r.offset + r.len)
                        .map(|i| (n + i) as u8)
                        .collect())
                })
                .collect()
        }
        fn metrics(&self) -> IoMetricsSnapshot {
            IoMetricsSnapshot::default()
        }
    }

    #[test]
    fn addresses_name_an_object_and_a_byte_in_it() {
        let fetcher = Arc::new(Numbers(Mutex::new(Vec::new())));
        let space = ObjectSpace::new(fetcher.clone(), 10);
        assert!(space.profile().holds_objects);
        assert_eq!(space.size(), 10 << 36);
        let got = space
            .read_ranges(&[
                ByteRange {
                    offset: (3 << 36) + 5,
                    len: 3,
                },
                ByteRange {
                    offset: 7 << 36,
                    len: 2,
                },
            ])
            .unwrap();
        assert_eq!(got, vec![vec![8, 9, 10], vec![7, 8]]);
        assert_eq!(
            fetcher.0.lock().unwrap().as_slice(),
            &[
                (3, ByteRange { offset: 5, len: 3 }),
                (7, ByteRange { offset: 0, len: 2 })
            ]
        );
        assert_eq!(space.read_at(1 << 36, 1).unwrap(), vec![1]);
    }

    #[test]
    fn a_range_across_objects_is_an_error() {
        let space = ObjectSpace::new(Arc::new(Numbers(Mutex::new(Vec::new()))), 10);
        let err = space
            .read_at((1 << 36) - 2, 4)
            .expect_err("crosses from object 0 into 1");
        assert!(err.to_string().contains("object 0"), "{err}");
        // Bad metadata, not a bad call: a data error (exit status 1 on the command line).
        assert!(matches!(err, Error::Corrupt { .. }), "{err:?}");
        let err = space.read_at(2 << 36, 200).expect_err("past the object");
        assert!(err.to_string().contains("object 2 has 100 bytes"), "{err}");
    }
}
