//! The system prompt a provider receives, end to end: a real server with an operator skill
//! root, a bootstrap file written into the workspace by a sandboxed command, a skill body
//! pulled in by `$name`, and ListSkills reporting a broken server skill.

use std::time::SystemTime;

use odyssey_api::v1 as pb;
use odyssey_runtime::prompt::utc_date;
use odyssey_runtime::provider::ProviderSettings;
use odyssey_testing::openai_wire::{OpenAiWireServer, Reply, Script};

use crate::support::{Project, TestServer};

const KEY: &str = "sk-test-loopback-key-prompt";

/// A bundle with one skill, a bundle-level SOUL.md and the `Skill` tool, whose agent
/// talks to `openai`.
fn project() -> Project {
    let project = Project::empty();
    project.write(
        "odyssey.bundle.yaml",
        "apiVersion: odyssey.ai/bundle.v1\nkind: AgentBundle\nmetadata:\n  name: prompted\n  version: 0.1.0\nspec:\n  agents:\n    - id: main\n      spec: agents/main/agent.yaml\n      default: true\n  skills:\n    - name: greet\n      path: skills/greet\n  tools:\n    - { name: Skill, source: builtin }\n  sandbox:\n    mode: workspace_write\n",
    );
    project.write(
        "agents/main/agent.yaml",
        "apiVersion: odyssey.ai/v1\nkind: Agent\nmetadata:\n  name: main\nspec:\n  kind: prompt\n  prompt: You are a test agent.\n  model:\n    provider: openai\n    name: gpt-test\n  tools:\n    allow: [Skill]\n",
    );
    project.write(
        "skills/greet/SKILL.md",
        "---\nname: greet\ndescription: Greets people.\n---\n# Greet\n\nSay hi.\n",
    );
    project.write("SOUL.md", "Be brief.\n");
    project
}

#[tokio::test]
async fn the_provider_receives_the_assembled_system_prompt() {
    let skill_root = tempfile::tempdir().expect("skill root");
    let write = |rel: &str, text: &str| {
        let path = skill_root.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write skill");
    };
    write(
        "house-style/SKILL.md",
        "---\nname: house-style\ndescription: Our writing style.\n---\nWrite in short sentences.\n",
    );
    write(
        "broken/SKILL.md",
        "---\ndescription: [oops\n---\n# Broken\n\nHalf written.\n",
    );

    let model = OpenAiWireServer::start(Script::new(KEY).reply(Reply::text("Done.")))
        .await
        .expect("loopback model");
    let base_url = model.base_url();
    let root = skill_root.path().to_path_buf();
    let server = TestServer::start_configured(
        move |args| args.skill_roots = vec![root],
        move |config| {
            config.providers.insert(
                "openai".into(),
                ProviderSettings {
                    base_url: Some(base_url),
                    api_key: Some(KEY.into()),
                    ..ProviderSettings::default()
                },
            );
        },
    )
    .await;
    let session = server.session_on(&project()).await;

    // A bootstrap file put into the workspace the way an operator would.
    let wrote = server
        .executions()
        .run_session_command(pb::RunSessionCommandRequest {
            session_id: session.id.clone(),
            argv: vec![
                "bash".into(),
                "-c".into(),
                "printf 'Workspace rules.\\n' > AGENTS.md".into(),
            ],
            ..Default::default()
        })
        .await
        .expect("command runs")
        .into_inner();
    assert_eq!(wrote.exit_code, 0, "{}", wrote.stderr);

    let before = utc_date(SystemTime::now());
    let status = server
        .run(&session.id, "Welcome them with $greet, in $house-style.")
        .await;
    let after = utc_date(SystemTime::now());
    assert_eq!(
        status.state,
        pb::ExecutionState::Completed as i32,
        "{status:?}"
    );

    // The model sees the workspace where the sandbox mounts it, never the server's home.
    let workspace = std::path::Path::new("/workspace");
    let expected = |date: &str| {
        format!(
            "You are a test agent.

# Project files

These files describe the project, you and the user. A copy in the workspace replaces the bundle's.

## AGENTS.md (workspace)

Workspace rules.

## SOUL.md (bundle)

Be brief.

# Skills

Skills hold instructions for particular tasks. When a task matches one, load its instructions with the `Skill` tool (by name) before you start. The user can also ask for one by writing `$name`.

- greet: Greets people.
- broken: Half written.
- house-style: Our writing style.

# Environment

- Date: {date} (UTC)
- Workspace: {}
- Sandbox: workspace_write (writes are allowed inside the workspace only)

# Skills requested for this turn

The user asked for these skills by name: follow their instructions in this turn.

## greet

# Greet

Say hi.

## house-style

Write in short sentences.",
            workspace.display()
        )
    };
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let messages = requests[0]["messages"].as_array().expect("messages");
    assert_eq!(messages[0]["role"], "system");
    let system = messages[0]["content"].as_str().expect("system text");
    assert!(
        !system.contains(&*server.home().to_string_lossy()),
        "the server's home reached the model:\n{system}"
    );
    // The date is read while the turn starts: either side of a midnight is right.
    assert!(
        system == expected(&before) || system == expected(&after),
        "system prompt:\n{system}\n\nexpected:\n{}",
        expected(&before)
    );
    assert_eq!(
        messages[1]["content"], "Welcome them with $greet, in $house-style.",
        "the user's words reach the model unchanged"
    );
}

