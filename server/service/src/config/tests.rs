//! Layering, precedence, errors that name the file and key, requirements that only
//! narrow, and masking, on real files in a temporary folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Parser;

use super::*;
use odyssey_runtime::SandboxMode;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: ServeArgs,
}

fn args(flags: &[&str]) -> ServeArgs {
    Cli::try_parse_from(std::iter::once("odysseyd").chain(flags.iter().copied()))
        .expect("flags parse")
        .args
}

/// A machine in a folder: a system file, a home, an environment.
struct Machine {
    dir: tempfile::TempDir,
    env: BTreeMap<String, String>,
}

impl Machine {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut env = BTreeMap::new();
        env.insert("HOME".into(), dir.path().join("user").display().to_string());
        Self { dir, env }
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    fn write(&self, relative: &str, text: &str) -> PathBuf {
        let path = self.path(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn set_env(&mut self, name: &str, value: &str) {
        self.env.insert(name.into(), value.into());
    }

    fn sources(&self) -> Sources {
        Sources {
            system_file: Some(self.path("etc/odyssey/config.toml")),
            home_file: true,
            env: self.env.clone(),
        }
    }

    fn load(&self, flags: &[&str]) -> Result<Loaded, ConfigError> {
        load(&args(flags), &self.sources())
    }

    /// The default home of this machine.
    fn home(&self) -> PathBuf {
        self.path("user/.odyssey")
    }
}

fn source_of(loaded: &Loaded, key: &str) -> String {
    loaded.entries[key].source.to_string()
}

fn error(result: Result<Loaded, ConfigError>) -> String {
    match result {
        Ok(_) => panic!("the configuration was accepted"),
        Err(e) => e.to_string(),
    }
}

fn path_text(path: &Path) -> String {
    path.display().to_string()
}

#[test]
fn with_nothing_configured_every_value_is_a_default() {
    let machine = Machine::new();
    let loaded = machine.load(&[]).unwrap();
    let config = &loaded.config;
    assert_eq!(config.listen, DEFAULT_LISTEN);
    assert_eq!(config.runtime.home, machine.home());
    assert_eq!(config.runtime.worker_count, 4);
    assert_eq!(config.grpc.heartbeat, Duration::from_secs(15));
    assert!(config.tls.is_none() && config.grpc.auth_token.is_none());
    assert!(loaded.files.is_empty(), "missing optional files are fine");
    assert!(
        loaded.entries.values().all(|e| e.source == Source::Default),
        "{:?}",
        loaded.entries.keys().collect::<Vec<_>>()
    );
    // Unset optional values are not invented.
    for key in ["server.auth_token", "server.tls_cert", "sandbox.force_mode"] {
        assert!(!loaded.entries.contains_key(key), "{key}");
    }
}

#[test]
fn each_layer_overrides_the_ones_below_it() {
    let mut machine = Machine::new();
    let home = machine.path("srv/home");
    let system = machine.write(
        "etc/odyssey/config.toml",
        &format!(
            "[server]\nhome = \"{}\"\nworker_count = 2\nqueue_capacity = 10\nheartbeat_seconds = 20\n\n[turns]\nmax_steps = 5\nmax_seconds = 50\n",
            home.display()
        ),
    );
    let home_file = machine.write(
        "srv/home/config.toml",
        "[server]\nqueue_capacity = 11\n\n[turns]\nmax_steps = 6\n",
    );
    let config_file = machine.write(
        "ops/odysseyd.toml",
        "[turns]\nmax_steps = 7\n\n[server]\nheartbeat_seconds = 21\nshutdown_grace_seconds = 2\n",
    );
    machine.set_env("ODYSSEY_HEARTBEAT_SECONDS", "22");
    machine.set_env("ODYSSEY_SHUTDOWN_GRACE_SECONDS", "3");
    machine.set_env("ODYSSEY_MAX_TURN_SECONDS", "99");
    let config_arg = path_text(&config_file);
    let loaded = machine
        .load(&["--config", &config_arg, "--max-turn-seconds", "100"])
        .unwrap();
    let config = &loaded.config;

    assert_eq!(config.runtime.home, home, "home from the system file");
    assert_eq!(config.runtime.worker_count, 2, "system file");
    assert_eq!(
        config.runtime.queue_capacity, 11,
        "home file over system file"
    );
    assert_eq!(config.runtime.max_turn_steps, 7, "--config over home file");
    assert_eq!(
        config.grpc.heartbeat,
        Duration::from_secs(22),
        "env over --config"
    );
    assert_eq!(
        config.shutdown_grace,
        Duration::from_secs(3),
        "env over --config"
    );
    assert_eq!(
        config.runtime.max_turn_duration,
        Duration::from_secs(100),
        "flag over env"
    );
    assert_eq!(
        config.runtime.approval_timeout,
        Duration::from_secs(600),
        "default"
    );
    assert_eq!(
        loaded.files,
        [system.clone(), home_file.clone(), config_file.clone()]
    );

    assert_eq!(
        source_of(&loaded, "server.worker_count"),
        format!("{}:3", system.display())
    );
    assert_eq!(
        source_of(&loaded, "server.queue_capacity"),
        format!("{}:2", home_file.display())
    );
    assert_eq!(
        source_of(&loaded, "turns.max_steps"),
        format!("{}:2", config_file.display())
    );
    assert_eq!(
        source_of(&loaded, "server.heartbeat_seconds"),
        "env ODYSSEY_HEARTBEAT_SECONDS"
    );
    assert_eq!(
        source_of(&loaded, "turns.max_seconds"),
        "flag --max-turn-seconds"
    );
    assert_eq!(source_of(&loaded, "approvals.timeout_seconds"), "default");
    assert_eq!(
        loaded.entries["turns.max_seconds"].source.layer(),
        Layer::Flag
    );
}

#[test]
fn flags_that_are_not_given_leave_the_files_values() {
    let machine = Machine::new();
    machine.write(
        "etc/odyssey/config.toml",
        "[server]\nworker_count = 9\n[sandbox]\nallow_network = true\nmount_roots = [\"/srv/data\"]\n",
    );
    let loaded = machine.load(&["--queue-capacity", "3"]).unwrap();
    assert_eq!(loaded.config.runtime.worker_count, 9);
    assert!(loaded.config.runtime.access.allow_network);
    assert_eq!(
        loaded.config.runtime.access.mount_roots,
        [PathBuf::from("/srv/data")]
    );
    // A list flag replaces the file's list whole.
    let loaded = machine
        .load(&["--mount-root", "/a", "--mount-root", "/b"])
        .unwrap();
    assert_eq!(
        loaded.config.runtime.access.mount_roots,
        [PathBuf::from("/a"), PathBuf::from("/b")]
    );
}

#[test]
fn the_environment_spells_each_flag_and_lists() {
    let mut machine = Machine::new();
    machine.set_env("ODYSSEY_LISTEN", "127.0.0.1:9000");
    machine.set_env("ODYSSEY_ALLOW_NETWORK", "yes");
    machine.set_env("ODYSSEY_ENV_ALLOW", "LANG, TZ");
    machine.set_env("ODYSSEY_MOUNT_ROOT", "/x:/y");
    machine.set_env("ODYSSEY_SANDBOX_MODE", "read_only");
    machine.set_env("ODYSSEY_PROVIDER_BASE_URL", "ollama=http://127.0.0.1:7/v1");
    machine.set_env("ODYSSEY_AUTH_TOKEN", "");
    let loaded = machine.load(&[]).unwrap();
    let runtime = &loaded.config.runtime;
    assert_eq!(loaded.config.listen.port(), 9000);
    assert!(runtime.access.allow_network);
    assert_eq!(runtime.access.env_allowlist, ["LANG", "TZ"]);
    assert_eq!(
        runtime.access.mount_roots,
        [PathBuf::from("/x"), PathBuf::from("/y")]
    );
    assert_eq!(runtime.sandbox_mode_override, Some(SandboxMode::ReadOnly));
    assert_eq!(
        runtime.providers["ollama"].base_url.as_deref(),
        Some("http://127.0.0.1:7/v1")
    );
    assert_eq!(
        source_of(&loaded, "providers.ollama.base_url"),
        "env ODYSSEY_PROVIDER_BASE_URL"
    );
    assert!(
        loaded.config.grpc.auth_token.is_none(),
        "an empty variable is unset"
    );

    machine.set_env("ODYSSEY_WORKER_COUNT", "lots");
    let e = error(machine.load(&[]));
    assert!(
        e.contains("env ODYSSEY_WORKER_COUNT")
            && e.contains("server.worker_count")
            && e.contains("lots"),
        "{e}"
    );
}

#[test]
fn unknown_keys_name_the_file_the_line_and_the_key() {
    let machine = Machine::new();
    let path = machine.write(
        "etc/odyssey/config.toml",
        "[server]\nlisten = \"127.0.0.1:1\"\nwrker_count = 3\n",
    );
    let e = error(machine.load(&[]));
    assert!(
        e.starts_with(&format!(
            "{}:3: unknown key `server.wrker_count`",
            path.display()
        )),
        "{e}"
    );
    assert!(e.contains("worker_count"), "lists the section's keys: {e}");

    machine.write(
        "etc/odyssey/config.toml",
        "[servr]\nlisten = \"127.0.0.1:1\"\n",
    );
    let e = error(machine.load(&[]));
    assert!(
        e.contains(":1: unknown key `servr`") && e.contains("server, turns"),
        "{e}"
    );

    machine.write(
        "etc/odyssey/config.toml",
        "[providers.opnai]\nbase_url = \"http://x\"\n",
    );
    let e = error(machine.load(&[]));
    assert!(
        e.contains("unknown key `providers.opnai`") && e.contains("openai"),
        "{e}"
    );

    machine.write(
        "etc/odyssey/config.toml",
        "[providers.openai]\nbase_uri = \"http://x\"\n",
    );
    let e = error(machine.load(&[]));
    assert!(
        e.contains(":2: unknown key `providers.openai.base_uri`") && e.contains("base_url"),
        "{e}"
    );
}

#[test]
fn bad_values_and_bad_toml_name_where_they_are() {
    let machine = Machine::new();
    let path = machine.write(
        "etc/odyssey/config.toml",
        "\n[server]\nworker_count = \"many\"\n",
    );
    let e = error(machine.load(&[]));
    assert!(
        e.starts_with(&format!("{}:3: `server.worker_count`", path.display())),
        "{e}"
    );
    machine.write("etc/odyssey/config.toml", "[server]\nworker_count = 0\n");
    assert!(error(machine.load(&[])).contains("must be at least 1"));
    machine.write(
        "etc/odyssey/config.toml",
        "[server]\nworker_count = 1\nauth_token = \"unterminated-secret\n",
    );
    let e = error(machine.load(&[]));
    assert!(
        e.starts_with(&format!("{}:3: not valid TOML", path.display())),
        "{e}"
    );
    assert!(
        !e.contains("unterminated-secret"),
        "no file text is quoted: {e}"
    );
    machine.write(
        "etc/odyssey/config.toml",
        "[server]\nauth_token = 123456789\n",
    );
    let e = error(machine.load(&[]));
    assert!(
        e.contains("`server.auth_token`") && !e.contains("123456789"),
        "{e}"
    );
    machine.write("etc/odyssey/config.toml", "server = 3\n");
    assert!(error(machine.load(&[])).contains("must be a table"));
}

/// Issue 11 item 3: the egress proxy's domains and ranges, from files, flags and the
/// environment, checked as they are read.
#[test]
fn network_domains_and_ranges_are_read_and_checked() {
    let mut machine = Machine::new();
    let path = machine.write(
        "etc/odyssey/config.toml",
        "[sandbox]\nallow_network = true\nnetwork_domains = [\"api.github.com\", \"*.PyPI.org\"]\nnetwork_cidrs = [\"10.20.0.7/16\", \"fd00::1\"]\n",
    );
    let loaded = machine.load(&[]).unwrap();
    let runtime = &loaded.config.runtime;
    let domains: Vec<String> = runtime
        .access
        .network_domains
        .patterns()
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(domains, ["api.github.com", "*.pypi.org"]);
    let cidrs: Vec<String> = runtime
        .sandbox
        .egress
        .allowed_cidrs
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(cidrs, ["10.20.0.0/16", "fd00::1/128"]);

    let loaded = machine
        .load(&[
            "--allow-network-domain",
            "localhost",
            "--allow-network-cidr",
            "127.0.0.0/8",
        ])
        .unwrap();
    assert_eq!(
        source_of(&loaded, "sandbox.network_cidrs"),
        "flag --allow-network-cidr"
    );
    assert_eq!(
        loaded.config.runtime.sandbox.egress.allowed_cidrs,
        ["127.0.0.0/8".parse().unwrap()]
    );
    machine.set_env("ODYSSEY_ALLOW_NETWORK_DOMAIN", "a.example, *.b.example");
    let loaded = machine.load(&[]).unwrap();
    assert_eq!(
        loaded
            .config
            .runtime
            .access
            .network_domains
            .patterns()
            .len(),
        2
    );

    machine.write(
        "etc/odyssey/config.toml",
        "[sandbox]\nnetwork_domains = [\"files.*.org\"]\n",
    );
    machine.set_env("ODYSSEY_ALLOW_NETWORK_DOMAIN", "");
    let e = error(machine.load(&[]));
    assert!(
        e.starts_with(&format!("{}:2: `sandbox.network_domains`", path.display()))
            && e.contains("is not a host pattern"),
        "{e}"
    );
    machine.write(
        "etc/odyssey/config.toml",
        "[sandbox]\nnetwork_cidrs = [\"localhost\"]\n",
    );
    let e = error(machine.load(&[]));
    assert!(e.contains("`localhost` is not an address range"), "{e}");
}

#[test]
fn a_named_config_file_must_exist() {
    let machine = Machine::new();
    let missing = machine.path("nowhere.toml");
    let e = error(machine.load(&["--config", &path_text(&missing)]));
    assert!(
        e.contains("cannot read the configuration file") && e.contains("nowhere.toml"),
        "{e}"
    );
}

#[test]
fn the_home_file_cannot_move_the_home_or_set_requirements() {
    let machine = Machine::new();
    machine.write(
        "user/.odyssey/config.toml",
        "[server]\nhome = \"/elsewhere\"\n",
    );
    let e = error(machine.load(&[]));
    assert!(e.contains("`server.home` cannot be set here"), "{e}");
    machine.write(
        "user/.odyssey/config.toml",
        "[requirements]\nmax_sandbox_mode = \"read_only\"\n",
    );
    let e = error(machine.load(&[]));
    assert!(
        e.contains("`requirements.max_sandbox_mode` cannot be set here")
            && e.contains("/etc/odyssey/config.toml or the --config file"),
        "{e}"
    );
}

#[test]
fn a_later_layer_cannot_loosen_requirements() {
    let machine = Machine::new();
    let system = machine.write(
        "etc/odyssey/config.toml",
        "[requirements]\nmax_sandbox_mode = \"workspace_write\"\nallowed_providers = [\"openai\", \"replay\"]\nallowed_base_urls = [\"https://proxy.example.com/*\"]\n",
    );
    let loose = machine.write(
        "ops/loose.toml",
        "[requirements]\nmax_sandbox_mode = \"danger_full_access\"\n",
    );
    let e = error(machine.load(&["--config", &path_text(&loose)]));
    assert!(
        e.contains(&format!(
            "{}:2: `requirements.max_sandbox_mode` would loosen",
            loose.display()
        )) && e.contains(&format!("{}:2", system.display())),
        "{e}"
    );
    let more_providers = machine.write(
        "ops/providers.toml",
        "[requirements]\nallowed_providers = [\"openai\", \"anthropic\"]\n",
    );
    assert!(
        error(machine.load(&["--config", &path_text(&more_providers)])).contains("`anthropic`")
    );
    let other_url = machine.write(
        "ops/urls.toml",
        "[requirements]\nallowed_base_urls = [\"https://api.openai.com/v1\"]\n",
    );
    assert!(error(machine.load(&["--config", &path_text(&other_url)])).contains("api.openai.com"));

    // Narrowing is fine, and wins.
    let strict = machine.write(
        "ops/strict.toml",
        "[requirements]\nmax_sandbox_mode = \"read_only\"\nallowed_providers = [\"replay\"]\n",
    );
    let loaded = machine.load(&["--config", &path_text(&strict)]).unwrap();
    let requirements = &loaded.config.runtime.requirements;
    assert_eq!(requirements.max_sandbox_mode, Some(SandboxMode::ReadOnly));
    assert_eq!(
        requirements.allowed_providers.as_deref(),
        Some(&["replay".to_owned()][..])
    );
    assert_eq!(
        requirements.allowed_base_urls.as_ref().map(Vec::len),
        Some(1),
        "kept from the system file"
    );
}

#[test]
fn settings_cannot_exceed_the_requirements() {
    let mut machine = Machine::new();
    let system = machine.write(
        "etc/odyssey/config.toml",
        "[requirements]\nmax_sandbox_mode = \"workspace_write\"\nallowed_providers = [\"replay\"]\nallowed_base_urls = [\"http://127.0.0.1:8080/*\"]\n",
    );
    let e = error(machine.load(&["--allow-danger-full-access"]));
    assert!(
        e.starts_with("flag --allow-danger-full-access: `sandbox.allow_danger_full_access`")
            && e.contains("requirements.max_sandbox_mode")
            && e.contains(&system.display().to_string()),
        "{e}"
    );
    machine.set_env("ODYSSEY_SANDBOX_MODE", "danger_full_access");
    let e = error(machine.load(&[]));
    assert!(
        e.starts_with("env ODYSSEY_SANDBOX_MODE: `sandbox.force_mode`"),
        "{e}"
    );
    machine.env.remove("ODYSSEY_SANDBOX_MODE");

    let e = error(machine.load(&["--provider-base-url", "openai=https://api.openai.com/v1"]));
    assert!(
        e.contains("`providers.openai.base_url`") && e.contains("requirements.allowed_base_urls"),
        "{e}"
    );
    let overrides = machine.write(
        "ops/models.toml",
        "[[models.override]]\nbundle = \"demo\"\nmodel = \"openai/gpt-4.1-mini\"\n",
    );
    let e = error(machine.load(&["--config", &path_text(&overrides)]));
    assert!(
        e.contains("`models.override`") && e.contains("requirements.allowed_providers"),
        "{e}"
    );
    let inside = machine.load(&["--provider-base-url", "llama_cpp=http://127.0.0.1:8080/v1"]);
    assert!(inside.is_ok(), "{:?}", inside.err());
}

#[test]
fn model_overrides_are_read_and_checked_entry_by_entry() {
    let machine = Machine::new();
    let path = machine.write(
        "ops/models.toml",
        r#"
[[models.override]]
bundle = "demo"
agent = "guide"
model = "openai/gpt-4.1-mini"
config = { temperature = 0.2, reasoning_effort = "low" }

[[models.override]]
bundle = "team/tools"
model = "ollama/llama3.2"
"#,
    );
    let loaded = machine.load(&["--config", &path_text(&path)]).unwrap();
    let rules = &loaded.config.runtime.model_overrides;
    assert_eq!(rules.len(), 2);
    assert_eq!(rules[0].agent.as_deref(), Some("guide"));
    assert_eq!(rules[0].model.to_string(), "openai/gpt-4.1-mini");
    assert_eq!(
        rules[0].model.config_value("temperature"),
        Some(&serde_json::json!(0.2))
    );
    assert_eq!(
        (rules[1].bundle.as_str(), rules[1].agent.as_ref()),
        ("team/tools", None)
    );

    let bad = machine.write(
        "ops/bad.toml",
        "[[models.override]]\nbundle = \"demo\"\nmodel = \"replay/x\"\n\n[[models.override]]\nbundle = \"demo\"\nagnt = \"guide\"\nmodel = \"replay/y\"\n",
    );
    let e = error(machine.load(&["--config", &path_text(&bad)]));
    assert!(
        e.starts_with(&format!("{}:5: `models.override[1]`", bad.display())) && e.contains("agnt"),
        "{e}"
    );
    let unknown = machine.write(
        "ops/unknown.toml",
        "[[models.override]]\nbundle = \"demo\"\nmodel = \"acme/m1\"\n",
    );
    assert!(
        error(machine.load(&["--config", &path_text(&unknown)]))
            .contains("unknown provider `acme`")
    );
}

#[test]
fn tls_needs_both_files() {
    let machine = Machine::new();
    let e = error(machine.load(&["--tls-cert", "/srv/cert.pem"]));
    assert!(e.contains("server.tls_key"), "{e}");
    let loaded = machine
        .load(&["--tls-cert", "/srv/cert.pem", "--tls-key", "/srv/key.pem"])
        .unwrap();
    assert_eq!(
        loaded.config.tls,
        Some(TlsFiles {
            cert: "/srv/cert.pem".into(),
            key: "/srv/key.pem".into()
        })
    );
}

#[test]
fn secrets_are_masked_in_every_output() {
    let machine = Machine::new();
    let path = machine.write(
        "ops/secret.toml",
        "[server]\nauth_token = \"tok-from-file-123\"\n\n[providers.openai]\napi_key = \"sk-from-file-456\"\nbase_url = \"https://proxy-user:url-pass-321@proxy.example.com/v1\"\n\n[[hooks.event]]\nurl = \"https://audit.example.com/in?token=hook-tok-654&kind=all\"\n",
    );
    let loaded = machine.load(&["--config", &path_text(&path)]).unwrap();
    assert_eq!(
        loaded.config.grpc.auth_token.as_deref(),
        Some("tok-from-file-123")
    );
    assert_eq!(
        loaded.config.runtime.providers["openai"].api_key.as_deref(),
        Some("sk-from-file-456")
    );
    let outputs = [
        to_toml(&loaded, false),
        to_toml(&loaded, true),
        serde_json::to_string(&to_json(&loaded, false)).unwrap(),
        serde_json::to_string(&to_json(&loaded, true)).unwrap(),
        format!("{:?}", loaded.config),
        format!("{:?}", loaded.entries),
        format!("{:?}", args(&["--auth-token", "tok-from-flag-789"])),
    ];
    for output in &outputs {
        // Issue 11 ("Also fix"): credentials inside URLs are masked too.
        for secret in [
            "tok-from-file-123",
            "sk-from-file-456",
            "tok-from-flag-789",
            "url-pass-321",
            "proxy-user",
            "hook-tok-654",
        ] {
            assert!(!output.contains(secret), "{secret} leaked:\n{output}");
        }
    }
    assert!(
        outputs[0].contains(&format!("auth_token = \"{MASK}\"")),
        "{}",
        outputs[0]
    );
    for shown in [
        format!("https://{MASK}@proxy.example.com/v1"),
        format!("?token={MASK}&kind=all"),
    ] {
        assert!(outputs[1].contains(&shown), "{shown} in:\n{}", outputs[1]);
    }
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.contains("server.auth_token")),
        "a world-readable file with a secret is reported: {:?}",
        loaded.warnings
    );
}

