//! Computes the code digest pinned in every run lock: sha256 over the workspace sources (every
//! `*.rs`, `*.proto`, `Cargo.toml` and `Cargo.lock`, outside `target/`, `runs/`, `data/` and hidden
//! folders), sorted by path, exported as `OPENBENCH_CODE_SHA256`.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

const SKIP_TOP: [&str; 3] = ["target", "runs", "data"];

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into()));
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    files.sort();
    let mut digest = Sha256::new();
    for rel in &files {
        let bytes = std::fs::read(root.join(rel)).unwrap_or_default();
        let file_hash = Sha256::digest(&bytes);
        digest.update(rel.as_bytes());
        digest.update(b"\0");
        digest.update(hex(&file_hash).as_bytes());
        digest.update(b"\n");
        println!("cargo:rerun-if-changed={rel}");
    }
    // New files in a source folder also change the digest: watch the folders themselves.
    if let Ok(entries) = std::fs::read_dir(&root) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.path().is_dir() && !skipped(&name) {
                println!("cargo:rerun-if-changed={name}");
            }
        }
    }
    println!(
        "cargo:rustc-env=OPENBENCH_CODE_SHA256={}",
        hex(&digest.finalize())
    );
}

fn skipped(name: &str) -> bool {
    name.starts_with('.') || SKIP_TOP.contains(&name)
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let top = dir == root;
        if path.is_dir() {
            if name.starts_with('.')
                || (top && SKIP_TOP.contains(&name.as_str()))
                || name == "target"
            {
                continue;
            }
            collect(root, &path, out);
        } else if (name.ends_with(".rs")
            || name.ends_with(".proto")
            || name == "Cargo.toml"
            || name == "Cargo.lock")
            && let Ok(rel) = path.strip_prefix(root)
        {
            out.push(rel.to_string_lossy().replace('\\', "/"));
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