#[tokio::test]
async fn list_skills_reports_server_skills_and_their_problems() {
    let skill_root = tempfile::tempdir().expect("skill root");
    let write = |rel: &str, text: &str| {
        let path = skill_root.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write skill");
    };
    write(
        "broken/SKILL.md",
        "---\ndescription: [oops\n---\n# Broken\n\nHalf written.\n",
    );
    write(
        "greet/SKILL.md",
        "---\ndescription: The server's greeting.\n---\nWave.\n",
    );
    std::fs::create_dir_all(skill_root.path().join("no-file")).expect("mkdir");
    let root = skill_root.path().to_path_buf();
    let server = TestServer::start_with(move |args| args.skill_roots = vec![root]).await;
    let bundle = server.install(&project()).await;
    let reference = format!(
        "{}@{}",
        crate::support::bundle_name(&bundle),
        crate::support::bundle_version(&bundle)
    );

    let skills = server
        .bundles()
        .list_skills(pb::ListSkillsRequest {
            bundle_reference: reference.clone(),
        })
        .await
        .expect("list skills")
        .into_inner()
        .skills;
    let rows: Vec<(&str, &str, &str)> = skills
        .iter()
        .map(|s| (s.name.as_str(), s.source.as_str(), s.path.as_str()))
        .collect();
    assert_eq!(
        rows,
        [
            ("greet", "bundle", "skills/greet/SKILL.md"),
            ("broken", "server", "broken/SKILL.md"),
            ("greet", "server", "greet/SKILL.md"),
            ("no-file", "server", "no-file/SKILL.md"),
        ]
    );
    assert!(skills[0].error.is_empty());
    assert!(
        skills[1].error.starts_with("front matter: "),
        "{:?}",
        skills[1]
    );
    assert_eq!(skills[1].description, "Half written.");
    assert_eq!(
        skills[2].error,
        "not used: the bundle has a skill with the same name"
    );
    assert_eq!(skills[3].error, "the folder has no SKILL.md");

    // InspectBundle stays the bundle's own view, its skills marked as such.
    let inspected = server
        .bundles()
        .inspect_bundle(pb::InspectBundleRequest { reference })
        .await
        .expect("inspect")
        .into_inner();
    let names: Vec<(&str, &str)> = inspected
        .skills
        .iter()
        .map(|s| (s.name.as_str(), s.source.as_str()))
        .collect();
    assert_eq!(names, [("greet", "bundle")]);
}

#[tokio::test]
async fn a_skill_root_that_is_not_a_folder_stops_the_start() {
    let file = tempfile::NamedTempFile::new().expect("file");
    let home = tempfile::tempdir().expect("home");
    let mut args = odyssey_server::config::ServeArgs::new(
        crate::support::loopback(),
        home.path().to_path_buf(),
    );
    args.skill_roots = vec![file.path().to_path_buf()];
    let config = args.runtime_config().expect("config");
    let error = odyssey_server::serve::start_with_config(&args, config)
        .await
        .err()
        .expect("refused");
    let message = error.to_string();
    assert!(
        message.contains("skill_roots") && message.contains("is not a folder"),
        "{message}"
    );
}