#[test]
fn show_prints_toml_that_configures_the_same_server() {
    let machine = Machine::new();
    let path = machine.write(
        "ops/odysseyd.toml",
        "[server]\nworker_count = 6\n\n[providers.openai]\nbase_url = \"https://proxy.example.com/v1\"\nallowed_base_urls = [\"https://proxy.example.com/*\"]\n\n[requirements]\nmax_sandbox_mode = \"workspace_write\"\n\n[[models.override]]\nbundle = \"demo\"\nmodel = \"openai/gpt-4.1-mini\"\nconfig = { temperature = 0.5 }\n",
    );
    let loaded = machine
        .load(&["--config", &path_text(&path), "--heartbeat-seconds", "3"])
        .unwrap();
    let text = to_toml(&loaded, false);
    let again_path = machine.write("ops/again.toml", &text);
    let again = machine
        .load(&["--config", &path_text(&again_path)])
        .unwrap();
    let values = |l: &Loaded| -> BTreeMap<String, toml::Value> {
        l.entries
            .iter()
            .map(|(k, e)| (k.clone(), e.value.clone()))
            .collect()
    };
    assert_eq!(values(&again), values(&loaded), "{text}");

    let with_sources = to_toml(&loaded, true);
    for expected in [
        "[server]".to_owned(),
        "[providers.openai]".to_owned(),
        "[[models.override]]".to_owned(),
        format!("# {}:2", path.display()),
        "# flag --heartbeat-seconds".to_owned(),
        "# default".to_owned(),
    ] {
        assert!(
            with_sources.contains(&expected),
            "{expected} in:\n{with_sources}"
        );
    }
    let order: Vec<usize> = [
        "[server]",
        "[turns]",
        "[providers.openai]",
        "[requirements]",
        "[[models.override]]",
    ]
    .iter()
    .map(|h| text.find(h).unwrap_or_else(|| panic!("{h} in {text}")))
    .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{text}");

    let json = to_json(&loaded, false);
    assert_eq!(json[0]["server"]["worker_count"], 6);
    assert_eq!(json[0]["providers"]["openai"]["max_retries"], 3);
    assert_eq!(json[0]["models"]["override"][0]["bundle"], "demo");
    let lines = to_json(&loaded, true);
    let heartbeat = lines
        .iter()
        .find(|l| l["key"] == "server.heartbeat_seconds")
        .unwrap();
    assert_eq!(heartbeat["value"], 3);
    assert_eq!(heartbeat["layer"], "flag");
}

