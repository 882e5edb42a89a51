//! Bundle archives (tar + gzip) on the client side: packing a project folder to send to
//! BuildBundle, and unpacking what InitBundle returns. The server checks every archive it
//! receives; the client checks every archive it unpacks, because the bytes came over the
//! network and land in the user's folders.

mod pack;
mod paths;
mod unpack;

pub use pack::{pack_files, pack_project};
/// Whether a path component is left out of packed archives (hidden, `target`, `node_modules`).
pub use paths::is_excluded_component;
pub use unpack::unpack_archive;

#[cfg(test)]
mod tests;
