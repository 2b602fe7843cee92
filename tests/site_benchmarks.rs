#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The site with more than one benchmark and more than one region, through the binary: one store
//! holding two models under one workflow — `Alpha` measured from two regions (two in-process
//! probes), `Beta` from one — each published as a snapshot and built with `site build --spec`.
//! Checked: each model has its own leaderboard and history, and neither names the other's run
//! or lanes (before the fix a history listed every run of the workflow); the two-region
//! leaderboard lists its regions with the probe ids the store holds and names each row's region;
//! every figure of the paired-comparisons page equals the stored `paired_wins` / `paired_pairs`
//! row; the contract is the run's (reasoning effort `low` from the locked spec, and `null` with
//! source `lock` for the run whose spec was gone when it was stored); the spec's regression rule
//! reaches the history page.

mod coordinator_support;
mod real_targets;
mod site_support;

#[path = "real_targets/chromium.rs"]
mod browser;

use coordinator_support::{Prov, write_spec};
use openbench_site::model::{Contract, SnapshotResults};
use openbench_store::{Store, Value};
use site_support::checks::assert_paired_page_is_the_stores;
use site_support::*;
use std::path::{Path, PathBuf};

/// A simulated run of `model` (two providers, 2 items per family: 6 rounds) in `dir`, from
/// `regions` (empty: the one local region); returns its spec and run directory.
fn run_of(dir: &Path, model: &str, regions: &[&str]) -> (PathBuf, PathBuf) {
    std::fs::create_dir_all(dir).unwrap();
    let dataset = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/micro-single-task");
    let providers: Vec<Prov> = ["baseten", "modal"]
        .iter()
        .map(|k| Prov {
            key: k.to_string(),
            profile: k.to_string(),
            extra: String::new(),
        })
        .collect();
    let spec = write_spec(dir, &dataset, &providers, 2, 0.01, 5000);
    let mut yaml = std::fs::read_to_string(&spec).unwrap().replace(
        "  workflow: micro-single-task\n",
        &format!("  workflow: micro-single-task\n  model_label: {model}\n"),
    );
    if !regions.is_empty() {
        yaml.push_str("regions:\n");
        for r in regions {
            yaml.push_str(&format!("  - name: {r}\n    probe: local\n"));
        }
    }
    std::fs::write(&spec, yaml).unwrap();
    let o = bin(
        dir,
        &[
            "run",
            "--spec",
            spec.to_str().unwrap(),
            "--full",
            "--approve-full",
            "--approval-id",
            &format!("RUN-{model}"),
        ],
    );
    assert!(o.status.success(), "run: {}", text(&o));
    (spec, coordinator_support::printed_run_dir(&o.stdout))
}

