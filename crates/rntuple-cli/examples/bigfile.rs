//! Writes a large RNTuple file with deterministic values, for the slow large-file test:
//! `cargo run --release -p rntuple-cli --example bigfile -- OUT.root BYTES [COMPRESSION]`.
//!
//! Entry `i` holds `i: std::uint64_t = i` and `v: std::vector<float>` of 64 elements,
//! element `j` = `(i + j) % 1000`, so any reader can check exact sums.

// Not library code: stops at the first failure; its data is small.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
#![allow(clippy::cast_possible_truncation)]

use arrow_array::builder::{Float32Builder, LargeListBuilder};
use arrow_array::{RecordBatch, UInt64Array};
use rntuple::compression::CompressionSettings;
use rntuple::container::FileWriter;
use rntuple::schema::{ColumnDefaults, SchemaBuilder};
use rntuple::write::{RNTupleWriter, WriteOptions};
use std::sync::Arc;

const ITEMS: u64 = 64;
const BATCH: u64 = 65536;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (path, bytes) = match args.as_slice() {
        [_, path, bytes, ..] => (path.clone(), bytes.parse::<u64>()?),
        _ => return Err("usage: bigfile OUT.root BYTES [COMPRESSION]".into()),
    };
    let compression = match args.get(3) {
        Some(c) => CompressionSettings::from_u32(c.parse()?)?,
        None => CompressionSettings::UNCOMPRESSED,
    };
    // 8 bytes of i, 8 of the index, 4 per float.
    let entries = bytes.div_ceil(16 + 4 * ITEMS);
    let mut builder = SchemaBuilder::new(ColumnDefaults {
        compressed: compression.is_compressed(),
    });
    builder.add_cpp_field("i", "std::uint64_t")?;
    builder.add_cpp_field("v", "std::vector<float>")?;
    let schema = builder.finish();
    let mut file = FileWriter::create(std::path::Path::new(&path), compression)?;
    let options = WriteOptions::default().with_compression(compression);
    let anchor = {
        let mut writer = RNTupleWriter::new(&mut file, "big", schema, options)?;
        let fields = {
            let d = writer.descriptor();
            d.top_level
                .iter()
                .map(|&id| rntuple::schema::arrow_field(d, id, d.field(id).name()))
                .collect::<Result<Vec<_>, _>>()?
        };
        let mut start = 0u64;
        while start < entries {
            let n = BATCH.min(entries - start);
            let ids = UInt64Array::from_iter_values(start..start + n);
            let item = match fields[1].data_type() {
                arrow_schema::DataType::LargeList(item) => item.clone(),
                _ => return Err("unexpected type for v".into()),
            };
            let mut list = LargeListBuilder::with_capacity(
                Float32Builder::with_capacity((n * ITEMS) as usize),
                n as usize,
            )
            .with_field(item);
            for i in start..start + n {
                for j in 0..ITEMS {
                    list.values().append_value(((i + j) % 1000) as f32);
                }
                list.append(true);
            }
            let batch = RecordBatch::try_new(
                Arc::new(arrow_schema::Schema::new(fields.clone())),
                vec![Arc::new(ids), Arc::new(list.finish())],
            )?;
            writer.write_batch(&batch)?;
            start += n;
        }
        writer.finish()?
    };
    file.write_anchor("big", &anchor.to_object())?;
    file.finish()?;
    println!("{entries}");
    Ok(())
}
