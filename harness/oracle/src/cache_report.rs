//! The prompt-cache stability report: for every provider request, whether
//! its prompt extends an earlier one (so the provider's prefix cache can
//! serve all of it) or breaks from it, and for a break the first changed
//! byte, the prompt element it belongs to, and what produced that element.
//!
//! A loop that keeps its prompt byte-stable (spec 09 §4: system text first
//! and unchanged, tools in canonical order, append-only history) sends
//! requests that each extend the previous one. A section whose text changes
//! between steps, a reordered tool list or an edited history message breaks
//! the prefix at that point, and every token after it is a cache miss. This
//! lint finds the break and names its cause.
//!
//! The prompt is the mock provider's canonical prompt (system messages,
//! tools, then messages, one JSON line each), so the report speaks about the
//! same bytes the mock's cache accounting uses. The elements are named from
//! what the run reports: the sections of each system text
//! ([`PromptLayout`], which the reference reports), and the session logs for
//! each message's event and source.

use std::collections::BTreeMap;

use mock_provider::{PromptElement, PromptElementKind, prompt_elements};
use serde::Serialize;
use serde_json::{Value, json};

use dshc_deepseek::serialize_messages;
use dshc_model::session::Event;
use dshc_scenario::protocol::{LoopRun, PromptLayout, ProviderRequest};

/// Characters of context shown on each side of a changed byte.
const EXCERPT_CHARS: usize = 24;

/// The report over one run's requests.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CacheReport {
    /// One row per request, in arrival order.
    pub requests: Vec<RequestRow>,
}

/// One request of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestRow {
    /// 1-based position among the run's requests.
    pub request: usize,
    /// The request's model (prompts are cached per model).
    pub model: String,
    /// Bytes of its canonical prompt.
    pub prompt_bytes: usize,
    /// `prompt_cache_hit_tokens` the provider answered, when it answered a stream.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_hit_tokens: Option<u64>,
    /// `first` (no earlier prompt of its model), `extends` (an earlier prompt
    /// is a prefix of it), `branch` (it shares the system text and tools with
    /// an earlier prompt of another session, then its own history) or
    /// `break` (it diverges from an earlier prompt in the system text, the
    /// tools, or the history of its own session).
    pub verdict: &'static str,
    /// The earlier request whose prompt it shares the longest prefix with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_request: Option<usize>,
    /// Where it breaks from `after_request`, for a `break`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_break: Option<CacheBreak>,
}

/// Where a prompt stops extending an earlier one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CacheBreak {
    /// Offset of the first changed byte in the canonical prompt.
    pub byte: usize,
    /// The element of this request's prompt that byte belongs to (of the
    /// earlier prompt, when this one ends there).
    pub element: Value,
    /// The earlier prompt around the byte.
    pub before: String,
    /// This prompt around the byte.
    pub after: String,
}

impl CacheReport {
    /// The rows that break the cache.
    pub fn breaks(&self) -> impl Iterator<Item = &RequestRow> {
        self.requests.iter().filter(|row| row.cache_break.is_some())
    }

    /// The breaks as JSON, as `expect.cache_breaks` matches them:
    /// `[{request, after_request, byte, element}]`.
    pub fn breaks_json(&self) -> Value {
        Value::Array(
            self.breaks()
                .map(|row| {
                    let cache_break = row.cache_break.as_ref().expect("a break row");
                    json!({
                        "request": row.request,
                        "after_request": row.after_request,
                        "byte": cache_break.byte,
                        "element": cache_break.element,
                    })
                })
                .collect(),
        )
    }

    /// A table for people: one line per request, then each break's detail.
    pub fn to_text(&self) -> String {
        let mut text = String::new();
        for row in &self.requests {
            let hit = row
                .cache_hit_tokens
                .map_or(String::new(), |hit| format!(", {hit} cached tokens"));
            let verdict = match (row.verdict, row.after_request) {
                ("extends", Some(earlier)) => format!("extends request {earlier}"),
                ("break", Some(earlier)) => format!("BREAKS from request {earlier}"),
                ("branch", Some(earlier)) => {
                    format!("a new conversation after request {earlier}'s system text and tools")
                }
                _ => "first prompt of its model".to_owned(),
            };
            text.push_str(&format!(
                "request {} ({}, {} bytes{hit}): {verdict}\n",
                row.request, row.model, row.prompt_bytes
            ));
            if let Some(cache_break) = &row.cache_break {
                text.push_str(&format!(
                    "  first changed byte {}: {}\n  before: {:?}\n  after:  {:?}\n",
                    cache_break.byte,
                    describe_element(&cache_break.element),
                    cache_break.before,
                    cache_break.after
                ));
            }
        }
        let breaks = self.breaks().count();
        text.push_str(&match breaks {
            0 => "no cache break\n".to_owned(),
            1 => "1 cache break\n".to_owned(),
            n => format!("{n} cache breaks\n"),
        });
        text
    }
}

