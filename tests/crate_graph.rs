//! Workflows are siblings: no crate under `workflows/` depends on another one, and the crates
//! that serve every workflow (`watch`, `store`, `site`) depend on none, directly or through a
//! shared crate. They reach a workflow only through the registry and the `Workflow` trait
//! (docs/architecture.md, docs/adding-a-workflow.md).
//!
//! The graph is `cargo metadata`'s (the workspace's own manifests, offline, no registry), so a
//! dependency added in any `Cargo.toml` — normal, dev or build — is seen.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The crates every workflow shares that must reach none of them.
const WORKFLOW_NEUTRAL: [&str; 3] = ["openbench-watch", "openbench-store", "openbench-site"];

/// One workspace crate: its directory and its dependencies on other workspace crates.
struct Member {
    dir: PathBuf,
    /// Workspace crates it depends on: (name, kind: `normal`, `dev` or `build`).
    deps: Vec<(String, String)>,
}

/// The workspace's crates, by package name, from `cargo metadata --no-deps`.
fn workspace() -> BTreeMap<String, Member> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let output = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(root)
        .output()
        .unwrap_or_else(|e| panic!("cargo metadata: {e}"));
    assert!(
        output.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("cargo metadata's JSON: {e}"));
    let packages = metadata["packages"].as_array().cloned().unwrap_or_default();
    let names: BTreeSet<String> = packages
        .iter()
        .filter_map(|p| p["name"].as_str().map(str::to_string))
        .collect();
    packages
        .iter()
        .map(|p| {
            let name = p["name"].as_str().unwrap_or_default().to_string();
            let manifest = PathBuf::from(p["manifest_path"].as_str().unwrap_or_default());
            let dir = manifest.parent().map(Path::to_path_buf).unwrap_or_default();
            let deps = p["dependencies"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|d| {
                    let dep = d["name"].as_str()?;
                    names.contains(dep).then(|| {
                        let kind = d["kind"].as_str().unwrap_or("normal").to_string();
                        (dep.to_string(), kind)
                    })
                })
                .collect();
            (name, Member { dir, deps })
        })
        .collect()
}

/// The workflow crates: the workspace members under `workflows/`.
fn workflow_crates(members: &BTreeMap<String, Member>) -> BTreeSet<String> {
    let workflows = Path::new(env!("CARGO_MANIFEST_DIR")).join("workflows");
    members
        .iter()
        .filter(|(_, m)| m.dir.starts_with(&workflows))
        .map(|(name, _)| name.clone())
        .collect()
}

/// Every forbidden edge: a workflow crate reaching another workflow crate, or a workflow-neutral
/// crate reaching any, each as `from -> … -> to (kind)`. A path runs through normal and build
/// dependencies after its first edge (dev dependencies do not build into a crate).
fn forbidden_paths(members: &BTreeMap<String, Member>) -> Vec<String> {
    let workflows = workflow_crates(members);
    let mut found = Vec::new();
    for (from, member) in members {
        let is_workflow = workflows.contains(from);
        if !is_workflow && !WORKFLOW_NEUTRAL.contains(&from.as_str()) {
            continue;
        }
        for (first, kind) in &member.deps {
            // Depth-first from the first edge, remembering how each crate was reached.
            let mut queue = vec![vec![first.clone()]];
            let mut seen = BTreeSet::from([first.clone()]);
            while let Some(path) = queue.pop() {
                let Some(last) = path.last() else { continue };
                if workflows.contains(last) && last != from {
                    found.push(format!("{from} -> {} ({kind})", path.join(" -> ")));
                    continue;
                }
                let next = members.get(last).map(|m| &m.deps[..]).unwrap_or_default();
                for (dep, dep_kind) in next {
                    if dep_kind != "dev" && seen.insert(dep.clone()) {
                        let mut longer = path.clone();
                        longer.push(dep.clone());
                        queue.push(longer);
                    }
                }
            }
        }
    }
    found
}

#[test]
fn no_workflow_crate_reaches_another_and_watch_store_site_reach_none() {
    let members = workspace();
    let workflows = workflow_crates(&members);
    // The check means something only while it sees the workflows and the neutral crates.
    for name in [
        "openbench-micro-single-task",
        "openbench-load",
        "openbench-example-echo",
        "openbench-cache-probe",
    ] {
        assert!(
            workflows.contains(name),
            "{name} not found under workflows/: {workflows:?}"
        );
    }
    for name in WORKFLOW_NEUTRAL {
        assert!(
            members.contains_key(name),
            "{name} is not a workspace member"
        );
    }
    let found = forbidden_paths(&members);
    assert!(
        found.is_empty(),
        "workflow crates must be siblings (shared code belongs in a shared crate):\n{}",
        found.join("\n")
    );
}

#[test]
fn a_planted_edge_is_found_through_a_shared_crate() {
    // The graph as it is, plus two planted edges: a shared crate depending on a workflow (so
    // `store` would reach it through that crate) and one workflow on another as a dev
    // dependency (direct edges of every kind count).
    let mut members = workspace();
    let shared = "openbench-task-metrics";
    let Some(member) = members.get_mut(shared) else {
        panic!("{shared} is not a workspace member");
    };
    member
        .deps
        .push(("openbench-load".to_string(), "normal".to_string()));
    let Some(echo) = members.get_mut("openbench-example-echo") else {
        panic!("openbench-example-echo is not a workspace member");
    };
    echo.deps
        .push(("openbench-micro-single-task".to_string(), "dev".to_string()));
    let found = forbidden_paths(&members);
    assert!(
        found.contains(
            &"openbench-store -> openbench-task-metrics -> openbench-load (normal)".to_string()
        ),
        "{found:#?}"
    );
    assert!(
        found.contains(&"openbench-example-echo -> openbench-micro-single-task (dev)".to_string()),
        "{found:#?}"
    );
    assert!(
        found.contains(
            &"openbench-micro-single-task -> openbench-task-metrics -> openbench-load (normal)"
                .to_string()
        ),
        "{found:#?}"
    );
}
