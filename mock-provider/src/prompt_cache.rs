//! Computed prefix-cache accounting, so a scenario can check that the prompt-assembly
//! loop keeps its prompt prefix byte-stable (spec 09 §4) instead of scripting
//! `prompt_cache_hit_tokens` by hand.
//!
//! # What "the prompt" is
//!
//! The canonical prompt of a request body is a text built from the body's `messages`
//! and `tools`, each item written as compact JSON (keys in the order they arrived)
//! followed by one `"\n"`, in this order:
//!
//! 1. the leading run of `messages` whose `role` is `"system"`;
//! 2. every entry of `tools`, in order (absent `tools` contributes nothing);
//! 3. the remaining `messages`, in order.
//!
//! This mirrors how chat templates render tools into the system area. Consequences:
//! editing the system message invalidates everything; editing a tool invalidates
//! everything after the system message; appending history keeps the whole previous
//! prompt as a prefix. Other body fields (`model`, `stream`, `thinking`, `max_tokens`,
//! …) are not part of the prompt.
//!
//! Reasoning is in the prompt only where DeepSeek's thinking-mode guide puts it in
//! the context: an assistant message of a finished turn (one a later `user` message
//! closes) in which no assistant called a tool is written without its
//! `reasoning_content`, which DeepSeek ignores there. The reasoning of a turn with
//! tool calls, and of the open turn, is part of the prompt.
//!
//! # How hits are computed
//!
//! The prompt is tokenized with [`crate::tokenizer`]. `prompt_cache_hit_tokens` is the
//! longest common token prefix with any earlier *recorded* prompt of the same model,
//! rounded **down** to a multiple of [`CACHE_UNIT_TOKENS`] (DeepSeek's cache unit);
//! `prompt_cache_miss_tokens = prompt_tokens − hit`. Which prompts get recorded is the
//! server's decision (see [`crate::MockProvider`]).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Bound;
use std::sync::Arc;

use serde_json::Value;

use crate::tokenizer::first_token_len;

/// DeepSeek stores prefixes in units of this many tokens; hits are rounded down to it.
pub const CACHE_UNIT_TOKENS: u64 = 64;

/// Build the canonical prompt text of a chat-completions body (see the module docs).
///
/// Missing or non-array `messages` / `tools` count as empty.
pub fn canonical_prompt(body: &Value) -> String {
    let mut prompt = Vec::new();
    for (_, _, item) in prompt_items(body) {
        // Writing JSON into a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut prompt, &item);
        prompt.push(b'\n');
    }
    // serde_json writes UTF-8.
    String::from_utf8(prompt).unwrap_or_default()
}

/// One item of a canonical prompt as it is written: the body's value, less
/// the `reasoning_content` that DeepSeek leaves out of the context (see the
/// module docs).
#[derive(Clone, Copy)]
struct PromptItem<'a> {
    value: &'a Value,
    reasoning_ignored: bool,
}

impl serde::Serialize for PromptItem<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self.value.as_object() {
            Some(fields) if self.reasoning_ignored && fields.contains_key(REASONING) => {
                let mut map = serializer.serialize_map(Some(fields.len() - 1))?;
                for (key, value) in fields.iter().filter(|(key, _)| *key != REASONING) {
                    map.serialize_entry(key, value)?;
                }
                map.end()
            }
            _ => self.value.serialize(serializer),
        }
    }
}

const REASONING: &str = "reasoning_content";

/// Which messages' reasoning DeepSeek leaves out of the context: the
/// assistant messages of each finished turn in which no assistant called a
/// tool. A turn is the run of messages up to a `user` message; the open turn
/// (after the last one) keeps its reasoning.
fn reasoning_ignored(messages: &[Value]) -> Vec<bool> {
    fn role(message: &Value) -> Option<&str> {
        message.get("role").and_then(Value::as_str)
    }
    let called_tools = |message: &Value| {
        role(message) == Some("assistant")
            && message
                .get("tool_calls")
                .and_then(Value::as_array)
                .is_some_and(|calls| !calls.is_empty())
    };
    let mut ignored = vec![false; messages.len()];
    let mut turn_start = 0;
    for (index, message) in messages.iter().enumerate() {
        if role(message) != Some("user") {
            continue;
        }
        let turn = turn_start..index;
        if !messages[turn.clone()].iter().any(called_tools) {
            for position in turn {
                ignored[position] = role(&messages[position]) == Some("assistant");
            }
        }
        turn_start = index + 1;
    }
    ignored
}