/// An element in words, e.g. `section "clock" (global layer, registration clock)`.
pub fn describe_element(element: &Value) -> String {
    let text = |key: &str| element.get(key).and_then(Value::as_str);
    match text("kind") {
        Some("system") => match text("section") {
            Some(section) => {
                let origin = match (text("registered_in"), text("registration")) {
                    (Some(layer), Some(id)) => format!("{layer} layer, registration {id:?}"),
                    (Some(layer), None) => format!("{layer} layer"),
                    _ => "added by a system-prompt/assemble listener".to_owned(),
                };
                format!("system prompt, section {section:?} ({origin})")
            }
            None => format!(
                "system prompt, character {} (no section layout reported)",
                element["offset"]
            ),
        },
        Some("tool") => format!(
            "tool schema {:?} (tools[{}])",
            text("name").unwrap_or("?"),
            element["index"]
        ),
        Some("message") => {
            let mut described = format!(
                "message {} ({})",
                element["index"],
                text("role").unwrap_or("?")
            );
            if let Some(event) = text("event") {
                described.push_str(&format!(", from {event} seq {}", element["seq"]));
            }
            if let Some(source) = element.get("source").filter(|source| !source.is_null()) {
                described.push_str(&format!(", source {source}"));
            }
            described
        }
        _ => element.to_string(),
    }
}

/// Build the report over a run: its requests, layouts and session logs.
pub fn report_run(run: &LoopRun) -> CacheReport {
    let mut logs: Vec<&[Value]> = vec![&run.log];
    logs.extend(run.agents.iter().map(|agent| agent.log.as_slice()));
    report(&run.requests, &run.prompt_layouts, &logs)
}

/// Build the report over requests (in arrival order), naming sections from
/// `layouts` and messages from the session `logs`.
///
/// Each request is set against the earlier prompt of its model sharing the
/// longest prefix with it, found in a trie of the earlier prompts' lines
/// ([`PromptTrie`]): the cost is the prompts' length, as replaying the log
/// is, not every pair of prompts compared byte by byte.
pub fn report(
    requests: &[ProviderRequest],
    layouts: &[PromptLayout],
    logs: &[&[Value]],
) -> CacheReport {
    let sources = message_sources(logs);
    let prompts: Vec<(String, Vec<PromptElement>)> = requests
        .iter()
        .map(|request| {
            let model = request.body["model"].as_str().unwrap_or("").to_owned();
            (model, prompt_elements(&request.body))
        })
        .collect();
    let lengths: Vec<usize> = prompts
        .iter()
        .map(|(_, elements)| elements.iter().map(|e| e.line.len()).sum())
        .collect();
    let mut tries: BTreeMap<&str, PromptTrie> = BTreeMap::new();
    let mut rows = Vec::with_capacity(prompts.len());
    for (position, (model, elements)) in prompts.iter().enumerate() {
        let lines: Vec<&str> = elements.iter().map(|e| e.line.as_str()).collect();
        let trie = tries.entry(model.as_str()).or_default();
        // The earlier prompt of the same model sharing the longest prefix
        // (the latest on a tie).
        let earlier = trie.longest_shared(&lines);
        trie.insert(&lines, position);
        let mut row = RequestRow {
            request: position + 1,
            model: model.clone(),
            prompt_bytes: lengths[position],
            cache_hit_tokens: requests[position].cache_hit_tokens,
            verdict: "first",
            after_request: None,
            cache_break: None,
        };
        if let Some((other, shared)) = earlier {
            row.after_request = Some(other + 1);
            let in_history = element_kind_at(elements, shared) == Some(PromptElementKind::Message);
            let same_session = session_of(&requests[position])
                .is_some_and(|session| session_of(&requests[other]) == Some(session));
            if shared == lengths[other] {
                row.verdict = "extends";
            } else if in_history && !same_session {
                // Another conversation sharing the system text and tools.
                row.verdict = "branch";
            } else {
                row.verdict = "break";
                let element = if shared < lengths[position] {
                    name_element(
                        elements,
                        &requests[position].body,
                        shared,
                        layouts,
                        &sources,
                    )
                } else {
                    // This prompt ends where the earlier one goes on.
                    let mut removed = name_element(
                        &prompts[other].1,
                        &requests[other].body,
                        shared,
                        layouts,
                        &sources,
                    );
                    removed["removed"] = json!(true);
                    removed
                };
                row.cache_break = Some(CacheBreak {
                    byte: shared,
                    element,
                    before: excerpt(&joined(&prompts[other].1), shared),
                    after: excerpt(&lines.concat(), shared),
                });
            }
        }
        rows.push(row);
    }
    CacheReport { requests: rows }
}

