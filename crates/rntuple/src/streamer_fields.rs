//! Streamer fields read as records: each object a streamer field holds (ROOT's
//! `RStreamerField`, field role 4: the object as ROOT's streamer serialized it) decoded
//! by the layout of its class that the file's streamer infos give (the RNTuple's extra
//! type information), as JSROOT does, without ROOT.
//!
//! A field whose class the file does not describe (a class with a streamer of its own,
//! whose bytes need not follow any streamer info) stays raw bytes. A value that does not
//! decode by its layout is an error naming the field and the entry, never a guess.

use crate::error::{Error, Location, Result};
use crate::format::{Footer, Header, EXTRA_TYPE_STREAMER_INFO};
use crate::import::register_classes;
use crate::read::{FurtherDecoding, Projection};
use crate::schema::{arrow_field, ColumnDefaults, Descriptor, FieldRole, SchemaBuilder};
use crate::ttree::{parse_streamer_info_object, Builder, StreamCursor, Streamed, TypeResolver};
use arrow_array::{Array, ArrayRef, LargeBinaryArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use std::sync::Arc;

/// One top-level streamer field that can be decoded.
#[derive(Debug, Clone)]
struct Decodable {
    /// The field's name (its column in a batch).
    name: String,
    /// Its layout.
    ty: Streamed,
    /// Whether it is an STL collection, stored without a header of its own.
    collection: bool,
    /// The Arrow field of the decoded values.
    field: Field,
}

/// The streamer fields of an RNTuple that its streamer infos let decode.
#[derive(Debug, Clone, Default)]
pub struct StreamerFields {
    fields: Vec<Decodable>,
}

impl StreamerFields {
    /// Finds the top-level streamer fields of `desc` and their layouts (from the streamer
    /// infos in its extra type information). A field whose class is not described is
    /// left out (it stays raw bytes).
    pub fn new(desc: &Descriptor) -> Result<StreamerFields> {
        let streamer_fields: Vec<u32> = desc
            .top_level
            .iter()
            .copied()
            .filter(|&id| desc.field(id).role == FieldRole::Streamer)
            .collect();
        if streamer_fields.is_empty() {
            return Ok(StreamerFields::default());
        }
        let mut infos = Vec::new();
        for record in &desc.extra_type_infos {
            if record.content_id == EXTRA_TYPE_STREAMER_INFO {
                infos.extend(parse_streamer_info_object(
                    &record.content,
                    "the streamer infos of the extra type information",
                )?);
            }
        }
        let described: Vec<String> = infos.iter().map(|i| i.class_name.clone()).collect();
        let mut resolver = TypeResolver::new(infos);
        let mut fields = Vec::new();
        for id in streamer_fields {
            let f = desc.field(id);
            let type_name = f.type_name();
            let Ok(ty) = resolver.type_of(type_name) else {
                continue;
            };
            // Every class it involves must be described: a class the file does not
            // describe is streamed by a streamer of its own.
            if !classes_described(&ty, &described) {
                continue;
            }
            let collection = matches!(ty, Streamed::Vector(..) | Streamed::Bitset(_));
            let field = decoded_field(&ty, f.name())?;
            fields.push(Decodable {
                name: f.name().to_string(),
                ty,
                collection,
                field,
            });
        }
        Ok(StreamerFields { fields })
    }

    /// Whether no field is decoded.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// `batch` with each decodable streamer field's bytes replaced by its records; the
    /// first entry of the batch is entry `first_entry` (for errors).
    pub fn decode(&self, batch: &RecordBatch, first_entry: u64) -> Result<RecordBatch> {
        if self.fields.is_empty() {
            return Ok(batch.clone());
        }
        let schema = batch.schema();
        let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
        let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
        for d in &self.fields {
            let Ok(index) = schema.index_of(&d.name) else {
                continue;
            };
            if !matches!(columns[index].data_type(), DataType::LargeBinary) {
                continue;
            }
            columns[index] = d.records_of(&columns[index], first_entry)?;
            fields[index] = d.field.clone().with_name(schema.field(index).name());
        }
        Ok(RecordBatch::try_new(
            Arc::new(Schema::new(fields)),
            columns,
        )?)
    }

    /// `projection` whose reads decode each decodable streamer field it selects into
    /// records, as part of the read (see [`StreamerObjects`]).
    fn decoded_in(&self, mut projection: Projection) -> Projection {
        for d in &self.fields {
            let Some(index) = projection.schema().fields().iter().position(|f| {
                *f.name() == d.name && matches!(f.data_type(), DataType::LargeBinary)
            }) else {
                continue;
            };
            let field = d.field.clone();
            projection = projection.decoded_further(index, field, Arc::new(d.clone()));
        }
        projection
    }
}

/// How reads hand back the objects streamer fields store: the one option both front ends
/// set (`rntuple dump --streamer-bytes`; Python always reads records).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StreamerObjects {
    /// Each object decoded into a record by the layout of its class that the file's
    /// streamer infos give; a field whose classes they do not describe stays bytes.
    #[default]
    Records,
    /// The bytes as stored.
    Bytes,
}

