//! A session's append-only event log: one JSON [`Event`] per line in `events.jsonl`.
//!
//! Appending writes one line with a single `write(2)`, so its cost does not depend on the
//! history length, and readers (subscribers catching up) see it at once. Durability is
//! grouped: the file is synced at turn ends and approval points, not per delta, so a
//! crash loses at most the events written since the last sync, and never an earlier turn.
//! A torn last line (a crash mid-write) is cut off when the log is opened; any other
//! unreadable line makes the whole log unreadable (the store quarantines it).

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use crate::events::Event;

/// Every how many events the in-memory index remembers a file offset. Replay from any
/// sequence reads at most this many extra lines; the index costs 16 bytes per step.
const INDEX_STEP: u64 = 512;

#[derive(Debug, thiserror::Error)]
pub enum LogError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: line {line}: {message}")]
    Corrupt {
        path: PathBuf,
        line: u64,
        message: String,
    },
}

impl LogError {
    fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

impl From<LogError> for crate::error::RuntimeError {
    fn from(e: LogError) -> Self {
        match e {
            LogError::Io { path, source } => Self::storage(path.display().to_string(), source),
            LogError::Corrupt { .. } => Self::storage(
                "event log",
                std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()),
            ),
        }
    }
}

/// What opening a log found, for the session to rebuild its state from.
pub struct Recovered {
    pub log: EventLog,
    /// Bytes cut off the end (a torn last line), if any.
    pub truncated_bytes: u64,
}

/// The writer side of one session's log, plus a sparse sequence → offset index.
pub struct EventLog {
    path: PathBuf,
    file: File,
    /// The end of the last whole event: readers stop here, appends start here.
    len: u64,
    last_sequence: u64,
    /// `(sequence, offset of that event's line)` every [`INDEX_STEP`] events.
    index: Vec<(u64, u64)>,
    /// Set when the log was opened on a read-only file system: `file` only reads, and
    /// the repair of its end (a torn tail cut, a lost newline restored) waits until
    /// the first append finds the file writable.
    read_only: Option<PendingRepair>,
}

/// What opening a read-only log could not fix yet.
#[derive(Clone, Copy, Debug)]
struct PendingRepair {
    /// The last event's line has no newline.
    newline: bool,
}

impl EventLog {
    /// Creates an empty log; fails if one exists.
    pub fn create(path: &Path) -> Result<Self, LogError> {
        let file = OpenOptions::new()
            .create_new(true)
            .read(true)
            .append(true)
            .open(path)
            .map_err(|e| LogError::io(path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            file,
            len: 0,
            last_sequence: 0,
            index: Vec::new(),
            read_only: None,
        })
    }

    /// Opens an existing log, calling `visit` with every event in order. An unreadable last
    /// line (the torn tail of a crash mid-write) is cut off; a bad line anywhere else, or a
    /// sequence gap, is an error.
    ///
    /// On a read-only file system the log opens for reading; the repair of its end waits
    /// for the first append, and appends fail for as long as the file system stays
    /// read-only.
    pub fn open(path: &Path, mut visit: impl FnMut(Event)) -> Result<Recovered, LogError> {
        let writable = OpenOptions::new().read(true).append(true).open(path);
        let (file, read_only) = match writable {
            Ok(file) => (file, false),
            Err(e) if e.kind() == std::io::ErrorKind::ReadOnlyFilesystem => {
                (File::open(path).map_err(|e| LogError::io(path, e))?, true)
            }
            Err(e) => return Err(LogError::io(path, e)),
        };
        let read_handle = File::open(path).map_err(|e| LogError::io(path, e))?;
        let file_len = read_handle
            .metadata()
            .map_err(|e| LogError::io(path, e))?
            .len();
        let mut reader = BufReader::with_capacity(64 * 1024, read_handle);
        let mut line = Vec::new();
        let (mut offset, mut line_no, mut last_sequence) = (0u64, 0u64, 0u64);
        let mut index = Vec::new();
        let mut newline_at_end = true;
        loop {
            line.clear();
            let n = reader
                .read_until(b'\n', &mut line)
                .map_err(|e| LogError::io(path, e))? as u64;
            if n == 0 {
                break;
            }
            line_no += 1;
            let is_last = offset + n == file_len;
            let event = match serde_json::from_slice::<Event>(trim_newline(&line)) {
                Ok(event) => event,
                Err(_) if is_last => break,
                Err(err) => {
                    return Err(LogError::Corrupt {
                        path: path.to_path_buf(),
                        line: line_no,
                        message: crate::quoted::json_error(&err),
                    });
                }
            };
            if event.sequence != last_sequence + 1 {
                return Err(LogError::Corrupt {
                    path: path.to_path_buf(),
                    line: line_no,
                    message: format!(
                        "sequence {} follows {} (gap or duplicate)",
                        event.sequence, last_sequence
                    ),
                });
            }
            if (event.sequence - 1).is_multiple_of(INDEX_STEP) {
                index.push((event.sequence, offset));
            }
            last_sequence = event.sequence;
            newline_at_end = line.last() == Some(&b'\n');
            visit(event);
            offset += n;
        }
        let truncated_bytes = file_len - offset;
        let mut log = Self {
            path: path.to_path_buf(),
            file,
            len: offset,
            last_sequence,
            index,
            read_only: Some(PendingRepair {
                newline: !newline_at_end && truncated_bytes == 0,
            }),
        };
        if !read_only {
            log.repair_end(file_len)?;
        }
        Ok(Recovered {
            log,
            truncated_bytes,
        })
    }

