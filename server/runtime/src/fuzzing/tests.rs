//! Every checked-in corpus input, crash reproducers included, through its target's entry
//! point: the fuzz targets' regression tests, run by `cargo test` without libFuzzer.

use std::fs;
use std::path::PathBuf;

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut inputs: Vec<_> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.unwrap_or_else(|e| panic!("{e}")).path();
            let bytes = fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (path, bytes)
        })
        .collect();
    inputs.sort();
    assert!(!inputs.is_empty(), "{} holds no input", dir.display());
    inputs
}

fn run_corpus(target: &str, run: fn(&[u8])) {
    for (path, bytes) in corpus(target) {
        let outcome = std::panic::catch_unwind(|| run(&bytes));
        assert!(outcome.is_ok(), "{} fails", path.display());
    }
}

#[test]
fn bundle_manifest_corpus() {
    run_corpus("bundle_manifest", super::bundle_manifest);
}

#[test]
fn bundle_archive_corpus() {
    run_corpus("bundle_archive", super::bundle_archive);
}

#[test]
fn event_log_corpus() {
    run_corpus("event_log", super::event_log);
}

#[test]
fn bash_split_corpus() {
    run_corpus("bash_split", super::bash_split);
}
