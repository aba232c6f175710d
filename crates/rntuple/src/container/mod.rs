//! The container layer: where an RNTuple lives inside a ROOT file (TFile).
//!
//! A ROOT file starts with a [`FileHeader`] (magic `"root"`, pointers to the first key,
//! the end of file, the free-segments list and the streamer infos). At `fBEGIN` (100)
//! comes the key of the top directory; `fNbytesName` bytes later its
//! [`DirectoryRecord`], which points to the directory's keys list: a [`KeyHeader`] for
//! the list itself, a big-endian i32 count, then one [`KeyHeader`] per object. Keys of
//! class `TDirectory`/`TDirectoryFile` are sub-directories whose object is another
//! directory record. RNTuple anchors are keys of class `ROOT::RNTuple` (or the older
//! `ROOT::Experimental::RNTuple`); [`RootFile::rntuple_anchors`] finds them all.
//! RNTuple pages and envelopes are stored as unindexed `RBlob` keys, and payloads larger
//! than the anchor's MaxKeySize are split over several of them ([`read_blob`]).
//!
//! Every record exists in a 32-bit-pointer and a 64-bit-pointer ("large file") variant;
//! all TFile integers are big-endian. This layer knows nothing of fields or pages.

mod blob;
mod cursor;
mod directory;
mod file;
mod file_header;
mod key;
mod streamer_info;
mod writer;

pub use blob::{read_blob, read_blobs, split_blob, BlobLayout};
pub(crate) use cursor::BeReader;
pub use directory::{parse_keys_list, write_keys_list, DirectoryRecord};
pub use file::{AnchorKey, KeyEntry, RootFile, MAX_DIRECTORY_DEPTH};
pub use file_header::FileHeader;
pub use key::KeyHeader;
pub use streamer_info::{
    streamer_info_list, streamer_info_object, StreamerElement, StreamerInfo, TYPE_ULONG,
    TYPE_USHORT,
};
pub use writer::{datime_from_unix, datime_now, FileOutput, FileWriter, ROOT_VERSION_CODE};

/// Class names of RNTuple anchor keys: the current one and the pre-1.0 one.
pub const ANCHOR_CLASS_NAMES: [&str; 2] = ["ROOT::RNTuple", "ROOT::Experimental::RNTuple"];

/// Class names of sub-directory keys.
pub const DIRECTORY_CLASS_NAMES: [&str; 2] = ["TDirectory", "TDirectoryFile"];

/// Class name of the keys holding RNTuple pages and envelopes.
pub const BLOB_CLASS_NAME: &str = "RBlob";

#[cfg(test)]
mod tests;
