//! The run-directory reader of "the records that count" (`raw/results*.jsonl`) on torn and
//! corrupted files: never panics, and a file cut anywhere counts no request that the whole file
//! does not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use openbench_common::rundir::read_counting;
use std::collections::BTreeSet;

fuzz_target!(|data: &[u8]| {
    let Some((&cut, bytes)) = data.split_first() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("openbench-fuzz-{}", std::process::id()));
    if std::fs::create_dir_all(&dir).is_err() {
        return;
    }
    let path = dir.join("results.jsonl");
    if std::fs::write(&path, bytes).is_err() {
        return;
    }
    let whole = read_counting(&path, true, |r| r.request_id);
    let cut = bytes.len() * usize::from(cut) / 255;
    if std::fs::write(&path, &bytes[..cut]).is_err() {
        return;
    }
    let torn = read_counting(&path, true, |r| r.request_id);
    if let (Ok(whole), Ok(torn)) = (whole, torn) {
        let whole: BTreeSet<String> = whole.items.into_iter().collect();
        for id in torn.items {
            assert!(whole.contains(&id), "{id} counted only in the torn file");
        }
    }
});
