//! The end-to-end suite lives in `e2e/` (`cargo test -p odyssey-e2e`); this library is empty.