    /// Cuts what follows the last whole event (a torn tail) and restores a lost final
    /// newline, then takes appends.
    fn repair_end(&mut self, file_len: u64) -> Result<(), LogError> {
        let Some(pending) = self.read_only.take() else {
            return Ok(());
        };
        let io = |e| LogError::io(&self.path, e);
        if file_len > self.len {
            self.file.set_len(self.len).map_err(io)?;
        }
        if pending.newline {
            self.file.write_all(b"\n").map_err(io)?;
            self.len += 1;
        }
        if file_len != self.len {
            self.file.sync_data().map_err(io)?;
        }
        Ok(())
    }

    /// A log opened read-only takes appends once its file system is writable again.
    fn reopen_for_appends(&mut self) -> Result<(), LogError> {
        if self.read_only.is_none() {
            return Ok(());
        }
        let io = |e| LogError::io(&self.path, e);
        self.file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&self.path)
            .map_err(io)?;
        let file_len = self.file.metadata().map_err(io)?.len();
        self.repair_end(file_len)
    }

    pub fn last_sequence(&self) -> u64 {
        self.last_sequence
    }

    /// Bytes of whole events in the file.
    pub fn size(&self) -> u64 {
        self.len
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one event. Its sequence must be the next one.
    pub fn append(&mut self, event: &Event) -> Result<(), LogError> {
        debug_assert_eq!(event.sequence, self.last_sequence + 1);
        self.reopen_for_appends()?;
        // Most events fit; a larger one grows the buffer once or twice.
        let mut line = Vec::with_capacity(512);
        serde_json::to_writer(&mut line, event).map_err(|e| LogError::Corrupt {
            path: self.path.clone(),
            line: event.sequence,
            message: format!("cannot encode event: {e}"),
        })?;
        line.push(b'\n');
        if let Err(e) = self.file.write_all(&line) {
            // A partial write would leave a torn line mid-log; cut it off now so the next
            // append starts on a clean boundary.
            let _ = self.file.set_len(self.len);
            return Err(LogError::io(&self.path, e));
        }
        if (event.sequence - 1).is_multiple_of(INDEX_STEP) {
            self.index.push((event.sequence, self.len));
        }
        self.len += line.len() as u64;
        self.last_sequence = event.sequence;
        Ok(())
    }

    /// Makes everything appended so far durable.
    pub fn sync(&self) -> Result<(), LogError> {
        self.file
            .sync_data()
            .map_err(|e| LogError::io(&self.path, e))
    }

    /// A reader positioned at or shortly before the first event after `after_sequence`.
    pub fn reader_after(&self, after_sequence: u64) -> Result<LogReader, LogError> {
        let wanted = after_sequence + 1;
        let offset = match self.index.partition_point(|(seq, _)| *seq <= wanted) {
            0 => 0,
            i => self.index[i - 1].1,
        };
        LogReader::open(&self.path, offset, after_sequence, self.len)
    }
}

/// Reads events of a log from an offset, skipping those at or before a sequence, up to
/// the length the log had when the reader was made (later lines may be half-written).
pub struct LogReader {
    path: PathBuf,
    reader: BufReader<std::io::Take<File>>,
    after_sequence: u64,
    line: Vec<u8>,
}

impl LogReader {
    fn open(path: &Path, offset: u64, after_sequence: u64, end: u64) -> Result<Self, LogError> {
        let mut file = File::open(path).map_err(|e| LogError::io(path, e))?;
        file.seek(SeekFrom::Start(offset))
            .map_err(|e| LogError::io(path, e))?;
        Ok(Self {
            path: path.to_path_buf(),
            reader: BufReader::with_capacity(64 * 1024, file.take(end.saturating_sub(offset))),
            after_sequence,
            line: Vec::new(),
        })
    }

    /// The next event, or `None` at the end.
    pub fn next_event(&mut self) -> Result<Option<Event>, LogError> {
        loop {
            self.line.clear();
            let n = self
                .reader
                .read_until(b'\n', &mut self.line)
                .map_err(|e| LogError::io(&self.path, e))?;
            if n == 0 {
                return Ok(None);
            }
            let event: Event = serde_json::from_slice(trim_newline(&self.line)).map_err(|e| {
                LogError::Corrupt {
                    path: self.path.clone(),
                    line: 0,
                    message: crate::quoted::json_error(&e),
                }
            })?;
            if event.sequence > self.after_sequence {
                return Ok(Some(event));
            }
        }
    }
}

/// Calls `visit` with every whole event of the log at `path` from byte `offset` on (a line
/// start); a line that does not parse, such as a torn tail, ends the scan. Answers the
/// offset after the last event visited.
pub fn scan_from(path: &Path, offset: u64, mut visit: impl FnMut(Event)) -> Result<u64, LogError> {
    let mut file = File::open(path).map_err(|e| LogError::io(path, e))?;
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| LogError::io(path, e))?;
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    let (mut line, mut end) = (Vec::new(), offset);
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| LogError::io(path, e))?;
        if n == 0 || line.last() != Some(&b'\n') {
            return Ok(end);
        }
        match serde_json::from_slice::<Event>(trim_newline(&line)) {
            Ok(event) => visit(event),
            Err(_) => return Ok(end),
        }
        end += n as u64;
    }
}

fn trim_newline(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\n").unwrap_or(line)
}