#[test]
fn flags_document_the_defaults_the_settings_use() {
    use clap::CommandFactory;
    let command = Cli::command();
    let defaults = Machine::new().load(&[]).unwrap();
    let schema = schema::Schema::new();
    for setting in &schema.server {
        let Some(flag) = setting.flag else { continue };
        let arg = command
            .get_arguments()
            .find(|a| a.get_long() == flag.strip_prefix("--"))
            .unwrap_or_else(|| panic!("{flag} is a flag"));
        let help = arg.get_help().map(ToString::to_string).unwrap_or_default();
        let Some(documented) = help
            .split("[default: ")
            .nth(1)
            .and_then(|rest| rest.split(']').next())
        else {
            continue;
        };
        let Some(entry) = defaults.entries.get(setting.key) else {
            continue;
        };
        let actual = match &entry.value {
            toml::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        // Defaults of the machine: the user's home, the host name.
        if matches!(setting.key, "server.home" | "database.replica_id") {
            continue;
        }
        assert_eq!(documented, actual, "{flag}");
    }
}

#[test]
fn metrics_and_event_hooks_come_from_files_flags_and_the_environment() {
    use odyssey_runtime::event_hooks::HookTarget;

    let mut machine = Machine::new();
    let path = machine.write(
        "ops/hooks.toml",
        r#"
[metrics]
listen = "127.0.0.1:9464"
auth_token = "metrics-secret-321"

[[hooks.event]]
name = "audit"
url = "https://audit.example.com/odyssey"
events = ["turn_started", "turn_completed"]
timeout_ms = 2000

[[hooks.event]]
command = ["/usr/local/bin/sink", "--dir", "/var/log/odyssey"]
queue_capacity = 16
"#,
    );
    let loaded = machine.load(&["--config", &path_text(&path)]).unwrap();
    assert_eq!(
        loaded.config.metrics_listen,
        Some("127.0.0.1:9464".parse().unwrap())
    );
    assert_eq!(
        loaded
            .config
            .metrics_auth_token
            .as_ref()
            .map(|t| t.expose()),
        Some("metrics-secret-321")
    );
    let hooks = &loaded.config.runtime.event_hooks;
    assert_eq!(hooks.len(), 2);
    assert_eq!(hooks[0].name, "audit");
    assert_eq!(hooks[0].events, ["turn_started", "turn_completed"]);
    assert_eq!(hooks[0].timeout, Duration::from_millis(2000));
    assert_eq!(hooks[1].name, "hook-2");
    assert_eq!(hooks[1].queue_capacity, 16);
    assert_eq!(
        hooks[1].target,
        HookTarget::Command(vec![
            "/usr/local/bin/sink".into(),
            "--dir".into(),
            "/var/log/odyssey".into()
        ])
    );
    let shown = to_toml(&loaded, true);
    assert!(!shown.contains("metrics-secret-321"), "{shown}");
    for expected in ["[metrics]", "[[hooks.event]]", "name = \"audit\""] {
        assert!(shown.contains(expected), "{expected} in:\n{shown}");
    }
    // What `config show` prints configures the same hooks.
    let again = machine.write("ops/again.toml", &to_toml(&loaded, false));
    let reloaded = machine.load(&["--config", &path_text(&again)]).unwrap();
    assert_eq!(
        reloaded.config.runtime.event_hooks,
        loaded.config.runtime.event_hooks
    );

    // A flag replaces the file's list: a URL is a webhook, anything else a program.
    let flagged = machine
        .load(&[
            "--config",
            &path_text(&path),
            "--event-hook",
            "http://127.0.0.1:9000/events",
            "--event-hook",
            "/opt/hooks/sink",
        ])
        .unwrap();
    let hooks = &flagged.config.runtime.event_hooks;
    assert_eq!(hooks.len(), 2);
    assert!(
        matches!(&hooks[0].target, HookTarget::Webhook { url, .. } if url == "http://127.0.0.1:9000/events")
    );
    assert_eq!(
        hooks[1].target,
        HookTarget::Command(vec!["/opt/hooks/sink".into()])
    );
    assert_eq!(source_of(&flagged, "hooks.event"), "flag --event-hook");

    machine.set_env("ODYSSEY_EVENT_HOOK", "https://a.example.com/e,/opt/b");
    machine.set_env("ODYSSEY_METRICS_LISTEN", "127.0.0.1:9465");
    let from_env = machine.load(&[]).unwrap();
    assert_eq!(from_env.config.runtime.event_hooks.len(), 2);
    assert_eq!(
        from_env.config.metrics_listen,
        Some("127.0.0.1:9465".parse().unwrap())
    );
}

#[test]
fn bad_event_hooks_name_the_entry_and_the_problem() {
    let machine = Machine::new();
    let cases = [
        (
            "[[hooks.event]]\nurl = \"https://a.example.com/\"\n\n[[hooks.event]]\nurl = \"http://b.example.com/\"\n",
            "`hooks.event[1]`",
            "allow_http",
        ),
        (
            "[[hooks.event]]\ncommand = [\"/bin/cat\"]\nevents = [\"turn_done\"]\n",
            "`hooks.event[0]`",
            "unknown event type `turn_done`",
        ),
        (
            "[[hooks.event]]\nname = \"x\"\n",
            "`hooks.event[0]`",
            "needs a `url`",
        ),
        (
            "[[hooks.event]]\nname = \"x\"\ncommand = [\"/bin/cat\"]\n\n[[hooks.event]]\nname = \"x\"\ncommand = [\"/bin/cat\"]\n",
            "`hooks.event[1]`",
            "another event hook is named `x`",
        ),
        (
            "[[hooks.event]]\ncommand = [\"/bin/cat\"]\nqueue = 5\n",
            "`hooks.event[0]`",
            "queue",
        ),
    ];
    for (at, (text, key, problem)) in cases.iter().enumerate() {
        let path = machine.write(&format!("ops/bad-{at}.toml"), text);
        let e = error(machine.load(&["--config", &path_text(&path)]));
        assert!(e.contains(key) && e.contains(problem), "{e}");
    }
    let allowed = machine.write(
        "ops/allowed.toml",
        "[[hooks.event]]\nurl = \"http://b.example.com/\"\nallow_http = true\n",
    );
    assert!(machine.load(&["--config", &path_text(&allowed)]).is_ok());
}

/// Issue 21: named credentials, `[credentials.NAME]`, with the key in the file or in a key
/// file; the key is masked in every output and the table is checked whole.
#[test]
fn named_credentials_are_read_checked_and_masked() {
    let machine = Machine::new();
    let key_file = machine.write("ops/team.key", "sk-team-file-777\n");
    let path = machine.write(
        "ops/credentials.toml",
        &format!(
            "[credentials.team]\nprovider = \"openai\"\napi_key_file = \"{}\"\nallowed_base_urls = [\"https://proxy.example.com/*\"]\n\n[credentials.inline]\nprovider = \"anthropic\"\napi_key = \"sk-inline-888\"\n",
            key_file.display()
        ),
    );
    let loaded = machine.load(&["--config", &path_text(&path)]).unwrap();
    let credentials = &loaded.config.runtime.credentials;
    assert_eq!(credentials["team"].provider, "openai");
    assert_eq!(credentials["team"].key(), Some("sk-team-file-777"));
    assert_eq!(credentials["team"].allowed_base_urls.len(), 1);
    assert_eq!(credentials["inline"].key(), Some("sk-inline-888"));
    let outputs = [
        to_toml(&loaded, true),
        serde_json::to_string(&to_json(&loaded, false)).unwrap(),
        format!("{:?}", loaded.config),
    ];
    for output in &outputs {
        for secret in ["sk-team-file-777", "sk-inline-888"] {
            assert!(!output.contains(secret), "{secret} leaked:\n{output}");
        }
    }
    assert!(outputs[0].contains("[credentials.team]"), "{}", outputs[0]);
    assert!(
        outputs[0].contains(&format!("api_key = \"{MASK}\"")),
        "{}",
        outputs[0]
    );
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.contains("holds the key of credentials.team")),
        "a key file others can read is reported: {:?}",
        loaded.warnings
    );

    for (table, expected) in [
        (
            "[credentials.a]\napi_key = \"k\"\n",
            "credentials.a: `provider` is missing",
        ),
        (
            "[credentials.a]\nprovider = \"openai\"\n",
            "credentials.a: the key is missing",
        ),
        (
            &*format!(
                "[credentials.a]\nprovider = \"openai\"\napi_key = \"k\"\napi_key_file = \"{}\"\n",
                key_file.display()
            ),
            "not both",
        ),
        (
            "[credentials.a]\nprovider = \"acme\"\napi_key = \"k\"\n",
            "unknown provider `acme`",
        ),
        (
            "[credentials.a]\nprovider = \"openai\"\napi_key_file = \"/nonexistent/key\"\n",
            "cannot read the key file /nonexistent/key",
        ),
        (
            "[credentials.\"a b\"]\nprovider = \"openai\"\n",
            "unknown key",
        ),
        (
            "[credentials.a]\nprovdier = \"openai\"\n",
            "the keys of [credentials.a] are: provider",
        ),
    ] {
        let bad = machine.write("ops/bad.toml", table);
        let e = error(machine.load(&["--config", &path_text(&bad)]));
        assert!(e.contains(expected), "{table}: {e}");
    }
}

