//! A small, spec-strict Server-Sent Events splitter, so tests (here and in the harness)
//! can turn the bytes a client received back into events without a client library, and
//! can feed those bytes in arbitrary pieces.
//!
//! It follows the WHATWG event-stream parsing rules that the upstream adapter's parser
//! (`eventsource-parser`) implements: lines end with CRLF, LF or CR; a leading UTF-8 BOM
//! is skipped; `:` starts a comment; `data` lines accumulate (joined by `\n`) until a
//! blank line dispatches the event; one space after the colon is dropped; other fields
//! (`event`, `id`, `retry`) are ignored; an event not closed by a blank line before the
//! end of the stream is discarded.

/// One item of an event stream, in arrival order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseItem {
    /// A dispatched event's data (its `data:` lines joined with `\n`).
    Data(String),
    /// A comment line, without the leading `:` (e.g. `" keep-alive"`).
    Comment(String),
}

/// Incremental SSE splitter: push byte pieces, get the items completed so far.
#[derive(Debug, Clone, Default)]
pub struct SseParser {
    line: Vec<u8>,
    data: String,
    has_data: bool,
    skipped_cr: bool,
    started: bool,
}

impl SseParser {
    /// A parser at the start of a stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed the next piece of the stream; returns the items it completed.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseItem> {
        let mut items = Vec::new();
        for &byte in bytes {
            if self.skipped_cr {
                self.skipped_cr = false;
                if byte == b'\n' {
                    continue;
                }
            }
            match byte {
                b'\n' => self.end_line(&mut items),
                b'\r' => {
                    self.end_line(&mut items);
                    self.skipped_cr = true;
                }
                _ => self.line.push(byte),
            }
        }
        items
    }

    /// True if bytes of an unfinished line or an undispatched event are buffered (a
    /// stream ending now would lose them).
    pub fn has_pending_event(&self) -> bool {
        !self.line.is_empty() || self.has_data
    }

    fn end_line(&mut self, items: &mut Vec<SseItem>) {
        let mut raw = std::mem::take(&mut self.line);
        if !self.started {
            self.started = true;
            if raw.starts_with("\u{feff}".as_bytes()) {
                raw.drain(..3);
            }
        }
        let line = String::from_utf8_lossy(&raw);
        if line.is_empty() {
            if self.has_data {
                let mut data = std::mem::take(&mut self.data);
                data.pop(); // the trailing "\n"
                items.push(SseItem::Data(data));
                self.has_data = false;
            }
            return;
        }
        if let Some(comment) = line.strip_prefix(':') {
            items.push(SseItem::Comment(comment.to_owned()));
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        if field == "data" {
            self.data.push_str(value);
            self.data.push('\n');
            self.has_data = true;
        }
    }
}

/// Split a complete byte stream into items (an unterminated last event is dropped).
pub fn parse_sse(bytes: &[u8]) -> Vec<SseItem> {
    SseParser::new().push(bytes)
}

/// Only the data payloads of a complete byte stream, in order.
pub fn data_payloads(bytes: &[u8]) -> Vec<String> {
    parse_sse(bytes)
        .into_iter()
        .filter_map(|item| match item {
            SseItem::Data(data) => Some(data),
            SseItem::Comment(_) => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(text: &str) -> SseItem {
        SseItem::Data(text.into())
    }

    #[test]
    fn splits_data_events_and_comments() {
        let items = parse_sse(b": keep-alive\n\ndata: {\"a\":1}\n\ndata: [DONE]\n\n");
        assert_eq!(
            items,
            vec![
                SseItem::Comment(" keep-alive".into()),
                data("{\"a\":1}"),
                data("[DONE]")
            ]
        );
    }

    #[test]
    fn supports_all_line_endings_and_multiline_data() {
        assert_eq!(
            parse_sse(b"data: a\r\ndata:b\r\rdata: c\n\n"),
            vec![data("a\nb"), data("c")]
        );
    }

    #[test]
    fn drops_one_space_only_and_ignores_other_fields() {
        assert_eq!(
            parse_sse(b"event: x\nid: 7\ndata:  two\nretry: 5\n\n"),
            vec![data(" two")]
        );
        assert_eq!(parse_sse(b"data\n\n"), vec![data("")]);
        assert_eq!(parse_sse(b"event: only\n\n"), vec![]);
    }

    #[test]
    fn unterminated_event_is_not_dispatched() {
        let mut parser = SseParser::new();
        assert_eq!(parser.push(b"data: a\n\ndata: b\n"), vec![data("a")]);
        assert!(parser.has_pending_event());
    }

    #[test]
    fn piecewise_feeding_matches_whole_parse() {
        let stream = "\u{feff}data: héllo\r\n\r\n: c\ndata: wörld\r\rdata: [DONE]\n\n".as_bytes();
        let whole = parse_sse(stream);
        assert_eq!(whole[0], data("héllo"));
        for split in 0..=stream.len() {
            let mut parser = SseParser::new();
            let mut items = parser.push(&stream[..split]);
            items.extend(parser.push(&stream[split..]));
            assert_eq!(items, whole, "split at {split}");
        }
        let mut parser = SseParser::new();
        let byte_by_byte: Vec<SseItem> = stream
            .iter()
            .flat_map(|byte| parser.push(&[*byte]))
            .collect();
        assert_eq!(byte_by_byte, whole);
        assert_eq!(
            data_payloads(stream),
            vec!["héllo".to_owned(), "wörld".to_owned(), "[DONE]".to_owned()]
        );
    }
}
