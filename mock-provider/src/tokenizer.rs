//! A tiny deterministic tokenizer, so token counts (usage, cache hits) are computed
//! rather than scripted and stay identical on every machine and every run.
//!
//! It is not DeepSeek's tokenizer and does not try to be: it only has to be stable,
//! cheap, and monotone enough that "longer prompt ⇒ more tokens" and "shared text
//! prefix ⇒ shared token prefix" hold.
//!
//! # Definition
//!
//! The text is read left to right as Unicode scalar values:
//!
//! * a maximal run of ASCII alphanumerics (`[0-9A-Za-z]`) is cut into tokens of
//!   [`MAX_ALPHANUMERIC_TOKEN_CHARS`] (4) characters, starting at the beginning of the
//!   run; the last token of the run may be shorter (`"abcdefghij"` → `abcd`, `efgh`, `ij`);
//! * every other scalar value is one token on its own: each space, tab, newline,
//!   punctuation mark, symbol, and each non-ASCII character (`"é"`, `"字"`, `"🙂"`).
//!
//! The empty string has zero tokens. Tokens are slices of the input, so joining them
//! gives the input back.

/// Longest run of ASCII alphanumerics that forms a single token.
pub const MAX_ALPHANUMERIC_TOKEN_CHARS: usize = 4;

/// Split `text` into tokens (slices of `text`, in order, covering it exactly).
pub fn tokenize(text: &str) -> Vec<&str> {
    tokens(text).collect()
}

/// The tokens of `text` one at a time, as [`tokenize`] lists them.
pub fn tokens(text: &str) -> Tokens<'_> {
    Tokens { rest: text }
}

/// The iterator of [`tokens`].
#[derive(Debug, Clone)]
pub struct Tokens<'a> {
    rest: &'a str,
}

impl<'a> Iterator for Tokens<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let len = first_token_len(self.rest.as_bytes())?;
        let (token, rest) = self.rest.split_at(len);
        self.rest = rest;
        Some(token)
    }
}

/// The length in bytes of the first token of `text`, the UTF-8 bytes of a
/// `str` from a character's start; `None` when it is empty. The one place
/// the cuts are made: [`Tokens`] and the prompt cache's token ids both read
/// text through it.
pub(crate) fn first_token_len(text: &[u8]) -> Option<usize> {
    let first = *text.first()?;
    Some(if first.is_ascii_alphanumeric() {
        // ASCII alphanumerics are one byte each.
        text.iter()
            .take(MAX_ALPHANUMERIC_TOKEN_CHARS)
            .take_while(|byte| byte.is_ascii_alphanumeric())
            .count()
    } else {
        // Any other scalar alone: its UTF-8 length is in its first byte.
        match first {
            0x00..=0x7f => 1,
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            _ => 4,
        }
    })
}

/// Number of tokens in `text` (same as `tokenize(text).len()`, without allocating).
pub fn count_tokens(text: &str) -> u64 {
    let mut count = 0u64;
    let mut run_len = 0usize;
    for character in text.chars() {
        if character.is_ascii_alphanumeric() {
            if run_len == 0 || run_len == MAX_ALPHANUMERIC_TOKEN_CHARS {
                count += 1;
                run_len = 0;
            }
            run_len += 1;
        } else {
            run_len = 0;
            count += 1;
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_text_has_no_tokens() {
        assert!(tokenize("").is_empty());
        assert_eq!(count_tokens(""), 0);
    }

    #[test]
    fn alphanumeric_runs_are_cut_every_four_characters() {
        assert_eq!(tokenize("abcdefghij"), vec!["abcd", "efgh", "ij"]);
        assert_eq!(tokenize("abcd"), vec!["abcd"]);
        assert_eq!(tokenize("a1B2c"), vec!["a1B2", "c"]);
    }

    #[test]
    fn every_other_character_is_its_own_token() {
        assert_eq!(tokenize("a b"), vec!["a", " ", "b"]);
        assert_eq!(tokenize("  \n\t"), vec![" ", " ", "\n", "\t"]);
        assert_eq!(
            tokenize("{\"k\":1}"),
            vec!["{", "\"", "k", "\"", ":", "1", "}"]
        );
        assert_eq!(tokenize("_-"), vec!["_", "-"]);
    }

    #[test]
    fn non_ascii_scalars_are_single_tokens_and_break_runs() {
        assert_eq!(tokenize("caféx"), vec!["caf", "é", "x"]);
        assert_eq!(tokenize("字🙂"), vec!["字", "🙂"]);
    }

    #[test]
    fn tokens_cover_the_input_exactly() {
        let text = "Hello, wörld! {\"path\":\"src/main.rs\"}\n  tail0123456789";
        assert_eq!(tokenize(text).concat(), text);
    }

    #[test]
    fn count_matches_tokenize() {
        for text in [
            "",
            "a",
            "abcd",
            "abcde",
            "Hello, world",
            "x  y\n\nz",
            "{\"role\":\"system\",\"content\":\"You are helpful.\"}",
            "ünïcödé and ascii1234567",
        ] {
            assert_eq!(count_tokens(text), tokenize(text).len() as u64, "{text:?}");
        }
    }

    #[test]
    fn examples_from_the_docs() {
        // "Hello, world" → Hell, o, ",", " ", worl, d
        assert_eq!(count_tokens("Hello, world"), 6);
        assert_eq!(count_tokens("{\"pa"), 3);
        assert_eq!(count_tokens("th\":\"a\"}"), 7);
    }
}
