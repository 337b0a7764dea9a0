//! SSE framing (09 W7) as the npm `eventsource-parser` 3.x does it behind a
//! `TextDecoderStream`: any split of the reads gives the same items.

/// One SSE item, in stream order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SseItem {
    /// A dispatched event's data (its `data` lines joined with `\n`).
    Data(String),
    /// A comment line's text (after `:` and one optional space); upstream
    /// uses comments only to pulse the idle watchdog.
    Comment(String),
}

/// Incremental SSE decoder: a streaming UTF-8 `TextDecoderStream` (BOM
/// stripped, invalid sequences → U+FFFD) feeding `eventsource-parser`'s
/// `createParser`. Reads may split anywhere. An event is dispatched only at a
/// blank line; nothing is dispatched at end of input, so there is no
/// `finish` method.
///
/// Two parser details are reproduced on purpose: a line ending in `\r` at the
/// very end of a read waits for the next read (it may be half of `\r\n`), and
/// while such a partial line is pending a read without any `\r`/`\n` is only
/// buffered. Hence a CR-only stream's last blank line takes effect only once a
/// later read brings another line terminator.
#[derive(Clone, Debug, Default)]
pub struct SseDecoder {
    utf8_pending: Vec<u8>,
    bom_checked: bool,
    fed: bool,
    pending: String,
    data: String,
    data_lines: usize,
}

