//! A turn's system prompt and skills: the runtime's side of [`crate::prompt`]
//! and [`crate::skills`].

use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use super::OdysseyRuntime;
use crate::bundle::InstalledBundle;
use crate::config::RuntimeConfig;
use crate::error::{Result, RuntimeError};
use crate::events::TurnContext;
use crate::prompt::{BOOTSTRAP_FILES, PromptLimits, PromptParts, WorkspaceFiles, assemble};
use crate::sandbox::beneath::BeneathDir;
use crate::sandbox::{CellPaths, ProcessView, SandboxUser};
use crate::skills::{ServerSkills, SkillCatalog, SkillListing};
use crate::tools::ToolSet;
use crate::tools::builtin::SKILL_TOOL_NAME;

/// A turn's system prompt, and the skills its `Skill` tool lists and loads.
pub(crate) struct TurnPrompt {
    pub text: String,
    pub skills: Arc<SkillCatalog>,
}

/// The operator's skill roots. A root that is not a folder at startup is a configuration
/// mistake and stops the start; one that disappears later only loses its skills.
pub(super) fn server_skills(config: &RuntimeConfig) -> Result<Arc<ServerSkills>> {
    for root in &config.skill_roots {
        let problem = match std::fs::metadata(root) {
            Ok(meta) if meta.is_dir() => continue,
            Ok(_) => "is not a folder".to_owned(),
            Err(e) => format!("cannot be opened: {e}"),
        };
        return Err(RuntimeError::invalid(
            "skill_roots",
            format!("skill root `{}` {problem}", root.display()),
        ));
    }
    Ok(Arc::new(ServerSkills::new(
        config.skill_roots.clone(),
        config.skill_rescan_interval,
    )))
}

impl OdysseyRuntime {
    /// Assembles the system prompt of a turn whose user input is `input`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) async fn turn_prompt(
        &self,
        bundle: &Arc<InstalledBundle>,
        agent_prompt: &str,
        cell: &CellPaths,
        context: &TurnContext,
        tools: &ToolSet,
        input: &str,
        memory: Option<Arc<str>>,
    ) -> Result<TurnPrompt> {
        let server = self.inner.skills.clone();
        let limits = self.inner.config.prompt_limits;
        let bundle = bundle.clone();
        let agent_prompt = agent_prompt.to_owned();
        let view = ProcessView::new(context.sandbox_mode, cell);
        let cwd = view.in_workspace(Path::new(&context.cwd));
        let sandbox_mode = context.sandbox_mode;
        let skill_tool = tools.get(SKILL_TOOL_NAME).is_some();
        let input = input.to_owned();
        let data = cell.data.clone();
        let user = self.inner.sandbox.user();
        // One trip off the async threads for the whole prompt: the workspace's files, the
        // server's skills (rescanned when due) and the bundle's own bootstrap files.
        tokio::task::spawn_blocking(move || {
            let workspace_files = read_workspace_files(user, &data, &limits)?;
            let skills = SkillCatalog::new(&bundle, &server.current());
            let parts = PromptParts {
                agent_prompt: &agent_prompt,
                workspace: &view.workspace,
                workspace_files: &workspace_files,
                cwd: &cwd,
                bundle_root: &bundle.root,
                sandbox_mode,
                memory: memory.as_deref(),
                skills: &skills,
                skill_tool,
                input: &input,
                now: SystemTime::now(),
            };
            Ok(TurnPrompt {
                text: assemble(&parts, &limits),
                skills: Arc::new(skills),
            })
        })
        .await
        .map_err(|e| {
            RuntimeError::storage("assemble the system prompt", std::io::Error::other(e))
        })?
    }

    /// The skills an installed bundle's agents can use: the bundle's and the server's,
    /// with those that cannot be used and why.
    pub async fn list_skills(&self, reference: &str) -> Result<Vec<SkillListing>> {
        let bundle = self.inspect_bundle(reference).await?;
        let server = self.inner.skills.clone();
        tokio::task::spawn_blocking(move || {
            SkillCatalog::new(&bundle, &server.current()).into_listing()
        })
        .await
        .map_err(|e| RuntimeError::storage("list skills", std::io::Error::other(e)))
    }
}

/// The workspace's bootstrap files, read beneath its folder with the sandbox user's
/// rights. When none of their names is in the workspace (the usual case) there is nothing
/// to read and no thread to start; one that appears meanwhile is read by the next turn.
fn read_workspace_files(
    user: SandboxUser,
    data: &Path,
    limits: &PromptLimits,
) -> Result<WorkspaceFiles> {
    let failed = |e: std::io::Error| RuntimeError::storage("read the workspace's project files", e);
    let dir = BeneathDir::open(data).map_err(failed)?;
    if !BOOTSTRAP_FILES
        .iter()
        .any(|name| dir.has_entry(std::ffi::OsStr::new(name)))
    {
        return Ok(WorkspaceFiles::default());
    }
    user.run_blocking(move |handoff| {
        handoff.assume()?;
        Ok::<_, std::io::Error>(WorkspaceFiles::read(&dir, limits))
    })
    .map_err(|e| failed(std::io::Error::other(e)))?
    .map_err(failed)
}
