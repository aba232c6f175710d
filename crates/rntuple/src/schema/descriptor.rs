//! The descriptor: the whole metadata of one RNTuple, cross-referenced.

use crate::encoding::ColumnEncoding;
use crate::error::{Error, Result};
use crate::format::{
    ColumnPages, ColumnRecord, ExtraTypeInfoRecord, FieldRecord, Footer, Header,
    LinkedAttributeSet, PageList, SchemaDescription,
};

/// Deepest field nesting accepted; real schemas stay far below, and the recursive
/// readers must not exhaust the stack on a hostile one.
pub(super) const MAX_FIELD_DEPTH: usize = 64;

/// The field at a dotted path (`a.b._0`) of a field tree: the top-level field named by
/// the first part, then a child per part; fields named through `name` and `children`.
pub(crate) fn find_by_path<'a>(
    path: &str,
    top_level: &'a [u32],
    name: impl Fn(u32) -> &'a str,
    children: impl Fn(u32) -> &'a [u32],
) -> Option<u32> {
    let mut parts = path.split('.');
    let first = parts.next()?;
    let mut cur = *top_level.iter().find(|&&id| name(id) == first)?;
    for part in parts {
        cur = *children(cur).iter().find(|&&id| name(id) == part)?;
    }
    Some(cur)
}

/// A field's structural role, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldRole {
    /// A leaf: the field's own columns hold its values.
    Leaf,
    /// The parent of a collection (vector, set, map, optional, ...).
    Collection,
    /// The parent of a record (class, pair, tuple).
    Record,
    /// The parent of a variant.
    Variant,
    /// An object serialized by ROOT's streamer.
    Streamer,
    /// A role this reader does not know.
    Unknown(u16),
}

impl FieldRole {
    /// The role a field record stores as `code`.
    pub fn from_u16(code: u16) -> Self {
        match code {
            0 => FieldRole::Leaf,
            1 => FieldRole::Collection,
            2 => FieldRole::Record,
            3 => FieldRole::Variant,
            4 => FieldRole::Streamer,
            other => FieldRole::Unknown(other),
        }
    }

    /// The code a field record stores for this role.
    pub fn code(self) -> u16 {
        match self {
            FieldRole::Leaf => 0,
            FieldRole::Collection => 1,
            FieldRole::Record => 2,
            FieldRole::Variant => 3,
            FieldRole::Streamer => 4,
            FieldRole::Unknown(code) => code,
        }
    }
}

/// A field with its place in the tree.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldDescriptor {
    /// The field id (position in the serialized field lists).
    pub id: u32,
    /// The stored record.
    pub record: FieldRecord,
    /// The structural role.
    pub role: FieldRole,
    /// Parent field id; `None` for top-level fields.
    pub parent: Option<u32>,
    /// Subfield ids in order.
    pub children: Vec<u32>,
    /// Attached column ids in attachment order (physical ids; for projected fields the
    /// physical columns their alias columns show).
    pub columns: Vec<u32>,
    /// Whether the field came with the footer's schema extension.
    pub from_extension: bool,
}

impl FieldDescriptor {
    /// The field's name.
    pub fn name(&self) -> &str {
        &self.record.name
    }
    /// The field's C++ type name.
    pub fn type_name(&self) -> &str {
        &self.record.type_name
    }
    /// Whether the field is projected from another one.
    pub fn is_projected(&self) -> bool {
        self.record.source_field_id.is_some()
    }
}

/// A physical column.
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnDescriptor {
    /// The physical column id.
    pub id: u32,
    /// The stored record.
    pub record: ColumnRecord,
    /// Whether it came with the footer's schema extension.
    pub from_extension: bool,
}

/// A cluster group.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterGroupDescriptor {
    /// First entry.
    pub min_entry: u64,
    /// Entries covered.
    pub entry_span: u64,
    /// Id of its first cluster.
    pub first_cluster: u64,
    /// Number of clusters.
    pub n_clusters: u64,
    /// Compressed size of its page list envelope.
    pub page_list_bytes: u64,
    /// Uncompressed size of its page list envelope.
    pub page_list_length: u64,
}