impl SseDecoder {
    /// A fresh decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feed one read; returns the items it completes.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseItem> {
        let mut text = self.decode(bytes);
        let mut items = Vec::new();
        if text.is_empty() {
            // TextDecoderStream enqueues no empty chunks.
            return items;
        }
        if !self.fed {
            self.fed = true;
            // The parser's own BOM check looks at UTF-16 units 239, 187, 191
            // of the first decoded chunk (i.e. the text "ï»¿").
            if let Some(rest) = text.strip_prefix("\u{EF}\u{BB}\u{BF}") {
                text = rest.to_string();
            }
        }
        if self.pending.is_empty() {
            self.process(text, &mut items);
        } else if !text.contains(['\n', '\r']) {
            self.pending.push_str(&text);
        } else {
            let mut input = std::mem::take(&mut self.pending);
            input.push_str(&text);
            self.process(input, &mut items);
        }
        items
    }

    fn decode(&mut self, bytes: &[u8]) -> String {
        self.utf8_pending.extend_from_slice(bytes);
        let buffer = std::mem::take(&mut self.utf8_pending);
        let mut out = String::new();
        let mut rest = buffer.as_slice();
        loop {
            match std::str::from_utf8(rest) {
                Ok(valid) => {
                    out.push_str(valid);
                    break;
                }
                Err(error) => {
                    let (valid, after) = rest.split_at(error.valid_up_to());
                    out.push_str(std::str::from_utf8(valid).unwrap_or_default());
                    match error.error_len() {
                        Some(len) => {
                            out.push('\u{FFFD}');
                            rest = &after[len..];
                        }
                        None => {
                            self.utf8_pending = after.to_vec();
                            break;
                        }
                    }
                }
            }
        }
        if !self.bom_checked && !out.is_empty() {
            self.bom_checked = true;
            if let Some(rest) = out.strip_prefix('\u{FEFF}') {
                out = rest.to_string();
            }
        }
        out
    }

    fn process(&mut self, input: String, items: &mut Vec<SseItem>) {
        let bytes = input.as_bytes();
        let mut start = 0;
        while let Some(offset) = bytes[start..]
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
        {
            let end = start + offset;
            if bytes[end] == b'\r' && end + 1 == bytes.len() {
                break;
            }
            self.line(&input[start..end], items);
            start = end + 1;
            if bytes[end] == b'\r' && bytes.get(start) == Some(&b'\n') {
                start += 1;
            }
        }
        self.pending = input[start..].to_string();
    }

    fn line(&mut self, line: &str, items: &mut Vec<SseItem>) {
        if line.is_empty() {
            if self.data_lines > 0 {
                items.push(SseItem::Data(std::mem::take(&mut self.data)));
            }
            self.data.clear();
            self.data_lines = 0;
            return;
        }
        if let Some(comment) = line.strip_prefix(':') {
            let comment = comment.strip_prefix(' ').unwrap_or(comment);
            items.push(SseItem::Comment(comment.to_string()));
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        // `event`, `id`, `retry` and unknown fields do not reach the adapter.
        if field == "data" {
            if self.data_lines > 0 {
                self.data.push('\n');
            }
            self.data.push_str(value);
            self.data_lines += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::*;

    fn realistic_stream() -> String {
        let mut text = String::from(": keep-alive\n\n");
        text.push_str(&sse(&[
            r#"{"choices":[{"delta":{"reasoning_content":"Pensée: 世界"}}]}"#,
            r#"{"choices":[{"delta":{"content":"Grüße 🎉 done"}}]}"#,
        ]));
        text.push_str(
            "event: message\nid: 7\nretry: 10\ndata: {\"choices\":[],\ndata:\"usage\":null}\n\n",
        );
        text.push_str(":comment without space\n");
        text.push_str("data: [DONE]\n\n");
        text
    }

    fn realistic_items() -> Vec<SseItem> {
        vec![
            comment("keep-alive"),
            data(r#"{"choices":[{"delta":{"reasoning_content":"Pensée: 世界"}}]}"#),
            data(r#"{"choices":[{"delta":{"content":"Grüße 🎉 done"}}]}"#),
            data("{\"choices\":[],\n\"usage\":null}"),
            comment("comment without space"),
            data("[DONE]"),
        ]
    }

    #[test]
    fn sse_realistic_stream_in_one_read() {
        let stream = realistic_stream();
        assert_eq!(decode_reads(&[stream.as_bytes()]), realistic_items());
    }

    #[test]
    fn sse_split_at_every_byte_position_gives_the_same_items() {
        for ending in ["\n", "\r\n", "\r"] {
            let mut stream = realistic_stream().replace('\n', ending);
            let mut expected = realistic_items();
            if ending == "\r" {
                // A CR-only stream's last blank line needs a later line
                // terminator before it takes effect.
                stream.push_str(": tail\r\r");
                expected.push(comment("tail"));
            }
            let bytes = stream.as_bytes();
            let whole = decode_reads(&[bytes]);
            assert_eq!(whole, expected, "ending {ending:?}");
            for split in 0..=bytes.len() {
                let (a, b) = bytes.split_at(split);
                assert_eq!(
                    decode_reads(&[a, b]),
                    whole,
                    "ending {ending:?}, split at {split}"
                );
            }
            let byte_by_byte: Vec<&[u8]> = bytes.chunks(1).collect();
            assert_eq!(
                decode_reads(&byte_by_byte),
                whole,
                "ending {ending:?}, byte by byte"
            );
            let threes: Vec<&[u8]> = bytes.chunks(3).collect();
            assert_eq!(decode_reads(&threes), whole, "ending {ending:?}, threes");
        }
    }

    #[test]
    fn sse_crlf_and_cr_line_endings() {
        assert_eq!(
            decode_reads(&[b"data: a\r\n\r\ndata: b\r\rdata: c\n\n"]),
            vec![data("a"), data("b"), data("c")]
        );
        // A CRLF split between reads is one line ending, not two.
        assert_eq!(
            decode_reads(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]),
            vec![data("a\nb")]
        );
    }

    #[test]
    fn sse_trailing_cr_waits_for_more_input() {
        // "\r" at the end of a read might be half of "\r\n": the blank line is
        // not seen yet, and a read without any line terminator only buffers.
        assert_eq!(decode_reads(&[b"data: [DONE]\r\r"]), vec![]);
        assert_eq!(decode_reads(&[b"data: [DONE]\r\r", b"x"]), vec![]);
        assert_eq!(
            decode_reads(&[b"data: [DONE]\r", b"\r", b"\n"]),
            vec![data("[DONE]")]
        );
        assert_eq!(decode_reads(&[b"data: [DONE]\r\rx"]), vec![data("[DONE]")]);
    }

    #[test]
    fn sse_comments_and_multi_line_data() {
        assert_eq!(
            decode_reads(&[b": ping\n:  two spaces\n:\ndata: x\ndata:y\ndata\ndata:  z\n\n"]),
            vec![
                comment("ping"),
                comment(" two spaces"),
                comment(""),
                data("x\ny\n\n z")
            ]
        );
    }

    #[test]
    fn sse_other_fields_are_ignored_and_blank_events_not_dispatched() {
        assert_eq!(
            decode_reads(&[
                b"event: e\nid: 1\nretry: 5\nfoo: bar\nnocolon\n\n\n\ndata :x\n\ndata: ok\n\n"
            ]),
            vec![data("ok")]
        );
        // An empty data line still counts as data.
        assert_eq!(decode_reads(&[b"data:\n\n"]), vec![data("")]);
    }

    #[test]
    fn sse_final_event_without_blank_line_is_not_dispatched() {
        assert_eq!(
            decode_reads(&[b"data: a\n\ndata: [DONE]\n"]),
            vec![data("a")]
        );
        assert_eq!(decode_reads(&[b"data: [DONE]"]), vec![]);
    }

    #[test]
    fn sse_utf8_split_inside_a_sequence_and_bom_handling() {
        let text = "data: é🎉\n\n".as_bytes();
        for split in 0..=text.len() {
            let (a, b) = text.split_at(split);
            assert_eq!(decode_reads(&[a, b]), vec![data("é🎉")]);
        }
        // A UTF-8 BOM is dropped by the decoder, even when split.
        assert_eq!(
            decode_reads(&[b"\xEF\xBB", b"\xBFdata: a\n\n"]),
            vec![data("a")]
        );
        // Invalid bytes decode to U+FFFD.
        assert_eq!(
            decode_reads(&[b"data: a\xFFb\n\n"]),
            vec![data("a\u{FFFD}b")]
        );
        // The parser's own check strips the characters "ï»¿" from the first
        // decoded chunk only.
        assert_eq!(
            decode_reads(&["ï»¿data: a\n\n".as_bytes()]),
            vec![data("a")]
        );
        assert_eq!(decode_reads(&[b"\n", "ï»¿data: a\n\n".as_bytes()]), vec![]);
    }

    // ---- W8, W9: translation ------------------------------------------------
}