/// Issue 21: an operator's model override holding a credential is refused at load,
/// naming the field and not the value.
#[test]
fn a_model_override_with_a_credential_is_refused() {
    let machine = Machine::new();
    let bad = machine.write(
        "ops/override.toml",
        "[[models.override]]\nbundle = \"demo\"\nmodel = \"openai/gpt-4.1-mini\"\nconfig = { temperature = 0.5, extra_body = { api_key = \"sk-override-999\" } }\n",
    );
    let e = error(machine.load(&["--config", &path_text(&bad)]));
    assert!(
        e.contains("`config.extra_body.api_key`") && e.contains("[credentials.<name>]"),
        "{e}"
    );
    assert!(!e.contains("sk-override-999"), "{e}");
}

/// Issue 12 item 4: `--allow-base-url NAME=URL` (repeatable, and its variable) adds to
/// `providers.NAME.allowed_base_urls` from the files instead of replacing it.
#[test]
fn allow_base_url_adds_to_a_providers_allowed_urls() {
    let mut machine = Machine::new();
    let file = machine.write(
        "ops/providers.toml",
        "[providers.openai]\nallowed_base_urls = [\"https://proxy.example.com/*\"]\n",
    );
    machine.set_env(
        "ODYSSEY_ALLOW_BASE_URL",
        "openai=https://env.example.com/v1",
    );
    let loaded = machine
        .load(&[
            "--config",
            &path_text(&file),
            "--allow-base-url",
            "openai=https://one.example.com/v1",
            "--allow-base-url",
            "ollama=http://10.0.0.2:11434/*",
        ])
        .unwrap();
    let allowed = |name: &str| -> Vec<String> {
        loaded.config.runtime.providers[name]
            .allowed_base_urls
            .iter()
            .map(|p| p.as_str().to_owned())
            .collect()
    };
    assert_eq!(
        allowed("openai"),
        [
            "https://proxy.example.com/*",
            "https://env.example.com/v1",
            "https://one.example.com/v1"
        ]
    );
    assert_eq!(allowed("ollama"), ["http://10.0.0.2:11434/*"]);
    assert_eq!(
        source_of(&loaded, "providers.openai.allowed_base_urls"),
        "flag --allow-base-url"
    );

    let e = error(machine.load(&["--allow-base-url", "openai"]));
    assert!(e.contains("`openai` is not NAME=URL"), "{e}");
    let e = error(machine.load(&["--allow-base-url", "openai=https://x.example.com/a*b"]));
    assert!(
        e.contains("providers.openai.allowed_base_urls") && e.contains("may only end"),
        "{e}"
    );
    let e = error(machine.load(&["--allow-base-url", "nosuch=https://x.example.com/v1"]));
    assert!(e.contains("providers.nosuch.allowed_base_urls"), "{e}");
}

