//! A process's output: each stream decoded as it comes and kept up to a cap, and what is
//! kept forwarded in chunks worth an event each.
//!
//! Reads cut the byte stream anywhere, also inside a multi-byte character; the few bytes
//! of an unfinished character wait for the next read instead of becoming U+FFFD. Past the
//! cap the stream is still read (a process blocked on a full pipe would never exit) but
//! nothing more is kept or forwarded.
//!
//! A process writing a byte at a time would otherwise make one event per byte, each a few
//! hundred bytes of log: [`Coalescer`] gathers output for a moment before forwarding it,
//! and bounds what one process may put in the log.

use std::time::Duration;

use tokio::time::Instant;

use crate::events::OutputStream;

/// A capped, incrementally decoded output stream.
#[derive(Debug)]
pub(crate) struct CappedStream {
    cap: usize,
    accepted: usize,
    pending: Vec<u8>,
    text: String,
    truncated: bool,
}

impl CappedStream {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            cap,
            accepted: 0,
            pending: Vec::new(),
            text: String::new(),
            truncated: false,
        }
    }

    /// Takes one read's bytes; answers the newly decoded text to forward, if any.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> Option<String> {
        let room = self.cap.saturating_sub(self.accepted);
        if bytes.len() > room {
            self.truncated = true;
        }
        let taken = &bytes[..bytes.len().min(room)];
        if taken.is_empty() {
            return None;
        }
        self.accepted += taken.len();
        self.pending.extend_from_slice(taken);
        let decoded = decode_complete(&mut self.pending);
        self.keep(decoded)
    }

    /// Decodes what is left (an unfinished character becomes U+FFFD) at end of stream.
    pub(crate) fn finish(&mut self) -> Option<String> {
        if self.pending.is_empty() {
            return None;
        }
        let rest = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        self.keep(rest)
    }

    fn keep(&mut self, decoded: String) -> Option<String> {
        if decoded.is_empty() {
            return None;
        }
        self.text.push_str(&decoded);
        Some(decoded)
    }

    pub(crate) fn truncated(&self) -> bool {
        self.truncated
    }

    pub(crate) fn into_text(self) -> String {
        self.text
    }
}

/// Decodes the complete characters of `buf` (invalid bytes become U+FFFD) and leaves only
/// an unfinished trailing character in it.
fn decode_complete(buf: &mut Vec<u8>) -> String {
    let mut out = String::new();
    let mut rest: &[u8] = buf;
    loop {
        match std::str::from_utf8(rest) {
            Ok(valid) => {
                out.push_str(valid);
                rest = &[];
                break;
            }
            Err(e) => {
                let (valid, tail) = rest.split_at(e.valid_up_to());
                out.push_str(&String::from_utf8_lossy(valid));
                match e.error_len() {
                    Some(bad) => {
                        out.push(char::REPLACEMENT_CHARACTER);
                        rest = &tail[bad..];
                    }
                    None => {
                        rest = tail;
                        break;
                    }
                }
            }
        }
    }
    let unfinished = rest.to_vec();
    *buf = unfinished;
    out
}

/// Forwarded at once when this much is waiting.
const FLUSH_BYTES: usize = 16 * 1024;
/// How long output waits for more before it is forwarded.
const LINGER: Duration = Duration::from_millis(50);
/// What one output event costs in the log besides its text (ids, sequence, time, names).
const EVENT_OVERHEAD: usize = 320;
/// Events for small chunks beyond the text kept may cost this much log in all.
const SMALL_CHUNK_ALLOWANCE: usize = 64 * 1024;

/// Gathers decoded output into chunks: forwarded when [`FLUSH_BYTES`] wait, when the other
/// stream speaks, or after [`LINGER`] — but on time only while events have cost no more
/// log than the text kept so far (plus [`SMALL_CHUNK_ALLOWANCE`]); past that a chunk waits
/// for more output or the end. So the log of a process stays within about twice what it
/// printed (plus the allowance), and within `log_cap` bytes of text in all.
#[derive(Debug)]
pub(crate) struct Coalescer {
    pending: Option<(OutputStream, String)>,
    /// When the pending chunk is due.
    due: Option<Instant>,
    /// Text forwarded so far, as it is escaped in JSON.
    logged: usize,
    /// Text kept so far.
    kept: usize,
    /// Log spent on events beyond their text.
    overhead: usize,
    log_cap: usize,
    /// Output was held back by `log_cap`.
    capped: bool,
}

impl Coalescer {
    pub(crate) fn new(log_cap: usize) -> Self {
        Self {
            pending: None,
            due: None,
            logged: 0,
            kept: 0,
            overhead: 0,
            log_cap,
            capped: false,
        }
    }

    /// When the pending chunk should be looked at again, if there is one.
    pub(crate) fn due(&self) -> Option<Instant> {
        self.due
    }

    /// Whether output was held back by the log cap.
    pub(crate) fn capped(&self) -> bool {
        self.capped
    }

    /// Takes decoded text of `stream`.
    pub(crate) fn push(
        &mut self,
        stream: OutputStream,
        text: &str,
        forward: &mut (dyn FnMut(OutputStream, String) + Send),
    ) {
        self.kept += text.len();
        if self.pending.as_ref().is_some_and(|(s, _)| *s != stream) {
            self.flush(forward);
        }
        let (_, pending) = self.pending.get_or_insert_with(|| (stream, String::new()));
        pending.push_str(text);
        if pending.len() >= FLUSH_BYTES {
            self.flush(forward);
        } else if self.due.is_none() {
            self.due = Some(Instant::now() + LINGER);
        }
    }