/// What one line of a canonical prompt is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptElementKind {
    /// `messages[index]`, one of the leading system messages.
    System,
    /// `tools[index]`.
    Tool,
    /// `messages[index]`, after the leading system messages.
    Message,
}

/// One line of a canonical prompt: an item of the body, as compact JSON
/// followed by `"\n"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptElement {
    /// Which list it comes from.
    pub kind: PromptElementKind,
    /// Its position in `messages` or `tools`.
    pub index: usize,
    /// The exact text it contributes.
    pub line: String,
}

/// The canonical prompt of a body as its elements, in prompt order (the
/// module docs give the order); their lines concatenated are the prompt.
pub fn prompt_elements(body: &Value) -> Vec<PromptElement> {
    prompt_items(body)
        .map(|(kind, index, item)| PromptElement {
            kind,
            index,
            line: format!("{}\n", serde_json::to_string(&item).unwrap_or_default()),
        })
        .collect()
}

/// The items of a canonical prompt in order: the leading system messages,
/// the tools, the rest of the messages.
fn prompt_items(body: &Value) -> impl Iterator<Item = (PromptElementKind, usize, PromptItem<'_>)> {
    let list = |key: &str| {
        body.get(key)
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
    };
    let (messages, tools) = (list("messages"), list("tools"));
    let leading_system_count = messages
        .iter()
        .take_while(|message| message.get("role").and_then(Value::as_str) == Some("system"))
        .count();
    let ignored = reasoning_ignored(messages);
    let item = move |index: usize, value| PromptItem {
        value,
        reasoning_ignored: ignored.get(index).copied().unwrap_or(false),
    };
    let as_is = |value| PromptItem {
        value,
        reasoning_ignored: false,
    };
    let system = messages[..leading_system_count]
        .iter()
        .enumerate()
        .map(move |(index, value)| (PromptElementKind::System, index, as_is(value)));
    let tools = tools
        .iter()
        .enumerate()
        .map(move |(index, value)| (PromptElementKind::Tool, index, as_is(value)));
    let rest = messages
        .iter()
        .enumerate()
        .skip(leading_system_count)
        .map(move |(index, value)| (PromptElementKind::Message, index, item(index, value)));
    system.chain(tools).chain(rest)
}

/// The canonical prompt of a FIM body: the `prompt`, then `"\n"` and the
/// `suffix` when there is one (the prefix is what a later request can reuse).
pub fn canonical_fim_prompt(body: &Value) -> String {
    let prompt = body.get("prompt").and_then(Value::as_str).unwrap_or("");
    match body.get("suffix").and_then(Value::as_str) {
        Some(suffix) => format!("{prompt}\n{suffix}"),
        None => prompt.to_owned(),
    }
}

/// Token counts of one prompt against the cache, before that prompt is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptAccounting {
    /// Tokens in the canonical prompt (includes the cache hits, as on the wire).
    pub prompt_tokens: u64,
    /// Longest shared token prefix with an earlier recorded prompt of the same model
    /// (not rounded).
    pub shared_prefix_tokens: u64,
    /// `shared_prefix_tokens` rounded down to [`CACHE_UNIT_TOKENS`].
    pub prompt_cache_hit_tokens: u64,
    /// `prompt_tokens − prompt_cache_hit_tokens`.
    pub prompt_cache_miss_tokens: u64,
}

