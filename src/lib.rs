//! The Odyssey gRPC API, `package odyssey.v1`, generated from `proto/` at build time.
//!
//! Messages, clients (`*_client`) and servers (`*_server`) live in [`v1`]. The encoded
//! descriptor set, [`FILE_DESCRIPTOR_SET`], is what the server publishes for reflection.

/// Generated types of `package odyssey.v1`.
pub mod v1 {
    #![allow(clippy::large_enum_variant, clippy::doc_lazy_continuation)]
    tonic::include_proto!("odyssey.v1");
}

/// The encoded `FileDescriptorSet` of every `.proto` file (imports included), for reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/odyssey_descriptor.bin"));

/// Any message in its proto3 canonical JSON form, the API's one public JSON form.
#[cfg(feature = "json")]
pub mod json;