/// A prompt's text: its elements' lines, joined.
fn joined(elements: &[PromptElement]) -> String {
    elements.iter().map(|e| e.line.as_str()).collect()
}

/// The earlier prompts of one model as a trie of their lines (elements),
/// each node knowing the latest prompt that passes through it. Two prompts
/// share whole lines down to their last common node, then part of one line;
/// of the lines below a node, those sharing the longest part with a line
/// sit beside it in sorted order, so no prompt is compared with every other.
#[derive(Default)]
struct PromptTrie {
    /// Node 0 is the root (the empty prompt).
    nodes: Vec<TrieNode>,
}

#[derive(Default)]
struct TrieNode {
    children: BTreeMap<String, usize>,
    /// The latest prompt through this node.
    latest: usize,
}

impl PromptTrie {
    fn insert(&mut self, lines: &[&str], prompt: usize) {
        if self.nodes.is_empty() {
            self.nodes.push(TrieNode::default());
        }
        let mut node = 0;
        self.nodes[node].latest = prompt;
        for line in lines {
            node = match self.nodes[node].children.get(*line) {
                Some(&child) => child,
                None => {
                    let child = self.nodes.len();
                    self.nodes.push(TrieNode::default());
                    self.nodes[node].children.insert((*line).to_owned(), child);
                    child
                }
            };
            self.nodes[node].latest = prompt;
        }
    }

    /// The earlier prompt sharing the longest prefix with `lines` (the
    /// latest on a tie) and the bytes they share (ending on a character
    /// boundary); `None` when there is no earlier prompt.
    fn longest_shared(&self, lines: &[&str]) -> Option<(usize, usize)> {
        use std::ops::Bound::{Excluded, Unbounded};
        self.nodes.first()?;
        let (mut node, mut shared) = (0, 0);
        for line in lines {
            let children = &self.nodes[node].children;
            if let Some(&child) = children.get(*line) {
                node = child;
                shared += line.len();
                continue;
            }
            let below = children.range::<str, _>((Unbounded, Excluded(*line))).rev();
            let above = children.range::<str, _>((Excluded(*line), Unbounded));
            let part = |(other, _): &(&String, &usize)| common_prefix_len(other, line);
            let best = below
                .clone()
                .next()
                .map_or(0, |e| part(&e))
                .max(above.clone().next().map_or(0, |e| part(&e)));
            if best == 0 {
                // Every prompt below shares exactly the lines so far.
                break;
            }
            // The lines sharing `best` bytes are contiguous around `line`.
            let tied = below
                .take_while(|e| part(e) == best)
                .chain(above.take_while(|e| part(e) == best));
            let latest = tied.map(|(_, &child)| self.nodes[child].latest).max()?;
            return Some((latest, shared + best));
        }
        Some((self.nodes[node].latest, shared))
    }
}

/// The session a request belongs to (its `x-deepseek-harness-session-id`).
fn session_of(request: &ProviderRequest) -> Option<&str> {
    request
        .headers
        .iter()
        .find(|[name, _]| name.eq_ignore_ascii_case("x-deepseek-harness-session-id"))
        .map(|[_, value]| value.as_str())
}

/// The kind of the element holding prompt byte `byte`.
fn element_kind_at(elements: &[PromptElement], byte: usize) -> Option<PromptElementKind> {
    let mut end = 0;
    elements.iter().find_map(|element| {
        end += element.line.len();
        (byte < end).then_some(element.kind)
    })
}

