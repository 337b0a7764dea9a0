//! SSE decoding does not depend on how the stream is cut into reads: any
//! partition of the bytes gives the items the whole stream gives at once
//! (proptest). The one documented exception, upstream's BOM check on the
//! first decoded chunk, is kept out of the generated streams.

#![allow(
    clippy::unwrap_used,
    reason = "a test fails by panicking, with the value shown"
)]

use dshc_deepseek::{SseDecoder, SseItem};
use proptest::prelude::*;

/// Lines of an SSE stream: data, comments, other fields, blank lines, with
/// every line ending and some multi-byte text.
fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z é😀{}\":,]{0,12}".prop_map(|text| format!("data: {text}")),
        "[a-z ]{0,6}".prop_map(|text| format!("data:{text}")),
        Just("data".to_string()),
        "[a-z ]{0,6}".prop_map(|text| format!(": {text}")),
        "[a-z]{1,5}".prop_map(|field| format!("{field}: x")),
        Just(String::new()),
        Just("data: [DONE]".to_string()),
    ]
}

fn stream() -> impl Strategy<Value = Vec<u8>> {
    proptest::collection::vec(
        (line(), prop_oneof![Just("\n"), Just("\r\n"), Just("\r")]),
        0..24,
    )
    .prop_map(|lines| {
        lines
            .into_iter()
            .map(|(line, end)| line + end)
            .collect::<String>()
            .into_bytes()
    })
    .prop_filter("no leading BOM text", |bytes| {
        !bytes.starts_with("ï»¿".as_bytes())
    })
}

fn decode(reads: &[&[u8]]) -> Vec<SseItem> {
    let mut decoder = SseDecoder::new();
    reads.iter().flat_map(|read| decoder.push(read)).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn every_partition_of_the_reads_gives_the_same_items(
        bytes in stream(),
        cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
    ) {
        let whole = decode(&[&bytes]);
        let mut points: Vec<usize> = cuts.iter().map(|cut| cut.index(bytes.len() + 1)).collect();
        points.sort_unstable();
        points.dedup();
        let mut reads = Vec::new();
        let mut start = 0;
        for point in points {
            reads.push(&bytes[start..point]);
            start = point;
        }
        reads.push(&bytes[start..]);
        prop_assert_eq!(decode(&reads), whole);
    }

    #[test]
    fn byte_by_byte_reads_give_the_same_items(bytes in stream()) {
        let whole = decode(&[&bytes]);
        let singles: Vec<&[u8]> = bytes.chunks(1).collect();
        prop_assert_eq!(decode(&singles), whole);
    }
}