/// A cluster: its entry range and, per physical column, its pages.
#[derive(Debug, Clone, PartialEq)]
pub struct ClusterDescriptor {
    /// Cluster id.
    pub id: u64,
    /// First entry.
    pub first_entry: u64,
    /// Number of entries.
    pub n_entries: u64,
    /// The cluster group it belongs to.
    pub group: usize,
    /// Pages per physical column; columns past the end were added after this cluster's
    /// page list was written (deferred columns) and have no pages here.
    pub columns: Vec<ColumnPages>,
}

impl ClusterDescriptor {
    /// The pages of column `id` in this cluster, if the page list lists the column.
    pub fn column(&self, id: u32) -> Option<&ColumnPages> {
        self.columns.get(id as usize)
    }
}

/// All metadata of one RNTuple.
#[derive(Debug, Clone, PartialEq)]
pub struct Descriptor {
    /// The RNTuple's name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// The library that wrote it.
    pub writer: String,
    /// The header envelope's checksum, as the footer states it (checked against the
    /// header when the RNTuple is opened).
    pub header_checksum: u64,
    /// Format version (epoch, major, minor, patch) from the anchor.
    pub version: (u16, u16, u16, u16),
    /// Fields by id.
    pub fields: Vec<FieldDescriptor>,
    /// Physical columns by id.
    pub columns: Vec<ColumnDescriptor>,
    /// Top-level field ids in schema order.
    pub top_level: Vec<u32>,
    /// Cluster groups in order.
    pub cluster_groups: Vec<ClusterGroupDescriptor>,
    /// Clusters in id order.
    pub clusters: Vec<ClusterDescriptor>,
    /// Total number of entries.
    pub n_entries: u64,
    /// Linked attribute sets.
    pub attribute_sets: Vec<LinkedAttributeSet>,
    /// Extra type information (streamer infos of classes the schema stores), of the
    /// header and then of the schema extension.
    pub extra_type_infos: Vec<ExtraTypeInfoRecord>,
    /// Non-fatal problems found while building the descriptor.
    pub warnings: Vec<String>,
}

