//! The RNTuple writer: buffers shredded values into column pages, seals pages
//! (encode, compress, checksum) in parallel, commits clusters (one blob of pages each),
//! cluster groups (page lists), and finally the footer; the caller's container writes
//! the anchor it returns.

use super::options::WriteOptions;
use super::shred::{shred, ColumnSink};
use crate::compression::{compress, CompressionSettings};
use crate::encoding::{encode_page, ColumnEncoding, ColumnType, ColumnValues};
use crate::error::{Error, Result};
use crate::format::{
    seal_envelope, Anchor, ClusterGroupRecord, ClusterSummary, ColumnPages, EnvelopeLink,
    EnvelopeType, Footer, Header, LinkedAttributeSet, Locator, PageInfo, PageList,
    SchemaDescription,
};
use crate::schema::Descriptor;
use arrow_array::{Array, RecordBatch};
use rayon::prelude::*;
use xxhash_rust::xxh3::xxh3_64;

/// Where the writer puts its payloads: a ROOT file's RBlob keys, or memory in tests.
pub trait BlobSink {
    /// Stores `payload` (split over several keys when longer than `max_key_size`) and
    /// returns the offset of its first byte, as locators record it.
    fn write_blob(&mut self, payload: &[u8], max_key_size: u64) -> Result<u64>;
}

/// The format version written in the anchor: 1.0.2.0, as ROOT 6.40.
const FORMAT_VERSION: (u16, u16, u16, u16) = (1, 0, 2, 0);

/// One sealed page: compressed bytes with the checksum appended.
struct SealedPage {
    bytes: Vec<u8>,
    n_elements: u32,
    has_checksum: bool,
}

/// A column being written.
struct ColumnState {
    encoding: ColumnEncoding,
    /// Elements per page: the page size over the element's in-memory size.
    page_capacity: usize,
    /// The page being filled.
    page: ColumnValues,
    /// Full pages not yet sealed.
    full: Vec<ColumnValues>,
    /// Sealed pages of the open cluster.
    sealed: Vec<SealedPage>,
    /// Elements appended to the open cluster.
    cluster_elements: u64,
    /// Global index of the open cluster's first element.
    first_element: u64,
}

/// The state of a new column whose first element has global index `first_element`.
fn column_state(
    descriptor: &Descriptor,
    rec: &crate::format::ColumnRecord,
    options: &WriteOptions,
    first_element: u64,
) -> Result<ColumnState> {
    let column_type = ColumnType::from_u16(rec.column_type)
        .ok_or_else(|| Error::Unsupported(format!("column type {:#x}", rec.column_type)))?;
    let encoding = ColumnEncoding::new(column_type, rec.bits_on_storage, rec.value_range)?;
    let is_double = matches!(
        descriptor.field(rec.field_id).type_name(),
        "double" | "Double32_t"
    );
    let memory = memory_size(column_type, is_double);
    Ok(ColumnState {
        encoding,
        page_capacity: (options.max_unzipped_page_size / memory).max(1) as usize,
        page: ColumnValues::empty(column_type),
        full: Vec::new(),
        sealed: Vec::new(),
        cluster_elements: 0,
        first_element,
    })
}

/// Bytes one element of `column_type` takes in memory (ROOT sizes pages by it).
fn memory_size(column_type: ColumnType, field_is_double: bool) -> u64 {
    use ColumnType as C;
    match column_type {
        C::Bit | C::Byte | C::Char | C::Int8 | C::UInt8 => 1,
        C::Int16 | C::UInt16 | C::SplitInt16 | C::SplitUInt16 => 2,
        C::Int32 | C::UInt32 | C::SplitInt32 | C::SplitUInt32 => 4,
        C::Real16
        | C::SplitReal16
        | C::Real32
        | C::SplitReal32
        | C::Real32Trunc
        | C::Real32Quant => {
            if field_is_double {
                8
            } else {
                4
            }
        }
        C::Int64 | C::UInt64 | C::SplitInt64 | C::SplitUInt64 | C::Real64 | C::SplitReal64 => 8,
        C::Index32 | C::Index64 | C::SplitIndex32 | C::SplitIndex64 => 8,
        C::Switch => 16,
    }
}

