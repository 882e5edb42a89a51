//! Issue 23, in a real terminal: the `odyssey` binary runs in a tmux pseudo-terminal
//! against a real server, and a scripted model (the `replay` provider) puts CSI, OSC (the
//! title, OSC 52 clipboard), a `\r` overwrite and bidi overrides in its answer, in a Bash
//! command that asks for approval, and in a file name that LS lists; the bundle's
//! description and the agent's carry them too. The captured screen must show the escapes
//! and the whole command, the terminal's title must be unchanged, and the clipboard
//! (tmux's paste buffers, with `set-clipboard on`) must stay empty.
//!
//! tmux is needed (`scripts/test` installs it).

// A test step that fails is the test failing: unwrap and expect say where.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use odyssey_client::{OdysseyClient, SessionOptions, pack_project};
use odyssey_server::config::ServeArgs;
use odyssey_server::serve::start;
use serde_json::json;

const ODYSSEY: &str = env!("CARGO_BIN_EXE_odyssey");
/// How long the screen may take to show what a step waits for.
const BOUND: Duration = Duration::from_secs(60);

/// What a hostile model writes: clear the screen, recolour, set the title, write the
/// clipboard (`rm -rf ~`), overwrite with `\r`, reverse with a bidi override.
const HOSTILE: &str = "before \x1b[2J\x1b[31mRED\x1b]0;PWNED-TITLE\x07 \x1b]52;c;cm0gLXJmIH4=\x07 hidden\rSHOWN \u{202e}txt.exe\u{202c} after";
const HOSTILE_SHOWN: &str = "before \\x1b[2J\\x1b[31mRED\\x1b]0;PWNED-TITLE\\x07 \\x1b]52;c;cm0gLXJmIH4=\\x07 hidden\\rSHOWN \\u202etxt.exe\\u202c after";
/// The command of the issue: drawn as `ls -la` on a terminal.
const COMMAND: &str = "rm -rf ~/important \r\x1b[2Kls -la";
const COMMAND_SHOWN: &str = "rm -rf ~/important \\r\\x1b[2Kls -la";
/// A file the model writes, then lists.
const FILE: &str = "evil\x1b]0;PWNED-TITLE\x07\u{202e}dm.txt";
const FILE_SHOWN: &str = "evil\\x1b]0;PWNED-TITLE\\x07\\u202edm.txt";

