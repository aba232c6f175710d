//! Bounds-checked little-endian reading and writing of the spec's basic types.

use crate::error::{Error, Result};

/// Reads the spec's basic types from a byte slice, never past its end.
#[derive(Debug, Clone)]
pub struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    what: &'a str,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `data`; `what` names the structure for error messages.
    pub fn new(data: &'a [u8], what: &'a str) -> Self {
        Cursor { data, pos: 0, what }
    }

    /// The current position.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes left after the current position.
    pub fn remaining(&self) -> usize {
        self.data.len() - self.pos
    }

    /// The name of the structure being read.
    pub fn what(&self) -> &'a str {
        self.what
    }

    /// Takes the next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(Error::Truncated {
                what: self.what.to_string(),
                offset: self.pos as u64,
                needed: n as u64,
                available: self.remaining() as u64,
            });
        }
        let out = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    /// Skips `n` bytes.
    pub fn skip(&mut self, n: usize) -> Result<()> {
        self.bytes(n).map(|_| ())
    }

    /// Moves to `pos`, which must lie within the data.
    pub fn seek(&mut self, pos: usize) -> Result<()> {
        if pos > self.data.len() {
            return Err(Error::Truncated {
                what: self.what.to_string(),
                offset: pos as u64,
                needed: 0,
                available: 0,
            });
        }
        self.pos = pos;
        Ok(())
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.bytes(N)?);
        Ok(out)
    }

    /// A little-endian u16.
    pub fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.array()?))
    }
    /// A little-endian u32.
    pub fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.array()?))
    }
    /// A little-endian i32.
    pub fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_le_bytes(self.array()?))
    }
    /// A little-endian u64.
    pub fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.array()?))
    }
    /// A little-endian i64.
    pub fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.array()?))
    }
    /// A little-endian IEEE double.
    pub fn f64(&mut self) -> Result<f64> {
        Ok(f64::from_le_bytes(self.array()?))
    }

    /// A string: u32 byte length, then UTF-8 bytes.
    pub fn string(&mut self) -> Result<String> {
        let start = self.pos;
        let len = self.u32()? as usize;
        let bytes = self.bytes(len)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| {
            Error::corrupt(
                self.what,
                format!("string at offset {start} is not valid UTF-8"),
            )
        })
    }

    /// A frame preamble at the current position: returns the frame's kind, its item
    /// count (list frames) and the position just past the frame, checked against the data.
    pub fn frame(&mut self) -> Result<Frame> {
        let start = self.pos;
        let raw = self.i64()?;
        let (kind, size) = if raw < 0 {
            (FrameKind::List, raw.unsigned_abs())
        } else {
            (FrameKind::Record, raw as u64)
        };
        let items = match kind {
            FrameKind::List => self.u32()?,
            FrameKind::Record => 0,
        };
        let preamble = (self.pos - start) as u64;
        if size < preamble {
            return Err(Error::corrupt(
                self.what,
                format!("frame at offset {start} states size {size}, smaller than its preamble"),
            ));
        }
        let end = usize::try_from(size)
            .ok()
            .and_then(|size| start.checked_add(size))
            .filter(|&e| e <= self.data.len());
        let Some(end) = end else {
            return Err(Error::Truncated {
                what: format!("{} (frame at offset {start})", self.what),
                offset: start as u64,
                needed: size,
                available: (self.data.len() - start) as u64,
            });
        };
        Ok(Frame {
            kind,
            items,
            end,
            start,
        })
    }

    /// Reads a frame that must be a list frame.
    pub fn list_frame(&mut self) -> Result<Frame> {
        let frame = self.frame()?;
        if frame.kind != FrameKind::List {
            return Err(Error::corrupt(
                self.what,
                format!("expected a list frame at offset {}", frame.start),
            ));
        }
        Ok(frame)
    }

    /// Reads a list frame whose items take at least `min_item_bytes` each, so that its
    /// item count is bounded by the bytes it really holds (an allocation for the items
    /// is then bounded by the input's size); `items` names them in the error.
    pub fn bounded_list_frame(&mut self, min_item_bytes: usize, items: &str) -> Result<Frame> {
        let frame = self.list_frame()?;
        let room = frame.end.saturating_sub(self.pos);
        if usize::try_from(frame.items).unwrap_or(usize::MAX) > room / min_item_bytes.max(1) {
            return Err(Error::corrupt(
                self.what,
                format!(
                    "list frame at offset {} claims {} {items} in {room} bytes",
                    frame.start, frame.items
                ),
            ));
        }
        Ok(frame)
    }

    /// Reads a frame that must be a record frame.
    pub fn record_frame(&mut self) -> Result<Frame> {
        let frame = self.frame()?;
        if frame.kind != FrameKind::Record {
            return Err(Error::corrupt(
                self.what,
                format!("expected a record frame at offset {}", frame.start),
            ));
        }
        Ok(frame)
    }

    /// Checks that the contents read so far fit in `frame`, then moves past it,
    /// skipping any trailing bytes a newer format version may have added.
    pub fn end_frame(&mut self, frame: &Frame) -> Result<()> {
        if self.pos > frame.end {
            return Err(Error::corrupt(
                self.what,
                format!(
                    "frame at offset {} ends at {} but its contents run to {}",
                    frame.start, frame.end, self.pos
                ),
            ));
        }
        self.pos = frame.end;
        Ok(())
    }
}

