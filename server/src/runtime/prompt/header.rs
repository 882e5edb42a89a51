//! The runtime header: what the model cannot know on its own about where it runs.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::runtime::policy::SandboxMode;

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
    let secs = match now.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => -i64::try_from(e.duration().as_secs()).unwrap_or(i64::MAX),
    };
    let (year, month, day) = civil_from_days(secs.div_euclid(86_400));
    format!("{year:04}-{month:02}-{day:02}")
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}