#[test]
fn mcp_servers_are_read_checked_and_their_keys_masked() {
    let machine = Machine::new();
    let path = machine.write(
        "ops/mcp.toml",
        "[mcp]\nallowed_urls = [\"https://mcp.example.com/*\"]\nidle_timeout_seconds = 30\n\n\
         [mcp.servers.github]\nurl = \"https://api.githubcopilot.com/mcp/\"\nheaders = { Authorization = \"Bearer ghp-mcp-555\", X-Team = \"team-666\" }\n\n\
         [mcp.servers.notes]\ncommand = [\"node\", \"/opt/notes/index.js\"]\nenv = { NOTES_TOKEN = \"notes-777\" }\n",
    );
    let loaded = machine.load(&["--config", &path_text(&path)]).unwrap();
    let mcp = &loaded.config.runtime.mcp;
    assert_eq!(mcp.idle_timeout, Duration::from_secs(30));
    assert_eq!(mcp.allowed_urls.len(), 1);
    assert_eq!(
        mcp.servers["github"].headers["Authorization"],
        "Bearer ghp-mcp-555"
    );
    assert_eq!(
        mcp.servers["notes"].command,
        ["node", "/opt/notes/index.js"]
    );
    assert_eq!(mcp.servers["notes"].env["NOTES_TOKEN"], "notes-777");
    let outputs = [
        to_toml(&loaded, true),
        serde_json::to_string(&to_json(&loaded, false)).unwrap(),
        format!("{:?}", loaded.config),
    ];
    for output in &outputs {
        for secret in ["ghp-mcp-555", "team-666", "notes-777"] {
            assert!(!output.contains(secret), "{secret} leaked:\n{output}");
        }
    }
    assert!(outputs[0].contains("/opt/notes/index.js"), "{}", outputs[0]);

    for (table, expected) in [
        (
            "[mcp.servers.a]\n",
            "give `command` (a stdio server) or `url`",
        ),
        (
            "[mcp.servers.a]\ncommand = [\"x\"]\nurl = \"https://a.example/\"\n",
            "not both",
        ),
        (
            "[mcp.servers.a__b]\ncommand = [\"x\"]\n",
            "mcp.servers.a__b: invalid server name",
        ),
        (
            "[mcp.servers.a]\ncommand = [\"x\"]\nheaders = { A = \"b\" }\n",
            "`headers` go with `url`",
        ),
        (
            "[mcp.servers.a]\nurl = \"ftp://a.example/\"\n",
            "http or https",
        ),
        ("[mcp.servers.a]\ncomand = [\"x\"]\n", "unknown field"),
    ] {
        let bad = machine.write("ops/bad.toml", table);
        let e = error(machine.load(&["--config", &path_text(&bad)]));
        assert!(e.contains(expected), "{table}: {e}");
    }
}

