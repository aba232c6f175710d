//! Requested byte ranges grouped into the spans a remote source fetches (sorted, with
//! the ranges its rule joins merged), and the fetched spans cut back into the requested
//! ranges. HTTP joins overlapping ranges (each wire range one part of a multi-range
//! answer); S3 joins nearby small ones (one `GET` for many page lists).

use super::ByteRange;

/// The spans that read a set of requested ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Spans {
    /// The spans to fetch, in offset order.
    pub(crate) spans: Vec<ByteRange>,
    /// For each requested range, the span holding it (`None` for an empty range).
    pub(crate) span_of: Vec<Option<usize>>,
}

impl Spans {
    /// The non-empty `ranges` in offset order, each joined to the span before it when
    /// `joins(span, range)` says so (the span then grows to cover both).
    pub(crate) fn group(
        ranges: &[ByteRange],
        joins: impl Fn(ByteRange, ByteRange) -> bool,
    ) -> Spans {
        let mut order: Vec<usize> = (0..ranges.len()).filter(|&i| ranges[i].len > 0).collect();
        order.sort_by_key(|&i| ranges[i].offset);
        let mut spans: Vec<ByteRange> = Vec::new();
        let mut span_of = vec![None; ranges.len()];
        for i in order {
            let r = ranges[i];
            match spans.last_mut() {
                Some(last) if joins(*last, r) => {
                    let end = (last.offset + last.len).max(r.offset + r.len);
                    last.len = end - last.offset;
                }
                _ => spans.push(r),
            }
            span_of[i] = Some(spans.len() - 1);
        }
        Spans { spans, span_of }
    }

    /// The bytes of each of `ranges` (those [`group`](Self::group) was given) from
    /// `data`, the bytes of each span. The last range that is a whole span takes its
    /// buffer; the others are copied out. `None` if a span's bytes are fewer than it
    /// covers.
    pub(crate) fn split(
        &self,
        ranges: &[ByteRange],
        mut data: Vec<Vec<u8>>,
    ) -> Option<Vec<Vec<u8>>> {
        if data.len() != self.spans.len()
            || data
                .iter()
                .zip(&self.spans)
                .any(|(d, s)| d.len() as u64 != s.len)
        {
            return None;
        }
        // How many requested ranges still need each span.
        let mut uses = vec![0usize; self.spans.len()];
        for s in self.span_of.iter().flatten() {
            uses[*s] += 1;
        }
        Some(
            ranges
                .iter()
                .zip(&self.span_of)
                .map(|(range, span)| {
                    let Some(s) = *span else {
                        return Vec::new();
                    };
                    uses[s] -= 1;
                    if uses[s] == 0 && *range == self.spans[s] {
                        return std::mem::take(&mut data[s]);
                    }
                    // Inside the span, whose bytes (all of them, checked above) are in memory.
                    #[allow(clippy::cast_possible_truncation)]
                    let (at, len) = (
                        (range.offset - self.spans[s].offset) as usize,
                        range.len as usize,
                    );
                    data[s][at..at + len].to_vec()
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(offset: u64, len: u64) -> ByteRange {
        ByteRange { offset, len }
    }

    #[test]
    fn spans_cut_back_into_the_ranges_asked_whole_ones_taking_their_buffer() {
        let asked = [r(10, 5), r(0, 4), r(2, 2), r(20, 0), r(0, 4)];
        let spans = Spans::group(&asked, |span, next| {
            next.offset <= span.offset + span.len + 6
        });
        assert_eq!(spans.spans, [r(0, 15)]);
        assert_eq!(spans.span_of, [Some(0), Some(0), Some(0), None, Some(0)]);
        let bytes: Vec<u8> = (0..15).collect();
        let out = spans.split(&asked, vec![bytes.clone()]).unwrap();
        assert_eq!(
            out,
            [
                vec![10, 11, 12, 13, 14],
                vec![0, 1, 2, 3],
                vec![2, 3],
                vec![],
                vec![0, 1, 2, 3]
            ]
        );
        // A whole span goes to its last range without a copy.
        let whole = [r(0, 15), r(0, 15)];
        let spans = Spans::group(&whole, |span, next| next.offset < span.offset + span.len);
        assert_eq!(
            spans.split(&whole, vec![bytes.clone()]).unwrap(),
            [bytes.clone(), bytes]
        );
    }

    #[test]
    fn spans_with_fewer_bytes_than_they_cover_are_refused() {
        let asked = [r(0, 10), r(20, 5)];
        let spans = Spans::group(&asked, |_, _| false);
        assert_eq!(spans.split(&asked, vec![vec![0; 10], vec![0; 4]]), None);
        assert_eq!(spans.split(&asked, vec![vec![0; 10]]), None);
    }
}
