//! The harness's own servers (the floors' echo server, the model servers) run in child
//! processes of it, so that a call crosses processes as it does to the daemon.

use std::ffi::OsStr;

use tokio::io::AsyncBufReadExt;
use tokio::process::{Child, Command};

use crate::error::{BenchError, Result};

/// Starts this harness again as `role` with `args`, dying with the harness, and returns
/// the child with the first line it prints (where it listens).
pub async fn start(
    role: &str,
    args: impl IntoIterator<Item = impl AsRef<OsStr>>,
) -> Result<(Child, String)> {
    let exe = std::env::current_exe().map_err(|e| BenchError::io("locate", "odyssey-bench", e))?;
    let mut command = Command::new(&exe);
    command
        .arg(role)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true);
    odyssey_sandbox::host::prepare_child(
        command.as_std_mut(),
        odyssey_sandbox::host::ChildSetup {
            server_pid: std::process::id(),
            ..Default::default()
        },
    );
    let mut child = command
        .spawn()
        .map_err(|e| BenchError::io("start", &exe, e))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| BenchError::check(format!("the {role} process has no stdout")))?;
    let mut line = String::new();
    tokio::io::BufReader::new(stdout)
        .read_line(&mut line)
        .await
        .map_err(|e| BenchError::io("read the address of", &exe, e))?;
    Ok((child, line.trim().to_owned()))
}