#[test]
fn remote_a2a_agents_are_read_checked_and_their_keys_masked() {
    let machine = Machine::new();
    let path = machine.write(
        "ops/a2a.toml",
        "[a2a]\nallowed_urls = [\"https://agents.example.com/*\"]\ncall_timeout_seconds = 45\n\n\
         [a2a.agents.research]\nurl = \"https://research.example.com/a2a\"\nheaders = { Authorization = \"Bearer a2a-888\" }\n",
    );
    let loaded = machine.load(&["--config", &path_text(&path)]).unwrap();
    let a2a = &loaded.config.runtime.a2a;
    assert_eq!(a2a.call_timeout, Duration::from_secs(45));
    assert_eq!(a2a.allowed_urls.len(), 1);
    assert_eq!(
        a2a.agents["research"].url,
        "https://research.example.com/a2a"
    );
    assert_eq!(
        a2a.agents["research"].headers["Authorization"],
        "Bearer a2a-888"
    );
    let outputs = [
        to_toml(&loaded, true),
        serde_json::to_string(&to_json(&loaded, false)).unwrap(),
        format!("{:?}", loaded.config),
    ];
    for output in &outputs {
        assert!(!output.contains("a2a-888"), "the key leaked:\n{output}");
    }
    assert!(
        outputs[0].contains("https://research.example.com/a2a"),
        "{}",
        outputs[0]
    );

    for (table, expected) in [
        ("[a2a.agents.a]\n", "missing field `url`"),
        (
            "[a2a.agents.a__b]\nurl = \"https://a.example/\"\n",
            "a2a.agents.a__b: invalid agent name",
        ),
        (
            "[a2a.agents.a]\nurl = \"ftp://a.example/\"\n",
            "http or https",
        ),
        (
            "[a2a.agents.a]\nurl = \"https://a.example/\"\ntoken = \"x\"\n",
            "unknown field",
        ),
    ] {
        let bad = machine.write("ops/bad.toml", table);
        let e = error(machine.load(&["--config", &path_text(&bad)]));
        assert!(e.contains(expected), "{table}: {e}");
    }
}

