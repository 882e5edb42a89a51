//! Compiles `proto/` into the Rust API with protox (a pure-Rust protobuf compiler, so no
//! system `protoc` is needed) and tonic-prost-build, and writes the encoded descriptor set
//! that the server's reflection service publishes.

use std::path::PathBuf;

const PROTO_ROOT: &str = "proto";
const FILES: &[&str] = &[
    "odyssey/v1/common.proto",
    "odyssey/v1/events.proto",
    "odyssey/v1/bundle.proto",
    "odyssey/v1/session.proto",
    "odyssey/v1/execution.proto",
    "odyssey/v1/approval.proto",
    "odyssey/v1/server.proto",
    // The Agent2Agent protocol's gRPC binding, served beside the API (not part of it).
    "lf/a2a/v1/a2a.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed={PROTO_ROOT}");
    let descriptors = protox::Compiler::new([PROTO_ROOT])?
        .include_imports(true)
        .include_source_info(true)
        .open_files(FILES)?
        .file_descriptor_set();

    let out_dir = PathBuf::from(std::env::var("OUT_DIR")?);
    std::fs::write(
        out_dir.join("odyssey_descriptor.bin"),
        prost::Message::encode_to_vec(&descriptors),
    )?;

    // Type names (`prost::Name`) let the `json` module find each message's descriptor.
    let mut config = tonic_prost_build::Config::new();
    config.enable_type_names();
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds_with_config(descriptors, config)?;
    Ok(())
}