/// A prompt's tokens as integers: equal tokens, equal ids.
///
/// A token of [`crate::tokenizer`] is at most four ASCII alphanumerics or one
/// Unicode scalar, so at most 4 bytes of UTF-8; its bytes, zero-padded, are
/// its id. No token but the NUL character has a zero byte, and that one is a
/// token on its own, so no two tokens share an id and no vocabulary is kept.
///
/// Read byte by byte, cut where [`crate::tokenizer`] cuts (its
/// `first_token_len`). Every request's whole prompt is read, so this is the
/// provider's hottest loop.
pub fn token_ids(prompt: &str) -> Vec<u32> {
    let mut ids = Vec::with_capacity(prompt.len() / 2);
    push_token_ids(prompt.as_bytes(), &mut ids);
    ids
}

/// [`token_ids`] of `bytes` (UTF-8 from a character's start), pushed onto `ids`.
fn push_token_ids(bytes: &[u8], ids: &mut Vec<u32>) {
    let mut at = 0;
    while let Some(len) = first_token_len(&bytes[at..]) {
        // The token's bytes, little-endian, as `u32::from_le_bytes` of the
        // bytes padded with zeros; shifted in, as a copy of 1 to 4 bytes
        // would be a call to `memcpy`.
        let id = bytes[at..at + len]
            .iter()
            .rev()
            .fold(0u32, |id, &byte| id << 8 | u32::from(byte));
        ids.push(id);
        at += len;
    }
}

/// The token ids of chat prompts, `token_ids(&canonical_prompt(body))`,
/// read item by item. A token never spans two items: each item ends with
/// `"\n"`, a token of its own, and an alphanumeric run ends there. So an
/// item written as the same bytes as the item at its place in the last
/// prompt has the same ids, and only the items that differ are tokenized.
/// A session's prompts grow by appending, so most of each prompt is read
/// once, not once per request.
///
/// It holds the last prompt's text and ids: one request body's worth.
#[derive(Debug, Clone, Default)]
pub struct ChatPromptIds {
    /// The last prompt's canonical text.
    text: Vec<u8>,
    /// Its ids.
    ids: Vec<u32>,
    /// Where each of its items ends, in `text` and in `ids`.
    item_ends: Vec<(usize, usize)>,
}

impl ChatPromptIds {
    /// The token ids of `body`'s canonical prompt; `body` becomes the last
    /// prompt.
    pub fn of(&mut self, body: &Value) -> Vec<u32> {
        let mut text = Vec::with_capacity(self.text.len());
        let mut ids = Vec::with_capacity(self.ids.len());
        let mut item_ends = Vec::with_capacity(self.item_ends.len());
        for (position, (_, _, item)) in prompt_items(body).enumerate() {
            let start = (text.len(), ids.len());
            // Writing JSON into a `Vec` cannot fail.
            let _ = serde_json::to_writer(&mut text, &item);
            text.push(b'\n');
            let earlier_start = match position {
                0 => Some((0, 0)),
                _ => self.item_ends.get(position - 1).copied(),
            };
            match (earlier_start, self.item_ends.get(position)) {
                (Some((text_from, ids_from)), Some(&(text_to, ids_to)))
                    if self.text[text_from..text_to] == text[start.0..] =>
                {
                    ids.extend_from_slice(&self.ids[ids_from..ids_to]);
                }
                _ => push_token_ids(&text[start.0..], &mut ids),
            }
            item_ends.push((text.len(), ids.len()));
        }
        self.text = text;
        self.item_ends = item_ends;
        self.ids.clone_from(&ids);
        ids
    }
}

/// Prompts seen so far, per model, as token-id sequences ([`token_ids`]).
///
/// Each model's prompts are kept sorted: the recorded prompt sharing the
/// longest prefix with a new one is next to where the new one would sort, so
/// a lookup compares two prompts, not all of them, and a long session costs
/// time linear in its prompts' length rather than quadratic.
///
/// The cache holds at most [`PromptCache::max_bytes`] of token ids (4 bytes a
/// token): past it, the prompts recorded first are evicted first, as a real
/// prefix cache forgets, so a long-running `dshc serve` stays bounded.
#[derive(Debug, Clone)]
pub struct PromptCache {
    prompts_by_model: BTreeMap<String, ModelPrompts>,
    /// Distinct prompts in the order they were first recorded.
    order: VecDeque<(String, Arc<[u32]>)>,
    bytes: usize,
    max_bytes: usize,
}

