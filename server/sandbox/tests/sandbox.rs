//! The OS sandbox against real bubblewrap, real processes and real files.
//!
//! Each escape is tried under both restricted modes and must fail; the things commands
//! legitimately do must work. Some tests are built so that bubblewrap alone would not pass
//! them (the seccomp probes, the helper run without bubblewrap), proving that Landlock and
//! seccomp are really applied.
//!
//! The server home lives under Cargo's target tmp folder (not `/tmp`), so the sandbox's
//! `/tmp` is the cell's own tmp as in production; host files that must stay invisible
//! live in a separate temporary folder.

// A test step that fails is the test failing: unwrap and expect say where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::fs;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use odyssey_runtime::ErrorKind;
use odyssey_runtime::bundle::{BundleStore, InstallOptions};
use odyssey_runtime::events::{EventPayload, OutputStream};
use odyssey_runtime::model::ModelSpec;
use odyssey_runtime::policy::{ApprovalPolicy, SandboxMode};
use odyssey_runtime::sandbox::{
    AppSource, CellPaths, ExecOutcome, ExecRequest, ProcessView, RUNNING_DIR, Sandbox,
    SandboxError, SandboxSettings,
};
use odyssey_runtime::session::{BundlePin, EventSink, SessionRecord, SessionStore};
use odyssey_runtime::skills::SkillCatalog;
use odyssey_runtime::tools::bash::Bash;
use odyssey_runtime::tools::{Tool, ToolContext};
use serde_json::json;
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

#[path = "sandbox/egress.rs"]
mod egress;

const HELPER: &str = env!("CARGO_BIN_EXE_odyssey-sandbox");
const RESTRICTED: [SandboxMode; 2] = [SandboxMode::WorkspaceWrite, SandboxMode::ReadOnly];
/// Small enough that a fork bomb hits it at once, large enough for pipelines.
const TEST_NPROC: u64 = 48;

/// A server home with one prepared cell, a sibling "secret" folder in the home, and a
/// host folder outside everything.
struct Fixture {
    home: TempDir,
    outside: TempDir,
    cell: CellPaths,
    sandbox: Sandbox,
    /// The private folder the home lives in, when it does.
    _private: Option<TempDir>,
}

impl Fixture {
    fn new() -> Self {
        Self::with(|_| {})
    }

    fn with(configure: impl FnOnce(&mut SandboxSettings)) -> Self {
        let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("home");
        Self::at(home, None, configure)
    }

    /// A home inside a folder only its owner may enter, as `/root/.odyssey` is.
    fn in_private_folder() -> Self {
        use std::os::unix::fs::PermissionsExt;
        let private = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("private");
        fs::set_permissions(private.path(), fs::Permissions::from_mode(0o700)).expect("chmod");
        let home = tempfile::tempdir_in(private.path()).expect("home");
        fs::set_permissions(home.path(), fs::Permissions::from_mode(0o700)).expect("chmod");
        Self::at(home, Some(private), |_| {})
    }

    fn at(
        home: TempDir,
        private: Option<TempDir>,
        configure: impl FnOnce(&mut SandboxSettings),
    ) -> Self {
        let outside = tempfile::tempdir().expect("outside");
        fs::create_dir_all(home.path().join("secret")).expect("secret dir");
        fs::write(home.path().join("secret/key.txt"), "home-secret").expect("secret");
        fs::write(outside.path().join("host.txt"), "host-only").expect("host file");
        let bundle = outside.path().join("bundle");
        fs::create_dir_all(&bundle).expect("bundle");
        fs::write(bundle.join("README.md"), "app file").expect("app file");

        let mut settings = SandboxSettings {
            helper: Some(PathBuf::from(HELPER)),
            default_timeout: Duration::from_secs(30),
            ..SandboxSettings::default()
        };
        settings.limits.processes = TEST_NPROC;
        configure(&mut settings);
        let sandbox = Sandbox::new(settings);
        let cell = sandbox
            .prepare_cell(
                &home.path().join("sandbox"),
                Uuid::new_v4(),
                AppSource {
                    root: &bundle,
                    digest: "sha256:test",
                },
            )
            .expect("prepare cell");
        Self {
            home,
            outside,
            cell,
            sandbox,
            _private: private,
        }
    }

    fn request(&self, mode: SandboxMode, script: &str) -> ExecRequest {
        ExecRequest {
            exec_id: format!("t-{}", Uuid::new_v4()),
            argv: vec!["/bin/bash".into(), "-c".into(), script.into()],
            cwd: ProcessView::new(mode, &self.cell).workspace,
            mode,
            env: BTreeMap::new(),
            network: None,
            mounts_read: Vec::new(),
            mounts_write: Vec::new(),
            timeout: Duration::ZERO,
            memory_mb: None,
            cpu_seconds: None,
        }
    }

    async fn run(&self, request: ExecRequest) -> ExecOutcome {
        self.sandbox
            .run(&self.cell, request, |_, _| {}, CancellationToken::new())
            .await
            .unwrap_or_else(|e| panic!("run failed: {e}"))
    }

    async fn sh(&self, mode: SandboxMode, script: &str) -> ExecOutcome {
        self.run(self.request(mode, script)).await
    }

    /// A second session's cell beside the first, served by the same sandbox.
    fn another_cell(&self) -> CellPaths {
        self.sandbox
            .prepare_cell(
                self.cell.root.parent().expect("sandbox root"),
                Uuid::new_v4(),
                AppSource {
                    root: &self.outside.path().join("bundle"),
                    digest: "sha256:test",
                },
            )
            .expect("prepare another cell")
    }

    async fn run_in(&self, cell: &CellPaths, request: ExecRequest) -> ExecOutcome {
        self.sandbox
            .run(cell, request, |_, _| {}, CancellationToken::new())
            .await
            .unwrap_or_else(|e| panic!("run failed: {e}"))
    }
}

fn shows(outcome: &ExecOutcome) -> String {
    format!(
        "exit {} stdout {:?} stderr {:?}",
        outcome.exit_code, outcome.stdout, outcome.stderr
    )
}

fn failed(outcome: &ExecOutcome) -> bool {
    outcome.exit_code != 0
}