impl Descriptor {
    /// Builds the descriptor from the parsed envelopes. `page_lists` are the page lists of
    /// the footer's cluster groups, in the same order.
    pub fn build(
        version: (u16, u16, u16, u16),
        header: Header,
        footer: Footer,
        page_lists: Vec<PageList>,
    ) -> Result<Descriptor> {
        // A schema built in memory for writing may hold what the format cannot store.
        header.check_limits()?;
        footer.extension.check_limits()?;
        let mut fields: Vec<FieldDescriptor> = Vec::new();
        let mut columns: Vec<ColumnDescriptor> = Vec::new();
        let n_header_fields = header.schema.fields.len();
        let header_schema = header.schema;
        let extension = footer.extension;
        for (schema, from_extension) in [(&header_schema, false), (&extension, true)] {
            add_schema(schema, from_extension, &mut fields, &mut columns)?;
        }
        let _ = n_header_fields;
        let mut top_level = Vec::new();
        for i in 0..fields.len() {
            let id = fields[i].id;
            match fields[i].parent {
                None => top_level.push(id),
                Some(parent) => fields[parent as usize].children.push(id),
            }
        }
        // A parent must not be its own descendant, and the tree must stay shallow enough
        // for the recursive readers: walk up from each field, bounded.
        for f in &fields {
            let mut depth = 0usize;
            let mut cur = f.parent;
            while let Some(p) = cur {
                depth += 1;
                if depth > MAX_FIELD_DEPTH {
                    return Err(Error::corrupt(
                        "schema description",
                        format!(
                            "field {} is nested deeper than {MAX_FIELD_DEPTH} levels (or its parents form a cycle)",
                            f.id
                        ),
                    ));
                }
                cur = fields[p as usize].parent;
            }
        }
        if footer.cluster_groups.len() != page_lists.len() {
            return Err(Error::corrupt(
                "footer envelope",
                "page list count differs from cluster group count",
            ));
        }
        let mut clusters = Vec::new();
        let mut cluster_groups = Vec::new();
        for (g, (group, page_list)) in footer.cluster_groups.iter().zip(page_lists).enumerate() {
            if page_list.clusters.len() as u64 != group.n_clusters as u64 {
                return Err(Error::corrupt(
                    format!("page list of cluster group {g}"),
                    format!(
                        "lists {} clusters, the footer says {}",
                        page_list.clusters.len(),
                        group.n_clusters
                    ),
                ));
            }
            cluster_groups.push(ClusterGroupDescriptor {
                min_entry: group.min_entry,
                entry_span: group.entry_span,
                first_cluster: clusters.len() as u64,
                n_clusters: group.n_clusters as u64,
                page_list_bytes: group.page_list.locator.size,
                page_list_length: group.page_list.length,
            });
            for (summary, cols) in page_list.clusters.into_iter().zip(page_list.columns) {
                if cols.len() > columns.len() {
                    return Err(Error::corrupt(
                        format!("page list of cluster group {g}"),
                        format!(
                            "lists pages for {} columns, the schema has {}",
                            cols.len(),
                            columns.len()
                        ),
                    ));
                }
                // Every column at entry level holds at least one element per entry, so a
                // cluster cannot have more entries than its fullest column has elements
                // (this bounds the zeros synthesized for deferred columns).
                let fullest = cols.iter().map(ColumnPages::n_elements).max();
                if let Some(fullest) = fullest {
                    if summary.n_entries > fullest {
                        return Err(Error::corrupt(
                            format!("page list envelope of cluster group {g}"),
                            format!(
                                "a cluster claims {} entries but its columns hold at most {fullest} elements",
                                summary.n_entries
                            ),
                        ));
                    }
                }
                clusters.push(ClusterDescriptor {
                    id: clusters.len() as u64,
                    first_entry: summary.first_entry,
                    n_entries: summary.n_entries,
                    group: g,
                    columns: cols,
                });
            }
        }
        clusters.sort_by_key(|c| c.first_entry);
        let mut n_entries = 0u64;
        for (i, c) in clusters.iter_mut().enumerate() {
            c.id = i as u64;
            if c.first_entry != n_entries {
                return Err(Error::corrupt(
                    "page lists",
                    format!(
                        "cluster {i} starts at entry {} but the previous clusters end at {n_entries}",
                        c.first_entry
                    ),
                ));
            }
            n_entries = n_entries
                .checked_add(c.n_entries)
                .ok_or_else(|| Error::corrupt("page lists", "entry count overflows 64 bits"))?;
        }
        Ok(Descriptor {
            name: header.name,
            description: header.description,
            writer: header.writer,
            header_checksum: footer.header_checksum,
            version,
            fields,
            columns,
            top_level,
            cluster_groups,
            clusters,
            n_entries,
            attribute_sets: footer.attribute_sets,
            extra_type_infos: header_schema
                .extra_type_infos
                .iter()
                .chain(&extension.extra_type_infos)
                .cloned()
                .collect(),
            warnings: Vec::new(),
        })
    }

    /// The field with id `id`.
    pub fn field(&self, id: u32) -> &FieldDescriptor {
        &self.fields[id as usize]
    }

    /// The column with physical id `id`.
    pub fn column(&self, id: u32) -> &ColumnDescriptor {
        &self.columns[id as usize]
    }

    /// The encoding of physical column `id`, checked (an unknown column type or
    /// invalid bits on storage is an error naming the column).
    pub fn column_encoding(&self, id: u32) -> Result<ColumnEncoding> {
        let rec = &self.column(id).record;
        ColumnEncoding::from_record(rec.column_type, rec.bits_on_storage, rec.value_range).map_err(
            |e| {
                e.at(crate::error::Location {
                    column: Some(u64::from(id)),
                    ..Default::default()
                })
            },
        )
    }

    /// Finds a field by its qualified name (`a.b.c`, subfield names joined by dots).
    pub fn find_field(&self, path: &str) -> Option<u32> {
        find_by_path(
            path,
            &self.top_level,
            |id| self.field(id).name(),
            |id| &self.field(id).children,
        )
    }

    /// The qualified name of field `id`.
    pub fn qualified_name(&self, id: u32) -> String {
        let mut names = vec![self.field(id).name().to_string()];
        let mut cur = self.field(id).parent;
        while let Some(p) = cur {
            names.push(self.field(p).name().to_string());
            cur = self.field(p).parent;
        }
        names.reverse();
        names.join(".")
    }

