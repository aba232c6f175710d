//! The footer envelope: schema extension, cluster groups, linked attribute sets.

use super::cursor::{Cursor, Writer};
use super::header::{read_feature_flags, read_list, SchemaDescription};
use super::locator::{EnvelopeLink, Locator};
use crate::error::Result;

/// A cluster group: an entry range and the link to its page list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ClusterGroupRecord {
    /// Smallest entry number of the group's clusters.
    pub min_entry: u64,
    /// Number of entries the group covers.
    pub entry_span: u64,
    /// Number of clusters in the group.
    pub n_clusters: u32,
    /// The group's page list envelope.
    pub page_list: EnvelopeLink,
}

/// A linked attribute set (format 1.0.1 and later): an RNTuple of attributes stored
/// beside the main one, found through its own anchor.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LinkedAttributeSet {
    /// Attribute schema version, major.
    pub schema_version_major: u16,
    /// Attribute schema version, minor.
    pub schema_version_minor: u16,
    /// Uncompressed size of the attribute set's anchor.
    pub anchor_length: u32,
    /// Where the attribute set's anchor lies.
    pub anchor_locator: Locator,
    /// The attribute set's name.
    pub name: String,
}

/// The footer envelope's payload.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Footer {
    /// The checksum of the header this footer belongs to.
    pub header_checksum: u64,
    /// Fields and columns added after the header was written.
    pub extension: SchemaDescription,
    /// Cluster groups in order.
    pub cluster_groups: Vec<ClusterGroupRecord>,
    /// Linked attribute sets (empty before format 1.0.1).
    pub attribute_sets: Vec<LinkedAttributeSet>,
}

impl Footer {
    /// Parses the footer payload (inside the envelope).
    pub fn read(payload: &[u8]) -> Result<Footer> {
        let mut c = Cursor::new(payload, "footer envelope");
        read_feature_flags(&mut c)?;
        let header_checksum = c.u64()?;
        let frame = c.record_frame()?;
        // An empty record frame means no extension at all.
        let extension = if frame.end > c.position() {
            SchemaDescription::read(&mut c)?
        } else {
            SchemaDescription::default()
        };
        c.end_frame(&frame)?;
        let cluster_groups = read_list(&mut c, |c| {
            let frame = c.record_frame()?;
            let g = ClusterGroupRecord {
                min_entry: c.u64()?,
                entry_span: c.u64()?,
                n_clusters: c.u32()?,
                page_list: EnvelopeLink::read(c)?,
            };
            c.end_frame(&frame)?;
            Ok(g)
        })?;
        // Attribute sets came with format 1.0.1; older footers end here.
        let attribute_sets = if c.remaining() > 0 {
            read_list(&mut c, |c| {
                let frame = c.record_frame()?;
                let a = LinkedAttributeSet {
                    schema_version_major: c.u16()?,
                    schema_version_minor: c.u16()?,
                    anchor_length: c.u32()?,
                    anchor_locator: Locator::read(c)?,
                    name: c.string()?,
                };
                c.end_frame(&frame)?;
                Ok(a)
            })?
        } else {
            Vec::new()
        };
        Ok(Footer {
            header_checksum,
            extension,
            cluster_groups,
            attribute_sets,
        })
    }

    /// Serializes the footer payload (to be sealed into an envelope).
    pub fn write(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.u64(0);
        w.u64(self.header_checksum);
        let frame = w.begin_record();
        self.extension.write(&mut w);
        w.end_frame(frame);
        // Bounded by memory: 2^32 cluster groups (each with its page list) or attribute
        // sets cannot be held.
        #[allow(clippy::cast_possible_truncation)]
        let (n_groups, n_sets) = (
            self.cluster_groups.len() as u32,
            self.attribute_sets.len() as u32,
        );
        let list = w.begin_list(n_groups);
        for g in &self.cluster_groups {
            let rec = w.begin_record();
            w.u64(g.min_entry);
            w.u64(g.entry_span);
            w.u32(g.n_clusters);
            g.page_list.write(&mut w);
            w.end_frame(rec);
        }
        w.end_frame(list);
        let list = w.begin_list(n_sets);
        for a in &self.attribute_sets {
            let rec = w.begin_record();
            w.u16(a.schema_version_major);
            w.u16(a.schema_version_minor);
            w.u32(a.anchor_length);
            a.anchor_locator.write(&mut w);
            w.string(&a.name);
            w.end_frame(rec);
        }
        w.end_frame(list);
        w.into_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::test_util::hex;

    /// The footer payload of conformance file `types.vector.fundamental.root` (ROOT 6.40).
    const ROOT_FOOTER_PAYLOAD_HEX: &str = "0000000000000000fd8309c15e4a9c023800000000000000f4ffffffffffffff00000000f4ffffffffffffff00000000f4ffffffffffffff00000000f4ffffffffffffff00000000c4ffffffffffffff01000000300000000000000000000000000000000300000000000000010000009401000000000000940100004b05000000000000f4ffffffffffffff00000000";

    #[test]
    fn parses_a_root_footer_and_writes_it_back_identically() {
        let bytes = hex(ROOT_FOOTER_PAYLOAD_HEX);
        let f = Footer::read(&bytes).unwrap();
        assert_eq!(f.cluster_groups.len(), 1);
        let g = f.cluster_groups[0];
        assert_eq!((g.min_entry, g.entry_span, g.n_clusters), (0, 3, 1));
        assert_eq!(g.page_list.length, 0x194);
        assert_eq!(g.page_list.locator.offset, 0x54b);
        assert!(f.attribute_sets.is_empty());
        assert_eq!(f.write(), bytes);
    }
}