// ---------------------------------------------------------------------------------------
// Escapes that must fail
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn writing_outside_the_workspace_fails() {
    let fx = Fixture::new();
    let targets = [
        PathBuf::from("/etc/odyssey-escape"),
        PathBuf::from("/usr/odyssey-escape"),
        fx.cell.root.join("escape"),
        fx.cell.root.parent().expect("sandbox root").join("escape"),
        fx.home.path().join("escape"),
        fx.cell.app.join("escape"),
        fx.outside.path().join("escape"),
    ];
    for mode in RESTRICTED {
        for target in &targets {
            let out = fx
                .sh(mode, &format!("echo pwned > '{}'", target.display()))
                .await;
            assert!(
                failed(&out),
                "{mode}: wrote {}: {}",
                target.display(),
                shows(&out)
            );
            assert!(!target.exists(), "{mode}: {} exists", target.display());
        }
    }
}

#[tokio::test]
async fn read_only_mode_cannot_write_the_workspace() {
    let fx = Fixture::new();
    let out = fx.sh(SandboxMode::ReadOnly, "echo x > data-file").await;
    assert!(failed(&out), "{}", shows(&out));
    assert!(!fx.cell.data.join("data-file").exists());
    let out = fx
        .sh(
            SandboxMode::ReadOnly,
            "mkdir newdir || touch \"$XDG_CACHE_HOME/c\"",
        )
        .await;
    assert!(failed(&out), "{}", shows(&out));
    // What read_only leaves writable: its tmp and its run folder.
    let out = fx
        .sh(
            SandboxMode::ReadOnly,
            "echo t > \"$TMPDIR/t\" && echo r > \"$XDG_RUNTIME_DIR/r\" && cat \"$TMPDIR/t\"",
        )
        .await;
    assert_eq!(out.exit_code, 0, "{}", shows(&out));
    assert_eq!(out.stdout, "t\n");
}

#[tokio::test]
async fn host_files_that_are_not_mounted_cannot_be_read() {
    let fx = Fixture::new();
    let host_file = fx.outside.path().join("host.txt");
    for mode in RESTRICTED {
        for script in [
            format!("cat '{}'", host_file.display()),
            format!("ls '{}'", fx.outside.path().display()),
            "cat /etc/shadow".to_owned(),
            "ls /root".to_owned(),
        ] {
            let out = fx.sh(mode, &script).await;
            assert!(failed(&out), "{mode}: `{script}`: {}", shows(&out));
            assert!(!out.stdout.contains("host-only"), "{mode}: {}", shows(&out));
        }
    }
}

#[tokio::test]
async fn the_server_home_is_invisible() {
    let fx = Fixture::new();
    let home = fx.home.path();
    for mode in RESTRICTED {
        for script in [
            format!("ls -a '{}'", home.display()),
            format!("ls -a '{}'", home.join("sandbox").display()),
            format!("ls -a '{}'", fx.cell.root.display()),
            format!("cat '{}'", home.join("secret/key.txt").display()),
            format!("ls '{}'", home.join("secret").display()),
        ] {
            let out = fx.sh(mode, &script).await;
            assert!(failed(&out), "{mode}: `{script}`: {}", shows(&out));
            assert!(!out.stdout.contains("secret"), "{mode}: {}", shows(&out));
            assert!(
                !out.stdout.contains("home-secret"),
                "{mode}: {}",
                shows(&out)
            );
        }
    }
}

/// Issue 11 item 7: a server running as root with its home in a folder only root may
/// enter (`/root/.odyssey`) runs sandboxed commands, which still cannot see the home.
#[tokio::test]
async fn a_home_in_a_private_folder_works_as_root_and_stays_invisible() {
    let fx = Fixture::in_private_folder();
    let home = fx.home.path();
    for mode in RESTRICTED {
        let out = fx
            .sh(
                mode,
                "cat /app/README.md; ls /workspace >/dev/null && echo ok",
            )
            .await;
        assert_eq!(out.exit_code, 0, "{mode}: {}", shows(&out));
        assert_eq!(out.stdout, "app fileok\n", "{mode}");
        let script = format!(
            "ls -a '{}'; cat '{}'; grep -r home-secret / 2>/dev/null; cat /proc/self/environ",
            home.display(),
            home.join("secret/key.txt").display()
        );
        let out = fx.sh(mode, &script).await;
        assert!(
            !out.stdout.contains("home-secret"),
            "{mode}: {}",
            shows(&out)
        );
        assert!(
            !out.stdout.contains(&*home.to_string_lossy()),
            "{mode}: {}",
            shows(&out)
        );
    }
}

#[tokio::test]
async fn symlinks_out_of_the_workspace_lead_nowhere() {
    let fx = Fixture::new();
    let outside = fx.outside.path();
    let script = format!(
        "ln -s '{dir}' out; ln -s /etc/passwd pw; echo pwned > out/escape; echo pwned >> pw; \
         cat out/host.txt; cat out/escape",
        dir = outside.display()
    );
    for mode in RESTRICTED {
        let out = fx.sh(mode, &script).await;
        assert!(failed(&out), "{mode}: {}", shows(&out));
        assert!(!out.stdout.contains("host-only"), "{mode}: {}", shows(&out));
        assert!(
            !outside.join("escape").exists(),
            "{mode}: wrote through the link"
        );
        let passwd = fs::read_to_string("/etc/passwd").expect("passwd");
        assert!(!passwd.contains("pwned"), "{mode}: appended to /etc/passwd");
    }
}

#[tokio::test]
async fn no_network_means_no_connection_to_a_host_listener() {
    let fx = Fixture::new();
    let listener = TcpListener::bind("127.0.0.1:0").expect("listener");
    listener.set_nonblocking(true).expect("nonblocking");
    let port = listener.local_addr().expect("addr").port();
    let probes = [
        format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected"),
        format!(
            "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2); \
             print(\"connected\")'"
        ),
    ];
    for mode in RESTRICTED {
        for probe in &probes {
            let out = fx.sh(mode, probe).await;
            assert!(failed(&out), "{mode}: {probe}: {}", shows(&out));
            assert!(!out.stdout.contains("connected"));
        }
        // seccomp answers socket(AF_INET) itself, before any routing could.
        let out = fx
            .sh(
                mode,
                "python3 -c 'import socket\ntry:\n socket.socket()\nexcept OSError as e:\n print(e.errno)'",
            )
            .await;
        assert_eq!(
            out.stdout.trim(),
            libc::EPERM.to_string(),
            "{}",
            shows(&out)
        );
    }
    assert!(listener.accept().is_err(), "the listener was reached");

    // Issue 11 item 3: with the network on, the same direct connection fails too (the
    // sandbox has a network namespace of its own); the way out is the egress proxy, whose
    // tests are in `egress`.
    let mut request = fx.request(SandboxMode::WorkspaceWrite, &probes[0]);
    request.network = Some(egress::grant(&["*"]).0);
    let out = fx.run(request).await;
    assert!(failed(&out), "{}", shows(&out));
    assert!(listener.accept().is_err(), "the listener was reached");
}

