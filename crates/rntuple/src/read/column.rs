//! Reading a range of a column's elements within one cluster: find the pages, fetch,
//! verify, decompress and decode them (in parallel), and add the synthetic zeros of
//! deferred columns.

use super::RNTupleReader;
use crate::compression;
use crate::container;
use crate::encoding::{decode_page, ColumnEncoding, ColumnType, ColumnValues};
use crate::error::{Error, Location, Result};
use crate::format::PageInfo;
use crate::schema::ClusterDescriptor;
use rayon::prelude::*;
use std::ops::Range;
use xxhash_rust::xxh3::xxh3_64;

/// The encoding of physical column `id`, checked.
pub(crate) fn column_encoding(reader: &RNTupleReader, id: u32) -> Result<ColumnEncoding> {
    let rec = &reader.descriptor().column(id).record;
    let column_type = ColumnType::from_u16(rec.column_type).ok_or_else(|| {
        Error::Unsupported(format!("column type {:#x} of column {id}", rec.column_type))
    })?;
    ColumnEncoding::new(column_type, rec.bits_on_storage, rec.value_range)
}

impl RNTupleReader {
    /// Reads the elements `range` (indices local to the cluster) of column `id`.
    ///
    /// `expected_total` is the number of elements the column must have in this cluster
    /// when that follows from the entry count (fields outside collections); it lets the
    /// leading zeros of a deferred column be told apart from a corrupt page list.
    pub(crate) fn read_column(
        &self,
        cluster: &ClusterDescriptor,
        id: u32,
        range: Range<u64>,
        expected_total: Option<u64>,
    ) -> Result<ColumnValues> {
        let at = |e: Error| {
            e.at(Location {
                column: Some(id as u64),
                cluster: Some(cluster.id),
                ..Default::default()
            })
        };
        let encoding = column_encoding(self, id).map_err(at)?;
        let column = self.descriptor().column(id);
        let deferred = column.record.first_element_index.is_some();
        let pages: &[PageInfo] = match cluster.column(id) {
            Some(cp) => &cp.pages,
            None => &[],
        };
        let stored: u64 = pages.iter().map(|p| p.n_elements as u64).sum();
        let zeros = match expected_total {
            Some(total) if stored > total => {
                return Err(at(Error::corrupt(
                    "page list",
                    format!("column has {stored} elements, the cluster needs {total}"),
                )))
            }
            Some(total) if stored < total && !deferred => {
                return Err(at(Error::corrupt(
                    "page list",
                    format!("column has {stored} elements, the cluster needs {total}"),
                )))
            }
            Some(total) => total - stored,
            None => 0,
        };
        if range.start > range.end || range.end > zeros + stored {
            return Err(at(Error::corrupt(
                "page list",
                format!(
                    "elements {}..{} requested but the column has {} in this cluster",
                    range.start,
                    range.end,
                    zeros + stored
                ),
            )));
        }
        let mut out = ColumnValues::empty(encoding.column_type);
        let zero_end = range.end.min(zeros);
        if range.start < zero_end {
            out = ColumnValues::zeros(encoding.column_type, (zero_end - range.start) as usize);
        }
        let start = range.start.max(zeros) - zeros;
        let end = range.end.saturating_sub(zeros);
        if start < end {
            // Pages overlapping [start, end), with their first element index.
            let mut first = 0u64;
            let mut wanted = Vec::new();
            for (i, p) in pages.iter().enumerate() {
                let n = p.n_elements as u64;
                if first < end && first + n > start && n > 0 {
                    wanted.push((i, first));
                }
                first += n;
            }
            let decoded: Vec<(ColumnValues, u64)> = wanted
                .par_iter()
                .map(|&(i, page_first)| {
                    self.read_page(&pages[i], &encoding)
                        .map(|v| (v, page_first))
                        .map_err(|e| {
                            e.at(Location {
                                column: Some(id as u64),
                                cluster: Some(cluster.id),
                                page: Some(i as u64),
                                ..Default::default()
                            })
                        })
                })
                .collect::<Result<_>>()?;
            for (values, page_first) in decoded {
                let n = values.len() as u64;
                let lo = start.max(page_first) - page_first;
                let hi = end.min(page_first + n) - page_first;
                let part = if lo == 0 && hi == n {
                    values
                } else {
                    values
                        .slice(lo as usize, (hi - lo) as usize)
                        .ok_or_else(|| Error::corrupt("page", "page slice out of range"))?
                };
                out.append(part)?;
            }
        }
        Ok(out)
    }

    /// Fetches, verifies, decompresses and decodes one page.
    fn read_page(&self, page: &PageInfo, encoding: &ColumnEncoding) -> Result<ColumnValues> {
        let n = page.n_elements as u64;
        let unzipped = encoding.page_bytes(n).ok_or_else(|| {
            Error::corrupt("page list", format!("page of {n} elements is too large"))
        })?;
        let size = page.locator.size;
        let offset = page.locator.offset;
        let with_sum = size + if page.has_checksum { 8 } else { 0 };
        let raw = container::read_blob(
            self.source().as_ref(),
            offset,
            with_sum,
            self.anchor().max_key_size,
        )
        .map_err(|e| {
            e.at(Location {
                offset: Some(offset),
                ..Default::default()
            })
        })?;
        let (data, sum) = raw.split_at(size as usize);
        if page.has_checksum {
            let mut b = [0u8; 8];
            b.copy_from_slice(sum);
            let stored = u64::from_le_bytes(b);
            let computed = xxh3_64(data);
            if stored != computed {
                return Err(Error::ChecksumMismatch {
                    what: format!("page at byte offset {offset}"),
                    stored,
                    computed,
                });
            }
        }
        let unzipped_len = usize::try_from(unzipped)
            .map_err(|_| Error::corrupt("page list", "page too large for memory"))?;
        let decoded;
        let bytes: &[u8] = if size == unzipped {
            data
        } else {
            decoded = compression::decompress(
                data,
                unzipped_len,
                &format!("page at byte offset {offset}"),
            )?;
            &decoded
        };
        decode_page(encoding, bytes, n)
    }
}
