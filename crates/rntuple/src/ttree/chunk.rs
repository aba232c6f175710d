//! A branch's entries over an entry range, gathered from its baskets.

use super::basket::{read_basket_at, Basket, BasketPlace};
use super::meta::Branch;
use crate::error::{Error, Result};
use crate::io::{ReadAt, Source};

/// A branch's bytes for a range of entries.
#[derive(Debug, Clone, Default)]
pub struct BranchChunk {
    /// The entries' bytes, back to back.
    pub data: Vec<u8>,
    /// Where each entry starts in `data`, plus the end; `None` when the branch's entries
    /// all have the same size (then each takes `data.len() / entries` bytes).
    pub offsets: Option<Vec<usize>>,
    /// Number of entries.
    pub entries: usize,
}

impl BranchChunk {
    /// The bytes of entry `i`.
    pub fn entry(&self, i: usize) -> &[u8] {
        match &self.offsets {
            Some(o) => &self.data[o[i]..o[i + 1]],
            None => {
                let size = self.data.len() / self.entries.max(1);
                &self.data[i * size..(i + 1) * size]
            }
        }
    }
}

/// Reads one branch's entries range after range, keeping the basket that straddles a
/// range's end for the next range.
pub struct ChunkReader {
    source: Source,
    branch: Branch,
    current: Option<(usize, Basket)>,
}

impl std::fmt::Debug for ChunkReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkReader")
            .field("source", &self.source.name())
            .field("branch", &self.branch.name)
            .finish()
    }
}

impl ChunkReader {
    /// A reader of `branch`'s baskets from `source`: the ones written as keys, then the
    /// ones kept in the tree's metadata.
    pub fn new(source: Source, branch: &Branch) -> Result<ChunkReader> {
        Ok(ChunkReader {
            source,
            branch: branch.clone(),
            current: None,
        })
    }

    /// The branch.
    pub fn branch(&self) -> &Branch {
        &self.branch
    }

    /// The basket holding `entry`.
    fn basket_of(&self, entry: u64) -> Result<usize> {
        let starts = &self.branch.basket_entry[..self.branch.basket_count()];
        let i = starts.partition_point(|&s| s <= entry);
        i.checked_sub(1).ok_or_else(|| {
            Error::corrupt(
                format!("branch \"{}\"", self.branch.name),
                format!("no basket holds entry {entry}"),
            )
        })
    }

    fn basket(&mut self, index: usize) -> Result<&Basket> {
        if self.current.as_ref().is_none_or(|(i, _)| *i != index) {
            let written = self.branch.written_baskets();
            let b = match index.checked_sub(written) {
                Some(kept) => self
                    .branch
                    .embedded
                    .get(kept)
                    .map(|b| Basket::clone(b))
                    .ok_or_else(|| {
                        Error::InvalidArgument(format!(
                            "basket {index} of branch \"{}\" does not exist",
                            self.branch.name
                        ))
                    })?,
                None => read_basket(self.source.as_ref(), &self.branch, index)?,
            };
            self.current = Some((index, b));
        }
        match &self.current {
            Some((_, b)) => Ok(b),
            None => Err(Error::InvalidArgument("no basket".to_string())),
        }
    }

    /// The entries `start..end` (which must lie within the branch's entries).
    pub fn read(&mut self, start: u64, end: u64) -> Result<BranchChunk> {
        let branch_entries = self.branch.entries;
        if start > end || end > branch_entries {
            return Err(Error::InvalidArgument(format!(
                "entries {start}..{end} of branch \"{}\", which has {branch_entries}",
                self.branch.name
            )));
        }
        let entries = crate::error::to_usize(end - start, "entries of a chunk")?;
        let mut out = BranchChunk {
            entries,
            ..Default::default()
        };
        if start == end {
            return Ok(out);
        }
        let mut offsets: Vec<usize> = Vec::new();
        let mut fixed_size: Option<usize> = None;
        let mut entry = start;
        let mut index = self.basket_of(start)?;
        while entry < end {
            let name = self.branch.name.clone();
            let basket = self.basket(index)?;
            let first = basket.first_entry;
            let local_start = usize::try_from(entry - first).unwrap_or(usize::MAX);
            let local_end = usize::try_from(end.min(first + u64::from(basket.entries)) - first)
                .unwrap_or(usize::MAX);
            match &basket.offsets {
                Some(o) => {
                    if fixed_size.is_some() {
                        return Err(mixed(&name));
                    }
                    let (a, b) = (o[local_start] as usize, o[local_end] as usize);
                    let base = out.data.len();
                    if offsets.is_empty() {
                        offsets.push(0);
                    }
                    offsets.extend(
                        o[local_start + 1..=local_end]
                            .iter()
                            .map(|&x| base + x as usize - a),
                    );
                    out.data.extend_from_slice(&basket.data[a..b]);
                }
                None => {
                    if !offsets.is_empty() {
                        return Err(mixed(&name));
                    }
                    let n = basket.entries as usize;
                    if n == 0 || basket.data.len() % n != 0 {
                        return Err(Error::corrupt(
                            format!("basket {index} of branch \"{name}\""),
                            format!(
                                "{} bytes do not split into {n} equal entries",
                                basket.data.len()
                            ),
                        ));
                    }
                    let size = basket.data.len() / n;
                    if fixed_size.is_some_and(|s| s != size) {
                        return Err(Error::corrupt(
                            format!("basket {index} of branch \"{name}\""),
                            format!(
                                "its entries take {size} bytes, other baskets' {}",
                                fixed_size.unwrap_or(0)
                            ),
                        ));
                    }
                    fixed_size = Some(size);
                    out.data
                        .extend_from_slice(&basket.data[local_start * size..local_end * size]);
                }
            }
            entry = first + local_end as u64;
            index += 1;
        }
        if !offsets.is_empty() {
            out.offsets = Some(offsets);
        }
        Ok(out)
    }
}

fn mixed(branch: &str) -> Error {
    Error::corrupt(
        format!("branch \"{branch}\""),
        "some baskets have entry offsets and others not",
    )
}

/// Reads and decompresses basket `index` of `branch` from `source`.
pub fn read_basket(source: &dyn ReadAt, branch: &Branch, index: usize) -> Result<Basket> {
    let what = format!("basket {index} of branch \"{}\"", branch.name);
    let (Some(&nbytes), Some(&seek), Some(&first_entry), Some(&next_entry)) = (
        branch.basket_bytes.get(index),
        branch.basket_seek.get(index),
        branch.basket_entry.get(index),
        branch.basket_entry.get(index + 1),
    ) else {
        return Err(Error::InvalidArgument(format!("{what} does not exist")));
    };
    let place = BasketPlace {
        nbytes,
        seek,
        first_entry,
        next_entry,
    };
    read_basket_at(source, &what, &place)
}
