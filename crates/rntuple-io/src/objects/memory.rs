//! Objects in memory.

use super::{no_such_object, slice_of, validate_key, ObjectStorage};
use crate::error::Result;
use crate::{ByteRange, IoMetrics, IoMetricsSnapshot};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// Objects in memory, for tests and for data built in memory. Clones share the same
/// objects (and counters), so a writer and a reader can each hold one.
#[derive(Debug, Clone)]
pub struct MemoryObjects {
    name: Arc<str>,
    objects: Arc<Mutex<BTreeMap<String, Arc<Vec<u8>>>>>,
    metrics: Arc<IoMetrics>,
}

impl Default for MemoryObjects {
    fn default() -> Self {
        MemoryObjects::new("memory")
    }
}

impl MemoryObjects {
    /// An empty store called `name` (in messages, an object is `name/key`).
    pub fn new(name: impl Into<String>) -> Self {
        MemoryObjects {
            name: name.into().into(),
            objects: Arc::default(),
            metrics: Arc::default(),
        }
    }

    /// The objects, whatever a panicking thread left: each insert or removal is one
    /// map operation, so the map is always consistent.
    fn objects(&self) -> MutexGuard<'_, BTreeMap<String, Arc<Vec<u8>>>> {
        self.objects.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The object under `key` (shared, not copied), if any.
    pub fn object(&self, key: &str) -> Option<Arc<Vec<u8>>> {
        self.objects().get(key).cloned()
    }

    /// How many objects there are.
    pub fn len(&self) -> usize {
        self.objects().len()
    }

    /// Whether there is no object.
    pub fn is_empty(&self) -> bool {
        self.objects().is_empty()
    }
}

impl ObjectStorage for MemoryObjects {
    fn name(&self) -> &str {
        &self.name
    }

    fn object_name(&self, key: &str) -> String {
        format!("{}/{key}", self.name)
    }

    fn put(&self, key: &str, bytes: Vec<u8>) -> Result<()> {
        validate_key(key)?;
        self.objects().insert(key.to_string(), Arc::new(bytes));
        Ok(())
    }

    fn get(&self, key: &str, range: Option<ByteRange>) -> Result<Vec<u8>> {
        let start = Instant::now();
        validate_key(key)?;
        // Copied out of the lock: the map is not held while the bytes are copied.
        let object = self
            .object(key)
            .ok_or_else(|| no_such_object(&self.object_name(key)))?;
        let bytes = slice_of(&object, range, &self.object_name(key))?.to_vec();
        self.metrics.record(false, 1, bytes.len() as u64, start);
        Ok(bytes)
    }

    fn size_of(&self, key: &str) -> Result<Option<u64>> {
        validate_key(key)?;
        Ok(self.object(key).map(|object| object.len() as u64))
    }

    fn delete(&self, key: &str) -> Result<()> {
        validate_key(key)?;
        self.objects().remove(key);
        Ok(())
    }

    fn list(&self, prefix: &str) -> Result<Vec<String>> {
        Ok(self
            .objects()
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .map(|(key, _)| key)
            .take_while(|key| key.starts_with(prefix))
            .cloned()
            .collect())
    }

    fn metrics(&self) -> IoMetricsSnapshot {
        self.metrics.snapshot()
    }
}