#[derive(Debug, Clone, Default)]
struct ModelPrompts {
    sorted: BTreeSet<Arc<[u32]>>,
    recorded: usize,
}

/// The token-id bytes a prompt cache holds unless told otherwise: 256 MiB.
pub const DEFAULT_MAX_CACHED_PROMPT_BYTES: usize = 256 << 20;

impl Default for PromptCache {
    fn default() -> Self {
        Self::with_max_bytes(DEFAULT_MAX_CACHED_PROMPT_BYTES)
    }
}

impl PromptCache {
    /// An empty cache: every first prompt of a model has zero hits.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty cache holding at most `max_bytes` of token ids.
    pub fn with_max_bytes(max_bytes: usize) -> Self {
        PromptCache {
            prompts_by_model: BTreeMap::new(),
            order: VecDeque::new(),
            bytes: 0,
            max_bytes,
        }
    }

    /// The token-id bytes the cache holds at most.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// The token-id bytes the cache holds now.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Account `prompt` for `model` against the prompts recorded so far (does not record it).
    pub fn account(&self, model: &str, prompt: &str) -> PromptAccounting {
        self.account_ids(model, &token_ids(prompt))
    }

    /// [`PromptCache::account`] of a prompt already turned into [`token_ids`].
    pub fn account_ids(&self, model: &str, ids: &[u32]) -> PromptAccounting {
        let prompt_tokens = ids.len() as u64;
        let shared_prefix_tokens = self.longest_shared_prefix(model, ids);
        let prompt_cache_hit_tokens = shared_prefix_tokens / CACHE_UNIT_TOKENS * CACHE_UNIT_TOKENS;
        // The write side of the cache accounting: hits are whole cache units
        // of a prefix this prompt really shares with an earlier one. The
        // judge checks the read side on every implementation's traffic
        // (`[cache-hits]`: hits never shrink while the prompt only grows).
        assert!(
            prompt_cache_hit_tokens.is_multiple_of(CACHE_UNIT_TOKENS)
                && prompt_cache_hit_tokens <= shared_prefix_tokens
                && shared_prefix_tokens <= prompt_tokens,
            "cache hits are whole units of a prefix the prompt shares"
        );
        PromptAccounting {
            prompt_tokens,
            shared_prefix_tokens,
            prompt_cache_hit_tokens,
            prompt_cache_miss_tokens: prompt_tokens - prompt_cache_hit_tokens,
        }
    }

    /// Remember `prompt` as cached for `model`.
    pub fn record(&mut self, model: &str, prompt: &str) {
        self.record_ids(model, token_ids(prompt));
    }

    /// [`PromptCache::record`] of a prompt already turned into [`token_ids`].
    pub fn record_ids(&mut self, model: &str, ids: Vec<u32>) {
        let prompts = self.prompts_by_model.entry(model.to_owned()).or_default();
        prompts.recorded += 1;
        let ids: Arc<[u32]> = ids.into();
        if !prompts.sorted.insert(ids.clone()) {
            return;
        }
        self.bytes += ids.len() * 4;
        self.order.push_back((model.to_owned(), ids));
        while self.bytes > self.max_bytes {
            let Some((model, oldest)) = self.order.pop_front() else {
                break;
            };
            self.bytes -= oldest.len() * 4;
            if let Some(prompts) = self.prompts_by_model.get_mut(&model) {
                prompts.sorted.remove(&oldest);
            }
        }
    }

    /// Number of prompts recorded for `model`.
    pub fn recorded_prompt_count(&self, model: &str) -> usize {
        self.prompts_by_model
            .get(model)
            .map_or(0, |prompts| prompts.recorded)
    }

    fn longest_shared_prefix(&self, model: &str, ids: &[u32]) -> u64 {
        let Some(prompts) = self.prompts_by_model.get(model) else {
            return 0;
        };
        let at_or_after = prompts
            .sorted
            .range::<[u32], _>((Bound::Included(ids), Bound::Unbounded))
            .next();
        let before = prompts
            .sorted
            .range::<[u32], _>((Bound::Unbounded, Bound::Excluded(ids)))
            .next_back();
        [at_or_after, before]
            .into_iter()
            .flatten()
            .map(|earlier| shared_prefix_len(earlier, ids))
            .max()
            .unwrap_or(0)
    }
}

