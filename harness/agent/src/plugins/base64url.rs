//! Base64url without padding (RFC 4648 §5), as Node's `Buffer` speaks it.
//! session-reference URIs carry `base64url(JSON.stringify(id))` (10 SR1);
//! decoding is lenient like Node's, and callers re-encode to insist on the
//! canonical form, as upstream does.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// `Buffer.from(bytes).toString('base64url')`.
pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let symbols = chunk.len() + 1;
        for i in 0..symbols {
            let index = (n >> (18 - 6 * i)) & 63;
            out.push(char::from(ALPHABET[index as usize]));
        }
    }
    out
}

fn value(symbol: u8) -> Option<u32> {
    ALPHABET
        .iter()
        .position(|s| *s == symbol)
        .map(|index| index as u32)
}

/// `Buffer.from(text, 'base64url')` for text of alphabet symbols only: full
/// groups give 3 bytes, a trailing group of 2 or 3 symbols 1 or 2 bytes, a
/// lone trailing symbol nothing (its bits are dropped, as Node drops them).
/// `None` when a symbol is outside the alphabet.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let values: Vec<u32> = text.bytes().map(value).collect::<Option<_>>()?;
    let mut out = Vec::with_capacity(values.len() * 3 / 4);
    for group in values.chunks(4) {
        let mut n = 0u32;
        for (i, v) in group.iter().enumerate() {
            n |= v << (18 - 6 * i);
        }
        let bytes = n.to_be_bytes();
        let produced = match group.len() {
            4 => 3,
            3 => 2,
            2 => 1,
            _ => 0,
        };
        out.extend_from_slice(&bytes[1..1 + produced]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::{decode, encode};

    #[test]
    fn rfc_4648_vectors_without_padding() {
        let vectors = [
            ("", ""),
            ("f", "Zg"),
            ("fo", "Zm8"),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg"),
            ("fooba", "Zm9vYmE"),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, encoded) in vectors {
            assert_eq!(encode(plain.as_bytes()), encoded);
            assert_eq!(decode(encoded).as_deref(), Some(plain.as_bytes()));
        }
    }

    #[test]
    fn url_alphabet_and_session_ids() {
        assert_eq!(encode(&[0xfb, 0xff]), "-_8");
        // JSON.stringify("s2") = "\"s2\"".
        assert_eq!(encode(b"\"s2\""), "InMyIg");
        assert_eq!(decode("InMyIg").as_deref(), Some(&b"\"s2\""[..]));
        assert_eq!(decode("a+b"), None);
        // A lone trailing symbol decodes to nothing.
        assert_eq!(decode("Zm9vY").as_deref(), Some(&b"foo"[..]));
    }
}
