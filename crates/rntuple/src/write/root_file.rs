//! Writing RNTuples into a ROOT file: the TFile writer as the writer's blob sink.

use super::writer::BlobSink;
use crate::container::{FileOutput, FileWriter};
use crate::error::Result;

impl<W: FileOutput> BlobSink for FileWriter<W> {
    fn write_blob(&mut self, payload: &[u8], max_key_size: u64) -> Result<u64> {
        FileWriter::write_blob(self, payload, max_key_size)
    }

    fn write_blob_parts(&mut self, parts: &[&[u8]], max_key_size: u64) -> Result<u64> {
        FileWriter::write_blob_parts(self, parts, max_key_size)
    }

    fn checkpoint(&mut self) -> Result<()> {
        FileWriter::checkpoint(self)
    }
}