#[test]
fn the_database_and_the_replica_come_from_files_flags_and_the_environment() {
    let mut machine = Machine::new();
    let defaults = machine.load(&[]).unwrap().config;
    assert_eq!(defaults.database.url, None);
    assert_eq!(defaults.database.lease, Duration::from_secs(10));
    assert_eq!(defaults.database.cluster_queue_limit, 10_000);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    assert_eq!(
        defaults.database.replica_id,
        database::replica_id_of_host(&host)
    );
    assert_eq!(defaults.runtime.workspace_root, None);
    assert_eq!(
        defaults.runtime.sandbox_dir(),
        machine.home().join("sandbox")
    );

    let path = machine.write(
        "etc/odyssey/config.toml",
        "[server]\nworkspace_root = \"/srv/odyssey/workspaces\"\n\n[database]\nurl = \"postgres://odyssey@db.internal:5433/odyssey?sslmode=require\"\nreplica_id = \"from-file\"\nlease_seconds = 4\ncluster_queue_limit = 50\n",
    );
    let loaded = machine.load(&[]).unwrap();
    let database = &loaded.config.database;
    assert_eq!(
        database.url.as_deref(),
        Some("postgres://odyssey@db.internal:5433/odyssey?sslmode=require")
    );
    assert_eq!(database.replica_id, "from-file");
    assert_eq!(database.lease, Duration::from_secs(4));
    assert_eq!(database.cluster_queue_limit, 50);
    assert_eq!(
        loaded.config.runtime.sandbox_dir(),
        PathBuf::from("/srv/odyssey/workspaces")
    );
    assert_eq!(
        source_of(&loaded, "database.replica_id"),
        format!("{}:6", path.display())
    );

    machine.set_env("ODYSSEY_REPLICA_ID", "from-env");
    machine.set_env("ODYSSEY_DATABASE_URL", "postgres://env@127.0.0.1/env");
    machine.set_env("ODYSSEY_WORKSPACE_ROOT", "/mnt/shared");
    let loaded = machine.load(&[]).unwrap();
    assert_eq!(loaded.config.database.replica_id, "from-env");
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
    // A database without a shared workspace root: the workspaces stay one replica's.
    let unshared = Machine::new()
        .load(&["--database-url", "postgres://u@127.0.0.1/db"])
        .unwrap();
    assert!(
        unshared
            .warnings
            .iter()
            .any(|w| w.contains("server.workspace_root is not")),
        "{:?}",
        unshared.warnings
    );
    assert_eq!(
        loaded.config.database.url.as_deref(),
        Some("postgres://env@127.0.0.1/env")
    );
    assert_eq!(
        loaded.config.runtime.sandbox_dir(),
        PathBuf::from("/mnt/shared")
    );
    assert_eq!(
        source_of(&loaded, "database.replica_id"),
        "env ODYSSEY_REPLICA_ID"
    );

    let loaded = machine
        .load(&[
            "--replica-id",
            "r1",
            "--database-url",
            "postgres://flag@127.0.0.1:5432/flag",
            "--workspace-root",
            "/mnt/flag",
        ])
        .unwrap();
    assert_eq!(loaded.config.database.replica_id, "r1");
    assert_eq!(
        loaded.config.database.url.as_deref(),
        Some("postgres://flag@127.0.0.1:5432/flag")
    );
    assert_eq!(
        loaded.config.runtime.sandbox_dir(),
        PathBuf::from("/mnt/flag")
    );
    assert_eq!(
        source_of(&loaded, "database.replica_id"),
        "flag --replica-id"
    );
    assert!(
        loaded.warnings.is_empty(),
        "serving from the database is no longer warned about: {:?}",
        loaded.warnings
    );
}