#[tokio::test]
async fn a_fork_bomb_hits_the_process_limit() {
    let fx = Fixture::new();
    for mode in RESTRICTED {
        // Counts how many children fork() allows before EAGAIN; the children wait, so they
        // all count against RLIMIT_NPROC at once.
        let counter = "python3 -c '
import os, time
n = 0
try:
    while n < 10000:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        n += 1
except OSError as e:
    print(n, e.errno)
'";
        let out = fx.sh(mode, counter).await;
        let mut parts = out.stdout.split_whitespace();
        let forked: u64 = parts
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(u64::MAX);
        assert!(forked < TEST_NPROC, "{mode}: {}", shows(&out));
        assert_eq!(parts.next(), Some(libc::EAGAIN.to_string().as_str()));

        // The classic bomb: bounded, then ended with everything it made (by the timeout,
        // or earlier when its own shell gives up forking).
        let started = Instant::now();
        let mut request = fx.request(mode, ":(){ :|:& };:; sleep 60");
        request.timeout = Duration::from_secs(2);
        let out = fx.run(request).await;
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{mode}: took {:?}",
            started.elapsed()
        );
        assert_ne!(out.exit_code, 0, "{mode}: {}", shows(&out));
        // And the machine is fine: the next command runs normally.
        let out = fx.sh(mode, "echo alive").await;
        assert_eq!(out.stdout, "alive\n", "{mode}: {}", shows(&out));
    }
}

#[tokio::test]
async fn a_timeout_kills_the_command_and_its_children() {
    let fx = Fixture::new();
    for (i, mode) in [
        SandboxMode::WorkspaceWrite,
        SandboxMode::ReadOnly,
        SandboxMode::DangerFullAccess,
    ]
    .into_iter()
    .enumerate()
    {
        let marker = format!("313.{i}{}", std::process::id());
        let mut request = fx.request(mode, &format!("sleep {marker} & echo started; sleep 600"));
        request.timeout = Duration::from_millis(700);
        let started = Instant::now();
        let out = fx.run(request).await;
        assert!(out.timed_out, "{mode}: {}", shows(&out));
        assert_eq!(out.exit_code, 128 + libc::SIGKILL, "{mode}");
        assert_eq!(out.stdout, "started\n");
        // The command would run for 600 s: ending within seconds means the clock killed
        // it (the exact latency is a benchmark's figure, not this test's).
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{mode}: {:?}",
            started.elapsed()
        );
        assert!(
            wait_until_gone(&marker, Duration::from_secs(2)).await,
            "{mode}: the child `sleep {marker}` survived"
        );
    }
}

