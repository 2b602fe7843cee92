#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `score` never truncates its input: an `--out` that is the answers file under any name (the
//! same path, another spelling, a symlink, a hard link) is refused before anything is written.

use std::path::Path;
use std::process::Command;

const LINE: &str = r#"{"item_id":"tt-1","task_family":"ticket-triage","gold":{"category":"bug","priority":"p1"},"answer_text":"{\"category\":\"bug\",\"priority\":\"p1\"}"}"#;

fn score(dir: &Path, answers: &Path, out: &Path) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_openbench-inference"))
        .current_dir(dir)
        .arg("score")
        .arg("--answers")
        .arg(answers)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

#[test]
fn an_out_that_is_the_answers_file_is_refused_and_the_file_kept() {
    let dir = tempfile::tempdir().unwrap();
    let answers = dir.path().join("answers.jsonl");
    let content = format!("{LINE}\n");
    std::fs::write(&answers, &content).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::os::unix::fs::symlink(&answers, dir.path().join("link.jsonl")).unwrap();
    std::fs::hard_link(&answers, dir.path().join("hard.jsonl")).unwrap();
    for out in [
        answers.clone(),
        Path::new("sub/../answers.jsonl").to_path_buf(),
        Path::new("./answers.jsonl").to_path_buf(),
        dir.path().join("link.jsonl"),
        dir.path().join("hard.jsonl"),
    ] {
        let output = score(dir.path(), &answers, &out);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{out:?}: {stderr}");
        assert!(
            stderr.contains("is the answers file") && stderr.contains("refusing"),
            "{out:?}: {stderr}"
        );
        assert_eq!(
            std::fs::read_to_string(&answers).unwrap(),
            content,
            "{out:?}"
        );
    }
    // A different file is written as usual.
    let out = dir.path().join("evaluations.jsonl");
    let output = score(dir.path(), &answers, &out);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let written = std::fs::read_to_string(&out).unwrap();
    assert!(
        written.contains("\"classification\":\"valid_result\""),
        "{written}"
    );
}

/// `--answers` naming a device or a FIFO is refused at once: reading `/dev/zero` would fill
/// memory, and a FIFO with no writer would hang the command. The child is given a deadline so a
/// regression fails the test instead of hanging it.
#[test]
fn answers_that_are_a_device_or_a_fifo_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("answers.fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let zero = dir.path().join("zero.jsonl");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    for (answers, what) in [(&fifo, "a FIFO"), (&zero, "a device")] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_openbench-inference"))
            .current_dir(dir.path())
            .args(["score", "--answers"])
            .arg(answers)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if std::time::Instant::now() > deadline {
                let _ = child.kill();
                panic!("score --answers {} did not return", answers.display());
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert!(!status.success());
        assert!(
            err.contains(&format!("{what}, not a regular file")),
            "{err}"
        );
    }
}

/// `score` reaches the workflow through the registry: lines without gold are scored against the
/// `--dataset` release, a line naming an unknown item is a bad line (exit 1, named on stderr),
/// and an unknown workflow is refused before `--out` is touched.
#[test]
fn the_registered_workflow_scores_against_its_dataset() {
    let dataset = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/micro-single-task");
    let dir = tempfile::tempdir().unwrap();
    let answers = dir.path().join("answers.jsonl");
    // tt-0001's gold is {"category": "improvement", "priority": "p3"}.
    std::fs::write(
        &answers,
        concat!(
            r#"{"item_id":"tt-0001","answer_text":"{\"category\":\"improvement\",\"priority\":\"p3\"}"}"#,
            "\n",
            r#"{"item_id":"tt-0001","answer_text":"{\"category\":\"bug\",\"priority\":\"p3\"}"}"#,
            "\n",
            r#"{"item_id":"nope-1","answer_text":"{}"}"#,
            "\n"
        ),
    )
    .unwrap();
    let run = |workflow: &str, out: &Path| {
        Command::new(env!("CARGO_BIN_EXE_openbench-inference"))
            .arg("score")
            .arg("--workflow")
            .arg(workflow)
            .arg("--dataset")
            .arg(&dataset)
            .arg("--answers")
            .arg(&answers)
            .arg("--out")
            .arg(out)
            .output()
            .unwrap()
    };
    let out = dir.path().join("evaluations.jsonl");
    let output = run("micro-single-task", &out);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(":3: item_id \"nope-1\" is not in")
            && stderr.contains("2 line(s) scored, 1 bad line(s)"),
        "{stderr}"
    );
    let written = std::fs::read_to_string(&out).unwrap();
    let classes: Vec<&str> = written
        .lines()
        .map(|l| {
            let at = l.find("\"classification\":\"").unwrap() + 18;
            &l[at..at + l[at..].find('"').unwrap()]
        })
        .collect();
    assert_eq!(
        classes,
        vec!["valid_result", "incorrect_result"],
        "{written}"
    );

    let kept = dir.path().join("kept.jsonl");
    std::fs::write(&kept, "keep me\n").unwrap();
    let output = run("no-such-workflow", &kept);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("unknown workflow \"no-such-workflow\""),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), "keep me\n");
}
