//! The specification's byte structures: anchor, envelopes, frames, locators, header,
//! footer and page lists. Pure: bytes in, structs out, and back.

mod anchor;
mod cursor;
mod daos;
mod envelope;
mod footer;
mod header;
mod locator;
mod page;
mod page_list;
mod s3_anchor;

pub use anchor::{Anchor, ANCHOR_CLASS_VERSION};
pub(crate) use cursor::u32_len;
pub use cursor::{Cursor, Writer};
pub use daos::{
    libstdcxx_string_hash, ntuple_index, DaosAnchor, DaosLocation, DaosPageMapping,
    DAOS_AKEY_ANCHOR, DAOS_AKEY_FOOTER, DAOS_AKEY_HEADER, DAOS_AKEY_PAGE, DAOS_ANCHOR_SIZE,
    DAOS_ANCHOR_VERSION, DAOS_DKEY_DEFAULT, DAOS_OBJECT_CLASS_NAME_MAX, DAOS_OID_LO_METADATA,
    DAOS_OID_LO_PAGE_LIST, DAOS_RESERVED_NTUPLE_INDEX,
};
pub use envelope::{
    open_envelope, pack_envelope, seal_envelope, unpack_envelope, EnvelopeType, PackedEnvelope,
};
pub use footer::{ClusterGroupRecord, Footer, LinkedAttributeSet};
pub use header::{
    read_feature_flags, AliasColumnRecord, ColumnRecord, ExtraTypeInfoRecord, FieldRecord, Header,
    SchemaDescription, COLUMN_FLAG_DEFERRED, COLUMN_FLAG_RANGE, EXTRA_TYPE_STREAMER_INFO,
    FIELD_FLAG_PROJECTED, FIELD_FLAG_REPETITIVE, FIELD_FLAG_TYPE_CHECKSUM,
};
pub use locator::{object_address, EnvelopeLink, Locator, LocatorKind, OBJECT_ADDRESS_BITS};
pub(crate) use page::page_encoded;
pub use page::{
    open_page, reseal_page, seal_page, seal_page_parts, stored_page_len, unseal_page_into,
    zero_page, SealedPage, PAGE_CHECKSUM_BYTES,
};
pub use page_list::{ClusterSummary, ColumnPages, PageInfo, PageList};
pub use s3_anchor::{
    JsonValue, S3Anchor, S3_ANCHOR_FIRST_READ_BYTES, S3_ANCHOR_MAX_BYTES, S3_ANCHOR_VERSION,
    S3_DEFAULT_CLONE_TEMPLATE, S3_DEFAULT_URL_TEMPLATE,
};

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
