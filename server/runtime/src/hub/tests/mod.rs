//! Tests of the hub: references, settings and credentials as pure functions; artifacts and
//! transfers against a real registry (the CNCF distribution registry on a loopback port).

mod artifact;
mod credentials;
mod fixtures;
mod reference;
mod registry;
mod settings;
