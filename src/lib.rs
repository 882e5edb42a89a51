//! The Odyssey gRPC API, `package odyssey.v1`, generated from `proto/` at build time.
//!
//! Messages, clients (`*_client`) and servers (`*_server`) live in [`v1`]. The encoded
//! descriptor set, [`FILE_DESCRIPTOR_SET`], is what the server publishes for reflection.

/// Generated types of `package odyssey.v1`.
pub mod v1 {
    #![allow(clippy::large_enum_variant, clippy::doc_lazy_continuation)]
    tonic::include_proto!("odyssey.v1");
}

/// Generated types of `package lf.a2a.v1`: the Agent2Agent protocol (A2A v1.0), which the
/// server offers beside `odyssey.v1`. Not part of the Odyssey API; its names are the
/// specification's.
pub mod a2a {
    /// A2A v1.0.
    pub mod v1 {
        #![allow(
            clippy::large_enum_variant,
            clippy::doc_lazy_continuation,
            clippy::enum_variant_names
        )]
        tonic::include_proto!("lf.a2a.v1");
    }
}

/// The encoded `FileDescriptorSet` of every `.proto` file (imports included), for reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/odyssey_descriptor.bin"));

/// Any message in its proto3 canonical JSON form, the API's one public JSON form.
#[cfg(feature = "json")]
pub mod json;
