use super::*;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Feeds `reads` with stamps 1, 2, 3… ms and returns every frame.
fn frame(reads: &[&[u8]]) -> Vec<SseFrame> {
    let mut decoder = SseDecoder::new();
    let mut out = Vec::new();
    for (i, read) in reads.iter().enumerate() {
        decoder.feed(read, ms(i as u64 + 1), &mut out).unwrap();
    }
    out
}

fn event(data: &str, at: u64) -> SseFrame {
    SseFrame::Event(SseEvent {
        event: None,
        data: data.to_string(),
        id: None,
        at: ms(at),
    })
}

/// Frames without stamps, for comparing different splits of the same bytes.
fn unstamped(frames: Vec<SseFrame>) -> Vec<SseFrame> {
    frames
        .into_iter()
        .map(|f| match f {
            SseFrame::Comment { text, .. } => SseFrame::Comment { text, at: ms(0) },
            SseFrame::Event(e) => SseFrame::Event(SseEvent { at: ms(0), ..e }),
        })
        .collect()
}

const STREAM: &[u8] = b": keep-alive\r\n\r\ndata: {\"a\":\"h\xc3\xa9llo \xf0\x9f\x98\x80\"}\r\n\r\nevent: message\ndata:x\ndata:  y\nid: 7\n\ndata: [DONE]\r\r";

#[test]
fn one_read_many_events() {
    let frames = frame(&[STREAM]);
    assert_eq!(
        frames,
        vec![
            SseFrame::Comment {
                text: "keep-alive".into(),
                at: ms(1)
            },
            event("{\"a\":\"héllo 😀\"}", 1),
            SseFrame::Event(SseEvent {
                event: Some("message".into()),
                data: "x\n y".into(),
                id: Some("7".into()),
                at: ms(1)
            }),
            event("[DONE]", 1),
        ]
    );
}

#[test]
fn every_two_way_split_gives_the_same_events() {
    let whole = unstamped(frame(&[STREAM]));
    for cut in 0..=STREAM.len() {
        let (a, b) = STREAM.split_at(cut);
        assert_eq!(unstamped(frame(&[a, b])), whole, "cut at byte {cut}");
    }
}

#[test]
fn every_three_way_split_gives_the_same_events() {
    let whole = unstamped(frame(&[STREAM]));
    for i in 0..=STREAM.len() {
        for j in i..=STREAM.len() {
            let reads = [&STREAM[..i], &STREAM[i..j], &STREAM[j..]];
            assert_eq!(unstamped(frame(&reads)), whole, "cuts at {i}, {j}");
        }
    }
}

#[test]
fn byte_by_byte_gives_the_same_events() {
    let whole = unstamped(frame(&[STREAM]));
    let reads: Vec<&[u8]> = STREAM.chunks(1).collect();
    assert_eq!(unstamped(frame(&reads)), whole);
}

#[test]
fn an_event_carries_the_stamp_of_the_read_that_completed_it() {
    // Read 1 starts the event, read 2 ends its data line, read 3 brings the blank line.
    let frames = frame(&[b"data: {\"x\"", b":1}\n", b"\n: ping\n"]);
    assert_eq!(
        frames,
        vec![
            event("{\"x\":1}", 3),
            SseFrame::Comment {
                text: "ping".into(),
                at: ms(3)
            }
        ]
    );
}

#[test]
fn utf8_char_split_between_reads_is_kept_whole() {
    // "é" is C3 A9; "😀" is F0 9F 98 80: split inside both.
    let frames = frame(&[b"data: caf\xc3", b"\xa9 \xf0\x9f", b"\x98\x80\n\n"]);
    assert_eq!(frames, vec![event("café 😀", 3)]);
}

#[test]
fn crlf_split_between_reads_is_one_line_ending() {
    // CR ends read 1, LF starts read 2: one line ending, not an empty line in between. The
    // blank line's CR (read 3) dispatches at once; its LF (read 4) adds nothing.
    let frames = frame(&[b"data: a\r", b"\ndata: b\r", b"\n\r", b"\n"]);
    assert_eq!(frames, vec![event("a\nb", 3)]);
}

#[test]
fn lone_cr_line_endings() {
    assert_eq!(frame(&[b"data: a\rdata: b\r\r"]), vec![event("a\nb", 1)]);
}

