//! Loopback servers that speak real provider wire formats, scripted per test, and a real OCI
//! registry (with an auth probe) for the bundle hub, and a database of its own per test on the
//! throw-away PostgreSQL.
//!
//! The project's rule is that a provider is only ever faked at the wire: these servers
//! listen on `127.0.0.1:0` and answer exactly what the real service would send, so every
//! byte of the runtime's own client code runs in tests, end-to-end tests and benchmarks.
//! Compiled for this crate's tests and, for other crates, with the `testing` feature.

pub mod anthropic_wire;
pub mod auth_probe;
pub mod database;
pub mod gemini_wire;
pub mod openai_wire;
pub mod registry;
