//! Schema evolution on read: a field read as another C++ type than the one it was
//! written with, by ROOT's rules (`tree/ntuple/doc/SchemaEvolution.md`, as ROOT 6.40
//! behaves). A read is planned in two steps, as ROOT does: [`plan`] checks, before any
//! page is read, that each requested type can be read from the type on disk (a refusal
//! names both types); [`Conversion::apply`] converts the arrays decoded as they are on
//! disk, checking every value that may not fit (integer narrowing and sign changes,
//! `double` to `float`, integers to reals that cannot hold them all), and names the
//! field, the entry and the value of one that does not (ROOT fails the whole page), or
//! makes it null when asked ([`OnOverflow::Mask`]).
//!
//! One rule decides how a number reads as another, whoever chose the type (a caller's
//! `types=`, or [`super::unify`] over many files): [`numbers::number_fit`]. A conversion that holds every
//! value is done; one that may not is done with a check of every value (an integer read
//! as a real must read back exactly: `2**62 + 1` is no `double`); the others are refused
//! before anything is read. ROOT 6.40 refuses integers read as reals; this reader reads
//! them, checked, so that files of integers and of reals can be read as one type.
//! The decoding itself is unchanged: conversions work on its Arrow arrays.

mod apply;
mod numbers;
mod plan;
mod target;
mod unify;

pub(crate) use plan::{plan, Conversion};
pub use unify::{unification, unify, FieldOf, Inexact, Unification};

/// The type a field is read as.
#[derive(Debug, Clone, PartialEq)]
pub enum ReadAs {
    /// A C++ type name, spelled as ROOT spells it (`double`, `std::int64_t`, `int`,
    /// `std::vector<float>`, `std::optional<std::int32_t>`, ...). NumPy's names of the
    /// fundamental types (`float64`, `int32`, ...) are taken too.
    Type(String),
    /// A record read member by member, matched by name, in this order: members on disk
    /// and not listed are left out; listed members that are not on disk are added, null
    /// (or the default given for them).
    Record(Vec<(String, ReadAs)>),
    /// The type on disk, unchanged (what [`super::unify`] gives for fields alike in every file).
    AsOnDisk,
}

/// What a read does with a value that does not fit the type asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnOverflow {
    /// Fail, naming the field, the entry and the value.
    #[default]
    Raise,
    /// Read the value as null (the field becomes nullable).
    Mask,
}

/// A value for a record member that is not on disk.
#[derive(Debug, Clone, PartialEq)]
pub enum DefaultValue {
    /// `true` or `false`.
    Bool(bool),
    /// A whole number.
    Int(i128),
    /// A real number.
    Float(f64),
    /// A string.
    Text(String),
}

/// The types fields are read as (see [`RNTupleReader::projection_as`](super::RNTupleReader::projection_as)).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadTypes {
    /// Each field path's type.
    types: Vec<(String, ReadAs)>,
    defaults: Vec<(String, DefaultValue)>,
    on_overflow: OnOverflow,
}

impl ReadTypes {
    /// No conversion: every field as it is on disk.
    pub fn new() -> ReadTypes {
        ReadTypes::default()
    }

    /// Field `path` (a top-level field, or a member path such as `evo.a`, `Jet._0.pt`)
    /// read as `read_as`.
    pub fn with_type(mut self, path: impl Into<String>, read_as: ReadAs) -> ReadTypes {
        self.types.push((path.into(), read_as));
        self
    }

    /// The value of an added record member (`evo.c`) in every entry, instead of null.
    pub fn with_default(mut self, path: impl Into<String>, value: DefaultValue) -> ReadTypes {
        self.defaults.push((path.into(), value));
        self
    }

    /// What to do with a value that does not fit.
    pub fn on_overflow(mut self, on_overflow: OnOverflow) -> ReadTypes {
        self.on_overflow = on_overflow;
        self
    }

    /// Whether nothing is converted.
    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }
}
