//! A workflow that does not implement an optional capability is refused, by the command that
//! needs it, with one line naming the workflow and what it lacks; nothing is written. The example
//! workflow implements none of them; micro-single-task (the default) implements every one.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use openbench_common::workflow::{BenchFixtureRequest, SynthesisRequest};
use openbench_inference::registry;
use std::path::Path;
use std::process::Command;

/// Runs the binary in `dir`; returns (exit code, stderr).
fn run(dir: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_openbench-inference"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    (out.status.code(), String::from_utf8(out.stderr).unwrap())
}

#[test]
fn commands_refuse_a_workflow_without_the_capability_by_name() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("answers.jsonl"), "{}\n").unwrap();
    let cases: [(&[&str], &str); 4] = [
        (
            &[
                "bench",
                "analysis",
                "--workflow",
                "example-echo",
                "--records",
                "10",
                "--run-dir",
                "run",
            ],
            "error: workflow \"example-echo\" cannot synthesise a run (bench analysis)\n",
        ),
        (
            &[
                "bench",
                "fidelity",
                "--workflow",
                "example-echo",
                "--plan-only",
                "--lanes",
                "1",
            ],
            "error: workflow \"example-echo\" has no bench fixture (bench fidelity)\n",
        ),
        (
            &[
                "score",
                "--workflow",
                "example-echo",
                "--answers",
                "answers.jsonl",
                "--out",
                "scored.jsonl",
            ],
            "error: scoring answers.jsonl: workflow \"example-echo\" has no offline scorer\n",
        ),
        (
            &[
                "dataset",
                "generate",
                "--workflow",
                "example-echo",
                "--out",
                "data",
            ],
            "error: workflow \"example-echo\" has no dataset generator\n",
        ),
    ];
    for (args, want) in cases {
        let (code, stderr) = run(dir.path(), args);
        assert_eq!((code, stderr.as_str()), (Some(1), want), "{args:?}");
    }
    let left: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["answers.jsonl"], "a refusal writes nothing");
}

#[test]
fn an_unknown_workflow_is_refused_with_the_known_ones() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stderr) = run(dir.path(), &["bench", "analysis", "--workflow", "nope"]);
    assert_eq!(code, Some(1));
    assert_eq!(
        stderr,
        "error: unknown workflow \"nope\"; known: micro-single-task, example-echo, load, cache-probe\n"
    );
}

#[test]
fn the_default_workflow_implements_both_bench_capabilities() {
    let tmp = tempfile::tempdir().unwrap();
    let workflow = registry::find("micro-single-task").unwrap();
    let request = SynthesisRequest {
        records: 25,
        lanes: 4,
        seed: 1,
    };
    let run = workflow
        .synthesize_run(&tmp.path().join("run"), &request)
        .unwrap();
    // 25 records over 4 lanes: 6 whole rounds.
    assert_eq!((run.rounds, run.records), (6, 24));
    (run.report)().unwrap();
    assert!(tmp.path().join("run/report.md").is_file());

    let providers = "  - key: p0\n    endpoint: http://127.0.0.1:9/v1/chat/completions\n    \
                     model: m\n    max_tokens_field: max_tokens\n    auth: {scheme: none}\n";
    let spec = workflow
        .bench_fixture(&BenchFixtureRequest {
            dir: &tmp.path().join("fixture"),
            rounds: 7,
            providers_yaml: providers,
        })
        .unwrap();
    let text = std::fs::read_to_string(&spec).unwrap();
    assert!(text.contains(providers), "{text}");
    // 7 rounds over three families: 3 items per family.
    assert!(text.contains("full_items_per_family: 3\n"), "{text}");
    assert!(tmp.path().join("fixture/data/manifest.json").is_file());
}
