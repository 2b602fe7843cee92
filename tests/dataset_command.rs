#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `dataset generate` and `dataset validate` reach the workflow through the registry: the public
//! sample generated from the default seed is the committed one (same release hash), validating
//! it describes every family, and an unknown workflow is refused by name.

use std::path::Path;
use std::process::Command;

fn cli(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_openbench-inference"))
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn the_public_sample_is_regenerated_and_validated_through_the_registry() {
    let committed = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data/micro-single-task-public-sample/manifest.json");
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(committed).unwrap()).unwrap();
    let hash = manifest["release_hash"].as_str().unwrap().to_string();

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sample");
    let out_s = out.to_str().unwrap();
    let made = cli(&["dataset", "generate", "--out", out_s, "--public-sample"]);
    let stdout = String::from_utf8_lossy(&made.stdout);
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    assert!(
        stdout.starts_with(&format!(
            "wrote {out_s} (seed 20260902, release hash {hash}) in "
        )),
        "{stdout}"
    );
    assert_eq!(
        stdout.lines().filter(|l| l.contains(" rows ")).count(),
        3,
        "{stdout}"
    );

    let checked = cli(&[
        "dataset",
        "validate",
        "--dir",
        out_s,
        "--workflow",
        "micro-single-task",
    ]);
    let stdout = String::from_utf8_lossy(&checked.stdout);
    assert!(
        checked.status.success(),
        "{}",
        String::from_utf8_lossy(&checked.stderr)
    );
    assert!(stdout.starts_with(&format!("{out_s}: valid (")), "{stdout}");
    assert!(
        stdout.contains(&format!("release hash {hash}\n")),
        "{stdout}"
    );
    for family in [
        "ticket-triage",
        "contract-terms-extraction",
        "meeting-notes-lookup",
    ] {
        assert!(stdout.contains(&format!("  {family:<26} ")), "{stdout}");
    }

    let refused = cli(&["dataset", "validate", "--dir", out_s, "--workflow", "nope"]);
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("unknown workflow \"nope\""),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}
