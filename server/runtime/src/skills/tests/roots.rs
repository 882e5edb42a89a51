//! Skill roots: what a scan finds and reports, and rescans that read only what changed.

use std::fs;
use std::time::{Duration, SystemTime};

use super::{skill_md, write};
use crate::skills::{MAX_SKILL_FILE_BYTES, ServerSkill, ServerSkills};

/// A moment when every file written by the test is old enough to be trusted.
fn later() -> SystemTime {
    SystemTime::now() + Duration::from_secs(3600)
}

/// Moves a file's modification time well into the past, so that rewriting it now surely
/// changes its stamp even on a file system with coarse timestamps.
fn age(path: &std::path::Path) {
    // Setting explicit times needs ownership, not write access: a folder works too.
    let file = fs::File::open(path).expect("open");
    file.set_modified(SystemTime::now() - Duration::from_secs(1000))
        .expect("set mtime");
}

fn names(skills: &[ServerSkill]) -> Vec<&str> {
    skills.iter().map(|s| s.name.as_str()).collect()
}

fn find<'a>(skills: &'a [ServerSkill], name: &str) -> &'a ServerSkill {
    skills
        .iter()
        .find(|s| s.name == name)
        .unwrap_or_else(|| panic!("no skill {name} in {:?}", names(skills)))
}

#[test]
fn a_scan_lists_every_skill_folder_and_reports_what_is_wrong() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path();
    write(
        dir,
        "pdf/SKILL.md",
        &skill_md("pdf", "Reads PDFs.", "# PDF\n\nUse pdftotext.\n"),
    );
    write(
        dir,
        "broken/SKILL.md",
        "---\ndescription: [oops\n---\n# Broken\n\nStill useful.\n",
    );
    fs::create_dir_all(dir.join("no-file")).unwrap();
    write(dir, "Bad Name/SKILL.md", &skill_md("x", "y", "z"));
    write(dir, ".hidden/SKILL.md", &skill_md("h", "hidden", "h"));
    write(dir, "notes.txt", "not a skill folder");

    let skills = ServerSkills::new(vec![dir.to_path_buf()], Duration::ZERO).current();
    assert_eq!(names(&skills), ["Bad Name", "broken", "no-file", "pdf"]);

    let pdf = find(&skills, "pdf");
    assert!(pdf.usable && pdf.error.is_none(), "{pdf:?}");
    assert_eq!(pdf.description, "Reads PDFs.");
    assert_eq!(pdf.path, "pdf/SKILL.md");

    let broken = find(&skills, "broken");
    assert!(broken.usable, "a broken front matter keeps the body usable");
    assert!(
        broken
            .error
            .as_deref()
            .is_some_and(|e| e.starts_with("front matter: ")),
        "{broken:?}"
    );
    assert_eq!(broken.description, "Still useful.");

    let no_file = find(&skills, "no-file");
    assert!(!no_file.usable);
    assert_eq!(no_file.error.as_deref(), Some("the folder has no SKILL.md"));

    let bad = find(&skills, "Bad Name");
    assert!(!bad.usable);
    assert!(
        bad.error
            .as_deref()
            .is_some_and(|e| e.contains("not a usable skill name")),
        "{bad:?}"
    );
}

#[test]
fn a_rescan_reads_only_the_files_that_changed() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path();
    write(dir, "alpha/SKILL.md", &skill_md("alpha", "First.", "a\n"));
    write(dir, "beta/SKILL.md", &skill_md("beta", "Second.", "b\n"));
    age(&dir.join("alpha/SKILL.md"));
    age(dir);
    let skills = ServerSkills::new(vec![dir.to_path_buf()], Duration::ZERO);

    assert_eq!(names(&skills.check_now(later())), ["alpha", "beta"]);
    assert_eq!(skills.files_read(), 2);
    let unchanged = skills.check_now(later());
    assert_eq!(skills.files_read(), 2, "nothing changed, nothing read");
    assert_eq!(names(&unchanged), ["alpha", "beta"]);

    // Same size, new content: the stamp (mtime, ctime) still changes.
    write(dir, "alpha/SKILL.md", &skill_md("alpha", "Fresh.", "a\n"));
    let edited = skills.check_now(later());
    assert_eq!(skills.files_read(), 3, "only the edited file is read");
    assert_eq!(find(&edited, "alpha").description, "Fresh.");

    write(dir, "gamma/SKILL.md", &skill_md("gamma", "Third.", "c\n"));
    fs::remove_dir_all(dir.join("beta")).unwrap();
    let moved = skills.check_now(later());
    assert_eq!(names(&moved), ["alpha", "gamma"]);
    assert_eq!(skills.files_read(), 4, "only the new skill is read");

    // Replaced by a rename, as editors save: a new inode.
    write(
        dir,
        "gamma/SKILL.md.tmp",
        &skill_md("gamma", "Renamed.", "c\n"),
    );
    fs::rename(dir.join("gamma/SKILL.md.tmp"), dir.join("gamma/SKILL.md")).unwrap();
    assert_eq!(
        find(&skills.check_now(later()), "gamma").description,
        "Renamed."
    );
}

