//! The specification's byte structures: anchor, envelopes, frames, locators, header,
//! footer and page lists. Pure: bytes in, structs out, and back.

mod anchor;
mod cursor;
mod envelope;
mod footer;
mod header;
mod locator;
mod page;
mod page_list;

pub use anchor::{Anchor, ANCHOR_CLASS_VERSION};
pub(crate) use cursor::u32_len;
pub use cursor::{Cursor, Writer};
pub use envelope::{
    open_envelope, pack_envelope, seal_envelope, unpack_envelope, EnvelopeType, PackedEnvelope,
};
pub use footer::{ClusterGroupRecord, Footer, LinkedAttributeSet};
pub use header::{
    read_feature_flags, AliasColumnRecord, ColumnRecord, ExtraTypeInfoRecord, FieldRecord, Header,
    SchemaDescription, COLUMN_FLAG_DEFERRED, COLUMN_FLAG_RANGE, EXTRA_TYPE_STREAMER_INFO,
    FIELD_FLAG_PROJECTED, FIELD_FLAG_REPETITIVE, FIELD_FLAG_TYPE_CHECKSUM,
};
pub use locator::{EnvelopeLink, Locator};
pub use page::{
    open_page, reseal_page, seal_page, seal_page_parts, stored_page_len, unseal_page_into,
    zero_page, SealedPage, PAGE_CHECKSUM_BYTES,
};
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