    /// The column representations of field `id`: its columns grouped by representation
    /// index, each group in attachment order.
    pub fn representations(&self, id: u32) -> Vec<Vec<u32>> {
        let mut reps: Vec<Vec<u32>> = Vec::new();
        for &col in &self.field(id).columns {
            let r = self.column(col).record.representation_index as usize;
            if reps.len() <= r {
                reps.resize(r + 1, Vec::new());
            }
            reps[r].push(col);
        }
        reps
    }

    /// The columns of field `id`'s first representation: the ones a writer fills.
    pub fn written_columns(&self, id: u32) -> Vec<u32> {
        self.representations(id)
            .into_iter()
            .next()
            .unwrap_or_default()
    }

    /// The uncompressed bytes (elements times bits on storage) of column `col` in
    /// `cluster`; 0 where the cluster has no pages of it.
    pub fn column_bytes(&self, cluster: &ClusterDescriptor, col: u32) -> u64 {
        let Some(pages) = cluster.column(col) else {
            return 0;
        };
        let bits = self.column(col).record.bits_on_storage as u64;
        (pages.n_elements() * bits).div_ceil(8)
    }

    /// The compressed size of all pages, in bytes.
    pub fn compressed_bytes(&self) -> u64 {
        self.clusters
            .iter()
            .flat_map(|c| c.columns.iter())
            .flat_map(|cp| cp.pages.iter())
            .map(|p| p.locator.size)
            .sum()
    }
}

/// The id of the field or column at position `index` (header and extension together):
/// ids are u32, and the extension can add up to 2^32 - 1 to as many of the header's.
fn next_id(index: usize, what: &str) -> Result<u32> {
    u32::try_from(index).map_err(|_| {
        Error::corrupt(
            "schema description",
            format!("{what} {index}: the header and its extension hold more than 2^32 {what}s"),
        )
    })
}

fn add_schema(
    schema: &SchemaDescription,
    from_extension: bool,
    fields: &mut Vec<FieldDescriptor>,
    columns: &mut Vec<ColumnDescriptor>,
) -> Result<()> {
    let first_new_field = fields.len();
    let total_fields = first_new_field + schema.fields.len();
    for (i, rec) in schema.fields.iter().enumerate() {
        let id = next_id(first_new_field + i, "field")?;
        if rec.parent_id as usize >= total_fields {
            return Err(Error::corrupt(
                "schema description",
                format!(
                    "field {id} names parent {} which does not exist",
                    rec.parent_id
                ),
            ));
        }
        if let Some(src) = rec.source_field_id {
            if src as usize >= total_fields {
                return Err(Error::corrupt(
                    "schema description",
                    format!("projected field {id} names source field {src} which does not exist"),
                ));
            }
        }
        fields.push(FieldDescriptor {
            id,
            record: rec.clone(),
            role: FieldRole::from_u16(rec.role),
            parent: (rec.parent_id != id).then_some(rec.parent_id),
            children: Vec::new(),
            columns: Vec::new(),
            from_extension,
        });
    }
    for rec in &schema.columns {
        let id = next_id(columns.len(), "column")?;
        let field = fields.get_mut(rec.field_id as usize).ok_or_else(|| {
            Error::corrupt(
                "schema description",
                format!(
                    "column {id} belongs to field {} which does not exist",
                    rec.field_id
                ),
            )
        })?;
        field.columns.push(id);
        columns.push(ColumnDescriptor {
            id,
            record: rec.clone(),
            from_extension,
        });
    }
    for alias in &schema.alias_columns {
        if alias.physical_column_id as usize >= columns.len() {
            return Err(Error::corrupt(
                "schema description",
                format!(
                    "alias column names physical column {} which does not exist",
                    alias.physical_column_id
                ),
            ));
        }
        let field = fields.get_mut(alias.field_id as usize).ok_or_else(|| {
            Error::corrupt(
                "schema description",
                format!(
                    "alias column belongs to field {} which does not exist",
                    alias.field_id
                ),
            )
        })?;
        field.columns.push(alias.physical_column_id);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_stop_at_32_bits() {
        assert_eq!(next_id(u32::MAX as usize, "field").unwrap(), u32::MAX);
        if let Some(past) = (u32::MAX as usize).checked_add(1) {
            let err = next_id(past, "field").unwrap_err();
            assert!(matches!(err, Error::Corrupt { .. }), "{err}");
            assert!(err.to_string().contains("field 4294967296"), "{err}");
        }
    }
}
