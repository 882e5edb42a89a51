//! Odyssey's server: the embeddable runtime core ([`runtime`]), its gRPC adapter
//! ([`grpc`]), its HTTP gateway ([`http`]), what `odysseyd` runs ([`serve`]), its layered
//! configuration ([`config`]) and TLS for its ports ([`tls`]).

pub mod config;
pub mod grpc;
pub mod http;
pub mod runtime;
pub mod serve;
pub mod tls;

#[cfg(any(test, feature = "testing"))]
pub mod testing;

#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
