//! Pages read at their locators as the decoder asks for them: a local file, where a
//! read costs no round trip and the decoder's threads read in parallel.

use super::pool::BufferPool;
use super::{PageBytes, PageSource, Storage};
use crate::error::Result;
use crate::format::PageInfo;
use std::sync::Arc;

/// Every page read on demand from the storage, into buffers reused once the decoder has
/// dropped their pages.
pub(crate) struct DirectPages {
    storage: Storage,
    buffers: Arc<BufferPool>,
}

impl DirectPages {
    /// Pages read from `storage`.
    pub(crate) fn new(storage: Storage) -> DirectPages {
        DirectPages {
            storage,
            buffers: Arc::default(),
        }
    }
}

impl PageSource for DirectPages {
    fn page(&self, page: &PageInfo) -> Result<PageBytes> {
        self.storage.read_page_pooled(page, &self.buffers)
    }
}
