//! A disk that fills up, for real: the run directory lives on a small tmpfs mounted for the test
//! (CI runs as root; elsewhere the test skips visibly, and fails under
//! `OPENBENCH_REQUIRE_REAL_TARGETS`). A run that hits the full disk exits non-zero naming the
//! write that failed, leaves the manifest saying `failed` (not `running`) and no temp file; a
//! report that cannot be written fails `report` and `run` alike.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;
mod real_targets;

use coordinator_support::kill::full_args;
use coordinator_support::*;
use openbench_common::rundir as layout;
use real_targets::skip::skip_or_fail;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A tmpfs of a fixed size, unmounted on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount(size: &str) -> Result<Tmpfs, String> {
        let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .map_err(|e| format!("mount: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "mount -t tmpfs failed (needs root): {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills the file system until a write fails, then gives back `leave` bytes.
    fn fill(&self, leave: u64) {
        let path = self.path().join("filler");
        let mut f = std::fs::File::create(&path).unwrap();
        let chunk = vec![0x5au8; 64 * 1024];
        let mut written = 0u64;
        loop {
            match f.write(&chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => written += n as u64,
            }
        }
        f.set_len(written.saturating_sub(leave)).unwrap();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

fn mount_or_skip(test: &str, size: &str) -> Option<Tmpfs> {
    match Tmpfs::mount(size) {
        Ok(fs) => Some(fs),
        Err(why) => {
            skip_or_fail(test, &why);
            None
        }
    }
}

/// A spec of two simulated lanes whose runs go to `run_root`.
fn spec_on(tmp: &Path, run_root: &Path, items: usize) -> String {
    let data = sample_dataset(tmp, "data", 20260902);
    let spec = write_spec(
        tmp,
        &data,
        &[Prov::sim("plain"), Prov::sim("together")],
        items,
        0.01,
        5_000,
    );
    let text = std::fs::read_to_string(&spec).unwrap();
    let text = text.replace(
        "run_root: runs",
        &format!("run_root: {}", run_root.display()),
    );
    std::fs::write(&spec, text).unwrap();
    spec.to_str().unwrap().to_string()
}

fn full_run(cwd: &Path, spec: &str, dir: &str) -> Output {
    run_bin(cwd, &full_args(spec, dir), &[])
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Every file under `dir` whose name marks it as a temporary.
fn temp_files(dir: &Path) -> Vec<PathBuf> {
    files_under(dir)
        .into_iter()
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().contains(".tmp-"))
        })
        .collect()
}

fn manifest_status(dir: &Path) -> String {
    let m: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join(layout::RUN_MANIFEST)).unwrap()).unwrap();
    m["status"].as_str().unwrap_or_default().to_string()
}

#[test]
fn a_disk_that_fills_mid_run_fails_the_run_naming_the_write_and_keeps_the_manifest_true() {
    let Some(fs) = mount_or_skip("disk_full::mid_run", "4m") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let spec = spec_on(tmp.path(), fs.path(), 6);
    let o = run_bin(tmp.path(), &["init", "--spec", &spec], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let dir = printed_run_dir(&o.stdout);
    assert!(dir.starts_with(fs.path()), "{}", dir.display());
    // Room for the session's start and a round or two, not for 18 rounds of records and events.
    fs.fill(48 * 1024);

    let o = full_run(tmp.path(), &spec, dir.to_str().unwrap());
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    let failed_line = out
        .lines()
        .find(|l| l.contains("No space left on device"))
        .unwrap_or_else(|| panic!("no disk-full error in: {out}"));
    // The write that failed is a file of the run, named as itself, not as a temp sibling.
    assert!(
        failed_line.contains(dir.to_str().unwrap()) && !failed_line.contains(".tmp-"),
        "{failed_line}"
    );
    assert!(
        !failed_line.contains(layout::RUN_MANIFEST),
        "the manifest is not the write that failed: {failed_line}"
    );
    assert_eq!(manifest_status(&dir), "failed", "{out}");
    assert_eq!(temp_files(&dir), Vec::<PathBuf>::new());
    assert!(
        out.contains("resume with"),
        "the run stays resumable: {out}"
    );
}

#[test]
fn a_report_that_cannot_be_written_fails_report_and_run() {
    let Some(fs) = mount_or_skip("disk_full::report", "8m") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let spec = spec_on(tmp.path(), fs.path(), 2);
    let o = run_bin(tmp.path(), &["init", "--spec", &spec], &[]);
    assert!(o.status.success(), "{}", text(&o));
    let dir = printed_run_dir(&o.stdout);
    let dir_s = dir.to_str().unwrap().to_string();
    let o = full_run(tmp.path(), &spec, &dir_s);
    assert!(o.status.success(), "{}", text(&o));
    // Drop the report so nothing can be rewritten in place, then fill the disk.
    for name in [layout::REPORT_MD, layout::REPORT_HTML, layout::METRICS] {
        std::fs::remove_file(dir.join(name)).unwrap();
    }
    fs.fill(4 * 1024);

    let o = run_bin(tmp.path(), &["report", "--run-dir", &dir_s], &[]);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("No space left on device"), "{out}");
    assert!(out.contains(&format!("{dir_s}/artifacts/")), "{out}");
    assert!(!out.contains(".tmp-"), "{out}");
    assert_eq!(temp_files(&dir), Vec::<PathBuf>::new());

    // A resume of the complete run ends with the report too: it fails the same way.
    let o = full_run(tmp.path(), &spec, &dir_s);
    let out = text(&o);
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("its report was not written"), "{out}");
    assert!(out.contains("No space left on device"), "{out}");
    assert_eq!(temp_files(&dir), Vec::<PathBuf>::new());
    assert_eq!(manifest_status(&dir), "complete");
    assert!(!dir.join(layout::REPORT_MD).exists());
}
