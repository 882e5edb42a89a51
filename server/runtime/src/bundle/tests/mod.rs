//! Tests of the bundle module against real temporary directories.

mod a2a;
mod archive;
mod digest;
mod fixtures;
mod manifest;
mod mcp;
mod reference;
mod scaffold;
mod skill;
mod store;
