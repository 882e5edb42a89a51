//! Issue 12 item 11: `odyssey demo` in a network namespace whose loopback interface is
//! down (`unshare -rn`: a new user and network namespace, nothing up) fails with one line
//! that says what to do, not only "Network is unreachable".

// A test step that fails is the test failing: unwrap and expect say where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

const ODYSSEY: &str = env!("CARGO_BIN_EXE_odyssey");

#[test]
fn the_demo_without_loopback_says_to_bring_it_up() {
    let output = Command::new("unshare")
        .args(["--user", "--map-root-user", "--net", "--"])
        .arg(ODYSSEY)
        .arg("demo")
        .env("HOME", std::env::temp_dir())
        .output()
        .expect("unshare runs (util-linux)");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {stderr}");
    assert!(
        lines[0].contains("the loopback interface is down")
            && lines[0].contains("`ip link set lo up`"),
        "{stderr}"
    );
}