/// Bytes two texts share from the start, ending on a character boundary.
fn common_prefix_len(left: &str, right: &str) -> usize {
    left.char_indices()
        .zip(right.chars())
        .find(|((_, a), b)| a != b)
        .map_or(left.len().min(right.len()), |((offset, _), _)| offset)
}

/// Up to [`EXCERPT_CHARS`] characters on each side of `byte`.
fn excerpt(text: &str, byte: usize) -> String {
    let byte = byte.min(text.len());
    let before: String = {
        let chars: Vec<char> = text[..byte].chars().rev().take(EXCERPT_CHARS).collect();
        chars.into_iter().rev().collect()
    };
    let after: String = text[byte..].chars().take(EXCERPT_CHARS).collect();
    format!("{before}|{after}")
}

/// The element of `elements` containing prompt byte `byte`, as JSON.
fn name_element(
    elements: &[PromptElement],
    body: &Value,
    byte: usize,
    layouts: &[PromptLayout],
    sources: &BTreeMap<String, (String, u64, Value)>,
) -> Value {
    let mut start = 0;
    for element in elements {
        let end = start + element.line.len();
        if byte < end {
            return describe(element, body, byte - start, layouts, sources);
        }
        start = end;
    }
    json!({"kind": "end"})
}

fn describe(
    element: &PromptElement,
    body: &Value,
    offset_in_line: usize,
    layouts: &[PromptLayout],
    sources: &BTreeMap<String, (String, u64, Value)>,
) -> Value {
    match element.kind {
        PromptElementKind::System => {
            let content = body["messages"][element.index]["content"]
                .as_str()
                .unwrap_or("");
            let offset = content_offset(&element.line, content, offset_in_line);
            let mut named = json!({"kind": "system", "index": element.index, "offset": offset});
            let layout = layouts.iter().find(|layout| layout.system == content);
            if let Some(section) = layout.and_then(|layout| section_at(layout, offset)) {
                named["section"] = json!(section.name);
                if let Some(layer) = &section.registered_in {
                    named["registered_in"] = json!(layer);
                }
                if let Some(registration) = &section.registration {
                    named["registration"] = json!(registration);
                }
            }
            named
        }
        PromptElementKind::Tool => {
            let tool = &body["tools"][element.index];
            json!({"kind": "tool", "index": element.index,
                   "name": tool.pointer("/function/name").cloned().unwrap_or(Value::Null)})
        }
        PromptElementKind::Message => {
            let message = &body["messages"][element.index];
            let mut named = json!({"kind": "message", "index": element.index,
                                   "role": message.get("role").cloned().unwrap_or(Value::Null)});
            if let Some((event, seq, source)) = sources.get(&message.to_string()) {
                named["event"] = json!(event);
                named["seq"] = json!(seq);
                named["source"] = source.clone();
            }
            named
        }
    }
}

/// The character offset in `content` of the byte at `offset_in_line` of
/// its JSON line `{"role":"system","content":"…"}`: the content's escaped
/// form is found in the line, then unescaped up to the byte.
fn content_offset(line: &str, content: &str, offset_in_line: usize) -> usize {
    let escaped = Value::String(content.to_owned()).to_string();
    let Some(start) = line.find(&escaped) else {
        return 0;
    };
    // Skip the opening quote; count the characters the escaped prefix decodes to.
    let inner_start = start + 1;
    if offset_in_line <= inner_start {
        return 0;
    }
    let escaped_prefix = &line[inner_start..offset_in_line.min(start + escaped.len() - 1)];
    // A prefix may end inside an escape sequence; drop a partial one.
    let mut prefix = escaped_prefix.to_owned();
    loop {
        if let Ok(Value::String(decoded)) = serde_json::from_str(&format!("\"{prefix}\"")) {
            return decoded.len();
        }
        if prefix.pop().is_none() {
            return 0;
        }
    }
}

/// The section of `layout` whose text (or the separator after it) holds
/// byte `offset` of the system text.
fn section_at(
    layout: &PromptLayout,
    offset: usize,
) -> Option<&dshc_scenario::protocol::LayoutSection> {
    let mut start = 0;
    for (position, section) in layout.sections.iter().enumerate() {
        let end = start + section.text.len();
        if offset < end {
            return Some(section);
        }
        // A change right at the separator belongs to the next section.
        if offset < end + 2 {
            return layout.sections.get(position + 1).or(Some(section));
        }
        start = end + 2;
    }
    layout.sections.last()
}

