use super::*;
use std::io::Write;

/// Polls once and returns what was handed over, resets as `"<reset>"`.
fn poll(f: &mut LineFollower) -> Vec<String> {
    let mut got = Vec::new();
    let stats = f.poll(|item| {
        got.push(match item {
            Followed::Reset => "<reset>".to_string(),
            Followed::Line(l) => l.to_string(),
        })
    });
    stats.unwrap_or_else(|e| panic!("poll: {e}"));
    got
}

fn append(path: &Path, bytes: &[u8]) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap_or_else(|e| panic!("{e}"));
    f.write_all(bytes).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn hands_over_each_appended_line_once_and_holds_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("results.jsonl");
    let mut f = LineFollower::new(&path);
    assert!(poll(&mut f).is_empty(), "an absent file is empty");
    append(&path, b"{\"a\":1}\n{\"b\":2}\n{\"c\"");
    assert_eq!(poll(&mut f), ["{\"a\":1}", "{\"b\":2}"]);
    assert_eq!(f.offset(), 20, "the torn tail is consumed but held back");
    assert!(poll(&mut f).is_empty(), "nothing new");
    append(&path, b":3}\n");
    assert_eq!(poll(&mut f), ["{\"c\":3}"]);
    append(&path, b"{\"d\":4}\r\n\n");
    assert_eq!(poll(&mut f), ["{\"d\":4}", ""]);
    assert_eq!(f.offset(), 34); // 8 + 8 + 8 + 10 bytes
}

#[test]
fn a_truncated_file_starts_over_with_a_reset() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("rounds.jsonl");
    append(&path, b"one\ntwo\nthr");
    let mut f = LineFollower::new(&path);
    assert_eq!(poll(&mut f), ["one", "two"]);
    // A resume repairs the torn tail by truncating it: the file is now shorter than the offset.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("{e}"));
    file.set_len(8).unwrap_or_else(|e| panic!("{e}"));
    append(&path, b"four-and-more\n");
    // Longer than the offset again, same inode, same first line: only the bytes just before the
    // offset ("thr" is now "fou") show that the torn tail was replaced.
    let got = poll(&mut f);
    assert_eq!(got, ["<reset>", "one", "two", "four-and-more"], "{got:?}");
    // The torn tail completed by its own writer is not a reset.
    append(&path, b"fiv");
    assert_eq!(poll(&mut f), Vec::<String>::new());
    append(&path, b"e\n");
    assert_eq!(poll(&mut f), ["five"]);
}

#[test]
fn a_file_shorter_than_the_offset_starts_over() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("rounds.jsonl");
    append(&path, b"one\ntwo\n");
    let mut f = LineFollower::new(&path);
    assert_eq!(poll(&mut f), ["one", "two"]);
    std::fs::write(&path, b"one\n").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(poll(&mut f), ["<reset>", "one"]);
}

#[test]
fn a_replaced_file_starts_over_with_a_reset() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("results.jsonl");
    append(&path, b"old-1\nold-2\n");
    let mut f = LineFollower::new(&path);
    assert_eq!(poll(&mut f), ["old-1", "old-2"]);
    // Replaced by rename (what an atomic rewrite or an rsync does): a new inode, and longer.
    let tmp = dir.path().join("results.jsonl.tmp");
    std::fs::write(&tmp, b"new-1\nnew-2\nnew-3\n").unwrap_or_else(|e| panic!("{e}"));
    std::fs::rename(&tmp, &path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(poll(&mut f), ["<reset>", "new-1", "new-2", "new-3"]);
    // Rewritten in place (same inode), longer, with different first bytes.
    std::fs::write(&path, b"NEW-1\nnew-2\nnew-3\nnew-4\n").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        poll(&mut f),
        ["<reset>", "NEW-1", "new-2", "new-3", "new-4"]
    );
    // Removed: a reset, then nothing until it comes back.
    std::fs::remove_file(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(poll(&mut f), ["<reset>"]);
    assert!(poll(&mut f).is_empty());
    append(&path, b"again\n");
    assert_eq!(poll(&mut f), ["again"]);
}

#[test]
fn a_torn_tail_replaced_past_the_first_bytes_starts_over() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let path = dir.path().join("results.jsonl");
    // The first line alone is longer than the bytes remembered from the start, so only the bytes
    // before the offset can show that the torn tail was cut and another line written there.
    let first = "x".repeat(300);
    append(&path, format!("{first}\nthr").as_bytes());
    let mut f = LineFollower::new(&path);
    assert_eq!(poll(&mut f), [first.as_str()]);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap_or_else(|e| panic!("{e}"));
    file.set_len(301).unwrap_or_else(|e| panic!("{e}"));
    append(&path, b"four-and-more\n");
    assert_eq!(poll(&mut f), ["<reset>", first.as_str(), "four-and-more"]);
}