/// Writes one RNTuple into a [`BlobSink`].
pub struct RNTupleWriter<'s, S: BlobSink> {
    sink: &'s mut S,
    options: WriteOptions,
    header: Header,
    /// Fields and columns added after the header (late model extension).
    extension: SchemaDescription,
    descriptor: Descriptor,
    /// Top-level fields with data (projected fields have none), in schema order.
    data_fields: Vec<u32>,
    columns: Vec<ColumnState>,
    /// Cluster-local item counters per collection field.
    items: Vec<u64>,
    /// Cluster-local entry counters per variant alternative field.
    alternatives: Vec<u64>,
    header_anchor: (u64, u64, u64),
    header_checksum: u64,
    n_entries: u64,
    cluster_first_entry: u64,
    unzipped_cluster_bytes: u64,
    unzipped_cluster_estimate: f64,
    open_group: Vec<(ClusterSummary, Vec<ColumnPages>)>,
    groups: Vec<ClusterGroupRecord>,
    attribute_sets: Vec<LinkedAttributeSet>,
}

impl<'s, S: BlobSink> RNTupleWriter<'s, S> {
    /// Starts an RNTuple named `name` with the given schema; writes the header.
    pub fn new(
        sink: &'s mut S,
        name: &str,
        schema: SchemaDescription,
        options: WriteOptions,
    ) -> Result<Self> {
        let header = Header {
            name: name.to_string(),
            description: String::new(),
            writer: format!("rntuple v{}", env!("CARGO_PKG_VERSION")),
            schema,
        };
        let descriptor = Descriptor::build(
            FORMAT_VERSION,
            header.clone(),
            Footer::default(),
            Vec::new(),
        )?;
        if let Some(why) = descriptor
            .top_level
            .iter()
            .find_map(|&id| descriptor.unreadable_reason(id))
        {
            return Err(Error::InvalidArgument(format!("cannot write {why}")));
        }
        let mut columns = Vec::with_capacity(descriptor.columns.len());
        for c in &descriptor.columns {
            let rec = &c.record;
            let column_type = ColumnType::from_u16(rec.column_type)
                .ok_or_else(|| Error::Unsupported(format!("column type {:#x}", rec.column_type)))?;
            let encoding = ColumnEncoding::new(column_type, rec.bits_on_storage, rec.value_range)?;
            let is_double = matches!(
                descriptor.field(rec.field_id).type_name(),
                "double" | "Double32_t"
            );
            let memory = memory_size(column_type, is_double);
            let capacity = (options.max_unzipped_page_size / memory).max(1) as usize;
            columns.push(ColumnState {
                encoding,
                page_capacity: capacity,
                page: ColumnValues::empty(column_type),
                full: Vec::new(),
                sealed: Vec::new(),
                cluster_elements: 0,
                first_element: 0,
            });
        }
        let data_fields = descriptor
            .top_level
            .iter()
            .copied()
            .filter(|&id| !descriptor.field(id).is_projected())
            .collect();
        let envelope = seal_envelope(EnvelopeType::Header, &header.write());
        let header_checksum = u64::from_le_bytes(
            envelope[envelope.len() - 8..]
                .try_into()
                .map_err(|_| Error::corrupt("header envelope", "too short"))?,
        );
        let zipped = compress(&envelope, options.compression)?;
        let offset = sink.write_blob(&zipped, options.max_key_size)?;
        let n_fields = descriptor.fields.len();
        let estimate = options.approx_zipped_cluster_size as f64;
        Ok(RNTupleWriter {
            sink,
            header,
            extension: SchemaDescription::default(),
            header_anchor: (offset, zipped.len() as u64, envelope.len() as u64),
            header_checksum,
            options,
            descriptor,
            data_fields,
            columns,
            items: vec![0; n_fields],
            alternatives: vec![0; n_fields],
            n_entries: 0,
            cluster_first_entry: 0,
            unzipped_cluster_bytes: 0,
            unzipped_cluster_estimate: estimate,
            open_group: Vec::new(),
            groups: Vec::new(),
            attribute_sets: Vec::new(),
        })
    }

    /// The schema as a descriptor (fields and columns, no clusters).
    pub fn descriptor(&self) -> &Descriptor {
        &self.descriptor
    }

    /// Entries written so far.
    pub fn num_entries(&self) -> u64 {
        self.n_entries
    }

