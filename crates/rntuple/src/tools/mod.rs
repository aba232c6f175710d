//! Tools above reading and writing: each composes the layers below (container, format,
//! read, write) rather than re-implementing any of them.

pub mod convert;
pub mod copy;
pub mod inspect;
pub mod join;
pub mod merge;
pub mod recover;
pub mod streamer;
pub mod verify;

pub use convert::{convert_tree, ConversionPlan, ConvertOptions, ConvertSummary};
pub use copy::{copy_rntuple, source_compression};
pub use join::{friend_column, Duplicates, How, Join, JoinSpec, KeyIndex, Matches, ReaderChain};
pub use merge::{
    merge_files, merge_into, merge_to_daos, merge_to_dataset, MergeMode, MergeOptions,
    MergeProgress, MergeSummary, OutputCompression,
};
pub use streamer::StreamerFields;
