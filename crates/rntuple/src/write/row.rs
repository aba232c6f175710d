//! Writing entry by entry: rows of [`Value`]s gathered into Arrow batches for the writer.

use super::sink::BlobSink;
use super::writer::RNTupleWriter;
use crate::error::{Error, Result};
use crate::format::Anchor;
use crate::schema::{arrow_field, values_to_array, Value};
use arrow_array::RecordBatch;
use arrow_schema::{Field, Schema};
use std::sync::Arc;

/// Entries gathered before they are handed to the writer as one batch.
const ROWS_PER_BATCH: usize = 4096;

/// Fills an RNTuple entry by entry: each entry is one [`Value`] per top-level field
/// (projected fields excepted), in schema order.
pub struct EntryWriter<S: BlobSink> {
    writer: RNTupleWriter<S>,
    fields: Vec<Field>,
    pending: Vec<Vec<Value>>,
}

impl<S: BlobSink> EntryWriter<S> {
    /// Wraps a writer.
    pub fn new(writer: RNTupleWriter<S>) -> Result<Self> {
        let fields = data_fields(&writer)?;
        Ok(EntryWriter {
            writer,
            fields,
            pending: Vec::new(),
        })
    }

    /// The fields an entry gives values for, in order.
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    /// Appends one entry.
    pub fn fill(&mut self, entry: Vec<Value>) -> Result<()> {
        if entry.len() != self.fields.len() {
            return Err(Error::InvalidArgument(format!(
                "an entry needs {} values (one per field), got {}",
                self.fields.len(),
                entry.len()
            )));
        }
        self.pending.push(entry);
        if self.pending.len() >= ROWS_PER_BATCH {
            self.flush()?;
        }
        Ok(())
    }

    /// Hands the gathered entries to the writer.
    pub fn flush(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let rows = std::mem::take(&mut self.pending);
        let columns = self
            .fields
            .iter()
            .enumerate()
            .map(|(k, f)| {
                let values: Vec<&Value> = rows.iter().map(|r| &r[k]).collect();
                values_to_array(f, &values)
            })
            .collect::<Result<Vec<_>>>()?;
        let batch = RecordBatch::try_new(Arc::new(Schema::new(self.fields.clone())), columns)?;
        self.writer.write_batch(&batch)
    }

    /// The writer, after the gathered entries were handed to it (to commit a cluster, or
    /// to extend the schema; the fields are refreshed when the borrow ends through
    /// [`EntryWriter::refresh_fields`]).
    pub fn writer(&mut self) -> Result<&mut RNTupleWriter<S>> {
        self.flush()?;
        Ok(&mut self.writer)
    }

    /// Re-reads the writer's fields, after [`RNTupleWriter::extend_schema`].
    pub fn refresh_fields(&mut self) -> Result<()> {
        self.flush()?;
        self.fields = data_fields(&self.writer)?;
        Ok(())
    }

    /// Writes what is pending and finishes the RNTuple; returns its anchor.
    pub fn finish(mut self) -> Result<Anchor> {
        self.flush()?;
        self.writer.finish()
    }
}

fn data_fields<S: BlobSink>(writer: &RNTupleWriter<S>) -> Result<Vec<Field>> {
    let d = writer.descriptor();
    d.top_level
        .iter()
        .filter(|&&id| !d.field(id).is_projected())
        .map(|&id| arrow_field(d, id, d.field(id).name()))
        .collect()
}
