//! The default long-term memory: one JSON Lines file per agent,
//! `<home>/memory/<namespace>/<bundle>/<agent>.jsonl`, oldest record first.
//!
//! The path is built from names the bundle store has already validated (lowercase
//! letters, digits, `.`, `_`, `-`, never starting with a dot), checked again here, so no
//! scope can point outside the memory folder. A capture appends one line; once the file
//! holds twice its bounds it is compacted (the newest records within the bounds written to
//! a temporary file, renamed over it). So a capture costs one small write, not a rewrite
//! of the file, and a crash leaves the old file or the new one, at worst with a torn last
//! line (skipped, and cut off by the next compaction). Recall applies the bounds, so what
//! memory holds is the same as if every capture compacted. Captures are serialized by
//! one lock, held for a write of one line.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use futures::FutureExt;
use futures::future::BoxFuture;

use super::long_term::{MemoryError, MemoryProvider, MemoryRecord, MemoryScope};
use crate::bundle::name_problem;

/// How much one agent's file may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileMemoryLimits {
    pub max_records: usize,
    pub max_bytes: usize,
}

/// Long-term memory in files under one folder.
pub struct FileMemory {
    root: PathBuf,
    limits: FileMemoryLimits,
    /// What each file written since startup holds; the lock serializes captures.
    files: Arc<Mutex<HashMap<PathBuf, FileSize>>>,
}

/// Records and bytes in one file.
#[derive(Clone, Copy, Debug, Default)]
struct FileSize {
    records: usize,
    bytes: usize,
}

impl FileMemory {
    pub fn new(root: impl Into<PathBuf>, limits: FileMemoryLimits) -> Self {
        Self {
            root: root.into(),
            limits,
            files: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    /// The file of `scope`, refused unless every part is a valid name.
    fn path(root: &Path, scope: &MemoryScope) -> Result<PathBuf, MemoryError> {
        for (what, name) in [
            ("namespace", &scope.namespace),
            ("bundle", &scope.bundle),
            ("agent", &scope.agent_id),
        ] {
            if let Some(problem) = name_problem(name) {
                return Err(MemoryError::Refused {
                    scope: scope.to_string(),
                    message: format!("the {what} name {problem}"),
                });
            }
        }
        Ok(root
            .join(&scope.namespace)
            .join(&scope.bundle)
            .join(format!("{}.jsonl", scope.agent_id)))
    }
}

impl MemoryProvider for FileMemory {
    fn capture(
        &self,
        scope: MemoryScope,
        record: MemoryRecord,
    ) -> BoxFuture<'static, Result<(), MemoryError>> {
        let root = self.root.clone();
        let limits = self.limits;
        let files = self.files.clone();
        async move {
            let path = Self::path(&root, &scope)?;
            blocking(move || {
                let mut files = crate::sync::lock(&files);
                // Unknown until read once: then a file a crash left with a torn last line
                // is compacted rather than appended to.
                let size = files.remove(&path);
                let size = capture(&root, &path, record, size, limits)?;
                files.insert(path, size);
                Ok(())
            })
            .await
        }
        .boxed()
    }

    fn recall(
        &self,
        scope: MemoryScope,
        limit: usize,
    ) -> BoxFuture<'static, Result<Vec<MemoryRecord>, MemoryError>> {
        let root = self.root.clone();
        let limits = self.limits;
        async move {
            let path = Self::path(&root, &scope)?;
            blocking(move || {
                let mut records = newest_within(read(&path)?, limits);
                let skip = records.len().saturating_sub(limit);
                records.drain(..skip);
                Ok(records)
            })
            .await
        }
        .boxed()
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, MemoryError> + Send + 'static,
) -> Result<T, MemoryError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| MemoryError::Storage {
            context: "memory task".into(),
            source: std::io::Error::other(e),
        })?
}

/// The records of a file, oldest first; a missing file has none. A line that does not
/// parse (written by a newer server, or damaged) is skipped, not fatal.
fn read(path: &Path) -> Result<Vec<MemoryRecord>, MemoryError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(MemoryError::Storage {
                context: format!("read {}", path.display()),
                source,
            });
        }
    };
    let mut records = Vec::new();
    for (number, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str(line) {
            Ok(record) => records.push(record),
            Err(e) => {
                let error = crate::quoted::json_error(&e);
                tracing::warn!(file = %path.display(), line = number + 1, %error, "skipping an unreadable memory record")
            }
        }
    }
    Ok(records)
}