    /// The pending chunk's time has come.
    pub(crate) fn on_due(&mut self, forward: &mut (dyn FnMut(OutputStream, String) + Send)) {
        if self.overhead + EVENT_OVERHEAD <= self.kept + SMALL_CHUNK_ALLOWANCE {
            self.flush(forward);
        } else {
            // Too small to be worth an event now: it goes with more output, or at the end.
            self.due = None;
        }
    }

    /// Forwards whatever is pending (at the end of the process).
    pub(crate) fn finish(&mut self, forward: &mut (dyn FnMut(OutputStream, String) + Send)) {
        self.flush(forward);
    }

    fn flush(&mut self, forward: &mut (dyn FnMut(OutputStream, String) + Send)) {
        self.due = None;
        let Some((stream, text)) = self.pending.take() else {
            return;
        };
        if text.is_empty() {
            return;
        }
        let cost = escaped_len(&text);
        if self.logged + cost > self.log_cap {
            self.capped = true;
            return;
        }
        self.logged += cost;
        self.overhead += EVENT_OVERHEAD;
        forward(stream, text);
    }
}

/// The length of `text` as a JSON string (control characters take six bytes).
fn escaped_len(text: &str) -> usize {
    text.chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' => 2,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf8(),
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    type Seen = std::sync::Arc<std::sync::Mutex<Vec<(OutputStream, String)>>>;

    fn collect() -> (Seen, impl FnMut(OutputStream, String) + Send) {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = seen.clone();
        (seen, move |stream, text| {
            sink.lock().expect("lock").push((stream, text));
        })
    }

    #[tokio::test(start_paused = true)]
    async fn bytes_one_at_a_time_become_few_events() {
        let (seen, mut forward) = collect();
        let mut coalescer = Coalescer::new(usize::MAX);
        for _ in 0..300_000 {
            coalescer.push(OutputStream::Stdout, "x", &mut forward);
            if coalescer.due().is_some_and(|due| due <= Instant::now()) {
                coalescer.on_due(&mut forward);
            }
            tokio::time::advance(Duration::from_micros(10)).await;
        }
        coalescer.finish(&mut forward);
        let seen = seen.lock().expect("lock");
        let text: String = seen.iter().map(|(_, t)| t.as_str()).collect();
        assert_eq!(text.len(), 300_000);
        let log = text.len() + seen.len() * EVENT_OVERHEAD;
        assert!(log <= 2 * text.len(), "{} events for 300 KB", seen.len());
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_trickle_stops_costing_events_once_its_allowance_is_spent() {
        let (seen, mut forward) = collect();
        let mut coalescer = Coalescer::new(usize::MAX);
        for _ in 0..10_000 {
            coalescer.push(OutputStream::Stdout, ".", &mut forward);
            tokio::time::advance(LINGER).await;
            coalescer.on_due(&mut forward);
        }
        coalescer.finish(&mut forward);
        let seen = seen.lock().expect("lock");
        let text: usize = seen.iter().map(|(_, t)| t.len()).sum();
        assert_eq!(text, 10_000);
        assert!(
            seen.len() * EVENT_OVERHEAD <= text + SMALL_CHUNK_ALLOWANCE + EVENT_OVERHEAD,
            "{} events",
            seen.len()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn streams_keep_their_order_and_the_log_cap_holds() {
        let (seen, mut forward) = collect();
        let mut coalescer = Coalescer::new(10);
        coalescer.push(OutputStream::Stdout, "out1", &mut forward);
        coalescer.push(OutputStream::Stderr, "err1", &mut forward);
        coalescer.push(OutputStream::Stdout, "\u{1}\u{1}", &mut forward);
        coalescer.finish(&mut forward);
        let seen = seen.lock().expect("lock");
        assert_eq!(
            *seen,
            vec![
                (OutputStream::Stdout, "out1".to_owned()),
                (OutputStream::Stderr, "err1".to_owned()),
            ]
        );
        assert!(coalescer.capped());
    }

    #[test]
    fn split_characters_are_joined_across_reads() {
        let mut stream = CappedStream::new(1024);
        let bytes = "né😀".as_bytes();
        let mut forwarded = String::new();
        for byte in bytes {
            if let Some(text) = stream.push(std::slice::from_ref(byte)) {
                forwarded.push_str(&text);
            }
        }
        assert_eq!(stream.finish(), None);
        assert_eq!(forwarded, "né😀");
        assert!(!stream.truncated());
        assert_eq!(stream.into_text(), "né😀");
    }

    #[test]
    fn invalid_bytes_become_replacement_characters() {
        let mut stream = CappedStream::new(1024);
        assert_eq!(stream.push(b"a\xffb").as_deref(), Some("a\u{fffd}b"));
        assert_eq!(stream.push(b"\xe2\x82").as_deref(), None);
        assert_eq!(stream.finish().as_deref(), Some("\u{fffd}"));
    }

    #[test]
    fn output_past_the_cap_is_dropped_and_noted() {
        let mut stream = CappedStream::new(5);
        assert_eq!(stream.push(b"abc").as_deref(), Some("abc"));
        assert_eq!(stream.push(b"defgh").as_deref(), Some("de"));
        assert_eq!(stream.push(b"more"), None);
        assert!(stream.truncated());
        assert_eq!(stream.into_text(), "abcde");
    }
}