/// Each wire message a logged event serializes to, by its JSON text: the
/// event's type, seq and the message's `source`.
fn message_sources(logs: &[&[Value]]) -> BTreeMap<String, (String, u64, Value)> {
    let mut sources = BTreeMap::new();
    for log in logs {
        for value in log.iter() {
            let Ok(event) = Event::from_json(value) else {
                continue;
            };
            let Some(message) = event.derived_message() else {
                continue;
            };
            let Ok(wire) = serialize_messages(std::slice::from_ref(message)) else {
                continue;
            };
            let source = message.get("source").cloned().unwrap_or(Value::Null);
            for wire_message in wire {
                sources
                    .entry(wire_message.to_string())
                    .or_insert_with(|| (event.kind.clone(), event.seq, source.clone()));
            }
        }
    }
    sources
}

#[cfg(test)]
mod tests {
    use super::*;
    use dshc_model::session::event_kind;
    use dshc_scenario::protocol::LayoutSection;

    fn request(system: &str, user: &[&str]) -> ProviderRequest {
        let mut messages = vec![json!({"role": "system", "content": system})];
        messages.extend(
            user.iter()
                .map(|text| json!({"role": "user", "content": text})),
        );
        ProviderRequest {
            body: json!({"model": "m", "messages": messages,
                         "tools": [{"type": "function", "function": {"name": "read"}}]}),
            ..ProviderRequest::default()
        }
    }

    fn layout(sections: &[(&str, &str)]) -> PromptLayout {
        PromptLayout {
            agent: "a".into(),
            system: sections
                .iter()
                .map(|(_, text)| *text)
                .collect::<Vec<_>>()
                .join("\n\n"),
            sections: sections
                .iter()
                .map(|(name, text)| LayoutSection {
                    name: (*name).into(),
                    text: (*text).into(),
                    registered_in: Some("global".into()),
                    registration: Some((*name).into()),
                })
                .collect(),
        }
    }

    #[test]
    fn an_append_only_session_extends_every_prompt() {
        let system = "Rules.\n\nIt is 10:00.";
        let requests = [request(system, &["hi"]), request(system, &["hi", "more"])];
        let report = report(&requests, &[], &[]);
        let verdicts: Vec<&str> = report.requests.iter().map(|r| r.verdict).collect();
        assert_eq!(verdicts, ["first", "extends"]);
        assert_eq!(report.breaks_json(), json!([]));
        assert!(report.to_text().ends_with("no cache break\n"));
    }

    #[test]
    fn a_changed_section_is_named_with_its_registration() {
        let first = [("rules", "Be \"brief\"."), ("clock", "It is 10:00.")];
        let second = [("rules", "Be \"brief\"."), ("clock", "It is 10:05.")];
        let requests = [
            request(&layout(&first).system, &["hi"]),
            request(&layout(&second).system, &["hi", "more"]),
        ];
        let report = report(&requests, &[layout(&first), layout(&second)], &[]);
        let row = &report.requests[1];
        assert_eq!((row.verdict, row.after_request), ("break", Some(1)));
        let cache_break = row.cache_break.as_ref().unwrap();
        assert_eq!(
            cache_break.element,
            json!({"kind": "system", "index": 0, "offset": 23, "section": "clock",
                   "registered_in": "global", "registration": "clock"})
        );
        // The byte is the first one that differs: the "5" of "10:05", at
        // character 23 of the system text (11 for `Be "brief".`, 2 for the
        // separator, 10 for `It is 10:0`).
        let before = mock_provider::canonical_prompt(&requests[0].body);
        let after = mock_provider::canonical_prompt(&requests[1].body);
        assert_eq!(before[..cache_break.byte], after[..cache_break.byte]);
        assert_ne!(
            before.as_bytes()[cache_break.byte],
            after.as_bytes()[cache_break.byte]
        );
        assert!(
            cache_break.before.contains("10:0|0."),
            "{}",
            cache_break.before
        );
        assert!(
            cache_break.after.contains("10:0|5."),
            "{}",
            cache_break.after
        );
        assert!(
            report
                .to_text()
                .contains("section \"clock\" (global layer, registration \"clock\")"),
            "{}",
            report.to_text()
        );
    }

