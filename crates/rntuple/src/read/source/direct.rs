//! Pages read at their locators as the decoder asks for them: a local file, where a
//! read costs no round trip and the decoder's threads read in parallel.

use super::{PageBytes, PageSource, Storage};
use crate::error::Result;
use crate::format::PageInfo;

/// Every page read on demand from the storage.
pub(crate) struct DirectPages {
    storage: Storage,
}

impl DirectPages {
    /// Pages read from `storage`.
    pub(crate) fn new(storage: Storage) -> DirectPages {
        DirectPages { storage }
    }
}

impl PageSource for DirectPages {
    fn page(&self, page: &PageInfo) -> Result<PageBytes> {
        self.storage.read_page(page).map(PageBytes::Owned)
    }
}
