//! Odyssey's server: the embeddable runtime core ([`runtime`]), its gRPC adapter
//! ([`grpc`]), its HTTP gateway ([`http`]), what `odysseyd` runs ([`serve`]) and its
//! layered configuration ([`config`]).

pub mod config;
pub mod grpc;
pub mod http;
pub mod runtime;
pub mod serve;

#[cfg(any(test, feature = "testing"))]
pub mod testing;

#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