/// Record or list frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameKind {
    /// A record frame: a fixed set of members.
    Record,
    /// A list frame: a count of items, then the items.
    List,
}

/// A frame's preamble, as read by [`Cursor::frame`].
#[derive(Debug, Clone, Copy)]
pub struct Frame {
    /// Record or list.
    pub kind: FrameKind,
    /// Number of items (list frames; 0 for record frames).
    pub items: u32,
    /// Offset of the frame's first byte.
    pub start: usize,
    /// Offset just past the frame.
    pub end: usize,
}

/// `len`, a string's length or a list's item count, as the u32 the format stores, or an
/// [`Error::InvalidArgument`] naming `what`: nothing longer can be written.
pub(crate) fn u32_len(len: usize, what: impl FnOnce() -> String) -> Result<u32> {
    u32::try_from(len).map_err(|_| {
        Error::InvalidArgument(format!(
            "{}: {len} is more than the format's 32-bit lengths and counts hold",
            what()
        ))
    })
}

/// Writes the spec's basic types, little-endian, into a growing buffer.
#[derive(Debug, Default, Clone)]
pub struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    /// An empty writer.
    pub fn new() -> Self {
        Self::default()
    }
    /// The bytes written.
    pub fn into_bytes(self) -> Vec<u8> {
        self.buf
    }
    /// The bytes written so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }
    /// Appends raw bytes.
    pub fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }
    /// Appends a u16.
    pub fn u16(&mut self, v: u16) {
        self.bytes(&v.to_le_bytes());
    }
    /// Appends a u32.
    pub fn u32(&mut self, v: u32) {
        self.bytes(&v.to_le_bytes());
    }
    /// Appends an i32.
    pub fn i32(&mut self, v: i32) {
        self.bytes(&v.to_le_bytes());
    }
    /// Appends a u64.
    pub fn u64(&mut self, v: u64) {
        self.bytes(&v.to_le_bytes());
    }
    /// Appends an i64.
    pub fn i64(&mut self, v: i64) {
        self.bytes(&v.to_le_bytes());
    }
    /// Appends a double.
    pub fn f64(&mut self, v: f64) {
        self.bytes(&v.to_le_bytes());
    }
    /// Appends a string: u32 length then the bytes. A string of 4 GiB or more has no
    /// representation: writers check theirs first (`Header::check_limits`).
    pub fn string(&mut self, s: &str) {
        // Header::check_limits, run by Descriptor::build on every schema a writer starts
        // from, refuses longer header and schema strings.
        #[allow(clippy::cast_possible_truncation)]
        self.u32(s.len() as u32);
        self.bytes(s.as_bytes());
    }
    /// Starts a record frame; finish it with [`Writer::end_frame`].
    pub fn begin_record(&mut self) -> usize {
        let at = self.buf.len();
        self.i64(0);
        at
    }
    /// Starts a list frame of `items` items; finish it with [`Writer::end_frame`].
    pub fn begin_list(&mut self, items: u32) -> usize {
        let at = self.buf.len();
        self.i64(-1);
        self.u32(items);
        at
    }
    /// Writes the size of the frame begun at `at` (negative for list frames).
    pub fn end_frame(&mut self, at: usize) {
        let size = (self.buf.len() - at) as i64;
        let mut head = [0u8; 8];
        head.copy_from_slice(&self.buf[at..at + 8]);
        let is_list = i64::from_le_bytes(head) < 0;
        let value = if is_list { -size } else { size };
        self.buf[at..at + 8].copy_from_slice(&value.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_skip_unknown_trailing_bytes() {
        let mut w = Writer::new();
        let list = w.begin_list(2);
        for v in [7u32, 9] {
            let rec = w.begin_record();
            w.u32(v);
            w.u32(0xdead); // a member a newer writer added
            w.end_frame(rec);
        }
        w.end_frame(list);
        w.u16(0xbeef);
        let bytes = w.into_bytes();
        let mut c = Cursor::new(&bytes, "test");
        let list = c.list_frame().unwrap();
        assert_eq!(list.items, 2);
        let mut got = vec![];
        for _ in 0..list.items {
            let rec = c.record_frame().unwrap();
            got.push(c.u32().unwrap());
            c.end_frame(&rec).unwrap();
        }
        c.end_frame(&list).unwrap();
        assert_eq!(got, vec![7, 9]);
        assert_eq!(c.u16().unwrap(), 0xbeef);
    }

    #[test]
    fn frame_larger_than_data_is_an_error() {
        let mut w = Writer::new();
        w.i64(1000);
        let bytes = w.into_bytes();
        let err = Cursor::new(&bytes, "test").frame().unwrap_err();
        assert!(matches!(err, Error::Truncated { .. }), "{err}");
    }

    #[test]
    fn frame_ends_at_most_at_the_end_of_the_data() {
        // A record frame of 12 bytes in 12 bytes of data, then one claiming 13.
        for (size, fits) in [(12i64, true), (13, false), (i64::MAX, false)] {
            let mut w = Writer::new();
            w.i64(size);
            w.u32(0);
            let bytes = w.into_bytes();
            let frame = Cursor::new(&bytes, "test").frame();
            match frame {
                Ok(f) => assert!(fits && f.end == 12, "size {size}: end {}", f.end),
                Err(err) => assert!(!fits && matches!(err, Error::Truncated { .. }), "{err}"),
            }
        }
        // A list frame of the largest size (2^63 bytes) is refused, not wrapped.
        let mut w = Writer::new();
        w.i64(i64::MIN);
        w.u32(1);
        let bytes = w.into_bytes();
        let err = Cursor::new(&bytes, "test").frame().unwrap_err();
        assert!(matches!(err, Error::Truncated { .. }), "{err}");
    }

    #[test]
    fn lengths_and_counts_fit_32_bits() {
        assert_eq!(
            u32_len(u32::MAX as usize, || "list".into()).unwrap(),
            u32::MAX
        );
        if let Some(past) = (u32::MAX as usize).checked_add(1) {
            let err = u32_len(past, || "list of fields".into()).unwrap_err();
            assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
            assert!(
                err.to_string().contains("list of fields: 4294967296"),
                "{err}"
            );
        }
    }

    #[test]
    fn string_past_end_is_an_error() {
        let mut w = Writer::new();
        w.u32(5);
        w.bytes(b"ab");
        let bytes = w.into_bytes();
        assert!(Cursor::new(&bytes, "test").string().is_err());
    }
}
