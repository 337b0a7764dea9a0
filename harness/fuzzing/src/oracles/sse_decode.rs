//! SSE-decoding oracle: the trust boundary where a provider's response
//! bytes become stream chunks. For any bytes and any way of cutting them
//! into reads:
//! - decoding and translating never panic;
//! - the reads give the items and the chunks the whole body gives at once,
//!   with upstream's two exceptions (see [`dshc_deepseek::SseDecoder`]):
//!   its BOM check looks only at the first decoded chunk, and a read ending
//!   in `\r` is held back until a later read brings a line end, so when the
//!   body's last line end is a `\r` with text after it, the reads may lose
//!   that last line; then they give a prefix of the whole body's items;
//! - on the plain subset (UTF-8, `\n` line ends, no BOM) the reference's
//!   decoder, which models `eventsource-parser`, dispatches the same data
//!   as the mock provider's independent WHATWG splitter;
//! - every chunk a translation yields has a string `type`.
//!
//! The fuzz target `sse_decode`, the corpus replay under `cargo test` and
//! the seeded test all call [`check_sse_bytes`].

use dshc_deepseek::{SseDecoder, SseItem, translate_reads};

/// The most reads the first bytes of an input may cut its body into.
const MAX_CUTS: usize = 8;

/// Split `data` into cut points and a body, then check the body decodes
/// the same under those reads, byte by byte and whole.
///
/// # Panics
/// When decoding or translating panics or a property above fails.
pub fn check_sse_bytes(data: &[u8]) {
    let Some((&count, rest)) = data.split_first() else {
        return;
    };
    let count = (count as usize % (MAX_CUTS + 1)).min(rest.len());
    let (cut_bytes, body) = rest.split_at(count);
    let mut points: Vec<usize> = cut_bytes
        .iter()
        .map(|&byte| byte as usize * body.len() / 255)
        .collect();
    points.sort_unstable();
    points.dedup();
    let mut reads = Vec::new();
    let mut start = 0;
    for point in points {
        reads.push(&body[start..point]);
        start = point;
    }
    reads.push(&body[start..]);

    let whole = decode(&[body]);
    let (whole_chunks, whole_error) = translate_reads([body]);
    for chunk in &whole_chunks {
        assert!(
            chunk.get("type").is_some_and(|kind| kind.is_string()),
            "a chunk without a string type: {chunk}"
        );
    }
    let singles: Vec<&[u8]> = body.chunks(1).collect();
    if !starts_with_bom_text(body) {
        if ends_in_cr_line(body) {
            for (items, how) in [(decode(&reads), "cut"), (decode(&singles), "single-byte")] {
                assert!(
                    whole.starts_with(&items),
                    "{how} reads decode to more than a prefix of the whole body's items"
                );
            }
        } else {
            assert_eq!(decode(&reads), whole, "cut reads decode differently");
            assert_eq!(
                decode(&singles),
                whole,
                "single-byte reads decode differently"
            );
            let (chunks, error) = translate_reads(reads.iter().copied());
            assert_eq!(chunks, whole_chunks, "cut reads translate differently");
            assert_eq!(error, whole_error, "cut reads end differently");
        }
    }
    if let Ok(text) = std::str::from_utf8(body)
        && !text.contains('\r')
        && !text.starts_with('\u{FEFF}')
        && !starts_with_bom_text(body)
    {
        let theirs: Vec<String> = mock_provider::sse::data_payloads(body);
        let ours: Vec<String> = whole
            .into_iter()
            .filter_map(|item| match item {
                SseItem::Data(data) => Some(data),
                SseItem::Comment(_) => None,
            })
            .collect();
        assert_eq!(ours, theirs, "the two SSE decoders dispatch different data");
    }
}

fn decode(reads: &[&[u8]]) -> Vec<SseItem> {
    let mut decoder = SseDecoder::new();
    reads.iter().flat_map(|read| decoder.push(read)).collect()
}

/// Whether the body's last line end is a lone `\r` with text after it:
/// the one line that reads cut after that `\r` never complete.
fn ends_in_cr_line(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body);
    match text.rfind(['\r', '\n']) {
        Some(at) => text.as_bytes()[at] == b'\r' && at + 1 < text.len(),
        None => false,
    }
}

/// Whether the decoded text starts with `ï` (the first character of
/// upstream's BOM check, `ï»¿`) after an optional real BOM: where upstream's
/// first decoded chunk ends then decides what it strips.
fn starts_with_bom_text(body: &[u8]) -> bool {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    body.starts_with("ï".as_bytes())
}