    /// Adds fields after entries were written (late model extension, as ROOT's model
    /// updater): `extra` is a schema of its own (ids from 0), appended to the current one.
    /// The new fields' entry-level columns are deferred: the entries written so far read
    /// as zero values. Batches written afterwards must carry the new fields too.
    pub fn extend_schema(&mut self, extra: SchemaDescription) -> Result<()> {
        use crate::format::header::COLUMN_FLAG_DEFERRED;
        let field_base = self.descriptor.fields.len() as u32;
        let column_base = self.descriptor.columns.len() as u32;
        let mut extra = extra;
        for (i, f) in extra.fields.iter_mut().enumerate() {
            let own = i as u32;
            f.parent_id = if f.parent_id == own {
                own + field_base
            } else {
                f.parent_id + field_base
            };
            if let Some(src) = f.source_field_id.as_mut() {
                *src += field_base;
            }
        }
        for c in &mut extra.columns {
            c.field_id += field_base;
        }
        for a in &mut extra.alias_columns {
            a.field_id += field_base;
            a.physical_column_id += column_base;
        }
        let mut extension = self.extension.clone();
        extension.fields.extend(extra.fields.iter().cloned());
        extension
            .alias_columns
            .extend(extra.alias_columns.iter().cloned());
        extension.columns.extend(extra.columns.iter().cloned());
        // Rebuild the descriptor to learn the new fields' kinds and places.
        let footer = Footer {
            extension: extension.clone(),
            ..Footer::default()
        };
        let descriptor =
            Descriptor::build(FORMAT_VERSION, self.header.clone(), footer, Vec::new())?;
        if let Some(why) = descriptor
            .top_level
            .iter()
            .find_map(|&id| descriptor.unreadable_reason(id))
        {
            return Err(Error::InvalidArgument(format!("cannot write {why}")));
        }
        // Deferred columns start at the element the current entry count corresponds to.
        let first_ext_column = self.extension.columns.len();
        for (k, rec) in extension.columns[first_ext_column..].iter_mut().enumerate() {
            let id = column_base + k as u32;
            let first = match per_entry(&descriptor, rec.field_id) {
                Some(mult) => self.n_entries * mult,
                None => 0,
            };
            if first > 0 {
                rec.flags |= COLUMN_FLAG_DEFERRED;
                rec.first_element_index = Some(first as i64);
            }
            let state = column_state(&descriptor, rec, &self.options, first)?;
            debug_assert_eq!(self.columns.len() as u32, id);
            self.columns.push(state);
        }
        let footer = Footer {
            extension: extension.clone(),
            ..Footer::default()
        };
        self.descriptor =
            Descriptor::build(FORMAT_VERSION, self.header.clone(), footer, Vec::new())?;
        self.extension = extension;
        self.items.resize(self.descriptor.fields.len(), 0);
        self.alternatives.resize(self.descriptor.fields.len(), 0);
        self.data_fields = self
            .descriptor
            .top_level
            .iter()
            .copied()
            .filter(|&id| !self.descriptor.field(id).is_projected())
            .collect();
        Ok(())
    }