impl StreamerObjects {
    /// `projection` of an RNTuple described by `desc`, its reads handing back the
    /// objects of its streamer fields this way (decoded while the batch is read, and
    /// its schema the records' for those fields).
    pub fn project(self, desc: &Descriptor, projection: Projection) -> Result<Projection> {
        match self {
            StreamerObjects::Bytes => Ok(projection),
            StreamerObjects::Records => Ok(StreamerFields::new(desc)?.decoded_in(projection)),
        }
    }
}

impl Decodable {
    /// The records of the objects `array` (a `LargeBinary` column of this field) holds;
    /// its first value is entry `first_entry` (for errors).
    fn records_of(&self, array: &ArrayRef, first_entry: u64) -> Result<ArrayRef> {
        let bytes = array
            .as_any()
            .downcast_ref::<LargeBinaryArray>()
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "streamer field \"{}\" read as {}, not as its bytes",
                    self.name,
                    array.data_type()
                ))
            })?;
        let mut out = Builder::new(&self.ty);
        for row in 0..bytes.len() {
            let mut cursor = StreamCursor::new(bytes.value(row));
            cursor
                .decode(&self.ty, &mut out, !self.collection)
                .and_then(|()| match cursor.remaining() {
                    0 => Ok(()),
                    n => Err(Error::corrupt(
                        "streamed object",
                        format!("{n} bytes are left after the object"),
                    )),
                })
                .map_err(|e| {
                    e.at(Location {
                        field: Some(self.name.clone()),
                        structure: Some(format!(
                            "streamer field, entry {}",
                            first_entry + row as u64
                        )),
                        ..Default::default()
                    })
                })?;
        }
        out.finish(&self.field)
    }
}

impl FurtherDecoding for Decodable {
    fn decode(&self, array: &ArrayRef, first_entry: u64) -> Result<ArrayRef> {
        self.records_of(array, first_entry)
    }
}

/// Whether every class `ty` involves is one of `described` (`TObject` and pairs need no
/// description).
fn classes_described(ty: &Streamed, described: &[String]) -> bool {
    let mut classes = Vec::new();
    ty.classes(&mut classes);
    classes
        .iter()
        .all(|c| c.name == "TObject" || described.iter().any(|d| *d == c.name))
}

/// The Arrow field of values of `ty`: the shape RNTuple gives the type as fields of its
/// own (base classes as `:_0`, ..., `TObject` as its record), built through the schema.
fn decoded_field(ty: &Streamed, name: &str) -> Result<Field> {
    let mut builder = SchemaBuilder::new(ColumnDefaults::default());
    register_classes(&mut builder, ty)?;
    let id = builder.add_cpp_field(name, &ty.cpp_type())?;
    let header = Header {
        name: String::new(),
        description: String::new(),
        writer: String::new(),
        schema: builder.finish(),
    };
    let desc = Descriptor::build((1, 0, 0, 0), header, Footer::default(), Vec::new())?;
    arrow_field(&desc, id, name)
}