fn ok(o: std::process::Output) {
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn two_models_and_two_regions_keep_their_own_leaderboards_and_histories() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    let store = cwd.join("results.sqlite");
    let store = store.to_str().unwrap();
    let (alpha_spec, alpha) = run_of(&cwd.join("alpha"), "Alpha", &["west", "east"]);
    let (beta_spec, beta) = run_of(&cwd.join("beta"), "Beta", &[]);
    // Beta's spec is gone when it is stored: its reasoning effort cannot be read.
    std::fs::remove_file(&beta_spec).unwrap();
    let mut ids = Vec::new();
    for dir in [&alpha, &beta] {
        ok(bin(
            cwd,
            &[
                "publish",
                "--run-dir",
                dir.to_str().unwrap(),
                "--store",
                store,
            ],
        ));
        let id = dir.file_name().unwrap().to_str().unwrap().to_string();
        ok(bin(
            cwd,
            &[
                "site",
                "publish",
                "--run",
                &id,
                "--approval-id",
                "OK-2",
                "--store",
                store,
            ],
        ));
        ids.push(id);
    }
    // A rule of our own: the history pages must state it (`site build --spec`).
    let rule_spec = cwd.join("rule.yaml");
    std::fs::write(
        &rule_spec,
        std::fs::read_to_string(&alpha_spec).unwrap()
            + "results:\n  regression:\n    min_relative_change_pct: 55\n    \
               min_rate_change_points: 7\n",
    )
    .unwrap();
    let spec_arg = rule_spec.to_str().unwrap();
    ok(bin(
        cwd,
        &[
            "site", "build", "--store", store, "--out", "site", "--spec", spec_arg,
        ],
    ));
    let site = cwd.join("site");
    let all = files(&site);
    assert_links_resolve(&all);
    let read = |id: &str| -> SnapshotResults {
        serde_json::from_str(
            &std::fs::read_to_string(site.join(format!("results/{id}.json"))).unwrap(),
        )
        .unwrap()
    };
    let (a, b) = (read(&ids[0]), read(&ids[1]));
    assert_eq!(
        (a.benchmark.as_str(), b.benchmark.as_str()),
        ("micro-single-task-alpha", "micro-single-task-beta")
    );

    // Each benchmark's pages name only its own run and lanes.
    for (me, other) in [(&a, &b), (&b, &a)] {
        for (name, bytes) in all
            .iter()
            .filter(|(n, _)| n.starts_with(me.benchmark.as_str()))
        {
            let html = String::from_utf8_lossy(bytes);
            if !name.ends_with(".html") || name.starts_with(&format!("{}-", other.benchmark)) {
                continue;
            }
            assert!(html.contains(&me.run_id), "{name}");
            assert!(
                !html.contains(&other.run_id),
                "{name} names {}",
                other.run_id
            );
        }
        let history =
            std::fs::read_to_string(site.join(format!("{}-history.html", me.benchmark))).unwrap();
        assert!(
            history.contains("reaches 55% of the earlier value"),
            "{history}"
        );
        assert!(history.contains("or 7 percentage points"), "{history}");
        // History lanes are keyed `provider@region` (anchors `lane-provider-region`).
        for lane in &other.lanes {
            let key = format!("{}@{}", lane.provider, lane.region);
            let anchor = format!("lane-{}-{}", lane.provider, lane.region);
            assert!(!history.contains(&key), "{key} in {}'s history", me.model);
            assert!(
                !history.contains(&anchor),
                "{anchor} in {}'s history",
                me.model
            );
        }
        for lane in &me.lanes {
            let anchor = format!("lane-{}-{}", lane.provider, lane.region);
            assert!(
                history.contains(&anchor),
                "{anchor} not in {}'s history",
                me.model
            );
        }
    }

    // Alpha: two regions, four lanes; its leaderboard lists each region's probes as stored.
    let lanes: Vec<&str> = a.lanes.iter().map(|l| l.lane.as_str()).collect();
    assert_eq!(lanes.len(), 4, "{lanes:?}");
    assert_eq!(b.lanes.len(), 2);
    let mut db = Store::open(store).unwrap();
    let probes = db
        .query(
            "SELECT probes FROM runs WHERE run_id = $1",
            &[Value::from(ids[0].as_str())],
        )
        .unwrap();
    let probes: std::collections::BTreeMap<String, Vec<String>> =
        serde_json::from_str(probes[0][0].text().unwrap()).unwrap();
    assert_eq!(probes.keys().collect::<Vec<_>>(), ["east", "west"]);
    let board = std::fs::read_to_string(site.join(format!("{}.html", a.benchmark))).unwrap();
    assert!(board.contains("<h2>Regions and probes</h2>"));
    for region in ["west", "east"] {
        let ids = probes[region].join(", ");
        assert!(!ids.is_empty());
        assert!(
            board.contains(&format!("<li>{region}: probes {ids}</li>")),
            "{board}"
        );
        for provider in ["baseten", "modal"] {
            let lane = a
                .lanes
                .iter()
                .find(|l| l.lane == format!("{provider}@{region}"))
                .unwrap();
            assert!(lane.display_name.ends_with(&format!("({region})")));
            assert!(board.contains(&format!("<th scope=\"row\">{}</th>", lane.display_name)));
        }
    }
    let beta_board = std::fs::read_to_string(site.join(format!("{}.html", b.benchmark))).unwrap();
    assert!(!beta_board.contains("Regions and probes"));

    // The contract, from the run: the locked spec's reasoning effort, or null without it.
    assert_eq!(
        a.contract,
        Contract {
            streaming: true,
            concurrency_per_provider: Some(1),
            timeout_ms: 5000,
            reasoning_effort: Some("low".into()),
            source: "spec".into(),
        }
    );
    assert!(board.contains("reasoning effort low, concurrency 1 per provider and a 5,000 ms"));
    assert_eq!(
        (
            b.contract.reasoning_effort.as_deref(),
            b.contract.source.as_str()
        ),
        (None, "lock")
    );
    assert!(beta_board.contains("reasoning effort not recorded"));

    // Paired comparisons: every figure is the store's.
    for s in [&a, &b] {
        assert_paired_page_is_the_stores(&site, &s.benchmark, store, s);
    }
    validate(
        &site.join("results"),
        &format!("{}.json", ids[0]),
        "schema-v2.json",
    );
}