/// Appends `record` to the file holding `size` (`None`: not known yet), or compacts the
/// file when it would then hold more than twice its bounds (or may end in a torn line).
/// Answers what the file holds afterwards.
fn capture(
    root: &Path,
    path: &Path,
    record: MemoryRecord,
    size: Option<FileSize>,
    limits: FileMemoryLimits,
) -> Result<FileSize, MemoryError> {
    let io = |what: &str, source| MemoryError::Storage {
        context: format!("{what} {}", path.display()),
        source,
    };
    let mut line =
        serde_json::to_string(&record).map_err(|e| io("encode a record for", e.into()))?;
    line.push('\n');
    if let Some(size) = size {
        let grown = FileSize {
            records: size.records + 1,
            bytes: size.bytes + line.len(),
        };
        if grown.records <= 2 * limits.max_records && grown.bytes <= 2 * limits.max_bytes {
            append(root, path, &line).map_err(|e| io("append to", e))?;
            return Ok(grown);
        }
    }
    let mut records = read(path)?;
    records.push(record);
    let kept: Vec<String> = newest_within(records, limits)
        .iter()
        .filter_map(|r| serde_json::to_string(r).ok())
        .collect();
    write(root, path, &kept)?;
    Ok(FileSize {
        records: kept.len(),
        bytes: kept.iter().map(|l| l.len() + 1).sum(),
    })
}

fn append(root: &Path, path: &Path, line: &str) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    create_private_dir(path.parent().unwrap_or(root))?;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(line.as_bytes())
}

/// The newest records within both bounds, oldest first: what a compaction keeps. A
/// newest record larger than the byte bound alone leaves nothing.
fn newest_within(records: Vec<MemoryRecord>, limits: FileMemoryLimits) -> Vec<MemoryRecord> {
    let mut kept = Vec::new();
    let mut bytes = 0;
    for record in records.into_iter().rev() {
        if kept.len() == limits.max_records {
            break;
        }
        let Ok(line) = serde_json::to_string(&record) else {
            continue;
        };
        if bytes + line.len() + 1 > limits.max_bytes {
            break;
        }
        bytes += line.len() + 1;
        kept.push(record);
    }
    kept.reverse();
    kept
}

fn write(root: &Path, path: &Path, lines: &[String]) -> Result<(), MemoryError> {
    let io = |what: &str, source| MemoryError::Storage {
        context: format!("{what} {}", path.display()),
        source,
    };
    let dir = path.parent().unwrap_or(root);
    create_private_dir(dir).map_err(|e| io("create the folder of", e))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| io("write", e))?;
    for line in lines {
        writeln!(tmp, "{line}").map_err(|e| io("write", e))?;
    }
    tmp.persist(path).map_err(|e| io("replace", e.error))?;
    Ok(())
}