/// Whether no process has `sleep <marker>` as its command line (within `limit`).
async fn wait_until_gone(marker: &str, limit: Duration) -> bool {
    let needle = format!("sleep\0{marker}\0");
    let deadline = Instant::now() + limit;
    loop {
        let alive = fs::read_dir("/proc")
            .expect("/proc")
            .filter_map(|e| e.ok())
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n.parse::<u32>().is_ok())
            })
            .filter_map(|e| fs::read(e.path().join("cmdline")).ok())
            .any(|cmdline| cmdline == needle.as_bytes());
        if !alive {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_working_directory_outside_the_cell_is_refused() {
    let fx = Fixture::new();
    std::os::unix::fs::symlink(fx.outside.path(), fx.cell.data.join("elsewhere")).expect("link");
    // Paths are the sandbox's own: these lead out of everything it sees.
    for cwd in ["/workspace/../etc", "/etc", "/", "/proc/self", "relative"] {
        let mut request = fx.request(SandboxMode::WorkspaceWrite, "pwd");
        request.cwd = PathBuf::from(cwd);
        let err = fx
            .sandbox
            .run(&fx.cell, request, |_, _| {}, CancellationToken::new())
            .await
            .expect_err("refused");
        assert!(
            matches!(err, SandboxError::PathEscape { .. }),
            "{cwd}: {err}"
        );
        assert_eq!(err.kind(), ErrorKind::PermissionDenied);
    }
    // Places it sees, but no folder there: a link out of the workspace leads nowhere, and
    // the host's paths (the cell's own, the home) mean nothing inside.
    for cwd in [
        PathBuf::from("/workspace/elsewhere"),
        PathBuf::from("/tmp/nowhere"),
        fx.cell.data.clone(),
        fx.cell.data.join("../.."),
        fx.home.path().to_path_buf(),
    ] {
        let mut request = fx.request(SandboxMode::WorkspaceWrite, "pwd");
        request.cwd = cwd.clone();
        let err = fx
            .sandbox
            .run(&fx.cell, request, |_, _| {}, CancellationToken::new())
            .await
            .expect_err("refused");
        assert!(
            matches!(
                err,
                SandboxError::PathEscape { .. } | SandboxError::InvalidRequest { .. }
            ),
            "{}: {err}",
            cwd.display()
        );
    }
    let mut request = fx.request(SandboxMode::WorkspaceWrite, "pwd");
    request.cwd = PathBuf::from("/tmp/nowhere");
    let err = fx
        .sandbox
        .run(&fx.cell, request, |_, _| {}, CancellationToken::new())
        .await
        .expect_err("refused");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    assert!(
        err.to_string().contains("not a folder in the sandbox"),
        "{err}"
    );
}

// ---------------------------------------------------------------------------------------
// Landlock and seccomp are really there
// ---------------------------------------------------------------------------------------

/// Calls each syscall through ctypes and prints `name errno` (0 when it succeeded).
fn syscall_probe(probes: &[(&str, libc::c_long, &str)]) -> String {
    let mut script = String::from(
        "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\nlibc.syscall.restype = ctypes.c_long\n\
         def probe(name, nr, *args):\n    r = libc.syscall(nr, *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])\n    print(name, 0 if r >= 0 else ctypes.get_errno())\n",
    );
    for (name, nr, args) in probes {
        script.push_str(&format!("probe('{name}', {nr}{args})\n"));
    }
    format!("python3 -c \"{script}\"")
}

fn errnos(stdout: &str) -> BTreeMap<String, i32> {
    stdout
        .lines()
        .filter_map(|line| {
            let (name, errno) = line.split_once(' ')?;
            Some((name.to_owned(), errno.parse().ok()?))
        })
        .collect()
}

#[tokio::test]
async fn seccomp_denies_kernel_interfaces_with_eperm() {
    let fx = Fixture::new();
    // Each of these succeeds or fails differently without the filter: PTRACE_TRACEME and
    // unshare(CLONE_NEWUSER) succeed inside bubblewrap, keyctl answers EINVAL or ENOKEY,
    // bpf with a null attribute EFAULT or EINVAL.
    let probes: [(&str, libc::c_long, &str); 5] = [
        ("ptrace", libc::SYS_ptrace, ", 0, 0, 0, 0"),
        (
            "mount",
            libc::SYS_mount,
            ", b'none', b'/tmp', b'tmpfs', 0, 0",
        ),
        (
            "unshare",
            libc::SYS_unshare,
            &format!(", {}", libc::CLONE_NEWUSER),
        ),
        ("bpf", libc::SYS_bpf, ", 0, 0, 0"),
        ("keyctl", libc::SYS_keyctl, ", 0, 0, 0, 0, 0"),
    ];
    let script = syscall_probe(&probes);
    for mode in RESTRICTED {
        let out = fx.sh(mode, &script).await;
        let seen = errnos(&out.stdout);
        for (name, _, _) in &probes {
            assert_eq!(
                seen.get(*name),
                Some(&libc::EPERM),
                "{mode}: {name}: {}",
                shows(&out)
            );
        }
        let out = fx.sh(mode, "unshare -U true").await;
        assert!(failed(&out), "{mode}: {}", shows(&out));
        assert!(
            out.stderr.contains("Operation not permitted"),
            "{}",
            shows(&out)
        );
    }
    // Control, on the host: the harmless probes are not EPERM without the filter.
    let harmless = syscall_probe(&[
        ("ptrace", libc::SYS_ptrace, ", 0, 0, 0, 0"),
        ("keyctl", libc::SYS_keyctl, ", 0, 0, 0, 0, 0"),
    ]);
    let out = fx.sh(SandboxMode::DangerFullAccess, &harmless).await;
    let seen = errnos(&out.stdout);
    assert_eq!(seen.len(), 2, "{}", shows(&out));
    assert!(
        seen.values().all(|&errno| errno != libc::EPERM),
        "{}",
        shows(&out)
    );
}

#[tokio::test]
async fn landlock_blocks_writes_outside_the_workspace_without_bubblewrap() {
    let dir = tempfile::tempdir().expect("tempdir");
    let workspace = dir.path().join("workspace");
    let outside = dir.path().join("outside");
    fs::create_dir_all(&workspace).expect("workspace");
    fs::create_dir_all(&outside).expect("outside");
    let script = format!(
        "echo in > '{ws}/inside' && echo out > '{out}/escape'",
        ws = workspace.display(),
        out = outside.display()
    );
    let mut command = tokio::process::Command::new(HELPER);
    for ro in ["/usr", "/bin", "/lib", "/lib64", "/etc"] {
        command.arg("--ro").arg(ro);
    }
    command
        .arg("--rw")
        .arg(&workspace)
        .args(["--dev", "/dev", "--", "/bin/sh", "-c"])
        .arg(&script);
    let out = command.output().await.expect("helper runs");
    assert!(!out.status.success(), "{out:?}");
    assert_eq!(
        fs::read_to_string(workspace.join("inside")).expect("inside"),
        "in\n"
    );
    assert!(
        !outside.join("escape").exists(),
        "Landlock let the write through"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("Permission denied"),
        "{out:?}"
    );

    // Control: the same script without the helper writes both files.
    let plain = tokio::process::Command::new("/bin/sh")
        .args(["-c", &script])
        .output()
        .await
        .expect("sh runs");
    assert!(plain.status.success(), "{plain:?}");
    assert!(outside.join("escape").exists());
}

// ---------------------------------------------------------------------------------------
// What must work
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn ordinary_commands_work_in_the_workspace() {
    let fx = Fixture::new();
    let out = fx
        .sh(SandboxMode::WorkspaceWrite, "echo hi > note && cat note")
        .await;
    assert_eq!(
        (out.exit_code, out.stdout.as_str()),
        (0, "hi\n"),
        "{}",
        shows(&out)
    );
    assert_eq!(
        fs::read_to_string(fx.cell.data.join("note")).expect("note"),
        "hi\n"
    );
    for mode in RESTRICTED {
        for (script, expected) in [
            ("true", ""),
            ("echo hello", "hello\n"),
            ("printf 'a\\nb\\nc\\n' | wc -l", "3\n"),
            ("cat note", "hi\n"),
            ("cat /app/README.md", "app file"),
        ] {
            let out = fx.sh(mode, script).await;
            assert_eq!(out.exit_code, 0, "{mode}: `{script}`: {}", shows(&out));
            assert_eq!(out.stdout, expected, "{mode}: `{script}`");
        }
        let out = fx.sh(mode, "exit 7").await;
        assert_eq!(out.exit_code, 7);
    }
}

#[tokio::test]
async fn home_and_tmpdir_point_inside_the_cell() {
    let fx = Fixture::new();
    let script = "echo \"$HOME\"; echo \"$TMPDIR\"; pwd; echo tmp > \"$TMPDIR/probe\"; echo tmp > /tmp/probe; env | cut -d= -f1 | sort | tr '\\n' ' '";
    let out = fx.sh(SandboxMode::WorkspaceWrite, script).await;
    assert_eq!(out.exit_code, 0, "{}", shows(&out));
    let lines: Vec<&str> = out.stdout.lines().collect();
    // The cell is at fixed places: the server's layout never shows (issue 11 item 7).
    assert_eq!(lines[0], "/workspace");
    assert_eq!(lines[1], "/tmp");
    assert_eq!(lines[2], "/workspace");
    assert!(!out.stdout.contains(&*fx.home.path().to_string_lossy()));
    // TMPDIR and /tmp are the cell's tmp.
    assert_eq!(
        fs::read_to_string(fx.cell.tmp.join("probe")).expect("probe"),
        "tmp\n"
    );
    let names: Vec<&str> = lines[3].split_whitespace().collect();
    for name in &names {
        assert!(
            [
                "HOME", "TMPDIR", "PATH", "LANG", "PWD", "SHLVL", "_", "OLDPWD"
            ]
            .contains(name)
                || name.starts_with("XDG_"),
            "unexpected variable {name} in {names:?}"
        );
    }
}

#[tokio::test]
async fn output_past_the_cap_is_truncated_and_noted() {
    let fx = Fixture::with(|s| s.max_output_bytes = 1000);
    let mut streamed = 0;
    let out = fx
        .sandbox
        .run(
            &fx.cell,
            fx.request(
                SandboxMode::WorkspaceWrite,
                "head -c 50000 /dev/zero | tr '\\0' a; echo done >&2",
            ),
            |stream, text| {
                if stream == OutputStream::Stdout {
                    streamed += text.len();
                }
            },
            CancellationToken::new(),
        )
        .await
        .expect("runs");
    assert_eq!(out.exit_code, 0);
    assert!(out.truncated);
    assert_eq!(out.stdout.len(), 1000);
    assert_eq!(streamed, 1000);
    assert_eq!(out.stderr, "done\n");
}

#[tokio::test]
async fn cancel_kills_promptly() {
    let fx = Fixture::new();
    for mode in [SandboxMode::WorkspaceWrite, SandboxMode::DangerFullAccess] {
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        let cancelled_at = Arc::new(std::sync::Mutex::new(None::<Instant>));
        let stamp = cancelled_at.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(400)).await;
            *stamp.lock().expect("lock") = Some(Instant::now());
            trigger.cancel();
        });
        let out = fx
            .sandbox
            .run(
                &fx.cell,
                fx.request(mode, "sleep 100 & sleep 100"),
                |_, _| {},
                cancel,
            )
            .await
            .expect("runs");
        let at = cancelled_at.lock().expect("lock").expect("cancelled");
        assert!(out.cancelled, "{mode}: {}", shows(&out));
        assert_eq!(out.exit_code, 128 + libc::SIGKILL);
        // The commands would sleep for 100 s: ending within seconds means cancelled.
        assert!(
            at.elapsed() < Duration::from_secs(10),
            "{mode}: {:?} after cancel",
            at.elapsed()
        );
    }
}

