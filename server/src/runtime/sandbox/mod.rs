//! The OS sandbox: session cells, and processes run under bubblewrap with Landlock and
//! seccomp applied inside by the `odyssey-sandbox` helper.

mod types;

pub use types::{CellPaths, ExecOutcome, ExecRequest};
