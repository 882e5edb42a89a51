//! odysseyd: the runtime ([`odyssey_runtime`]) served over gRPC ([`grpc`]), an HTTP
//! gateway ([`http`]), what `odysseyd` runs ([`serve`]), its layered configuration
//! ([`config`]), TLS for its ports ([`tls`]) and `odysseyd migrate` ([`migrate`]).
//! Adapters only: they translate between the wire and the runtime.

pub mod a2a;
pub mod config;
pub mod grpc;
pub mod http;
pub mod mcp;
pub mod migrate;
pub mod serve;
pub mod tls;
