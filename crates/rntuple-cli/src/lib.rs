//! The library half of the `rntuple` command: how `rntuple dump --json` renders values,
//! and how `rntuple show` does.
//!
//! The command (`src/main.rs`) uses it, and so do the workspace's test tools
//! (`rntuple-testkit`'s `propgen` writes the values it expects a reader to print with the
//! same renderer). Not a stable API: it follows the command's output.

pub mod hexfloat;
pub mod render;
pub mod show;