    #[test]
    fn tools_and_messages_are_named_too() {
        let mut reordered = request("S", &["hi"]);
        reordered.body["tools"] = json!([{"type": "function", "function": {"name": "write"}}]);
        let requests = [request("S", &["hi"]), reordered];
        let report = report(&requests, &[], &[]);
        assert_eq!(
            report.requests[1].cache_break.as_ref().unwrap().element,
            json!({"kind": "tool", "index": 0, "name": "write"})
        );

        let log = vec![
            json!({"type": event_kind::USER_MESSAGE, "seq": 0, "time": 0,
            "data": {"role": "user", "id": "m1", "content": [{"type": "text", "text": "edited"}],
                     "source": {"kind": "user"}}}),
        ];
        let session = |mut request: ProviderRequest| {
            request.headers = vec![["x-deepseek-harness-session-id".into(), "s".into()]];
            request
        };
        let requests = [
            session(request("S", &["hi", "x"])),
            session(request("S", &["hi", "edited"])),
        ];
        let report = super::report(&requests, &[], &[&log]);
        let element = &report.requests[1].cache_break.as_ref().unwrap().element;
        assert_eq!(element["kind"], "message");
        assert_eq!(element["index"], 2);
        assert_eq!(element["event"], event_kind::USER_MESSAGE);
        assert_eq!(element["source"], json!({"kind": "user"}));
        // Without a shared session the same divergence is another conversation.
        let unrelated = [request("S", &["hi", "x"]), request("S", &["hi", "edited"])];
        let report = super::report(&unrelated, &[], &[&log]);
        assert_eq!(report.requests[1].verdict, "branch");
        assert_eq!(report.breaks().count(), 0);
    }

    #[test]
    fn the_trie_finds_the_latest_prompt_sharing_the_longest_prefix() {
        // Every sequence of up to three lines from a few, multibyte and
        // shared-start ones included, against the search of every pair.
        let alphabet = ["a\n", "ab\n", "é\n", "è\n", "abc\n", "b\n"];
        let mut prompts: Vec<Vec<&str>> = vec![Vec::new()];
        for length in 1..=3 {
            let mut index = vec![0usize; length];
            loop {
                prompts.push(index.iter().map(|&i| alphabet[i]).collect());
                let Some(at) = (0..length).rev().find(|&at| index[at] + 1 < alphabet.len()) else {
                    break;
                };
                index[at] += 1;
                index[at + 1..].iter_mut().for_each(|i| *i = 0);
            }
        }
        // A fixed shuffle, so that no order of insertion is favoured.
        let mut order: Vec<usize> = (0..prompts.len()).collect();
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        for at in (1..order.len()).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            order.swap(at, (state % (at as u64 + 1)) as usize);
        }
        let prompts: Vec<&Vec<&str>> = order.iter().map(|&i| &prompts[i]).collect();
        let mut trie = PromptTrie::default();
        for (position, lines) in prompts.iter().enumerate() {
            let text = lines.concat();
            let searched = (0..position)
                .map(|other| (common_prefix_len(&prompts[other].concat(), &text), other))
                .max()
                .map(|(shared, other)| (other, shared));
            assert_eq!(trie.longest_shared(lines), searched, "{lines:?}");
            trie.insert(lines, position);
        }
    }

    #[test]
    fn a_long_session_costs_its_length_not_every_pair() {
        // 600 requests, each one message longer: every pair compared byte by
        // byte was about 4 × 10^9 character comparisons (minutes); the trie
        // walks each prompt once.
        let texts: Vec<String> = (0..600)
            .map(|i| format!("message number {i} of the session"))
            .collect();
        let requests: Vec<ProviderRequest> = (1..=texts.len())
            .map(|n| {
                let user: Vec<&str> = texts[..n].iter().map(String::as_str).collect();
                request("Rules.", &user)
            })
            .collect();
        #[expect(
            clippy::disallowed_methods,
            reason = "the bound under test is the report's cost in real time"
        )]
        let started = std::time::Instant::now();
        let report = report(&requests, &[], &[]);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{:?}",
            started.elapsed()
        );
        assert!(report.requests[1..].iter().all(|r| r.verdict == "extends"));
        assert_eq!(report.requests[599].after_request, Some(599));
    }
}
