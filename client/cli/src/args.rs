//! Argument types and value parsers shared by several commands.

use std::path::PathBuf;

use odyssey_api::v1 as pb;

use odyssey_client::parse_model;

/// `--model provider/name` for clap.
pub(crate) fn model_arg(text: &str) -> Result<pb::ModelSpec, String> {
    parse_model(text).map_err(|e| e.to_string())
}

/// `--meta KEY=VALUE` for clap: the key must not be empty; the value may be (and may hold
/// further `=`).
pub(crate) fn key_value_arg(text: &str) -> Result<(String, String), String> {
    let (key, value) = text
        .split_once('=')
        .ok_or_else(|| format!("invalid `{text}`: expected KEY=VALUE"))?;
    let key = key.trim();
    if key.is_empty() {
        return Err(format!("invalid `{text}`: the key is empty"));
    }
    Ok((key.to_owned(), value.to_owned()))
}

/// The sandbox modes a session may ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum SandboxModeArg {
    #[value(alias = "read_only")]
    ReadOnly,
    #[value(alias = "workspace_write")]
    WorkspaceWrite,
    #[value(alias = "danger_full_access")]
    DangerFullAccess,
}

impl From<SandboxModeArg> for pb::SandboxMode {
    fn from(mode: SandboxModeArg) -> Self {
        match mode {
            SandboxModeArg::ReadOnly => Self::ReadOnly,
            SandboxModeArg::WorkspaceWrite => Self::WorkspaceWrite,
            SandboxModeArg::DangerFullAccess => Self::DangerFullAccess,
        }
    }
}

/// When tool calls wait for a human.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum ApprovalPolicyArg {
    #[value(alias = "on_request")]
    OnRequest,
    Untrusted,
    Never,
}

impl From<ApprovalPolicyArg> for pb::ApprovalPolicy {
    fn from(policy: ApprovalPolicyArg) -> Self {
        match policy {
            ApprovalPolicyArg::OnRequest => Self::OnRequest,
            ApprovalPolicyArg::Untrusted => Self::Untrusted,
            ApprovalPolicyArg::Never => Self::Never,
        }
    }
}

/// Per-turn overrides (`run`, `submit`).
#[derive(Clone, Debug, Default, clap::Args)]
pub(crate) struct TurnArgs {
    /// Working directory of the turn, relative to the session workspace.
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Use this model for the turn instead of the session's.
    #[arg(long, value_name = "PROVIDER/NAME", value_parser = model_arg)]
    pub model: Option<pb::ModelSpec>,
}

impl TurnArgs {
    pub fn overrides(&self) -> pb::TurnOverrides {
        pb::TurnOverrides {
            cwd: self
                .cwd
                .as_ref()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default(),
            model: self.model.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_key_values() {
        assert_eq!(
            key_value_arg("team=core").unwrap(),
            ("team".into(), "core".into())
        );
        assert_eq!(key_value_arg("q=a=b").unwrap(), ("q".into(), "a=b".into()));
        assert_eq!(
            key_value_arg("empty=").unwrap(),
            ("empty".into(), String::new())
        );
        assert!(key_value_arg("novalue").is_err());
        assert!(key_value_arg("=x").is_err());
    }

    #[test]
    fn parses_models_for_clap() {
        assert_eq!(model_arg("openai/gpt-4.1-mini").unwrap().provider, "openai");
        assert!(model_arg("gpt-4").unwrap_err().contains("PROVIDER/NAME"));
    }

    #[test]
    fn turn_overrides_carry_cwd_and_model() {
        let args = TurnArgs {
            cwd: Some("data/work".into()),
            model: Some(model_arg("replay/guide").unwrap()),
        };
        let overrides = args.overrides();
        assert_eq!(overrides.cwd, "data/work");
        assert_eq!(overrides.model.unwrap().name, "guide");
    }
}
