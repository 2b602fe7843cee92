//! Every file a user names goes through one bounded reader (issue 36, class 1), the load
//! workflow's prompt file (`load.workload.path`) included. Through the real binary: a FIFO, a
//! symbolic link to `/dev/zero`, a file over the prompt-file bound and one prompt over the
//! one-prompt bound are each refused by `init` at once with one line naming the file; after a
//! real run, a FIFO or `/dev/zero` put in the prompt file's place ends `report` and a resume
//! (`run --run-dir`) at once too, instead of hanging while they hold the run's writer lock.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;

use coordinator_support::{bin, printed_run_dir};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A load spec on the embedded simulator reading its prompts from `prompts.jsonl`.
fn write_spec(dir: &Path) -> String {
    let spec = "benchmark: {slug: hostile-inputs, workflow: load, schedule_version: hostile-v1}
request: {temperature: 0, top_p: 1, presence_penalty: 0, frequency_penalty: 0,
  max_output_tokens: 64, response_format: json_object, timeout_ms: 20000,
  harness_grace_ms: 60000}
providers:
  - {key: p, endpoint: 'sim://plain', model: m, auth: {scheme: none}, max_tokens_field: max_tokens}
dataset: {source: ., manifest: none}
simulator: {time_scale: 1.0, seed: 7}
run_root: runs
load:
  seed: 2
  phases: {warmup_s: 0, measure: {duration_s: 0.5}, cooldown_s: 0}
  steps: [{model: constant, rate_per_s: 4}]
  workload: {kind: jsonl, path: prompts.jsonl, format: openai_messages, output_tokens: {dist: fixed, tokens: 8}}
";
    let path = dir.join("spec.yaml");
    std::fs::write(&path, spec).unwrap();
    path.to_str().unwrap().to_string()
}

const PROMPTS: &str = "{\"messages\": [{\"role\": \"user\", \"content\": \"one two three\"}]}\n\
                       {\"messages\": [{\"role\": \"user\", \"content\": \"four five\"}]}\n";

/// Runs the binary in `cwd`, killing it after 10 s (a hang fails the test, not the suite).
fn bounded(cwd: &Path, args: &[&str]) -> (Output, Duration) {
    let started = Instant::now();
    let mut child = Command::new(bin())
        .current_dir(cwd)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > Duration::from_secs(10) {
            child.kill().unwrap();
            let o = child.wait_with_output().unwrap();
            panic!(
                "{args:?} hung for 10 s: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    (child.wait_with_output().unwrap(), started.elapsed())
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// Puts something hostile at a path.
type Plant = dyn Fn(&Path);

/// Puts a FIFO at `path` (replacing what is there).
fn fifo(path: &Path) {
    let _ = std::fs::remove_file(path);
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
}

/// Puts a symbolic link to `/dev/zero` at `path`.
fn dev_zero(path: &Path) {
    let _ = std::fs::remove_file(path);
    std::os::unix::fs::symlink("/dev/zero", path).unwrap();
}

#[test]
fn init_refuses_a_fifo_dev_zero_and_oversized_prompt_files_at_once_naming_them() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    let spec = write_spec(cwd);
    let prompts = cwd.join("prompts.jsonl");
    let cases: [(&str, &Plant, &str); 4] = [
        ("FIFO", &fifo, "a FIFO, not a regular file"),
        ("/dev/zero", &dev_zero, "a device, not a regular file"),
        (
            "64 MiB + 1 sparse",
            &|p: &Path| {
                let f = std::fs::File::create(p).unwrap();
                f.set_len(64 * 1024 * 1024 + 1).unwrap();
            },
            "larger than the 67108864-byte limit",
        ),
        (
            "one 2 MiB prompt",
            &|p: &Path| {
                let big = "x".repeat(2 << 20);
                let line =
                    format!("{{\"messages\": [{{\"role\": \"user\", \"content\": \"{big}\"}}]}}\n");
                std::fs::write(p, line).unwrap();
            },
            "line 1: 2097199 bytes, over the 1048576-byte limit for one prompt",
        ),
    ];
    for (name, plant, expected) in cases {
        let _ = std::fs::remove_file(&prompts);
        plant(&prompts);
        let (o, took) = bounded(cwd, &["init", "--workflow", "load", "--spec", &spec]);
        println!("init with a {name} prompt file ended in {took:?}");
        let err = stderr(&o);
        assert!(!o.status.success(), "{name}: {err}");
        let named: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("prompts.jsonl"))
            .collect();
        assert_eq!(named.len(), 1, "{name}: {err}");
        assert!(named[0].contains(expected), "{name}: {err}");
        assert!(
            !cwd.join("runs").exists() || std::fs::read_dir(cwd.join("runs")).unwrap().count() == 0
        );
    }
}

#[test]
fn report_and_resume_end_at_once_when_the_prompt_file_became_a_fifo_or_dev_zero() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    let spec = write_spec(cwd);
    let prompts = cwd.join("prompts.jsonl");
    std::fs::write(&prompts, PROMPTS).unwrap();
    let (o, _) = bounded(
        cwd,
        &[
            "run",
            "--workflow",
            "load",
            "--spec",
            &spec,
            "--full",
            "--approve-full",
            "--approval-id",
            "H-1",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let dir = printed_run_dir(&o.stdout);
    let dir = dir.to_str().unwrap();
    for (name, plant) in [("FIFO", &fifo as &Plant), ("/dev/zero", &dev_zero)] {
        plant(&prompts);
        for args in [
            vec!["report", "--run-dir", dir],
            vec![
                "run",
                "--workflow",
                "load",
                "--spec",
                &spec,
                "--run-dir",
                dir,
                "--full",
                "--approve-full",
                "--approval-id",
                "H-1",
            ],
        ] {
            let (o, took) = bounded(cwd, &args);
            println!("{} with a {name} prompt file ended in {took:?}", args[0]);
            let err = stderr(&o);
            assert!(!o.status.success(), "{name} {}: {err}", args[0]);
            assert!(err.contains("prompts.jsonl"), "{name} {}: {err}", args[0]);
        }
    }
    // The file back: the run reports again.
    std::fs::remove_file(&prompts).unwrap();
    std::fs::write(&prompts, PROMPTS).unwrap();
    let (o, _) = bounded(cwd, &["report", "--run-dir", dir]);
    assert!(o.status.success(), "{}", stderr(&o));
}