#[tokio::test]
async fn removing_a_cell_kills_its_processes() {
    let fx = Arc::new(Fixture::new());
    let runner = {
        let fx = fx.clone();
        tokio::spawn(async move { fx.sh(SandboxMode::WorkspaceWrite, "sleep 100").await })
    };
    wait_for_record(&fx.cell).await;
    fx.sandbox.remove_cell(&fx.cell).await.expect("remove");
    let out = runner.await.expect("joins");
    assert!(out.cancelled, "{}", shows(&out));
    assert!(!fx.cell.root.exists());
}

async fn wait_for_record(cell: &CellPaths) -> PathBuf {
    let dir = cell.root.parent().expect("sandbox root").join(RUNNING_DIR);
    for _ in 0..500 {
        if let Some(entry) = fs::read_dir(&dir)
            .ok()
            .and_then(|mut d| d.next())
            .and_then(|e| e.ok())
        {
            return entry.path();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no process record appeared in {}", dir.display());
}

#[tokio::test]
async fn leftovers_of_a_previous_server_are_killed() {
    let fx = Arc::new(Fixture::new());
    let sandbox_root = fx.cell.root.parent().expect("sandbox root").to_path_buf();
    let runner = {
        let fx = fx.clone();
        tokio::spawn(async move { fx.sh(SandboxMode::WorkspaceWrite, "sleep 100").await })
    };
    let record = wait_for_record(&fx.cell).await;
    let text = fs::read_to_string(&record).expect("record");
    let pgid: i32 = text
        .split_whitespace()
        .next()
        .and_then(|p| p.parse().ok())
        .expect("pgid");

    // A restarted server finds the record and kills the group it names.
    let report = Sandbox::kill_leftovers(&sandbox_root)
        .await
        .expect("kill_leftovers");
    assert_eq!(report.killed.len(), 1, "{report:?}");
    let out = tokio::time::timeout(Duration::from_secs(2), runner)
        .await
        .expect("the run ended")
        .expect("joins");
    assert_eq!(out.exit_code, 128 + libc::SIGKILL, "{}", shows(&out));
    assert!(!out.cancelled && !out.timed_out);
    assert!(!Path::new(&format!("/proc/{pgid}")).exists());
    assert_eq!(
        fs::read_dir(sandbox_root.join(RUNNING_DIR))
            .expect("dir")
            .count(),
        0
    );
}

#[tokio::test]
async fn missing_bubblewrap_is_a_failed_precondition_naming_the_package() {
    let fx = Fixture::with(|s| s.bwrap = Some(PathBuf::from("/nonexistent/bwrap")));
    for mode in RESTRICTED {
        let err = fx
            .sandbox
            .run(
                &fx.cell,
                fx.request(mode, "true"),
                |_, _| {},
                CancellationToken::new(),
            )
            .await
            .expect_err("refused");
        assert_eq!(err.kind(), ErrorKind::FailedPrecondition);
        assert_eq!(err.reason(), "BUBBLEWRAP_MISSING");
        assert!(
            err.to_string().contains("apt-get install bubblewrap"),
            "{err}"
        );
    }
    assert!(!fx.sandbox.capabilities().bubblewrap);
    // The host mode needs no bubblewrap.
    let out = fx.sh(SandboxMode::DangerFullAccess, "echo host").await;
    assert_eq!(out.stdout, "host\n");
}

#[tokio::test]
async fn capabilities_are_detected_from_the_kernel() {
    let fx = Fixture::new();
    let caps = fx.sandbox.capabilities();
    assert!(caps.bubblewrap, "{caps:?}");
    assert!(caps.landlock && caps.landlock_abi >= 1, "{caps:?}");
    assert!(caps.seccomp, "{caps:?}");
}

// ---------------------------------------------------------------------------------------
// The Bash tool, end to end with its events
// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn the_bash_tool_runs_commands_and_records_their_events() {
    let fx = Fixture::new();
    let home = fx.home.path();
    let store = BundleStore::open(home.join("bundles")).expect("bundle store");
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bundles/demo");
    let bundle = store
        .build_and_install(&demo, &InstallOptions::default())
        .expect("install demo");
    let sessions =
        SessionStore::open(home.join("sessions"), home.join("quarantine")).expect("session store");
    let record = SessionRecord {
        id: Uuid::now_v7(),
        bundle_reference: "demo".into(),
        bundle: BundlePin {
            namespace: bundle.id.namespace.clone(),
            name: bundle.id.name.clone(),
            version: bundle.id.version.to_string(),
            digest: bundle.id.digest.clone(),
        },
        agent_id: "guide".into(),
        model: ModelSpec::new("replay", "main"),
        sandbox_mode: SandboxMode::WorkspaceWrite,
        approval_policy: ApprovalPolicy::OnRequest,
        created_at_ms: 1,
        metadata: BTreeMap::new(),
        token_budget: None,
        forked: None,
        parent: None,
    };
    let session = sessions.create(record).expect("session");
    let cell = fx
        .sandbox
        .prepare_cell(
            &home.join("sandbox"),
            session.id(),
            AppSource::from(&*bundle),
        )
        .expect("cell");
    assert!(cell.app.join("odyssey.bundle.yaml").is_file());
    fs::create_dir_all(cell.data.join("sub")).expect("sub");
    let turn_id = Uuid::now_v7();
    let ctx = ToolContext {
        session_id: session.id(),
        turn_id,
        call_id: "call-1".into(),
        parent_session_ids: Vec::new(),
        bundle: bundle.clone(),
        view: ProcessView::new(SandboxMode::WorkspaceWrite, &cell),
        cell: cell.clone(),
        cwd: "/workspace".into(),
        mode: SandboxMode::WorkspaceWrite,
        sandbox_user: fx.sandbox.user(),
        mounts_read: Vec::new(),
        mounts_write: Vec::new(),
        network: None,
        env: Default::default(),
        memory_mb: None,
        events: EventSink::new(session.clone(), Some(turn_id)),
        cancel: CancellationToken::new(),
        person: Default::default(),
        skills: Arc::new(SkillCatalog::new(&bundle, &[])),
    };
    let sandbox = Arc::new(Sandbox::new(fx.sandbox.settings().clone()));
    let bash = Bash::new(sandbox);
    let command = "pwd; echo oops >&2; exit 3";
    let args = json!({"command": command, "cwd": "sub"});
    assert_eq!(
        bash.permission_subject(&ctx, &args).as_deref(),
        Some(command)
    );
    assert!(!bash.read_only());

    let out = bash.call(ctx.clone(), args).await;
    assert!(out.is_error, "{out:?}");
    assert!(out.content.starts_with("exit code: 3"), "{}", out.content);
    assert!(
        out.content.contains("--- stdout ---\n/workspace/sub\n"),
        "{}",
        out.content
    );
    assert!(out.content.contains("--- stderr ---\noops\n"));

    let ok = bash
        .call(ctx.clone(), json!({"command": "echo fine"}))
        .await;
    assert_eq!(
        (ok.is_error, ok.content.as_str()),
        (false, "exit code: 0\n--- stdout ---\nfine\n")
    );

    let events = collect_events(&session, 2).await;
    let payloads: Vec<&EventPayload> = events.iter().map(|e| &e.payload).collect();
    let Some(EventPayload::ExecCommandBegin {
        exec_id,
        argv,
        cwd,
        call_id,
    }) = payloads
        .iter()
        .find(|p| matches!(p, EventPayload::ExecCommandBegin { .. }))
    else {
        panic!("no begin event in {payloads:?}");
    };
    assert_eq!(
        argv,
        &vec!["/bin/bash".to_owned(), "-c".to_owned(), command.to_owned()]
    );
    assert_eq!(cwd, "/workspace/sub");
    assert_eq!(call_id.as_deref(), Some("call-1"));
    let deltas: String = payloads
        .iter()
        .filter_map(|p| match p {
            EventPayload::ExecCommandOutputDelta {
                exec_id: id,
                stream: OutputStream::Stderr,
                text,
            } if id == exec_id => Some(text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deltas, "oops\n");
    let end = payloads
        .iter()
        .find_map(|p| match p {
            EventPayload::ExecCommandEnd {
                exec_id: id,
                exit_code,
                timed_out,
                ..
            } if id == exec_id => Some((*exit_code, *timed_out)),
            _ => None,
        })
        .expect("end event");
    assert_eq!(end, (3, false));

    // Refusals come back to the model as error results, before anything runs.
    for (bad, expected) in [
        (
            json!({"command": "ls", "cwd": "../.."}),
            "outside the workspace",
        ),
        (
            json!({"command": "ls", "user": "root"}),
            "unknown field `user`",
        ),
        (json!({"cmd": "ls"}), "unknown field `cmd`"),
        (json!({}), "missing field `command`"),
    ] {
        let out = bash.call(ctx.clone(), bad.clone()).await;
        assert!(
            out.is_error && out.content.contains(expected),
            "{bad}: {}",
            out.content
        );
    }

    // Issue 11, "also fix": output written a byte at a time is recorded in chunks, so the
    // log grows by at most about twice the output (300 KB once made a 76.5 MB log).
    let out = bash
        .call(
            ctx.clone(),
            json!({"command": "head -c 300000 /dev/zero | tr '\\0' x | dd bs=1 status=none"}),
        )
        .await;
    assert!(!out.is_error, "{}", out.content);
    let events = collect_events(&session, 3).await;
    let Some(last_begin) = events
        .iter()
        .rposition(|e| matches!(e.payload, EventPayload::ExecCommandBegin { .. }))
    else {
        panic!("no begin event");
    };
    let run = &events[last_begin..];
    let printed: usize = run
        .iter()
        .filter_map(|e| match &e.payload {
            EventPayload::ExecCommandOutputDelta { text, .. } => Some(text.len()),
            _ => None,
        })
        .sum();
    let logged: usize = run
        .iter()
        .map(|e| serde_json::to_string(&**e).expect("json").len() + 1)
        .sum();
    assert_eq!(printed, 300_000);
    assert!(
        logged <= 2 * printed + 64 * 1024,
        "{logged} bytes of log for {printed} bytes of output in {} events",
        run.len()
    );
}

/// The session's events up to the `ends`-th exec-command end.
async fn collect_events(
    session: &Arc<odyssey_runtime::session::SessionHandle>,
    ends: usize,
) -> Vec<Arc<odyssey_runtime::events::Event>> {
    let mut subscription = session.subscribe(0);
    let mut events = Vec::new();
    while events
        .iter()
        .filter(|e: &&Arc<odyssey_runtime::events::Event>| {
            matches!(e.payload, EventPayload::ExecCommandEnd { .. })
        })
        .count()
        < ends
    {
        let batch = tokio::time::timeout(Duration::from_secs(5), subscription.next_batch())
            .await
            .expect("events arrive")
            .expect("read")
            .expect("session alive");
        events.extend(batch);
    }
    events
}

// ---------------------------------------------------------------------------------------
// Limits per session (issue 11, "also fix": memory and processes per session)
// ---------------------------------------------------------------------------------------

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// As root on Linux the server makes cgroups; the tests below must not quietly test the
/// fallback instead.
fn expect_cgroups(fx: &Fixture) {
    let limits = fx.sandbox.capabilities().session_limits;
    if is_root() {
        assert!(
            limits.pids_cgroup.is_some() && limits.memory_cgroup.is_some(),
            "{limits:?}"
        );
    }
}

/// Forks children that wait, until fork fails; prints how many it made.
const FORK_COUNTER: &str = "python3 -c '
import os, time
n = 0
try:
    while n < 10000:
        if os.fork() == 0:
            time.sleep(8)
            os._exit(0)
        n += 1
except OSError as e:
    print(n, e.errno)
time.sleep(8)
'";

/// Issue 11 (also fix): a fork bomb spread over commands of session A stays within A's
/// process limit, and session B runs Bash meanwhile. Before, each command had the whole
/// limit to itself (`RLIMIT_NPROC`), so two commands made twice as many processes.
#[tokio::test]
async fn a_fork_bomb_in_one_session_leaves_another_able_to_run_bash() {
    for cgroups in [true, false] {
        let fx = Arc::new(Fixture::with(|s| s.cgroups = cgroups));
        if cgroups {
            expect_cgroups(&fx);
        }
        let bombs: Vec<_> = (0..2)
            .map(|_| {
                let fx = fx.clone();
                tokio::spawn(async move {
                    let mut request = fx.request(SandboxMode::WorkspaceWrite, FORK_COUNTER);
                    request.timeout = Duration::from_secs(15);
                    fx.run(request).await
                })
            })
            .collect();
        let classic = {
            let fx = fx.clone();
            tokio::spawn(async move {
                let mut request = fx.request(SandboxMode::WorkspaceWrite, ":(){ :|:& };:");
                request.timeout = Duration::from_secs(4);
                fx.run(request).await
            })
        };
        tokio::time::sleep(Duration::from_secs(2)).await;
        let other = fx.another_cell();
        let out = fx
            .run_in(
                &other,
                fx.request(SandboxMode::WorkspaceWrite, "echo alive"),
            )
            .await;
        assert_eq!(out.stdout, "alive\n", "cgroups {cgroups}: {}", shows(&out));

        let mut forked = 0;
        for bomb in bombs {
            let out = bomb.await.expect("joins");
            // A command that could not even start its shell made nothing.
            forked += out
                .stdout
                .split_whitespace()
                .next()
                .and_then(|n| n.parse::<u64>().ok())
                .unwrap_or(0);
        }
        assert!(
            forked < TEST_NPROC,
            "cgroups {cgroups}: session A made {forked} processes over a limit of {TEST_NPROC}"
        );
        classic.await.expect("joins");
        let out = fx.sh(SandboxMode::WorkspaceWrite, "echo alive").await;
        assert_eq!(out.stdout, "alive\n", "cgroups {cgroups}: {}", shows(&out));
    }
}

/// Issue 11 (also fix): `memory_mb` holds for the session, not for each process. Four
/// processes of 60 MiB each, every one under a 128 MiB limit, together over it: before,
/// all four held their memory; now the kernel kills what goes over, and session B runs
/// Bash meanwhile.
#[tokio::test]
async fn a_memory_hog_in_one_session_is_held_to_the_session_limit() {
    let fx = Arc::new(Fixture::new());
    expect_cgroups(&fx);
    if fx
        .sandbox
        .capabilities()
        .session_limits
        .memory_cgroup
        .is_none()
    {
        return;
    }
    let hog = "python3 -c 'import time; b = b\"x\" * (60 << 20); print(\"held\", flush=True); time.sleep(6)'";
    let script = format!(
        "pids=(); for i in 1 2 3 4; do {hog} & pids+=($!); sleep 0.3; done; \
         for p in \"${{pids[@]}}\"; do wait $p; echo \"exit $?\"; done"
    );
    let hogs = {
        let fx = fx.clone();
        tokio::spawn(async move {
            let mut request = fx.request(SandboxMode::WorkspaceWrite, &script);
            request.memory_mb = Some(128);
            request.timeout = Duration::from_secs(30);
            fx.run(request).await
        })
    };
    tokio::time::sleep(Duration::from_secs(2)).await;
    let other = fx.another_cell();
    let out = fx
        .run_in(
            &other,
            fx.request(SandboxMode::WorkspaceWrite, "echo alive"),
        )
        .await;
    assert_eq!(out.stdout, "alive\n", "{}", shows(&out));

    let out = hogs.await.expect("joins");
    let survived = out.stdout.matches("exit 0").count();
    let killed = out.stdout.matches("exit 137").count();
    assert!(
        survived < 4 && (killed > 0 || out.exit_code == 128 + libc::SIGKILL),
        "all four hogs held their memory: {}",
        shows(&out)
    );
}

/// Issue 11 (also fix): a session's group exists while it runs and goes with its cell.
#[tokio::test]
async fn a_sessions_cgroup_holds_its_processes_and_goes_with_its_cell() {
    let fx = Arc::new(Fixture::new());
    expect_cgroups(&fx);
    let session = fx
        .cell
        .root
        .file_name()
        .and_then(|n| n.to_str())
        .expect("session")
        .to_owned();
    let out = fx
        .sh(SandboxMode::WorkspaceWrite, "cat /proc/self/cgroup")
        .await;
    let groups = fx.sandbox.session_cgroups(&fx.cell);
    if is_root() {
        // One group per controller's hierarchy (here v1 memory and pids), each holding
        // the command.
        assert!(!groups.is_empty());
        let joined = out
            .stdout
            .lines()
            .filter(|l| l.ends_with(&format!("/{session}")))
            .count();
        assert!(joined >= groups.len(), "{}", shows(&out));
    }
    let runner = {
        let fx = fx.clone();
        tokio::spawn(async move { fx.sh(SandboxMode::WorkspaceWrite, "sleep 100").await })
    };
    wait_for_record(&fx.cell).await;
    fx.sandbox.remove_cell(&fx.cell).await.expect("remove");
    assert!(runner.await.expect("joins").cancelled);
    for group in &groups {
        assert!(!group.exists(), "{} was left", group.display());
        // The server's folder of groups went with its last session.
        assert!(!group.parent().expect("parent").exists());
    }
    assert!(fx.sandbox.session_cgroups(&fx.cell).is_empty());
}

/// Issue 11 (also fix): the groups a previous server left are removed at startup, with
/// whatever still ran in them.
#[tokio::test]
async fn a_previous_servers_cgroups_are_removed_at_startup() {
    let fx = Arc::new(Fixture::new());
    expect_cgroups(&fx);
    let runner = {
        let fx = fx.clone();
        tokio::spawn(async move { fx.sh(SandboxMode::WorkspaceWrite, "sleep 100").await })
    };
    wait_for_record(&fx.cell).await;
    let groups = fx.sandbox.session_cgroups(&fx.cell);
    let restarted = Sandbox::new(fx.sandbox.settings().clone());
    let sandbox_root = fx.cell.root.parent().expect("sandbox root");
    let removed = restarted
        .remove_stale_cgroups(sandbox_root)
        .await
        .expect("remove stale");
    assert_eq!(removed, usize::from(!groups.is_empty()));
    for group in &groups {
        assert!(!group.exists(), "{} was left", group.display());
    }
    if !groups.is_empty() {
        let out = tokio::time::timeout(Duration::from_secs(5), runner)
            .await
            .expect("the run ended")
            .expect("joins");
        assert_eq!(out.exit_code, 128 + libc::SIGKILL, "{}", shows(&out));
    }
}

/// Issue 11 (also fix): without a cgroup, a session runs at most
/// `commands_per_session` commands at once, each with its share of the processes, and
/// `GetServerInfo`'s capabilities say so.
#[tokio::test]
async fn without_cgroups_a_session_runs_a_bounded_number_of_commands() {
    let fx = Arc::new(Fixture::with(|s| {
        s.cgroups = false;
        s.limits.commands_per_session = 2;
    }));
    let limits = fx.sandbox.capabilities().session_limits;
    assert_eq!(limits.pids_cgroup, None);
    assert_eq!(limits.memory_cgroup, None);
    assert_eq!(limits.max_concurrent_commands, Some(2));
    let notes = fx.sandbox.capabilities().notes.join("\n");
    assert!(
        notes.contains("2 commands at once, each with 24 processes"),
        "{notes}"
    );
    assert!(notes.contains("RLIMIT_AS"), "{notes}");

    let running: Vec<_> = (0..2)
        .map(|_| {
            let fx = fx.clone();
            tokio::spawn(async move { fx.sh(SandboxMode::WorkspaceWrite, "sleep 3").await })
        })
        .collect();
    let records = fx.cell.root.parent().expect("root").join(RUNNING_DIR);
    for _ in 0..500 {
        if fs::read_dir(&records).map(|d| d.count()).unwrap_or(0) >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let err = fx
        .sandbox
        .run(
            &fx.cell,
            fx.request(SandboxMode::WorkspaceWrite, "true"),
            |_, _| {},
            CancellationToken::new(),
        )
        .await
        .expect_err("a third command is refused");
    assert_eq!(err.kind(), ErrorKind::ResourceExhausted);
    assert_eq!(err.reason(), "SESSION_COMMAND_LIMIT");
    // Another session is not affected.
    let other = fx.another_cell();
    let out = fx
        .run_in(
            &other,
            fx.request(SandboxMode::WorkspaceWrite, "echo alive"),
        )
        .await;
    assert_eq!(out.stdout, "alive\n", "{}", shows(&out));
    for run in running {
        assert_eq!(run.await.expect("joins").exit_code, 0);
    }
}

/// Cells in a workspace root apart from the server's home (several servers sharing one):
/// a command may mount neither the home (its sessions, bundles, keys) nor the workspace
/// root (the other sessions' workspaces), and the records of its process group are kept
/// in the home, not beside the shared cells.
#[tokio::test]
async fn with_cells_in_a_workspace_root_mounts_reach_neither_the_home_nor_the_root() {
    let home = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("home");
    let root = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("workspace root");
    let outside = tempfile::tempdir().expect("outside");
    fs::write(home.path().join("key.txt"), "home-secret").expect("secret");
    fs::write(outside.path().join("host.txt"), "host-only").expect("host file");
    fs::create_dir_all(home.path().join("sandbox")).expect("own sandbox folder");
    let bundle = outside.path().join("bundle");
    fs::create_dir_all(&bundle).expect("bundle");
    let sandbox = Sandbox::new(SandboxSettings {
        helper: Some(PathBuf::from(HELPER)),
        default_timeout: Duration::from_secs(30),
        server_home: Some(home.path().to_path_buf()),
        ..SandboxSettings::default()
    });
    let cell = sandbox
        .prepare_cell(
            root.path(),
            Uuid::new_v4(),
            AppSource {
                root: &bundle,
                digest: "sha256:test",
            },
        )
        .expect("prepare cell");
    let request = |mount: &Path| ExecRequest {
        exec_id: format!("t-{}", Uuid::new_v4()),
        argv: vec![
            "/bin/cat".into(),
            mount.join("host.txt").display().to_string(),
        ],
        cwd: PathBuf::from("/workspace"),
        mode: SandboxMode::WorkspaceWrite,
        env: BTreeMap::new(),
        network: None,
        mounts_read: vec![mount.to_path_buf()],
        mounts_write: Vec::new(),
        timeout: Duration::ZERO,
        memory_mb: None,
        cpu_seconds: None,
    };
    for refused in [home.path(), root.path(), &home.path().join("sandbox")] {
        let err = sandbox
            .run(&cell, request(refused), |_, _| {}, CancellationToken::new())
            .await
            .expect_err("a mount of the home or the workspace root is refused");
        assert!(
            matches!(err, SandboxError::PathEscape { .. }),
            "{}: {err}",
            refused.display()
        );
    }
    let mut seen_records = false;
    let sandbox = Arc::new(sandbox);
    let running = {
        let sandbox = sandbox.clone();
        let cell = cell.clone();
        let mut sleeping = request(outside.path());
        sleeping.argv = vec!["/bin/sleep".into(), "5".into()];
        let cancel = CancellationToken::new();
        let stop = cancel.clone();
        (
            tokio::spawn(async move { sandbox.run(&cell, sleeping, |_, _| {}, cancel).await }),
            stop,
        )
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if fs::read_dir(home.path().join("sandbox").join(RUNNING_DIR))
            .is_ok_and(|mut entries| entries.next().is_some())
        {
            seen_records = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        !root.path().join(RUNNING_DIR).exists(),
        "no record beside the shared cells"
    );
    running.1.cancel();
    let _ = running.0.await;
    assert!(seen_records, "the running group is recorded in the home");
    let outcome = sandbox
        .run(
            &cell,
            request(outside.path()),
            |_, _| {},
            CancellationToken::new(),
        )
        .await
        .expect("a folder apart from both may be mounted");
    assert_eq!(outcome.exit_code, 0, "{outcome:?}");
    assert_eq!(outcome.stdout, "host-only");
}