/// A tmux server of the test's own (its own socket and configuration).
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    fn start(dir: &Path, script: &Path) -> Self {
        let conf = dir.join("tmux.conf");
        std::fs::write(
            &conf,
            "set -g set-clipboard on\nset -g remain-on-exit on\nset -g history-limit 10000\n",
        )
        .expect("tmux.conf");
        let tmux = Self {
            socket: dir.join("tmux.sock"),
        };
        let conf = conf.to_string_lossy().into_owned();
        let script = script.to_string_lossy().into_owned();
        tmux.run(&[
            "-f",
            &conf,
            "new-session",
            "-d",
            "-s",
            "odyssey",
            "-x",
            "200",
            "-y",
            "50",
            "sh",
            &script,
        ]);
        tmux
    }

    fn run(&self, args: &[&str]) -> String {
        let output = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs (scripts/test installs it)");
        assert!(
            output.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Everything the window showed, its history included, wrapped lines joined.
    fn screen(&self, window: &str) -> String {
        self.run(&["capture-pane", "-p", "-J", "-S", "-", "-t", window])
    }

    fn title(&self, window: &str) -> String {
        self.run(&["display-message", "-p", "-t", window, "#{pane_title}"])
    }

    /// Waits until the window's screen holds `text`; returns the screen.
    fn wait_for(&self, window: &str, text: &str) -> String {
        let deadline = Instant::now() + BOUND;
        loop {
            let screen = self.screen(window);
            if screen.contains(text) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "no {text:?} on the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

/// A bundle whose description, agent description and model carry the hostile text.
fn project(dir: &Path) {
    let write = |relative: &str, text: &str| {
        let path = dir.join(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    };
    write(
        "odyssey.bundle.yaml",
        "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: hostile\n  version: 0.1.0\n  readme: README.md\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n  tools:\n    - { name: Bash, source: builtin }\n    - { name: Write, source: builtin }\n    - { name: LS, source: builtin }\n  sandbox:\n    mode: workspace_write\n",
    );
    write("README.md", &format!("Bundle {HOSTILE}\n"));
    write(
        "agents/main/agent.yaml",
        "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\n  version: 0.1.0\n  description: \"agent \\e]0;PWNED-TITLE\\a \\e[2J \\u202Eevil\"\nspec:\n  kind: prompt\n  prompt: Be hostile.\n  model:\n    provider: replay\n    name: main\n  tools:\n    allow: [Write, LS]\n    ask: [Bash]\n",
    );
    let first = json!({
        "text": format!("{HOSTILE}\n"),
        "tool_calls": [
            { "id": "w", "name": "Write", "arguments": { "path": FILE, "content": "x" } },
            { "id": "l", "name": "LS", "arguments": {} },
            { "id": "b", "name": "Bash", "arguments": { "command": COMMAND } },
        ],
    });
    let last = json!({ "text": format!("end {HOSTILE}\n") });
    write("cassettes/main.jsonl", &format!("{first}\n{last}\n"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hostile_model_cannot_drive_the_terminal_or_hide_a_command() {
    let dir = tempfile::tempdir().expect("dir");
    let home = dir.path().join("home");
    let server = start(&ServeArgs::new(
        SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        home,
    ))
    .await
    .expect("server starts");
    let url = server.url();
    let project_dir = dir.path().join("project");
    project(&project_dir);
    let client = OdysseyClient::connect(url.clone(), None)
        .await
        .expect("connect");
    client
        .build_bundle(pack_project(&project_dir).expect("pack"), "", false)
        .await
        .expect("bundle installs");
    let session = client
        .create_session("hostile", SessionOptions::default())
        .await
        .expect("session");

    let script = dir.path().join("run.sh");
    std::fs::write(
        &script,
        format!(
            "'{ODYSSEY}' --server {url} bundle inspect hostile\n\
             '{ODYSSEY}' --server {url} agents hostile\n\
             '{ODYSSEY}' --server {url} run {session} go\n\
             echo \"run exited $?\"\n",
            session = session.id
        ),
    )
    .expect("script");
    let tmux = Tmux::start(dir.path(), &script);
    let title = tmux.title("odyssey:0");

    // The approval prompt: the whole command, escaped, flagged.
    let prompt = tmux.wait_for("odyssey:0", "[y] allow once");
    assert!(
        prompt.contains(&format!(
            "\n    {COMMAND_SHOWN}\n    ! contains control characters"
        )),
        "{prompt}"
    );
    // The answer so far, the bundle's and the agent's descriptions, the file LS listed.
    assert!(prompt.contains(&format!("\n{HOSTILE_SHOWN}\n")), "{prompt}");
    assert!(
        prompt.contains(&format!("description  Bundle {HOSTILE_SHOWN}")),
        "{prompt}"
    );
    assert!(
        prompt.contains("agent \\x1b]0;PWNED-TITLE\\x07 \\x1b[2J \\u202eevil"),
        "{prompt}"
    );
    assert!(prompt.contains(FILE_SHOWN), "{prompt}");

    // From another window: the list, the whole call, and a deny.
    let pending = client
        .list_approvals(Some(&session.id))
        .await
        .expect("approvals");
    let request = &pending.first().expect("one request").request_id;
    tmux.run(&[
        "new-window",
        "-t",
        "odyssey:1",
        &format!(
            "'{ODYSSEY}' --server {url} approvals; '{ODYSSEY}' --server {url} approvals --full; \
             '{ODYSSEY}' --server {url} deny {request}; echo listed"
        ),
    ]);
    let listed = tmux.wait_for("odyssey:1", "\nlisted");
    assert!(
        listed.contains(&format!("{COMMAND_SHOWN} [contains control characters]")),
        "{listed}"
    );
    assert!(
        listed.contains(&format!(
            "\n    {COMMAND_SHOWN}\n    ! contains control characters"
        )),
        "--full: {listed}"
    );
    assert!(
        listed.contains(&format!(
            "Denied: Bash (request {request}, session {})\n    {COMMAND_SHOWN}\n    ! contains control characters",
            session.id
        )),
        "the deny confirmation: {listed}"
    );

    // Answer the prompt too: it was answered elsewhere, and the turn goes on.
    tmux.run(&["send-keys", "-t", "odyssey:0", "n", "Enter", "Enter"]);
    let end = tmux.wait_for("odyssey:0", "run exited");
    assert!(end.contains("already answered elsewhere"), "{end}");
    assert!(end.contains(&format!("end {HOSTILE_SHOWN}")), "{end}");
    assert!(end.contains("run exited 0"), "{end}");

    assert_eq!(tmux.title("odyssey:0"), title, "the title is unchanged");
    assert_eq!(tmux.title("odyssey:1"), title, "the title is unchanged");
    assert_eq!(
        tmux.run(&["list-buffers"]),
        "",
        "nothing reached the clipboard"
    );
    drop(tmux);
    server.shutdown().await.expect("server stops");
}