#[test]
fn a_recent_change_is_read_again_until_it_is_old_enough_to_trust() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path();
    write(dir, "alpha/SKILL.md", &skill_md("alpha", "First.", "a\n"));
    let skills = ServerSkills::new(vec![dir.to_path_buf()], Duration::ZERO);

    // Written just now: a second write within the same clock tick could leave the same
    // stamp, so the file is read again at every check until it has settled.
    skills.check_now(SystemTime::now());
    skills.check_now(SystemTime::now());
    assert_eq!(skills.files_read(), 2);
    skills.check_now(later());
    assert_eq!(skills.files_read(), 3, "read once more, now trusted");
    skills.check_now(later());
    assert_eq!(skills.files_read(), 3);
}

#[test]
fn checks_wait_for_the_interval() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path();
    write(dir, "alpha/SKILL.md", &skill_md("alpha", "First.", "a\n"));
    let skills = ServerSkills::new(vec![dir.to_path_buf()], Duration::from_secs(3600));
    assert_eq!(names(&skills.current()), ["alpha"]);

    write(dir, "beta/SKILL.md", &skill_md("beta", "Second.", "b\n"));
    assert_eq!(
        names(&skills.current()),
        ["alpha"],
        "not checked again within the interval"
    );
    assert_eq!(names(&skills.check_now(later())), ["alpha", "beta"]);
}

#[test]
fn an_earlier_root_wins_a_name_clash_and_the_other_is_reported() {
    let first = tempfile::tempdir().unwrap();
    let second = tempfile::tempdir().unwrap();
    write(
        first.path(),
        "pdf/SKILL.md",
        &skill_md("pdf", "First root.", "1\n"),
    );
    write(
        second.path(),
        "pdf/SKILL.md",
        &skill_md("pdf", "Second root.", "2\n"),
    );
    write(
        second.path(),
        "csv/SKILL.md",
        &skill_md("csv", "Reads CSV.", "3\n"),
    );
    let roots = vec![first.path().to_path_buf(), second.path().to_path_buf()];
    let skills = ServerSkills::new(roots, Duration::ZERO).current();

    assert_eq!(names(&skills), ["pdf", "csv", "pdf"]);
    assert!(skills[0].usable && skills[0].description == "First root.");
    assert!(skills[1].usable);
    assert!(!skills[2].usable);
    assert_eq!(
        skills[2].error.as_deref(),
        Some("not used: an earlier skill root has a skill with the same name")
    );
}

#[test]
fn a_root_that_goes_away_offers_nothing_until_it_returns() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("skills");
    write(&dir, "alpha/SKILL.md", &skill_md("alpha", "First.", "a\n"));
    let skills = ServerSkills::new(vec![dir.clone()], Duration::ZERO);
    assert_eq!(names(&skills.current()), ["alpha"]);

    fs::remove_dir_all(&dir).unwrap();
    assert!(skills.current().is_empty());

    write(&dir, "beta/SKILL.md", &skill_md("beta", "Back.", "b\n"));
    assert_eq!(names(&skills.current()), ["beta"]);
}

#[test]
fn an_oversized_skill_is_reported_not_read_whole() {
    let root = tempfile::tempdir().unwrap();
    let big = format!(
        "{}{}",
        skill_md("big", "Too big.", ""),
        "x".repeat(MAX_SKILL_FILE_BYTES)
    );
    write(root.path(), "big/SKILL.md", &big);
    let skills = ServerSkills::new(vec![root.path().to_path_buf()], Duration::ZERO).current();
    assert!(!skills[0].usable);
    let error = skills[0].error.as_deref().unwrap_or_default();
    assert!(
        error.contains(&format!("{} bytes", big.len())) && error.contains("over the limit"),
        "{error}"
    );
}

#[test]
fn a_linked_skill_folder_is_followed_in_an_operator_root() {
    let root = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    write(
        elsewhere.path(),
        "SKILL.md",
        &skill_md("shared", "Shared.", "s\n"),
    );
    std::os::unix::fs::symlink(elsewhere.path(), root.path().join("shared")).unwrap();
    let skills = ServerSkills::new(vec![root.path().to_path_buf()], Duration::ZERO).current();
    assert_eq!(names(&skills), ["shared"]);
    assert!(skills[0].usable && skills[0].description == "Shared.");
}
