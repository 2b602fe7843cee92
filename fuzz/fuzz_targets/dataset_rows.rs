//! The dataset row validator on arbitrary family files: never panics, and every line is either
//! a row or at least one problem naming that line.
#![no_main]

use libfuzzer_sys::fuzz_target;
use openbench_micro_single_task::dataset::{Family, parse_file};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    let family = Family::ALL[usize::from(pick) % Family::ALL.len()];
    let mut problems = Vec::new();
    let rows = parse_file(family, "fuzz.jsonl", text, &mut problems);
    let body = text.strip_suffix('\n').unwrap_or(text);
    let lines = if body.is_empty() {
        0
    } else {
        body.split('\n').count()
    };
    assert!(rows.len() <= lines);
    for problem in &problems {
        assert_eq!(problem.file, "fuzz.jsonl");
        assert!(problem.line.is_none_or(|l| (1..=lines).contains(&l)));
    }
});
