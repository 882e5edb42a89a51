//! The whole prompt, section by section, in the documented order.

use std::time::{Duration, UNIX_EPOCH};

use uuid::Uuid;

use super::{NOW_SECS, Setup};
use crate::memory::long_term::{MemoryRecord, memory_section};
use crate::policy::SandboxMode;
use crate::prompt::{PromptLimits, assemble, utc_date};

#[test]
fn every_section_in_order() {
    let setup = Setup::new(
        &[
            ("greet", "Greets people.", "Say hi.\n"),
            ("pdf", "Reads PDFs.", "Use pdftotext.\n"),
        ],
        &[("AGENTS.md", "Bundle agents.\n"), ("SOUL.md", "Be kind.\n")],
    );
    setup.put("AGENTS.md", "Workspace agents.\n");
    setup.put("USER.md", "The user likes tea.\n");
    let memory = memory_section(&[
        MemoryRecord::of_turn(
            Uuid::nil(),
            Uuid::nil(),
            "Keep answers short.",
            "Noted.",
            200,
        ),
        MemoryRecord::of_turn(
            Uuid::nil(),
            Uuid::nil(),
            "The project\nis odyssey.",
            "Yes.",
            200,
        ),
    ]);
    let files = setup.files(&PromptLimits::default());
    let parts = setup.parts(
        &files,
        "Summarize this file with $pdf, please.",
        Some(&memory),
    );
    let prompt = assemble(&parts, &PromptLimits::default());

    let expected = format!(
        "You help.

# Project files

These files describe the project, you and the user. A copy in the workspace replaces the bundle's.

## AGENTS.md (workspace)

Workspace agents.

## SOUL.md (bundle)

Be kind.

## USER.md (workspace)

The user likes tea.

# Memory

Notes from earlier sessions with this agent, oldest first. They may be out of date; prefer what the user says now.

- The user asked: Keep answers short.
  You answered: Noted.

- The user asked: The project is odyssey.
  You answered: Yes.

# Skills

Skills hold instructions for particular tasks. When a task matches one, load its instructions with the `Skill` tool (by name) before you start. The user can also ask for one by writing `$name`.

- greet: Greets people.
- pdf: Reads PDFs.

# Environment

- Date: 2023-11-14 (UTC)
- Workspace: {}
- Sandbox: workspace_write (writes are allowed inside the workspace only)

# Skills requested for this turn

The user asked for these skills by name: follow their instructions in this turn.

## pdf

Use pdftotext.",
        setup.ws().display()
    );
    assert_eq!(prompt, expected);
}

#[test]
fn empty_parts_leave_no_empty_sections() {
    let setup = Setup::new(&[], &[]);
    setup.put("SOUL.md", "  \n\n");
    let prompt = setup.prompt("Use $pdf.", &PromptLimits::default());
    assert_eq!(
        prompt,
        format!(
            "You help.\n\n# Environment\n\n- Date: 2023-11-14 (UTC)\n- Workspace: {}\n- Sandbox: \
             workspace_write (writes are allowed inside the workspace only)",
            setup.ws().display()
        )
    );
}

#[test]
fn the_environment_names_a_working_directory_apart_from_the_workspace() {
    let setup = Setup::new(&[], &[]);
    let cwd = setup.ws().join("src");
    let files = setup.files(&PromptLimits::default());
    let parts = crate::prompt::PromptParts {
        cwd: &cwd,
        sandbox_mode: SandboxMode::ReadOnly,
        ..setup.parts(&files, "hi", None)
    };
    let prompt = assemble(&parts, &PromptLimits::default());
    assert!(
        prompt.ends_with(&format!(
            "- Working directory: {}\n- Sandbox: read_only (files can be read, nothing can be written)",
            cwd.display()
        )),
        "{prompt}"
    );
}

#[test]
fn without_the_skill_tool_the_list_says_how_skills_are_asked_for() {
    let setup = Setup::new(&[("pdf", "Reads PDFs.", "Body.\n")], &[]);
    let files = setup.files(&PromptLimits::default());
    let parts = crate::prompt::PromptParts {
        skill_tool: false,
        ..setup.parts(&files, "hi", None)
    };
    let prompt = assemble(&parts, &PromptLimits::default());
    let skills = super::section(&prompt, "# Skills");
    assert!(!skills.contains("`Skill` tool"), "{skills}");
    assert!(
        skills.contains("The user asks for one by writing `$name`"),
        "{skills}"
    );
}

#[test]
fn the_skills_list_is_capped_and_says_how_many_are_left_out() {
    let skills: Vec<(String, String)> = (0..20)
        .map(|i| (format!("skill-{i:02}"), format!("Does task number {i}.")))
        .collect();
    let refs: Vec<(&str, &str, &str)> = skills
        .iter()
        .map(|(n, d)| (n.as_str(), d.as_str(), "Body.\n"))
        .collect();
    let setup = Setup::new(&refs, &[]);
    let limits = PromptLimits {
        skill_list_bytes: 200,
        ..PromptLimits::default()
    };
    let prompt = setup.prompt("hi", &limits);
    let section = super::section(&prompt, "# Skills");
    let listed = section
        .lines()
        .filter(|l| l.starts_with("- skill-"))
        .count();
    // `\n- skill-00: Does task number 0.` is 32 bytes: six fit in 200.
    assert_eq!(listed, 6, "{section}");
    assert!(
        section.trim_end().ends_with(
            "- [14 more not listed: the list is capped at 200 bytes; call `Skill` without a \
             name to list every skill]"
        ),
        "{section}"
    );
}

#[test]
fn dates_are_utc_calendar_days() {
    let at = |secs: u64| utc_date(UNIX_EPOCH + Duration::from_secs(secs));
    assert_eq!(at(0), "1970-01-01");
    assert_eq!(at(951_782_400), "2000-02-29");
    assert_eq!(at(NOW_SECS), "2023-11-14");
    assert_eq!(at(4_102_444_799), "2099-12-31");
}
