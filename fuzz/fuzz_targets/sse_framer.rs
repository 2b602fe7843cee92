//! The SSE framer fed arbitrary bytes in arbitrary read splits: never panics, and the frames do
//! not depend on where the reads were split (the first byte picks the split points).
#![no_main]

use libfuzzer_sys::fuzz_target;
use openbench_common::limits::StreamLimits;
use openbench_probe::sse::{SseDecoder, SseFrame};
use std::time::Duration;

/// Frames `bytes` read in pieces of the given sizes (cycled); stamps are dropped.
fn frame(bytes: &[u8], sizes: &[usize]) -> (Vec<SseFrame>, bool, Option<String>) {
    let limits = StreamLimits {
        line_bytes: 64,
        event_bytes: 128,
        ..StreamLimits::default()
    };
    let mut decoder = SseDecoder::with_limits(&limits);
    let mut out = Vec::new();
    let mut rest = bytes;
    let mut i = 0;
    let mut failed = false;
    while !rest.is_empty() {
        let n = sizes[i % sizes.len()].clamp(1, rest.len());
        i += 1;
        if decoder.feed(&rest[..n], Duration::ZERO, &mut out).is_err() {
            failed = true;
            break;
        }
        rest = &rest[n..];
    }
    let last = if failed {
        None
    } else {
        decoder.finish(Duration::ZERO).map(|e| e.data)
    };
    (out, failed, last)
}

fuzz_target!(|data: &[u8]| {
    let Some((&seed, bytes)) = data.split_first() else {
        return;
    };
    let whole = frame(bytes, &[bytes.len().max(1)]);
    let sizes: Vec<usize> = (0..8)
        .map(|k| usize::from(seed.rotate_left(k)) % 7 + 1)
        .collect();
    let split = frame(bytes, &sizes);
    // A limit may trip at a different read, but whatever was framed before it is the same.
    if !whole.1 && !split.1 {
        assert_eq!(whole, split);
    } else {
        let n = whole.0.len().min(split.0.len());
        assert_eq!(whole.0[..n], split.0[..n]);
    }
});