    /// Appends the entries of `batch`, whose columns are the top-level data fields in
    /// schema order (by name). Clusters are committed as they reach their size.
    pub fn write_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        let arrays = self
            .data_fields
            .iter()
            .map(|&id| {
                let name = self.descriptor.field(id).name();
                batch.column_by_name(name).cloned().ok_or_else(|| {
                    Error::InvalidArgument(format!("the batch has no column \"{name}\""))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let mut start = 0usize;
        let rows = batch.num_rows();
        while start < rows {
            // Write entries up to the point where the cluster reaches its estimated size,
            // as ROOT's fill context checks after every entry.
            let mut end = rows;
            let remaining = self.cluster_budget();
            let sizes = self.entry_sizes(&arrays, start, rows)?;
            let mut acc = 0u64;
            for (i, s) in sizes.iter().enumerate() {
                acc += s;
                if acc >= remaining {
                    end = start + i + 1;
                    break;
                }
            }
            for (&id, array) in self.data_fields.clone().iter().zip(&arrays) {
                let part = array.slice(start, end - start);
                self.shred_field(id, part.as_ref())?;
            }
            self.unzipped_cluster_bytes += acc;
            self.n_entries += (end - start) as u64;
            self.seal_full_pages()?;
            if self.cluster_is_full() {
                self.commit_cluster()?;
            }
            start = end;
        }
        Ok(())
    }

    fn cluster_budget(&self) -> u64 {
        let limit =
            (self.options.max_unzipped_cluster_size as f64).min(self.unzipped_cluster_estimate);
        (limit - self.unzipped_cluster_bytes as f64).max(1.0).ceil() as u64
    }

    fn cluster_is_full(&self) -> bool {
        let b = self.unzipped_cluster_bytes;
        b >= self.options.max_unzipped_cluster_size || b as f64 >= self.unzipped_cluster_estimate
    }

    /// Uncompressed bytes each entry of rows `start..end` adds, summed over all columns.
    fn entry_sizes(
        &self,
        arrays: &[arrow_array::ArrayRef],
        start: usize,
        end: usize,
    ) -> Result<Vec<u64>> {
        let mut sizes = vec![0u64; end - start];
        for (&id, array) in self.data_fields.iter().zip(arrays) {
            let part = array.slice(start, end - start);
            super::size::add_item_sizes(self, id, part.as_ref(), &mut sizes)?;
        }
        Ok(sizes)
    }

    /// Bytes one element of column `id` takes packed on disk, as ROOT counts a cluster's
    /// uncompressed size.
    pub(crate) fn column_packed_size(&self, id: u32) -> u64 {
        let enc = &self.columns[id as usize].encoding;
        enc.page_bytes(1).unwrap_or(8)
    }

    fn shred_field(&mut self, id: u32, array: &dyn Array) -> Result<()> {
        let desc = self.descriptor.clone();
        let columns_of = |f: u32| {
            desc.representations(f)
                .into_iter()
                .next()
                .unwrap_or_default()
        };
        shred(&desc, &columns_of, self, id, array)
    }

    /// Seals the pages that filled up, in parallel.
    fn seal_full_pages(&mut self) -> Result<()> {
        let checksums = self.options.enable_page_checksums;
        let compression = self.options.compression;
        let jobs: Vec<(usize, Vec<ColumnValues>)> = self
            .columns
            .iter_mut()
            .enumerate()
            .filter(|(_, c)| !c.full.is_empty())
            .map(|(i, c)| (i, std::mem::take(&mut c.full)))
            .collect();
        let sealed: Vec<(usize, Vec<SealedPage>)> = jobs
            .into_par_iter()
            .map(|(i, pages)| {
                let enc = self.columns[i].encoding;
                let out = pages
                    .iter()
                    .map(|p| seal_page(&enc, p, compression, checksums))
                    .collect::<Result<Vec<_>>>()?;
                Ok((i, out))
            })
            .collect::<Result<_>>()?;
        for (i, pages) in sealed {
            self.columns[i].sealed.extend(pages);
        }
        Ok(())
    }

    /// Commits the open cluster: seals the last pages, writes its pages as one blob
    /// (several when larger than a key), records the page locations.
    pub fn commit_cluster(&mut self) -> Result<()> {
        let n = self.n_entries - self.cluster_first_entry;
        if n == 0 {
            return Ok(());
        }
        for c in &mut self.columns {
            if !c.page.is_empty() {
                let ty = c.encoding.column_type;
                c.full
                    .push(std::mem::replace(&mut c.page, ColumnValues::empty(ty)));
            }
        }
        self.seal_full_pages()?;
        // Lay the pages out in blobs of at most one key each.
        let max_blob = self.options.max_key_size;
        let mut blob: Vec<u8> = Vec::new();
        let mut pending: Vec<(usize, usize, usize)> = Vec::new(); // (column, page, offset in blob)
        let mut locators: Vec<Vec<Locator>> = self
            .columns
            .iter()
            .map(|c| vec![Locator::default(); c.sealed.len()])
            .collect();
        let mut zipped = 0u64;
        for ci in 0..self.columns.len() {
            for pi in 0..self.columns[ci].sealed.len() {
                let len = self.columns[ci].sealed[pi].bytes.len();
                if !blob.is_empty() && (blob.len() + len) as u64 > max_blob {
                    self.flush_blob(&mut blob, &mut pending, &mut locators)?;
                }
                pending.push((ci, pi, blob.len()));
                blob.extend_from_slice(&self.columns[ci].sealed[pi].bytes);
                zipped += len as u64;
            }
        }
        self.flush_blob(&mut blob, &mut pending, &mut locators)?;
        let mut cluster_columns = Vec::with_capacity(self.columns.len());
        for (c, locs) in self.columns.iter_mut().zip(locators) {
            let pages = c
                .sealed
                .iter()
                .zip(locs)
                .map(|(p, loc)| PageInfo {
                    n_elements: p.n_elements,
                    has_checksum: p.has_checksum,
                    locator: loc,
                })
                .collect();
            cluster_columns.push(ColumnPages {
                pages,
                element_offset: Some(c.first_element),
                compression: Some(self.options.compression.as_u32()),
            });
            c.sealed.clear();
            c.first_element += c.cluster_elements;
            c.cluster_elements = 0;
        }
        self.open_group.push((
            ClusterSummary {
                first_entry: self.cluster_first_entry,
                n_entries: n,
            },
            cluster_columns,
        ));
        // The next cluster's size estimate follows this one's compression factor.
        let factor = (self.unzipped_cluster_bytes as f64 / zipped.max(1) as f64).min(1000.0);
        self.unzipped_cluster_estimate = factor * self.options.approx_zipped_cluster_size as f64;
        self.unzipped_cluster_bytes = 0;
        self.cluster_first_entry = self.n_entries;
        self.items.iter_mut().for_each(|v| *v = 0);
        self.alternatives.iter_mut().for_each(|v| *v = 0);
        if let Some(per_group) = self.options.clusters_per_group {
            if self.open_group.len() as u64 >= per_group {
                self.commit_cluster_group()?;
            }
        }
        Ok(())
    }

    fn flush_blob(
        &mut self,
        blob: &mut Vec<u8>,
        pending: &mut Vec<(usize, usize, usize)>,
        locators: &mut [Vec<Locator>],
    ) -> Result<()> {
        if blob.is_empty() {
            return Ok(());
        }
        let offset = self.sink.write_blob(blob, self.options.max_key_size)?;
        for &(ci, pi, at) in pending.iter() {
            let page = &self.columns[ci].sealed[pi];
            let checksum = if page.has_checksum { 8 } else { 0 };
            locators[ci][pi] = Locator {
                size: (page.bytes.len() - checksum) as u64,
                offset: offset + at as u64,
            };
        }
        blob.clear();
        pending.clear();
        Ok(())
    }

    /// Commits the open cluster group: writes the page list of its clusters.
    pub fn commit_cluster_group(&mut self) -> Result<()> {
        if self.open_group.is_empty() {
            return Ok(());
        }
        let (clusters, columns): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.open_group).into_iter().unzip();
        let min_entry = clusters
            .first()
            .map_or(0, |c: &ClusterSummary| c.first_entry);
        let span = clusters.iter().map(|c| c.n_entries).sum();
        let list = PageList {
            header_checksum: self.header_checksum,
            clusters,
            columns,
        };
        let n_clusters = list.clusters.len() as u32;
        let envelope = seal_envelope(EnvelopeType::PageList, &list.write());
        let zipped = compress(&envelope, self.options.compression)?;
        let offset = self.sink.write_blob(&zipped, self.options.max_key_size)?;
        self.groups.push(ClusterGroupRecord {
            min_entry,
            entry_span: span,
            n_clusters,
            page_list: EnvelopeLink {
                length: envelope.len() as u64,
                locator: Locator {
                    size: zipped.len() as u64,
                    offset,
                },
            },
        });
        Ok(())
    }

    /// Links an attribute set (an RNTuple of its own, already written, whose anchor
    /// object lies at `anchor_locator`) into this RNTuple's footer under `name`.
    pub fn link_attribute_set(
        &mut self,
        name: &str,
        schema_version: (u16, u16),
        anchor_locator: Locator,
        anchor_length: u32,
    ) {
        self.attribute_sets.push(LinkedAttributeSet {
            schema_version_major: schema_version.0,
            schema_version_minor: schema_version.1,
            anchor_length,
            anchor_locator,
            name: name.to_string(),
        });
    }

    /// Commits what is open, writes the footer, and returns the anchor to store.
    pub fn finish(mut self) -> Result<Anchor> {
        self.commit_cluster()?;
        self.commit_cluster_group()?;
        let footer = Footer {
            header_checksum: self.header_checksum,
            extension: std::mem::take(&mut self.extension),
            cluster_groups: std::mem::take(&mut self.groups),
            attribute_sets: std::mem::take(&mut self.attribute_sets),
        };
        let envelope = seal_envelope(EnvelopeType::Footer, &footer.write());
        let zipped = compress(&envelope, self.options.compression)?;
        let offset = self.sink.write_blob(&zipped, self.options.max_key_size)?;
        let (seek_header, nbytes_header, len_header) = self.header_anchor;
        Ok(Anchor {
            version_epoch: FORMAT_VERSION.0,
            version_major: FORMAT_VERSION.1,
            version_minor: FORMAT_VERSION.2,
            version_patch: FORMAT_VERSION.3,
            seek_header,
            nbytes_header,
            len_header,
            seek_footer: offset,
            nbytes_footer: zipped.len() as u64,
            len_footer: envelope.len() as u64,
            max_key_size: self.options.max_key_size,
        })
    }
}

impl<S: BlobSink> ColumnSink for RNTupleWriter<'_, S> {
    fn append(&mut self, id: u32, mut values: ColumnValues) -> Result<()> {
        let c = self
            .columns
            .get_mut(id as usize)
            .ok_or_else(|| Error::InvalidArgument(format!("no column {id}")))?;
        c.cluster_elements += values.len() as u64;
        if c.page.is_empty() {
            // Start the page with the values' own variant (a quantized column takes the
            // field's floats or doubles).
            if let Some(empty) = values.slice(0, 0) {
                c.page = empty;
            }
        }
        while !values.is_empty() {
            let room = c.page_capacity - c.page.len();
            if values.len() <= room {
                c.page.append(values)?;
                break;
            }
            let head = values
                .slice(0, room)
                .ok_or_else(|| Error::InvalidArgument("page slice".into()))?;
            let tail = values
                .slice(room, values.len() - room)
                .ok_or_else(|| Error::InvalidArgument("page slice".into()))?;
            c.page.append(head)?;
            let ty = c.encoding.column_type;
            c.full
                .push(std::mem::replace(&mut c.page, ColumnValues::empty(ty)));
            values = tail;
        }
        if c.page.len() >= c.page_capacity {
            let ty = c.encoding.column_type;
            c.full
                .push(std::mem::replace(&mut c.page, ColumnValues::empty(ty)));
        }
        Ok(())
    }

    fn advance_items(&mut self, id: u32, by: u64) -> u64 {
        let slot = &mut self.items[id as usize];
        let before = *slot;
        *slot += by;
        before
    }

    fn advance_alternative(&mut self, id: u32, by: u64) -> u64 {
        let slot = &mut self.alternatives[id as usize];
        let before = *slot;
        *slot += by;
        before
    }
}

/// Elements per entry of field `id`: `Some(k)` outside collections and variants (the
/// product of the array sizes above it), `None` inside them.
fn per_entry(desc: &Descriptor, id: u32) -> Option<u64> {
    use crate::schema::FieldKind;
    let mut mult = 1u64;
    let mut cur = id;
    while let Some(parent) = desc.field(cur).parent {
        match desc.field_kind(parent) {
            FieldKind::Record(..) | FieldKind::Wrapper(_) => {}
            FieldKind::Array(_, n) => mult = mult.checked_mul(n)?,
            _ => return None,
        }
        cur = parent;
    }
    if let FieldKind::Bitset(n) = desc.field_kind(id) {
        mult = mult.checked_mul(n)?;
    }
    Some(mult)
}

/// Encodes, compresses and checksums one page.
fn seal_page(
    enc: &ColumnEncoding,
    values: &ColumnValues,
    compression: CompressionSettings,
    checksum: bool,
) -> Result<SealedPage> {
    let raw = encode_page(enc, values)?;
    let mut bytes = compress(&raw, compression)?;
    if checksum {
        let sum = xxh3_64(&bytes);
        bytes.extend_from_slice(&sum.to_le_bytes());
    }
    Ok(SealedPage {
        bytes,
        n_elements: u32::try_from(values.len())
            .map_err(|_| Error::InvalidArgument("page with more than 2^32 elements".into()))?,
        has_checksum: checksum,
    })
}
