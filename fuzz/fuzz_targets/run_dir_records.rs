//! The run-directory record reader (`raw/results*.jsonl`) on torn and corrupted files: never
//! panics, and a file cut anywhere reads as a prefix of the records of the whole file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use openbench_coordinator::rundir::read_records_lenient;

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
    let whole = read_records_lenient(&path);
    let cut = bytes.len() * usize::from(cut) / 255;
    if std::fs::write(&path, &bytes[..cut]).is_err() {
        return;
    }
    let torn = read_records_lenient(&path);
    if let (Ok(whole), Ok(torn)) = (whole, torn) {
        assert!(torn.len() <= whole.len());
        assert_eq!(whole[..torn.len()], torn[..]);
    }
});