/// Memory holds users' words: its folders are the server user's alone.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use uuid::Uuid;

    use super::*;

    fn scope(agent: &str) -> MemoryScope {
        MemoryScope {
            namespace: "local".into(),
            bundle: "notes".into(),
            agent_id: agent.into(),
        }
    }

    fn record(n: usize, text_bytes: usize) -> MemoryRecord {
        MemoryRecord {
            session_id: Uuid::nil(),
            turn_id: Uuid::nil(),
            created_at_ms: n as u64,
            prompt: format!("prompt {n}"),
            response: "r".repeat(text_bytes),
        }
    }

    fn store(dir: &tempfile::TempDir, max_records: usize, max_bytes: usize) -> FileMemory {
        FileMemory::new(
            dir.path().join("memory"),
            FileMemoryLimits {
                max_records,
                max_bytes,
            },
        )
    }

    #[tokio::test]
    async fn records_are_recalled_newest_last_within_the_limit() {
        let dir = tempfile::tempdir().expect("dir");
        let memory = store(&dir, 10, 1 << 20);
        assert!(
            memory
                .recall(scope("main"), 5)
                .await
                .expect("empty")
                .is_empty()
        );
        for n in 0..4 {
            memory
                .capture(scope("main"), record(n, 3))
                .await
                .expect("capture");
        }
        let recalled = memory.recall(scope("main"), 2).await.expect("recall");
        let prompts: Vec<&str> = recalled.iter().map(|r| r.prompt.as_str()).collect();
        assert_eq!(prompts, ["prompt 2", "prompt 3"]);
        assert!(
            memory
                .recall(scope("other"), 5)
                .await
                .expect("other")
                .is_empty(),
            "per agent"
        );
        let file = dir.path().join("memory/local/notes/main.jsonl");
        assert_eq!(
            std::fs::read_to_string(&file)
                .expect("file")
                .lines()
                .count(),
            4
        );
        let mode = std::fs::metadata(&file).expect("meta").permissions().mode();
        assert_eq!(mode & 0o077, 0, "private file: {mode:o}");
        let mode = std::fs::metadata(file.parent().expect("dir"))
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "private folder: {mode:o}");
    }

    #[tokio::test]
    async fn recall_stays_within_the_bounds_and_the_file_within_twice_them() {
        let dir = tempfile::tempdir().expect("dir");
        let memory = store(&dir, 3, 1_000);
        for n in 0..10 {
            memory
                .capture(scope("main"), record(n, 10))
                .await
                .expect("capture");
        }
        let kept = memory.recall(scope("main"), 100).await.expect("recall");
        let stamps: Vec<u64> = kept.iter().map(|r| r.created_at_ms).collect();
        assert_eq!(stamps, [7, 8, 9], "oldest dropped first");

        for n in 10..20 {
            memory
                .capture(scope("main"), record(n, 300))
                .await
                .expect("capture");
        }
        let file = dir.path().join("memory/local/notes/main.jsonl");
        let size = std::fs::metadata(&file).expect("meta").len();
        assert!(size <= 2_000, "compacted at twice the bound: {size} bytes");
        let kept = memory.recall(scope("main"), 100).await.expect("recall");
        assert_eq!(kept.len(), 2, "two 400-byte records fit in 1000 bytes");
        assert_eq!(kept[1].created_at_ms, 19);

        memory
            .capture(scope("main"), record(20, 5_000))
            .await
            .expect("capture");
        let kept = memory.recall(scope("main"), 100).await.expect("recall");
        assert!(kept.is_empty(), "a record over the byte bound is not kept");
    }

    #[tokio::test]
    async fn damaged_lines_are_skipped_and_bad_scopes_refused() {
        let dir = tempfile::tempdir().expect("dir");
        let memory = store(&dir, 10, 1 << 20);
        memory
            .capture(scope("main"), record(1, 1))
            .await
            .expect("capture");
        let file = dir.path().join("memory/local/notes/main.jsonl");
        let mut text = std::fs::read_to_string(&file).expect("read");
        text.push_str("{not json\n");
        std::fs::write(&file, text).expect("write");
        assert_eq!(
            memory
                .recall(scope("main"), 10)
                .await
                .expect("recall")
                .len(),
            1
        );

        for agent in ["../escape", "", ".hidden", "a/b"] {
            let e = memory
                .capture(scope(agent), record(1, 1))
                .await
                .expect_err("refused");
            assert!(matches!(e, MemoryError::Refused { .. }), "{agent}: {e}");
        }
        let entries: Vec<_> = std::fs::read_dir(dir.path()).expect("ls").collect();
        assert_eq!(entries.len(), 1, "nothing written outside memory/");
    }

    #[tokio::test]
    async fn captures_append_and_a_torn_tail_is_cut_off_by_the_next_start() {
        let dir = tempfile::tempdir().expect("dir");
        let memory = store(&dir, 3, 1 << 20);
        for n in 0..6 {
            memory
                .capture(scope("main"), record(n, 1))
                .await
                .expect("capture");
        }
        let file = dir.path().join("memory/local/notes/main.jsonl");
        let lines = |file: &Path| std::fs::read_to_string(file).expect("read").lines().count();
        assert_eq!(lines(&file), 6, "appended up to twice the count");
        memory
            .capture(scope("main"), record(6, 1))
            .await
            .expect("capture");
        assert_eq!(lines(&file), 3, "compacted to the bound");

        // A crash mid-append: the next server compacts before appending.
        let mut text = std::fs::read_to_string(&file).expect("read");
        text.push_str("{\"session_id\":");
        std::fs::write(&file, text).expect("write");
        let restarted = store(&dir, 3, 1 << 20);
        restarted
            .capture(scope("main"), record(7, 1))
            .await
            .expect("capture");
        let kept = restarted.recall(scope("main"), 10).await.expect("recall");
        let stamps: Vec<u64> = kept.iter().map(|r| r.created_at_ms).collect();
        assert_eq!(stamps, [5, 6, 7]);
        assert!(
            std::fs::read_to_string(&file)
                .expect("read")
                .ends_with("}\n")
        );
    }
}
