//! A store of objects in memory that refuses writes past a budget, for the tests of the
//! objects' layout (a failed write) and of replacing a dataset (a writer that died).

use rntuple_io::objects::{MemoryObjects, ObjectStorage};
use rntuple_io::{ByteRange, IoMetricsSnapshot};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// A store over `inner` whose writes fail once `budget` of them were made: every later
/// one fails and changes nothing. Reads go on. With `deletes_too`, deletes count and
/// fail as puts do (a writer that died: its clean-up never happens); without, only puts
/// do (the clean-up succeeds). With `on_second_list`, the second listing first runs that
/// hook.
pub(crate) struct Refusing {
    /// The store written to, while the budget lasts.
    pub(crate) inner: MemoryObjects,
    budget: usize,
    deletes_too: bool,
    done: AtomicUsize,
    lists: AtomicUsize,
    /// Runs before the second listing, once.
    pub(crate) on_second_list: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl std::fmt::Debug for Refusing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Refusing")
            .field("budget", &self.budget)
            .field("deletes_too", &self.deletes_too)
            .finish()
    }
}

impl Refusing {
    /// A store over `inner` (a clone: the same objects) refusing writes past `budget`.
    pub(crate) fn new(inner: &MemoryObjects, budget: usize, deletes_too: bool) -> Refusing {
        Refusing {
            inner: inner.clone(),
            budget,
            deletes_too,
            done: AtomicUsize::new(0),
            lists: AtomicUsize::new(0),
            on_second_list: Mutex::new(None),
        }
    }

    /// The writes counted so far, refused ones included.
    pub(crate) fn writes(&self) -> usize {
        self.done.load(Ordering::SeqCst)
    }

    /// Counts a write (`doing` `key`), refused past the budget.
    fn allowed(&self, doing: &str, key: &str) -> rntuple_io::Result<()> {
        if self.done.fetch_add(1, Ordering::SeqCst) >= self.budget {
            return Err(rntuple_io::Error::InvalidArgument(format!(
                "refused to {doing} {key}"
            )));
        }
        Ok(())
    }
}

impl ObjectStorage for Refusing {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn object_name(&self, key: &str) -> String {
        self.inner.object_name(key)
    }
    fn put(&self, key: &str, bytes: Vec<u8>) -> rntuple_io::Result<()> {
        self.allowed("store", key)?;
        self.inner.put(key, bytes)
    }
    fn get(&self, key: &str, range: Option<ByteRange>) -> rntuple_io::Result<Vec<u8>> {
        self.inner.get(key, range)
    }
    fn size_of(&self, key: &str) -> rntuple_io::Result<Option<u64>> {
        self.inner.size_of(key)
    }
    fn delete(&self, key: &str) -> rntuple_io::Result<()> {
        if self.deletes_too {
            self.allowed("delete", key)?;
        }
        self.inner.delete(key)
    }
    fn list(&self, prefix: &str) -> rntuple_io::Result<Vec<String>> {
        if self.lists.fetch_add(1, Ordering::SeqCst) == 1 {
            if let Some(hook) = self.on_second_list.lock().unwrap().take() {
                hook();
            }
        }
        self.inner.list(prefix)
    }
    fn metrics(&self) -> IoMetricsSnapshot {
        self.inner.metrics()
    }
}
