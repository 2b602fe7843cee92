//! Admission over a workflow's own record type: only request, round and lane are read, so any
//! workflow's observations are admitted (or refused) the same way.

use openbench_common::rundir::{Lane, LockedProvider, ReadStats, RunLock};
use openbench_common::workflow::ReportOptions;
use openbench_report_kit::admission::{AdmissionError, Foreign, RecordsRead, admit};
use openbench_report_kit::observe::{LaneKey, LaneRecord, LaneTable};
use openbench_report_kit::plan_view::{PlanView, RequestView, RoundView};
use std::path::PathBuf;

/// A record of some other workflow: nothing but what admission reads.
struct Rec(&'static str, u64, u32);

impl LaneRecord for Rec {
    fn request_id(&self) -> &str {
        self.0
    }
    fn round_index(&self) -> u64 {
        self.1
    }
    fn lane(&self) -> u32 {
        self.2
    }
}

fn lock() -> RunLock {
    let provider = |key: &str| LockedProvider {
        key: key.into(),
        display_name: key.to_uppercase(),
        model: "m".into(),
        input_price_per_mtok: None,
        output_price_per_mtok: None,
        cached_input_price_per_mtok: None,
        cache_write_input_price_per_mtok: None,
    };
    RunLock::synthetic(
        "any-workflow",
        "run-x",
        vec!["f".into()],
        vec![provider("a"), provider("b")],
    )
}

/// Lanes a (0), b (1) and c (2, not in the lock).
fn lanes() -> LaneTable {
    let mut t = LaneTable::default();
    for p in ["a", "b", "c"] {
        t.intern(LaneKey {
            lane: p.into(),
            provider: p.into(),
            region: "local".into(),
        });
    }
    t
}

/// Two rounds: round 0 plans r0a on a and r0b on b; round 1 plans r1a on a and r1b on b.
fn plan() -> PlanView {
    let req = |lane: &str, id: &str| RequestView {
        lane: lane.into(),
        request_id: id.into(),
    };
    PlanView {
        lanes: ["a", "b"]
            .iter()
            .map(|p| Lane {
                label: p.to_string(),
                provider: p.to_string(),
                region: "local".into(),
            })
            .collect(),
        repeats: None,
        rounds: vec![
            RoundView {
                round_index: 0,
                requests: vec![req("a", "r0a"), req("b", "r0b")],
            },
            RoundView {
                round_index: 1,
                requests: vec![req("a", "r1a"), req("b", "r1b")],
            },
        ],
    }
}

fn run(
    records: &[Rec],
    plan: Option<&PlanView>,
    stats: &ReadStats,
    options: ReportOptions,
) -> Result<Vec<String>, AdmissionError> {
    let file = PathBuf::from("raw/results.jsonl");
    let foreign = Foreign::default();
    admit(
        records,
        &lanes(),
        (plan, "artifacts/full-plan.json"),
        &lock(),
        RecordsRead {
            path: &file,
            stats,
            foreign: &foreign,
        },
        &options,
    )
    .map(|a| a.notes)
}

#[test]
fn planned_records_are_admitted_without_notes() {
    let records = [Rec("r0a", 0, 0), Rec("r0b", 0, 1), Rec("r1a", 1, 0)];
    let notes = run(
        &records,
        Some(&plan()),
        &ReadStats::default(),
        ReportOptions::default(),
    )
    .unwrap();
    assert!(notes.is_empty());
}

#[test]
fn each_kind_of_stray_is_named_with_its_reason() {
    let records = [
        Rec("r0a", 0, 0),
        Rec("r0b", 0, 0),  // planned on b, recorded on a
        Rec("zzz", 1, 1),  // not planned in round 1
        Rec("r1a", 1, 2),  // provider c is not in the lock
        Rec("r0a2", 7, 0), // a round the plan does not have
    ];
    let err = run(
        &records,
        Some(&plan()),
        &ReadStats::default(),
        ReportOptions::default(),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "raw/results.jsonl: 4 record(s) outside the plan (artifacts/full-plan.json) or the run \
         lock: r0b (lane \"a\", planned as \"b\"); zzz (round 1: not a planned request); r1a \
         (provider \"c\" is not in run-lock.json); r0a2 (round 7: not a planned request); \
         refusing to count them (pass --accept-unplanned to count them anyway)"
    );
}

#[test]
fn without_a_plan_only_the_lock_is_checked() {
    let records = [Rec("anything", 3, 1), Rec("other", 3, 2)];
    let err = run(
        &records,
        None,
        &ReadStats::default(),
        ReportOptions::default(),
    )
    .unwrap_err();
    assert!(
        matches!(&err, AdmissionError::Unplanned { plan, count: 1, .. } if plan == "no artifacts/full-plan.json"),
        "{err}"
    );
}

#[test]
fn accepted_strays_and_duplicates_are_stated() {
    let records = [Rec("zzz", 0, 0)];
    let stats = ReadStats {
        committed_duplicates: 2,
        duplicate_ids: vec!["r0a".into(), "r1b".into()],
        ..ReadStats::default()
    };
    let refused = run(&[], Some(&plan()), &stats, ReportOptions::default()).unwrap_err();
    assert_eq!(
        refused.to_string(),
        "raw/results.jsonl: 2 extra committed record(s) for request(s) r0a, r1b; a request has \
         one committed record; refusing to choose (pass --accept-duplicates to count the last one)"
    );
    let notes = run(
        &records,
        Some(&plan()),
        &stats,
        ReportOptions {
            accept_unplanned: true,
            accept_duplicates: true,
        },
    )
    .unwrap();
    assert_eq!(
        notes,
        vec![
            "1 record(s) outside the plan or the run lock are counted (--accept-unplanned): zzz \
             (round 0: not a planned request)."
                .to_string(),
            "2 extra committed record(s) were found for request(s) r0a, r1b; the last record of \
             each request is counted (--accept-duplicates)."
                .to_string(),
        ]
    );
}
