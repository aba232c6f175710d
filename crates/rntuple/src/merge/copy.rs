//! Copying an RNTuple: every value decoded by the reader and written again by the
//! writer, with the same schema and column types (attribute sets too).

use crate::container::{FileOutput, FileWriter};
use crate::error::Result;
use crate::format::{Anchor, LinkedAttributeSet, Locator};
use crate::read::RNTupleReader;
use crate::write::{schema_for_copy, BlobSink, RNTupleWriter, WriteOptions};

/// The compression the source's pages use (of its first listed column), if any.
pub fn source_compression(source: &RNTupleReader) -> Option<u32> {
    source
        .descriptor()
        .clusters
        .iter()
        .flat_map(|c| c.columns.iter())
        .find_map(|cp| cp.compression)
}

/// Copies `source` into `file` as RNTuple `name`: every value is decoded and written
/// again with the same schema and column types, cluster by cluster of the source.
/// `progress` is called with the number of entries copied so far.
pub fn copy_rntuple<W: FileOutput>(
    source: &RNTupleReader,
    file: &mut FileWriter<W>,
    name: &str,
    options: WriteOptions,
    mut progress: impl FnMut(u64),
) -> Result<()> {
    // Attribute sets first: each is an RNTuple of its own whose anchor the main footer links.
    let mut links = Vec::new();
    for link in &source.descriptor().attribute_sets {
        let attributes = source.attribute_set(&link.name)?;
        let anchor = copy_entries(&attributes, file, &link.name, options.clone(), |_| {}, &[])?;
        let object = anchor.to_object();
        let offset = BlobSink::write_blob(file, &object, options.max_key_size())?;
        let locator = Locator::file(object.len() as u64, offset);
        // An anchor object is 78 bytes.
        #[allow(clippy::cast_possible_truncation)]
        links.push((link.clone(), locator, object.len() as u32));
    }
    let anchor = copy_entries(source, file, name, options, &mut progress, &links)?;
    file.write_anchor(name, &anchor.to_object())
}

/// Writes every entry of `source` as RNTuple `name` and returns its anchor; `links` are
/// attribute sets already written, to link from its footer.
fn copy_entries<W: FileOutput>(
    source: &RNTupleReader,
    file: &mut FileWriter<W>,
    name: &str,
    options: WriteOptions,
    mut progress: impl FnMut(u64),
    links: &[(LinkedAttributeSet, Locator, u32)],
) -> Result<Anchor> {
    let schema = schema_for_copy(source.descriptor())?;
    let anchor = {
        let mut writer = RNTupleWriter::new(file, name, schema, options)?;
        for (link, locator, length) in links {
            writer.link_attribute_set(
                &link.name,
                (link.schema_version_major, link.schema_version_minor),
                *locator,
                *length,
            );
        }
        // One planned stream over the clusters: from a remote file the next clusters'
        // pages are fetched while this one is written.
        let ranges: Vec<std::ops::Range<u64>> = source
            .descriptor()
            .clusters
            .iter()
            .map(|c| c.first_entry..c.first_entry + c.n_entries)
            .collect();
        let ends: Vec<u64> = ranges.iter().map(|r| r.end).collect();
        for (batch, end) in source.read_ranges(None, ranges)?.zip(ends) {
            writer.write_batch(&batch?)?;
            progress(end);
        }
        writer.finish()?
    };
    Ok(anchor)
}