fn shared_prefix_len(left: &[u32], right: &[u32]) -> u64 {
    left.iter()
        .zip(right)
        .take_while(|(left, right)| left == right)
        .count() as u64
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::tokenizer::{count_tokens, tokenize, tokens};

    /// One change from a chat body to the next: what a session's requests
    /// do (append), and what breaks a prefix (edit, the system, the tools).
    #[derive(Clone, Debug)]
    enum BodyChange {
        Append(&'static str, String),
        Edit(usize, String),
        System(String),
        Tools(String),
    }

    fn body_change() -> impl Strategy<Value = BodyChange> {
        // Alphanumeric runs of every length around the four-character cut,
        // other scalars of every UTF-8 length, and what JSON escapes.
        let text = "[ab1Z \\n\"\\\\é€😀]{0,9}";
        prop_oneof![
            4 => (prop::sample::select(vec!["user", "assistant", "tool"]), text)
                .prop_map(|(role, text)| BodyChange::Append(role, text)),
            1 => (any::<usize>(), text).prop_map(|(at, text)| BodyChange::Edit(at, text)),
            1 => text.prop_map(BodyChange::System),
            1 => text.prop_map(BodyChange::Tools),
        ]
    }

    proptest! {
        /// Item by item, the ids are the whole prompt's, over a session of
        /// bodies that grow, and change in the middle and at the front.
        #[test]
        fn chat_prompt_ids_are_the_whole_prompts_ids(
            changes in prop::collection::vec(body_change(), 1..16),
        ) {
            let mut system = json!({"role": "system", "content": "s"});
            let mut tools = vec![json!({"type": "function", "function": {"name": "t"}})];
            let mut messages: Vec<Value> = Vec::new();
            let mut prompt_ids = ChatPromptIds::default();
            for change in changes {
                match change {
                    BodyChange::Append(role, text) => messages.push(json!({
                        "role": role, "content": text, "reasoning_content": "r"
                    })),
                    BodyChange::Edit(at, text) if !messages.is_empty() => {
                        let at = at % messages.len();
                        messages[at]["content"] = json!(text);
                    }
                    BodyChange::Edit(..) => {}
                    BodyChange::System(text) => system["content"] = json!(text),
                    BodyChange::Tools(text) => {
                        tools.push(json!({"type": "function", "function": {"name": text}}));
                    }
                }
                let all: Vec<Value> = std::iter::once(system.clone()).chain(messages.clone()).collect();
                let body = json!({"messages": all, "tools": tools});
                prop_assert_eq!(prompt_ids.of(&body), token_ids(&canonical_prompt(&body)));
            }
        }
    }

    #[test]
    fn token_ids_read_bytes_as_the_tokenizer_cuts_tokens() {
        let by_tokens = |text: &str| -> Vec<u32> {
            tokens(text)
                .map(|token| {
                    let mut id = [0u8; 4];
                    id[..token.len()].copy_from_slice(token.as_bytes());
                    u32::from_le_bytes(id)
                })
                .collect()
        };
        for text in [
            "",
            "a",
            "abcdefghij",
            "abc1 23_xY\n\t",
            "é字🙂 mixed ÀB9z héllo",
            "\u{0}\u{7f}\u{80}\u{7ff}\u{800}\u{ffff}\u{10000}\u{10ffff}",
            "{\"role\":\"user\",\"content\":\"Summarise 2026-12-07 in 12 words\"}",
        ] {
            assert_eq!(token_ids(text), by_tokens(text), "{text:?}");
        }
    }

    fn body(system: &str, turns: &[(&str, &str)]) -> Value {
        let mut messages = vec![json!({"role": "system", "content": system})];
        for (role, content) in turns {
            messages.push(json!({"role": role, "content": content}));
        }
        json!({"model": "deepseek-v4-flash", "messages": messages, "stream": true})
    }

    const LONG_SYSTEM: &str = "You are a careful coding agent. Read files before editing them, \
        keep answers short, and never invent tool output. Prefer small, reviewable changes.";

    #[test]
    fn the_cache_keeps_at_most_its_bytes_evicting_the_oldest_prompts() {
        // 300 large prompts against a 1 MiB cache: it never holds more, the
        // latest prompts still hit, and the first ones are forgotten.
        let mut cache = PromptCache::with_max_bytes(1 << 20);
        let prompts: Vec<String> = (0..300)
            .map(|i| format!("{i:04} {}", "word ".repeat(4_000)))
            .collect();
        for prompt in &prompts {
            cache.record("m", prompt);
            assert!(
                cache.bytes() <= cache.max_bytes(),
                "{} bytes",
                cache.bytes()
            );
        }
        assert_eq!(cache.recorded_prompt_count("m"), 300);
        let latest = cache.account("m", &prompts[299]);
        assert_eq!(latest.shared_prefix_tokens, latest.prompt_tokens);
        let probe = format!("0000 {}", "other ".repeat(10));
        let mut unbounded = PromptCache::with_max_bytes(usize::MAX);
        unbounded.record("m", &prompts[0]);
        assert!(unbounded.account("m", &probe).shared_prefix_tokens >= 2);
        assert_eq!(
            cache.account("m", &probe).shared_prefix_tokens,
            0,
            "evicted"
        );
        // Recording one prompt twice holds it once.
        let mut twice = PromptCache::with_max_bytes(1 << 20);
        twice.record("m", &prompts[0]);
        let once = twice.bytes();
        twice.record("m", &prompts[0]);
        assert_eq!(twice.bytes(), once);
        assert_eq!(
            PromptCache::new().max_bytes(),
            DEFAULT_MAX_CACHED_PROMPT_BYTES
        );
    }

    #[test]
    fn canonical_prompt_puts_leading_system_then_tools_then_rest() {
        let body = json!({
            "model": "m",
            "messages": [
                {"role": "system", "content": "S"},
                {"role": "user", "content": "u"},
                {"role": "system", "content": "late"}
            ],
            "tools": [{"type": "function", "function": {"name": "read"}}]
        });
        assert_eq!(
            canonical_prompt(&body),
            "{\"role\":\"system\",\"content\":\"S\"}\n\
             {\"type\":\"function\",\"function\":{\"name\":\"read\"}}\n\
             {\"role\":\"user\",\"content\":\"u\"}\n\
             {\"role\":\"system\",\"content\":\"late\"}\n"
        );
    }

    #[test]
    fn reasoning_is_in_the_prompt_only_where_deepseek_keeps_it_in_the_context() {
        let answer = |reasoning: &str| json!({"role": "assistant", "content": "A", "reasoning_content": reasoning});
        let calling = json!({"role": "assistant", "content": "", "reasoning_content": "R2",
            "tool_calls": [{"id": "c", "type": "function",
                "function": {"name": "f", "arguments": "{}"}}]});
        let body = json!({"messages": [
            {"role": "system", "content": "S"},
            {"role": "user", "content": "u1"},
            answer("R1"),
            {"role": "user", "content": "u2"},
            calling,
            {"role": "tool", "tool_call_id": "c", "content": "1"},
            answer("R3"),
            {"role": "user", "content": "u3"},
            answer("R4")
        ]});
        let prompt = canonical_prompt(&body);
        // A finished turn without tool calls: its reasoning is ignored.
        assert!(
            prompt.contains(
                "{\"role\":\"assistant\",\"content\":\"A\"}\n{\"role\":\"user\",\"content\":\"u2\"}"
            ),
            "{prompt}"
        );
        assert!(!prompt.contains("R1"), "{prompt}");
        // A finished turn with a tool call keeps every assistant's reasoning;
        // so does the open turn.
        for kept in ["R2", "R3", "R4"] {
            assert!(prompt.contains(kept), "{kept}: {prompt}");
        }
        let lines: Vec<String> = prompt_elements(&body)
            .into_iter()
            .map(|element| element.line)
            .collect();
        assert_eq!(lines.concat(), prompt);
        // The exact text: the answer of the finished plain turn loses only its reasoning.
        let plain = json!({"messages": [{"role": "user", "content": "u"}, answer("R"),
            {"role": "user", "content": "v"}]});
        assert_eq!(
            canonical_prompt(&plain),
            "{\"role\":\"user\",\"content\":\"u\"}\n\
             {\"role\":\"assistant\",\"content\":\"A\"}\n\
             {\"role\":\"user\",\"content\":\"v\"}\n"
        );
    }

    #[test]
    fn canonical_prompt_of_empty_body_is_empty() {
        assert_eq!(canonical_prompt(&json!({})), "");
        assert_eq!(canonical_prompt(&json!({"messages": "nope"})), "");
    }

    #[test]
    fn first_request_has_no_hits() {
        let cache = PromptCache::new();
        let prompt = canonical_prompt(&body(LONG_SYSTEM, &[("user", "hi")]));
        let accounting = cache.account("deepseek-v4-flash", &prompt);
        assert_eq!(accounting.prompt_tokens, count_tokens(&prompt));
        assert_eq!(accounting.shared_prefix_tokens, 0);
        assert_eq!(accounting.prompt_cache_hit_tokens, 0);
        assert_eq!(
            accounting.prompt_cache_miss_tokens,
            accounting.prompt_tokens
        );
    }

    #[test]
    fn appended_history_hits_the_rounded_down_shared_prefix() {
        let mut cache = PromptCache::new();
        let first = canonical_prompt(&body(LONG_SYSTEM, &[("user", "read a.txt")]));
        cache.record("deepseek-v4-flash", &first);
        let second = canonical_prompt(&body(
            LONG_SYSTEM,
            &[
                ("user", "read a.txt"),
                ("assistant", "done"),
                ("user", "now b.txt"),
            ],
        ));
        assert!(second.starts_with(&first));
        let shared = count_tokens(&first);
        assert!(
            shared > CACHE_UNIT_TOKENS,
            "test prompt must exceed one unit"
        );
        let accounting = cache.account("deepseek-v4-flash", &second);
        assert_eq!(accounting.shared_prefix_tokens, shared);
        assert_eq!(accounting.prompt_cache_hit_tokens, shared / 64 * 64);
        assert_eq!(accounting.prompt_cache_hit_tokens % CACHE_UNIT_TOKENS, 0);
        assert_eq!(
            accounting.prompt_cache_miss_tokens,
            count_tokens(&second) - shared / 64 * 64
        );
    }

    #[test]
    fn identical_prompt_hits_everything_up_to_the_last_full_unit() {
        let mut cache = PromptCache::new();
        let prompt = canonical_prompt(&body(LONG_SYSTEM, &[("user", "x")]));
        cache.record("m", &prompt);
        let accounting = cache.account("m", &prompt);
        assert_eq!(accounting.shared_prefix_tokens, accounting.prompt_tokens);
        assert_eq!(
            accounting.prompt_cache_hit_tokens,
            accounting.prompt_tokens / 64 * 64
        );
    }

    #[test]
    fn changing_the_system_message_gives_zero_hits() {
        let mut cache = PromptCache::new();
        cache.record(
            "m",
            &canonical_prompt(&body(LONG_SYSTEM, &[("user", "read a.txt")])),
        );
        let edited = format!("Xou{}", &LONG_SYSTEM[3..]);
        let accounting = cache.account(
            "m",
            &canonical_prompt(&body(&edited, &[("user", "read a.txt")])),
        );
        // Only `{"role":"system","content":"` is shared: far below one unit.
        assert!(accounting.shared_prefix_tokens < CACHE_UNIT_TOKENS);
        assert_eq!(accounting.prompt_cache_hit_tokens, 0);
        assert_eq!(
            accounting.prompt_cache_miss_tokens,
            accounting.prompt_tokens
        );
    }

    #[test]
    fn changing_a_tool_keeps_only_the_system_prefix() {
        let with_tool = |description: &str| {
            let mut value = body(LONG_SYSTEM, &[("user", "hi")]);
            value["tools"] = json!([{"type": "function", "function": {"name": "read", "description": description}}]);
            canonical_prompt(&value)
        };
        let mut cache = PromptCache::new();
        cache.record("m", &with_tool("Read a file from disk."));
        let accounting = cache.account("m", &with_tool("Read one file."));
        let system_line = format!("{}\n", json!({"role": "system", "content": LONG_SYSTEM}));
        assert!(accounting.shared_prefix_tokens >= count_tokens(&system_line));
        assert!(accounting.shared_prefix_tokens < accounting.prompt_tokens);
    }

    #[test]
    fn models_are_cached_separately() {
        let mut cache = PromptCache::new();
        let prompt = canonical_prompt(&body(LONG_SYSTEM, &[("user", "hi")]));
        cache.record("deepseek-v4-flash", &prompt);
        assert_eq!(
            cache
                .account("deepseek-v4-pro", &prompt)
                .prompt_cache_hit_tokens,
            0
        );
        assert!(
            cache
                .account("deepseek-v4-flash", &prompt)
                .prompt_cache_hit_tokens
                > 0
        );
        assert_eq!(cache.recorded_prompt_count("deepseek-v4-flash"), 1);
        assert_eq!(cache.recorded_prompt_count("deepseek-v4-pro"), 0);
    }

    #[test]
    fn best_match_over_all_earlier_prompts_wins() {
        let mut cache = PromptCache::new();
        let short = canonical_prompt(&body(LONG_SYSTEM, &[]));
        let long = canonical_prompt(&body(LONG_SYSTEM, &[("user", &"word ".repeat(40))]));
        cache.record("m", &long);
        cache.record("m", &short);
        let next = canonical_prompt(&body(
            LONG_SYSTEM,
            &[("user", &"word ".repeat(40)), ("assistant", "ok")],
        ));
        assert_eq!(
            cache.account("m", &next).shared_prefix_tokens,
            count_tokens(&long)
        );
    }

    /// The sorted-neighbour lookup finds what comparing with every recorded
    /// prompt finds.
    #[test]
    fn neighbour_lookup_agrees_with_comparing_every_prompt() {
        let words = ["a", "b", "ab", "c", " ", "\n", "{", "}"];
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move |bound: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % bound as u64) as usize
        };
        let mut cache = PromptCache::new();
        let mut recorded: Vec<Vec<String>> = Vec::new();
        for _ in 0..400 {
            let len = next(12);
            let base = if recorded.is_empty() || next(3) == 0 {
                Vec::new()
            } else {
                let earlier = &recorded[next(recorded.len())];
                earlier[..next(earlier.len() + 1)].to_vec()
            };
            let mut prompt = base;
            for _ in 0..len {
                prompt.push(words[next(words.len())].to_string());
            }
            let text = prompt.concat();
            let tokens: Vec<&str> = tokenize(&text);
            let brute = recorded
                .iter()
                .map(|earlier| {
                    let earlier_text = earlier.concat();
                    tokenize(&earlier_text)
                        .iter()
                        .zip(&tokens)
                        .take_while(|(l, r)| l == r)
                        .count() as u64
                })
                .max()
                .unwrap_or(0);
            assert_eq!(
                cache.account("m", &text).shared_prefix_tokens,
                brute,
                "{text:?}"
            );
            if next(2) == 0 {
                cache.record("m", &text);
                recorded.push(prompt);
            }
        }
        assert_eq!(cache.recorded_prompt_count("m"), recorded.len());
    }

    #[test]
    fn distinct_tokens_get_distinct_ids() {
        let text = "a ab abc abcd\u{0}\u{0}aé字🙂 9 Z\u{7f}\u{80}";
        let tokens = tokenize(text);
        let ids = token_ids(text);
        assert_eq!(tokens.len(), ids.len());
        for (i, left) in tokens.iter().enumerate() {
            for (j, right) in tokens.iter().enumerate() {
                assert_eq!(left == right, ids[i] == ids[j], "{left:?} vs {right:?}");
            }
        }
    }
}