#[test]
fn field_value_spacing_and_no_colon() {
    // One optional space stripped, a second kept; a line without a colon is a field with an
    // empty value; unknown fields and retry are ignored.
    let frames = frame(&[b"data:a\ndata:  b\ndata\nretry: 10\nfoo: bar\n\n"]);
    assert_eq!(frames, vec![event("a\n b\n", 1)]);
}

#[test]
fn blank_lines_without_fields_dispatch_nothing() {
    assert_eq!(frame(&[b"\n\n\r\n"]), vec![]);
    // A comment between data lines does not dispatch.
    assert_eq!(
        frame(&[b"data: a\n:c\ndata: b\n\n"]),
        vec![
            SseFrame::Comment {
                text: "c".into(),
                at: ms(1)
            },
            event("a\nb", 1)
        ]
    );
}

#[test]
fn event_field_without_data_is_dispatched() {
    let frames = frame(&[b"event: error\n\n"]);
    assert_eq!(
        frames,
        vec![SseFrame::Event(SseEvent {
            event: Some("error".into()),
            data: String::new(),
            id: None,
            at: ms(1)
        })]
    );
}

#[test]
fn leading_bom_is_stripped() {
    assert_eq!(frame(&[b"\xef\xbb\xbfdata: a\n\n"]), vec![event("a", 1)]);
}

#[test]
fn invalid_utf8_line_is_an_error_naming_the_line() {
    let mut decoder = SseDecoder::new();
    let mut out = Vec::new();
    let err = decoder
        .feed(b"data: ok\n\ndata: \xff\xfe\n\n", ms(1), &mut out)
        .unwrap_err();
    assert_eq!(err, SseError::InvalidUtf8 { line: 3, len: 8 });
    // The event before the bad line was still framed.
    assert_eq!(out, vec![event("ok", 1)]);
}

#[test]
fn finish_dispatches_complete_lines_and_drops_an_unterminated_one() {
    let mut decoder = SseDecoder::new();
    let mut out = Vec::new();
    decoder.feed(b"data: a\n", ms(1), &mut out).unwrap();
    assert!(decoder.has_partial());
    let last = decoder.finish(ms(5)).unwrap();
    assert_eq!((last.data.as_str(), last.at), ("a", ms(5)));

    let mut decoder = SseDecoder::new();
    decoder.feed(b"data: {\"cho", ms(1), &mut out).unwrap();
    assert!(decoder.has_partial());
    assert_eq!(decoder.finish(ms(2)), None);
}

fn limited(line_bytes: u64, event_bytes: u64) -> SseDecoder {
    SseDecoder::with_limits(&StreamLimits {
        line_bytes,
        event_bytes,
        ..StreamLimits::default()
    })
}

#[test]
fn a_line_at_the_limit_passes_and_one_byte_more_is_refused_across_reads() {
    // `data: 0123456789` is 16 bytes.
    let mut out = Vec::new();
    limited(16, 100)
        .feed(b"data: 0123456789\n\n", ms(1), &mut out)
        .unwrap();
    assert_eq!(out, vec![event("0123456789", 1)]);

    let mut decoder = limited(16, 100);
    let mut out = Vec::new();
    decoder
        .feed(b"data: a\n\ndata: 01234", ms(1), &mut out)
        .unwrap();
    let err = decoder.feed(b"567890", ms(2), &mut out).unwrap_err();
    assert_eq!(err, SseError::LineTooLong { line: 3, limit: 16 });
    assert_eq!(err.error_type(), ErrorType::LimitLineBytes);
    // What came before the long line is kept; the long line is not held.
    assert_eq!(out, vec![event("a", 1)]);
    assert!(decoder.line.is_empty());
}

#[test]
fn data_lines_without_a_blank_line_are_refused_at_the_event_limit() {
    let mut decoder = limited(100, 10);
    let mut out = Vec::new();
    // "abcd" + "\n" + "efgh" = 9 bytes: still one event under the limit.
    decoder
        .feed(b"data: abcd\ndata: efgh\n", ms(1), &mut out)
        .unwrap();
    let err = decoder.feed(b"data: ij\n", ms(2), &mut out).unwrap_err();
    assert_eq!(err, SseError::EventTooLarge { line: 3, limit: 10 });
    assert_eq!(err.error_type(), ErrorType::LimitEventBytes);
    assert!(out.is_empty());
    assert!(!decoder.has_partial());
}