#[test]
fn bad_database_settings_name_the_setting_and_the_problem() {
    let machine = Machine::new();
    for (table, key, expected) in [
        (
            "[database]\nreplica_id = \"two words\"\n",
            "database.replica_id",
            "is not a replica id",
        ),
        (
            "[database]\nreplica_id = \"\"\n",
            "database.replica_id",
            "is not a replica id",
        ),
        (
            "[database]\nlease_seconds = 0\n",
            "database.lease_seconds",
            "must be at least 1",
        ),
        (
            "[database]\ncluster_queue_limit = 0\n",
            "database.cluster_queue_limit",
            "must be at least 1",
        ),
        (
            "[database]\nurl = \"postgres://odyssey:hunter2@db/odyssey\"\n",
            "database.url",
            "must not hold the password",
        ),
        (
            "[database]\nurl = \"postgres://db/odyssey\"\n",
            "database.url",
            "names no user",
        ),
        (
            "[server]\nworkspace_root = \"relative/folder\"\n",
            "server.workspace_root",
            "is not an absolute path",
        ),
    ] {
        let bad = machine.write("ops/bad.toml", table);
        let e = error(machine.load(&["--config", &path_text(&bad)]));
        assert!(e.contains(&format!("`{key}`")), "{table}: {e}");
        assert!(e.contains(expected), "{table}: {e}");
        assert!(!e.contains("hunter2"), "the password leaked: {e}");
    }

    let e = error(machine.load(&["--replica-id", "r/1"]));
    assert!(
        e.contains("--replica-id") && e.contains("is not a replica id"),
        "{e}"
    );
    let e = error(machine.load(&["--database-url", "postgres://u:hunter2@127.0.0.1/db"]));
    assert!(
        e.contains("--database-url") && e.contains("must not hold the password"),
        "{e}"
    );
    assert!(!e.contains("hunter2"), "the password leaked: {e}");
}

#[test]
fn with_a_database_workspaces_are_snapshotted_by_copies_and_overlay_is_refused() {
    use odyssey_runtime::snapshot::MechanismChoice;
    let machine = Machine::new();
    let url = "postgres://odyssey@127.0.0.1/odyssey";
    let alone = machine.load(&[]).unwrap();
    assert_eq!(
        alone.config.runtime.snapshots.mechanism,
        MechanismChoice::Auto
    );
    let shared = machine.load(&["--database-url", url]).unwrap();
    assert_eq!(
        shared.config.runtime.snapshots.mechanism,
        MechanismChoice::Copies
    );
    let copies = machine
        .load(&["--database-url", url, "--snapshot-mechanism", "copies"])
        .unwrap();
    assert_eq!(
        copies.config.runtime.snapshots.mechanism,
        MechanismChoice::Copies
    );
    let e = error(machine.load(&["--database-url", url, "--snapshot-mechanism", "overlay"]));
    assert!(
        e.contains("snapshots.mechanism is \"overlay\"") && e.contains("database.url"),
        "{e}"
    );
    assert!(e.contains("mount namespace"), "the message says why: {e}");
}

#[test]
fn the_database_password_is_never_shown() {
    let mut machine = Machine::new();
    machine.set_env(PASSWORD_VARIABLE, "hunter2-password");
    let password_file = machine.write("secrets/db-password", "hunter2-file\n");
    let config = machine.write(
        "ops/db.toml",
        &format!(
            "[database]\nurl = \"postgres://odyssey@127.0.0.1/odyssey\"\npassword_file = \"{}\"\n",
            password_file.display()
        ),
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&password_file, std::fs::Permissions::from_mode(0o644)).unwrap();
    let loaded = machine.load(&["--config", &path_text(&config)]).unwrap();
    assert!(
        loaded
            .warnings
            .iter()
            .any(|w| w.contains("database.password_file")
                && w.contains("chmod 600")
                && !w.contains("hunter2")),
        "{:?}",
        loaded.warnings
    );
    std::fs::set_permissions(&password_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let loaded = machine.load(&["--config", &path_text(&config)]).unwrap();
    assert!(
        !loaded.warnings.iter().any(|w| w.contains("password")),
        "{:?}",
        loaded.warnings
    );
    let outputs = [
        to_toml(&loaded, true),
        serde_json::to_string(&to_json(&loaded, true)).unwrap(),
        format!("{:?}", loaded.config),
    ];
    for output in &outputs {
        assert!(
            !output.contains("hunter2"),
            "the password leaked:\n{output}"
        );
    }
    assert!(outputs[0].contains("replica_id"), "{}", outputs[0]);
    // The password is read when the server connects, from the variable over the file.
    let connect = loaded
        .config
        .database
        .connect_config(&machine.env)
        .unwrap()
        .unwrap();
    assert!(
        !connect.target().contains("hunter2"),
        "{}",
        connect.target()
    );
}
