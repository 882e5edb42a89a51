//! The runtime header: what the model cannot know on its own about where it runs.

use std::path::Path;
use std::time::SystemTime;

use crate::policy::SandboxMode;

/// The `# Environment` section.
pub(super) fn section(now: SystemTime, workspace: &Path, cwd: &Path, mode: SandboxMode) -> String {
    let mut out = format!(
        "# Environment\n\n- Date: {} (UTC)\n- Workspace: {}",
        utc_date(now),
        workspace.display()
    );
    if cwd != workspace {
        out.push_str(&format!("\n- Working directory: {}", cwd.display()));
    }
    out.push_str(&format!("\n- Sandbox: {mode} ({})", meaning(mode)));
    out
}

fn meaning(mode: SandboxMode) -> &'static str {
    match mode {
        SandboxMode::ReadOnly => "files can be read, nothing can be written",
        SandboxMode::WorkspaceWrite => "writes are allowed inside the workspace only",
        SandboxMode::DangerFullAccess => "no sandbox: commands run with the server's own access",
    }
}

/// `YYYY-MM-DD` of `now` in UTC. A day is all the model needs, and it keeps the prompt the
/// same from one turn to the next, so providers' prompt caches keep hitting.
pub fn utc_date(now: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(now)
        .format("%Y-%m-%d")
        .to_string()
}
