//! A session's tool context on disk: a cell with its workspace, a folder outside it with a
//! secret, a session store and an installed bundle with two skills (one broken).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;
use tempfile::TempDir;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

use crate::bundle::{BundleStore, InstallOptions};
use crate::model::ModelSpec;
use crate::policy::{ApprovalPolicy, SandboxMode};
use crate::sandbox::{CellPaths, ProcessView, SandboxUser};
use crate::session::{BundlePin, EventSink, SessionHandle, SessionRecord, SessionStore};
use crate::skills::SkillCatalog;
use crate::tools::builtin::builtin;
use crate::tools::{ToolContext, ToolOutput};

pub const SECRET: &str = "top secret host data\n";

const MANIFEST: &str = r#"apiVersion: odyssey.ai/bundle.v1
kind: AgentBundle
metadata:
  name: tools-test
  version: 0.1.0
spec:
  agents:
    - id: main
      spec: agents/main/agent.yaml
      default: true
  skills:
    - name: greet
      path: skills/greet
    - name: broken
      path: skills/broken
  tools:
    - name: Read
"#;

const AGENT: &str = r#"apiVersion: odyssey.ai/v1
kind: Agent
metadata:
  name: main
spec:
  kind: prompt
  prompt: "You help."
  model:
    provider: openai
    name: gpt-4.1-mini
"#;

pub const GREET: &str =
    "---\nname: greet\ndescription: Greets people.\n---\n\n# Greet\n\nSay hi.\n";
const BROKEN: &str = "---\nname: broken\n\n# Broken\n\nNever closed.\n";

pub struct Fixture {
    _dir: TempDir,
    pub ctx: ToolContext,
    pub session: Arc<SessionHandle>,
    /// A folder beside the cell, holding `secret.txt`.
    pub outside: PathBuf,
}

impl Fixture {
    pub fn new() -> Self {
        Self::with_mode(SandboxMode::WorkspaceWrite)
    }

    pub fn with_mode(mode: SandboxMode) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        let outside = root.join("outside");
        fs::create_dir_all(&outside).expect("outside dir");
        fs::write(outside.join("secret.txt"), SECRET).expect("secret");

        let cell = CellPaths::under(root.join("cell"));
        for folder in [&cell.data, &cell.app, &cell.cache, &cell.tmp, &cell.runs] {
            fs::create_dir_all(folder).expect("cell dir");
        }
        fs::write(cell.app.join("app.txt"), "bundle file\n").expect("app file");

        let project = root.join("project");
        write_file(&project, "odyssey.bundle.yaml", MANIFEST);
        write_file(&project, "agents/main/agent.yaml", AGENT);
        write_file(&project, "skills/greet/SKILL.md", GREET);
        write_file(&project, "skills/broken/SKILL.md", BROKEN);
        let bundle = BundleStore::open(root.join("bundles"))
            .expect("bundle store")
            .build_and_install(&project, &InstallOptions::default())
            .expect("install bundle");

        let store = SessionStore::open(root.join("sessions"), root.join("quarantine"))
            .expect("session store");
        let session = store.create(record()).expect("create session");
        let turn_id = Uuid::now_v7();

        let skills = Arc::new(SkillCatalog::new(&bundle, &[]));
        let view = ProcessView::new(mode, &cell);
        let ctx = ToolContext {
            session_id: session.id(),
            turn_id,
            call_id: "call-1".into(),
            parent_session_ids: Vec::new(),
            bundle,
            cwd: view.workspace.clone(),
            view,
            cell,
            mode,
            sandbox_user: SandboxUser::default(),
            mounts_read: Vec::new(),
            mounts_write: Vec::new(),
            network: None,
            env: Default::default(),
            memory_mb: None,
            events: EventSink::new(session.clone(), Some(turn_id)),
            cancel: CancellationToken::new(),
            person: Default::default(),
            skills,
        };
        Self {
            _dir: dir,
            ctx,
            session,
            outside,
        }
    }

    /// The workspace.
    pub fn ws(&self) -> &Path {
        &self.ctx.cell.data
    }

    /// Writes a file under the workspace, creating folders.
    pub fn put(&self, rel: &str, text: &str) -> PathBuf {
        write_file(self.ws(), rel, text)
    }

    pub fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.ws().join(rel)).expect("read back")
    }

    /// Calls builtin tool `name`.
    pub async fn call(&self, name: &str, arguments: Value) -> ToolOutput {
        let tool = builtin(name).expect("a builtin tool");
        tool.call(self.ctx.clone(), arguments).await
    }

    /// Calls `name`, which must succeed; returns its text.
    pub async fn ok(&self, name: &str, arguments: Value) -> String {
        let out = self.call(name, arguments).await;
        assert!(!out.is_error, "{name} failed: {}", out.content);
        out.content
    }

    /// Calls `name`, which must fail; returns its message.
    pub async fn err(&self, name: &str, arguments: Value) -> String {
        let out = self.call(name, arguments).await;
        assert!(
            out.is_error,
            "{name} should have failed, answered: {}",
            out.content
        );
        out.content
    }
}

pub fn write_file(dir: &Path, rel: &str, text: &str) -> PathBuf {
    let path = dir.join(rel);
    fs::create_dir_all(path.parent().expect("a parent")).expect("parent dirs");
    fs::write(&path, text).expect("write file");
    path
}

pub fn symlink(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).expect("symlink");
}

/// Asserts that a refusal does not reveal where the host folder is.
pub fn assert_no_host_path(message: &str, fx: &Fixture) {
    let outside = fx.outside.to_string_lossy();
    assert!(
        !message.contains(outside.as_ref()),
        "message leaks a host path: {message}"
    );
    assert!(
        !message.contains("top secret"),
        "message leaks content: {message}"
    );
}

fn record() -> SessionRecord {
    SessionRecord {
        id: Uuid::now_v7(),
        bundle_reference: "tools-test".into(),
        bundle: BundlePin {
            namespace: "local".into(),
            name: "tools-test".into(),
            version: "0.1.0".into(),
            digest: "sha256:00".into(),
        },
        agent_id: "main".into(),
        model: ModelSpec::new("replay", "main"),
        sandbox_mode: SandboxMode::WorkspaceWrite,
        approval_policy: ApprovalPolicy::OnRequest,
        created_at_ms: 1,
        metadata: Default::default(),
        token_budget: None,
        forked: None,
        parent: None,
    }
}
