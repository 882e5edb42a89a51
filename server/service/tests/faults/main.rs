//! Faults against a real `odysseyd` in its own process (the binary Cargo built for these
//! tests): SIGKILL at random points, a full or read-only home, and a bounded load with
//! clients that vanish mid-stream. The model is a loopback server speaking OpenAI's wire
//! format; sandboxed tools run under real bubblewrap.
//!
//! Needs the `testing` feature (its loopback servers): `cargo test --workspace` enables
//! it; alone, `cargo build -p odyssey-sandbox && cargo test -p odyssey-server --test faults`.

// A test step that fails is the test failing: unwrap and expect say where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod a2a_restart;
mod crash;
mod disk;
mod interrupted;
mod load;
mod orphans;
mod overlay;
mod replicas;
mod subagents;
