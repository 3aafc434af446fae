//! The async shell: moves files through the pure stages and into the store.
//!
//! Only this module spawns tasks. [`engine`] decides which file to pump next, [`pump`] moves one
//! file from its checkpoint to its last line, [`daemon`] and [`once`] are the two ways to run
//! them, [`socket`] is the daemon's Unix socket.

pub mod daemon;
pub mod engine;
pub mod once;
pub mod pump;
pub mod socket;
