//! One output stream of a process: decoded as it comes, kept up to a cap.
//!
//! Reads cut the byte stream anywhere, also inside a multi-byte character; the few bytes
//! of an unfinished character wait for the next read instead of becoming U+FFFD. Past the
//! cap the stream is still read (a process blocked on a full pipe would never exit) but
//! nothing more is kept or forwarded.

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

#[cfg(test)]
mod tests {
    use super::*;

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
