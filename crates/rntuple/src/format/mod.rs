//! The specification's byte structures: anchor, envelopes, frames, locators, header,
//! footer and page lists. Pure: bytes in, structs out, and back.

pub mod anchor;
pub mod cursor;
pub mod envelope;
pub mod footer;
pub mod header;
pub mod locator;
pub mod page;
pub mod page_list;

pub use anchor::Anchor;
pub use cursor::{Cursor, Writer};
pub use envelope::{
    open_envelope, pack_envelope, seal_envelope, unpack_envelope, EnvelopeType, PackedEnvelope,
};
pub use footer::{ClusterGroupRecord, Footer, LinkedAttributeSet};
pub use header::{
    AliasColumnRecord, ColumnRecord, ExtraTypeInfoRecord, FieldRecord, Header, SchemaDescription,
};
pub use locator::{EnvelopeLink, Locator};
pub use page::{open_page, seal_page, stored_page_len, unseal_page_into, SealedPage};
pub use page_list::{ClusterSummary, ColumnPages, PageInfo, PageList};

#[cfg(test)]
pub(crate) mod test_util {
    /// Bytes from a hex string (test vectors copied from ROOT-written files).
    pub(crate) fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }
}
