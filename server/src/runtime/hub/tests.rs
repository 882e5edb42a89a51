//! Hub tests.
