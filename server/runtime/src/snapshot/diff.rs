//! What a turn changed: the difference between the manifest the turn started from and the
//! one at its end, with a unified diff for text files (bounded).

use std::io::Read;

use similar::TextDiff;

use super::manifest::{Manifest, Node};
use super::objects::ObjectStore;

/// Largest file (either side) a unified diff is made for.
pub(crate) const MAX_DIFF_INPUT: u64 = 512 * 1024;
/// Largest unified diff of one file; a longer one is cut at a line end.
pub(crate) const MAX_FILE_DIFF: usize = 64 * 1024;
/// Unified diff bytes of one answer in all; later files get none (`diff_truncated`).
pub(crate) const MAX_TOTAL_DIFF: usize = 1024 * 1024;
/// Changes of one answer; more are left out (`TurnChanges::truncated`).
pub const MAX_CHANGES: usize = 10_000;
/// Bytes of paths and diffs of one answer (it must fit in one gRPC message); changes past
/// it are left out (`TurnChanges::truncated`).
pub(crate) const MAX_ANSWER_BYTES: usize = 3 * 1024 * 1024;
/// Per change, besides its path and diff, as an answer counts it.
pub(crate) const CHANGE_OVERHEAD: usize = 64;
/// How long comparing one file may take; past it the diff is coarser, never wrong.
const DIFF_DEADLINE: std::time::Duration = std::time::Duration::from_millis(250);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Changed,
    Removed,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeKind {
    File,
    Dir,
    Symlink,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileChange {
    pub path: String,
    pub change: ChangeKind,
    /// What the path is after the turn (before it, for a removal).
    pub kind: NodeKind,
    pub size_before: u64,
    pub size_after: u64,
    /// Whether either side is not text (or too large to compare): no diff then.
    pub binary: bool,
    /// The unified diff (`--- a/path`, `+++ b/path`), for text files.
    pub unified_diff: String,
    /// Whether the diff was cut, or left out because the answer was full.
    pub diff_truncated: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TurnChanges {
    pub turn: u64,
    pub turn_id: uuid::Uuid,
    /// The turn whose end the workspace was at when this turn started; 0 for a fresh
    /// workspace.
    pub base_turn: u64,
    pub changes: Vec<FileChange>,
    /// Whether more than [`MAX_CHANGES`] changes were found and the rest left out.
    pub truncated: bool,
}

fn kind_of(node: &Node) -> NodeKind {
    match node {
        Node::Dir { .. } => NodeKind::Dir,
        Node::File { .. } => NodeKind::File,
        Node::Symlink { .. } => NodeKind::Symlink,
    }
}

fn size_of(node: Option<&Node>) -> u64 {
    match node {
        Some(Node::File { size, .. }) => *size,
        _ => 0,
    }
}

/// The changes from `before` to `after`, in path order.
pub fn changes(
    before: &Manifest,
    after: &Manifest,
    objects: &ObjectStore,
) -> (Vec<FileChange>, bool) {
    let mut out = Vec::new();
    let mut diff_bytes = 0usize;
    let mut answer_bytes = 0usize;
    let paths: std::collections::BTreeSet<&String> =
        before.entries.keys().chain(after.entries.keys()).collect();
    for path in paths {
        let (old, new) = (before.entries.get(path), after.entries.get(path));
        let change = match (old, new) {
            (None, Some(_)) => ChangeKind::Added,
            (Some(_), None) => ChangeKind::Removed,
            (Some(a), Some(b)) if same(a, b) => continue,
            (Some(_), Some(_)) => ChangeKind::Changed,
            (None, None) => continue,
        };
        answer_bytes += path.len() + CHANGE_OVERHEAD;
        if out.len() == MAX_CHANGES || answer_bytes > MAX_ANSWER_BYTES - MAX_TOTAL_DIFF {
            return (out, true);
        }
        let kind = new.or(old).map_or(NodeKind::File, kind_of);
        let mut entry = FileChange {
            path: path.clone(),
            change,
            kind,
            size_before: size_of(old),
            size_after: size_of(new),
            binary: false,
            unified_diff: String::new(),
            diff_truncated: false,
        };
        let is_file = |n: Option<&Node>| n.is_none_or(|n| matches!(n, Node::File { .. }));
        if kind == NodeKind::File && is_file(old) && is_file(new) {
            let full = diff_bytes >= MAX_TOTAL_DIFF;
            let texts = if full {
                (None, None)
            } else {
                (text_of(old, objects), text_of(new, objects))
            };
            match texts {
                _ if full => entry.diff_truncated = true,
                (Some(a), Some(b)) => {
                    let diff = unified(path, &a, &b);
                    let (diff, cut) = bounded(diff, MAX_FILE_DIFF.min(MAX_TOTAL_DIFF - diff_bytes));
                    diff_bytes += diff.len();
                    entry.unified_diff = diff;
                    entry.diff_truncated = cut;
                }
                _ => entry.binary = true,
            }
        }
        out.push(entry);
    }
    (out, false)
}

/// The unified diff of `path` from `a` to `b` (`--- a/path`, `+++ b/path`).
pub(crate) fn unified(path: &str, a: &str, b: &str) -> String {
    TextDiff::configure()
        .timeout(DIFF_DEADLINE)
        .diff_lines(a, b)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

/// Whether two entries hold the same thing (times alone do not count as a change).
fn same(a: &Node, b: &Node) -> bool {
    match (a, b) {
        (
            Node::File {
                mode: ma,
                object: oa,
                ..
            },
            Node::File {
                mode: mb,
                object: ob,
                ..
            },
        ) => ma == mb && oa == ob,
        _ => a == b,
    }
}

/// The text of a file side (empty when absent); `None` when it is not UTF-8 text, is too
/// large, or its copy cannot be read.
fn text_of(node: Option<&Node>, objects: &ObjectStore) -> Option<String> {
    let Some(Node::File { object, size, .. }) = node else {
        return Some(String::new());
    };
    if *size > MAX_DIFF_INPUT {
        return None;
    }
    let mut bytes = Vec::new();
    objects
        .open(object, *size)
        .ok()?
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.contains(&0) {
        return None;
    }
    String::from_utf8(bytes).ok()
}

/// `text` cut to at most `limit` bytes at a line end.
pub(crate) fn bounded(text: String, limit: usize) -> (String, bool) {
    if text.len() <= limit {
        return (text, false);
    }
    let cut = text.as_bytes()[..limit]
        .iter()
        .rposition(|b| *b == b'\n')
        .map_or(0, |i| i + 1);
    (text[..cut].to_owned(), true)
}
