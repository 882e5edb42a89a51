//! Entry points for the cargo-fuzz targets in `fuzz/`: one function per target, taking the
//! fuzzer's raw bytes.
//!
//! Each one drives the server's real code on what the bytes describe (a bundle tree, an
//! archive, a session's event log, a Bash command line), in a scratch directory when it
//! needs files, and then checks what the code promises about such input: a bundle from a
//! client is refused with an error naming the client's mistake (never an internal error,
//! never a server path), a failed install leaves nothing behind, a reopened log is what
//! was written minus at most a torn last line, and so on. A broken promise panics, which
//! the fuzzer reports as a crash with its input.
//!
//! The functions are also run on the checked-in corpus by the crate's unit tests, so every
//! past crash stays a regression test without libFuzzer.

mod archive;
mod bash;
mod event_log;
mod manifest;
mod scratch;

#[cfg(test)]
mod tests;

pub use archive::bundle_archive;
pub use bash::{bash_split, bash_split_init};
pub use event_log::event_log;
pub use manifest::bundle_manifest;
