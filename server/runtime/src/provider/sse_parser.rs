//! An incremental parser of the `text/event-stream` format (WHATWG HTML, "Server-sent
//! events"): bytes in as they arrive, complete events out.
//!
//! The buffer is read through an offset and compacted once per chunk, never per line, so
//! an event costs the same however much of the stream arrives at once: a fast local model
//! server can hand over hundreds of events in one read, and copying the rest of the buffer
//! after each line would make that quadratic.

/// One dispatched event. Only what callers use is kept: the type and the data (`id` and
/// `retry` serve reconnecting browsers, and a model call is never resumed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// `message` unless the stream named another.
    pub event: String,
    /// The `data` lines, joined by `\n`.
    pub data: String,
}

/// A line of the stream that is not UTF-8.
#[derive(Debug, thiserror::Error)]
#[error("line {line} is not UTF-8: {source}")]
pub(crate) struct NotUtf8 {
    pub line: u64,
    #[source]
    pub source: std::str::Utf8Error,
}

/// A UTF-8 byte order mark, allowed (and dropped) at the very start of the stream.
const BOM: &[u8] = b"\xEF\xBB\xBF";

#[derive(Debug, Default)]
pub(crate) struct SseParser {
    buffer: Vec<u8>,
    /// Bytes of `buffer` already parsed.
    start: usize,
    /// Lines parsed so far, for error messages.
    lines: u64,
    /// A byte order mark may only open the stream.
    started: bool,
    /// The last line ended with CR: an LF opening the next chunk belongs to it.
    after_cr: bool,
    event: String,
    data: String,
    has_data: bool,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds bytes read from the stream.
    pub fn push(&mut self, chunk: &[u8]) {
        if self.start > 0 {
            self.buffer.drain(..self.start);
            self.start = 0;
        }
        self.buffer.extend_from_slice(chunk);
    }

    /// The next complete event in what was pushed so far; `None` until more arrives.
    pub fn next_event(&mut self) -> Result<Option<SseEvent>, NotUtf8> {
        while let Some((line_end, next)) = self.next_line() {
            let line = &self.buffer[self.start..line_end];
            self.lines += 1;
            let line = std::str::from_utf8(line).map_err(|source| NotUtf8 {
                line: self.lines,
                source,
            })?;
            let dispatched = if line.is_empty() {
                self.dispatch()
            } else {
                let (field, value) = match line.split_once(':') {
                    Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                    None => (line, ""),
                };
                match field {
                    "data" => {
                        if self.has_data {
                            self.data.push('\n');
                        }
                        self.data.push_str(value);
                        self.has_data = true;
                    }
                    "event" => value.clone_into(&mut self.event),
                    // Comments (an empty field name), `id`, `retry` and unknown fields.
                    _ => {}
                }
                None
            };
            self.start = next;
            if dispatched.is_some() {
                return Ok(dispatched);
            }
        }
        Ok(None)
    }

    /// The end of the next complete line and where the one after it starts. A CR at the
    /// very end of the buffer ends a line; an LF that then opens the next chunk is skipped.
    fn next_line(&mut self) -> Option<(usize, usize)> {
        if !self.started {
            let rest = &self.buffer[self.start..];
            if rest.starts_with(BOM) {
                self.start += BOM.len();
            } else if BOM.starts_with(rest) {
                return None;
            }
            self.started = true;
        }
        if self.after_cr && self.buffer.get(self.start) == Some(&b'\n') {
            self.start += 1;
        }
        self.after_cr = false;
        let rest = &self.buffer[self.start..];
        let at = rest.iter().position(|b| *b == b'\n' || *b == b'\r')?;
        let end = self.start + at;
        let next = match (rest[at], rest.get(at + 1)) {
            (b'\r', Some(b'\n')) => end + 2,
            (b'\r', None) => {
                self.after_cr = true;
                end + 1
            }
            _ => end + 1,
        };
        Some((end, next))
    }

    /// An empty line ends the event being built; one without data is dropped.
    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = std::mem::take(&mut self.event);
        if !std::mem::take(&mut self.has_data) {
            return None;
        }
        Some(SseEvent {
            event: if event.is_empty() {
                "message".to_owned()
            } else {
                event
            },
            data: std::mem::take(&mut self.data),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events_of(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut parser = SseParser::new();
        let mut events = Vec::new();
        for chunk in chunks {
            parser.push(chunk);
            while let Some(event) = parser.next_event().expect("utf-8") {
                events.push(event);
            }
        }
        events
    }

    fn message(data: &str) -> SseEvent {
        SseEvent {
            event: "message".into(),
            data: data.into(),
        }
    }

    #[test]
    fn fields_comments_and_multi_line_data() {
        let events = events_of(&[
            b": a comment\ndata: {\"a\":1}\n\nevent: response.created\ndata:x\ndata: y\nid: 7\nretry: 10\n\n",
        ]);
        assert_eq!(
            events,
            [
                message("{\"a\":1}"),
                SseEvent {
                    event: "response.created".into(),
                    data: "x\ny".into()
                }
            ]
        );
    }

    #[test]
    fn events_split_anywhere_across_chunks_and_every_line_ending() {
        let stream = b"\xEF\xBB\xBFdata: one\r\n\r\ndata: two\r\rdata: three\n\ndata:\n\n";
        let whole = events_of(&[stream]);
        assert_eq!(
            whole,
            [
                message("one"),
                message("two"),
                message("three"),
                message("")
            ]
        );
        for size in 1..stream.len() {
            let chunks: Vec<&[u8]> = stream.chunks(size).collect();
            assert_eq!(events_of(&chunks), whole, "chunks of {size} bytes");
        }
    }

    #[test]
    fn an_event_without_data_or_without_its_blank_line_is_not_dispatched() {
        assert!(events_of(&[b"event: ping\n\n"]).is_empty());
        assert!(events_of(&[b"data: cut off\n"]).is_empty());
        assert_eq!(events_of(&[b"data: a\n\n\n\n"]), [message("a")]);
    }

    #[test]
    fn a_line_that_is_not_utf8_is_an_error_naming_it() {
        let mut parser = SseParser::new();
        parser.push(b"data: ok\n\ndata: \xff\n\n");
        assert_eq!(parser.next_event().expect("first"), Some(message("ok")));
        let error = parser.next_event().expect_err("second is not UTF-8");
        assert_eq!(error.line, 3);
    }

    #[test]
    fn many_events_in_one_chunk_are_parsed_in_one_pass() {
        let chunk = "data: {\"delta\":\"abcd\"}\n\n".repeat(20_000);
        let events = events_of(&[chunk.as_bytes()]);
        assert_eq!(events.len(), 20_000);
        assert!(events.iter().all(|e| e.data == "{\"delta\":\"abcd\"}"));
    }
}
