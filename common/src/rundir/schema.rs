//! The typed content of every file in a run directory: the lock, the manifest, the plan, round
//! lines, checkpoints and reconstructed answers (terminal records live in [`crate::record`]).
//! Writers and readers share these types, so a field renamed here is renamed everywhere.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A provider as recorded in the lock (no credentials, ever).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LockedProvider {
    /// Provider key.
    pub key: String,
    /// Display name for reports.
    pub display_name: String,
    /// Requested model id.
    pub model: String,
    /// USD per million input tokens, when the spec gives prices.
    #[serde(default)]
    pub input_price_per_mtok: Option<f64>,
    /// USD per million output tokens, when the spec gives prices.
    #[serde(default)]
    pub output_price_per_mtok: Option<f64>,
    /// USD per million cached input tokens, when the spec gives one (absent otherwise, so the
    /// locks of runs without it keep their bytes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_input_price_per_mtok: Option<f64>,
    /// USD per million cache-write input tokens, when the spec gives one (absent otherwise:
    /// [`crate::spec::CACHE_WRITE_FACTOR`] × the input price applies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_write_input_price_per_mtok: Option<f64>,
}

impl LockedProvider {
    /// The prices the lock holds, when it holds the input and output ones.
    pub fn price(&self) -> Option<crate::spec::Price> {
        Some(crate::spec::Price {
            input_per_mtok: self.input_price_per_mtok?,
            output_per_mtok: self.output_price_per_mtok?,
            cached_input_per_mtok: self.cached_input_price_per_mtok,
            cache_write_input_per_mtok: self.cache_write_input_price_per_mtok,
        })
    }
}

/// The run lock (`run-lock.json`): hashes of every input, written once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunLock {
    /// Layout version of this file.
    pub lock_version: u32,
    /// Run id (the run directory's name).
    pub run_id: String,
    /// Workflow name.
    pub workflow: String,
    /// Benchmark slug.
    pub benchmark_slug: String,
    /// Schedule version.
    pub schedule_version: String,
    /// Model label for reports.
    pub model_label: String,
    /// Task families in round order.
    pub families: Vec<String>,
    /// Spec path as given.
    pub spec_path: String,
    /// sha256 of the spec file bytes (as written when the run was locked).
    pub spec_sha256: String,
    /// sha256 of the spec's canonical JSON with every region's probe address left out: what a
    /// resume checks, so moving a probe (a placement, not an input) does not block it. Absent in
    /// locks written before this field; those are checked on `spec_sha256`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_inputs_sha256: Option<String>,
    /// Dataset folder (absolute).
    pub dataset_dir: String,
    /// Manifest file name inside the dataset folder.
    pub dataset_manifest: String,
    /// Dataset release hash.
    pub dataset_release_hash: String,
    /// sha256 of every other file the workflow reads (the load workflow's prompt file), by its
    /// path as the spec gives it ([`crate::workflow::Workflow::input_files`]). Absent when there
    /// is none, so the locks of other runs keep their bytes.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub input_files_sha256: BTreeMap<String, String>,
    /// sha256 of the canonical JSON of the providers' adapter data.
    pub adapters_sha256: String,
    /// Tokenizer name.
    pub tokenizer: String,
    /// sha256 of the tokenizer ranks.
    pub tokenizer_ranks_sha256: String,
    /// Digest of the sources built into the binary.
    pub code_sha256: String,
    /// Program version.
    pub program_version: String,
    /// Providers in rotation base order.
    pub providers: Vec<LockedProvider>,
    /// Region labels.
    pub regions: Vec<String>,
    /// Simulator time scale when the run targets the embedded simulator.
    #[serde(default)]
    pub simulator_time_scale: Option<f64>,
    /// Request deadline, ms.
    pub timeout_ms: u64,
    /// Approval id of a full run.
    #[serde(default)]
    pub approval_id: Option<String>,
    /// When the lock was written, RFC 3339 UTC. (Locks written before this version also hold an
    /// always-empty `extra` map; readers ignore it.)
    pub created_at: String,
}

impl RunLock {
    /// A lock of a run of `workflow` with `run_id`, `families` and `providers`, every hash empty,
    /// benchmark slug `inference-<workflow>` and one `local` region: the base of the synthetic
    /// runs and test fixtures that need a lock but no real inputs (override fields with
    /// struct-update syntax).
    pub fn synthetic(
        workflow: &str,
        run_id: &str,
        families: Vec<String>,
        providers: Vec<LockedProvider>,
    ) -> RunLock {
        RunLock {
            lock_version: 1,
            run_id: run_id.to_string(),
            workflow: workflow.into(),
            benchmark_slug: format!("inference-{workflow}"),
            schedule_version: "v1".into(),
            model_label: "Synthetic".into(),
            families,
            spec_path: "spec.yaml".into(),
            spec_sha256: String::new(),
            spec_inputs_sha256: None,
            dataset_dir: String::new(),
            dataset_manifest: String::new(),
            dataset_release_hash: String::new(),
            input_files_sha256: BTreeMap::new(),
            adapters_sha256: String::new(),
            tokenizer: "o200k_base".into(),
            tokenizer_ranks_sha256: String::new(),
            code_sha256: String::new(),
            program_version: "0".into(),
            providers,
            regions: vec!["local".into()],
            simulator_time_scale: None,
            timeout_ms: 20_000,
            approval_id: None,
            created_at: String::new(),
        }
    }
}

/// Version of the manifest layout.
pub const MANIFEST_VERSION: u32 = 1;

/// What last ran in a run directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunMode {
    /// Locked by `init`; nothing executed yet.
    Init,
    /// A smoke (first item of each family, up to the spec's attempts).
    Smoke,
    /// The full plan.
    Full,
}

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Locked by `init`; nothing executed yet.
    Initialized,
    /// A process is executing it (or died doing so: resume it).
    Running,
    /// Every planned request has a terminal record.
    Complete,
    /// Every round ran, but some lane-rounds hit harness failures: resume re-executes them.
    Incomplete,
    /// Stopped by a signal; resumable.
    Interrupted,
    /// Stopped by an error; resumable once fixed.
    Failed,
}

impl RunStatus {
    /// True while a process may still be writing the run (`initialized` or `running`).
    pub fn is_live(self) -> bool {
        matches!(self, RunStatus::Initialized | RunStatus::Running)
    }

    /// The status as written in the manifest (`running`, `complete`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Initialized => "initialized",
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Incomplete => "incomplete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
        }
    }
}

/// One smoke attempt's verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SmokeAttempt {
    /// Attempt number (1-based).
    pub attempt: u32,
    /// True when every lane × family returned a 2xx, non-empty, schema-valid answer.
    pub passed: bool,
    /// One line per failing lane × family.
    pub failures: Vec<String>,
}

/// The manifest file (`artifacts/run-manifest.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunManifest {
    /// [`MANIFEST_VERSION`].
    pub manifest_version: u32,
    /// Run id.
    pub run_id: String,
    /// Workflow name.
    pub workflow: String,
    /// What last ran.
    pub mode: RunMode,
    /// Status of that mode.
    pub status: RunStatus,
    /// Approval id of the full run.
    #[serde(default)]
    pub approval_id: Option<String>,
    /// First execution start, RFC 3339 UTC.
    #[serde(default)]
    pub period_start: Option<String>,
    /// Completion time, RFC 3339 UTC.
    #[serde(default)]
    pub period_end: Option<String>,
    /// Sessions that executed part of the run (1 + resumes).
    #[serde(default)]
    pub sessions: u32,
    /// Requests in the plan of the current mode.
    #[serde(default)]
    pub planned_requests: usize,
    /// Requests with a committed terminal record.
    #[serde(default)]
    pub terminal_records: usize,
    /// Counting records by outcome.
    #[serde(default)]
    pub outcomes: BTreeMap<String, usize>,
    /// Rounds in the plan.
    #[serde(default)]
    pub rounds_total: usize,
    /// Rounds whose every lane is committed.
    #[serde(default)]
    pub rounds_done: usize,
    /// Smoke attempts so far.
    #[serde(default)]
    pub smoke: Vec<SmokeAttempt>,
    /// Artifact path → sha256 of its bytes.
    #[serde(default)]
    pub artifacts: BTreeMap<String, String>,
    /// The probes each session ran on, in session order (absent before probes were named).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub session_probes: Vec<SessionProbes>,
    /// Region → its link figures in the latest session that measured them (RTT, clock offset).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub links: BTreeMap<String, RegionLink>,
    /// Every period a region was unreachable, over all sessions, in detection order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outages: Vec<RegionOutage>,
    /// Attempt → the timed load phases of its schedule that ran to their end (a timed closed
    /// loop plans no request list, so only this says it is finished; absent when there are none).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub finished_phases: BTreeMap<u32, std::collections::BTreeSet<u32>>,
    /// The head of the records chain ([`super::chain`]) as the last sitting left it, recorded
    /// when the sitting ended (absent while one runs, and in runs written before chains).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records_chain: Option<super::chain::ChainHead>,
    /// What each sitting measured of its own runtimes (stall canaries, CPU, load), in sitting
    /// order; the validity section reads it (docs/validity.md). Absent in runs before it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtime_health: Vec<crate::validity::SittingHealth>,
    /// Last update, RFC 3339 UTC.
    pub updated_at: String,
}

/// The probes one session opened, one per region.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionProbes {
    /// The manifest's session number (1 for the first session, + 1 per resume).
    pub session: u32,
    /// Plan attempt (0 for the full run, N for smoke attempt N).
    pub attempt: u32,
    /// Region → the probe that served it.
    pub probes: BTreeMap<String, SessionProbe>,
}

/// One region's probe in a session, as its `Describe` and `OpenSession` answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionProbe {
    /// The id its records carry.
    pub probe_id: String,
    /// Program version.
    pub version: String,
    /// sha256 of the host's identity.
    pub host_fingerprint: String,
    /// The clock it times requests on.
    pub clock_source: String,
}

/// Version of the plan file layout.
pub const PLAN_VERSION: u32 = 1;

/// Which plan a plan file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanKind {
    /// The full run (attempt 0).
    Full,
    /// A smoke attempt (attempt ≥ 1).
    Smoke,
}

/// A lane: one provider probed from one region.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lane {
    /// `provider`, or `provider@region` when the spec lists several regions.
    pub label: String,
    /// Provider key.
    pub provider: String,
    /// Region label.
    pub region: String,
}

/// One lane's request inside a planned round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedLane {
    /// Lane label.
    pub lane: String,
    /// Provider key.
    pub provider: String,
    /// Region label.
    pub region: String,
    /// `req-…` id.
    pub request_id: String,
}

/// One round of the plan; `requests` are in launch order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlannedRound {
    /// 0-based round index.
    pub round_index: u64,
    /// `round-…` id.
    pub round_id: String,
    /// Task family.
    pub task_family: String,
    /// Item id.
    pub item_id: String,
    /// Item hash (sha256 of the row's canonical JSON).
    pub item_hash: String,
    /// The lanes in launch order with their request ids.
    pub requests: super::RoundRequests,
}

/// The immutable plan file (`artifacts/full-plan.json`, `artifacts/smoke-plan-attempt-N.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    /// [`PLAN_VERSION`].
    pub plan_version: u32,
    /// Full or smoke.
    pub kind: PlanKind,
    /// 0 for a full run; N for smoke attempt N.
    pub attempt: u32,
    /// Benchmark slug.
    pub benchmark_slug: String,
    /// Schedule version feeding the ids.
    pub schedule_version: String,
    /// Release hash of the dataset.
    pub dataset_release_hash: String,
    /// Families in round order.
    pub families: Vec<String>,
    /// Lanes in base order.
    pub lanes: Vec<Lane>,
    /// Items per family in this plan.
    pub items_per_family: usize,
    /// Passes over the round set (micro-single-task's `plans.repeats`): pass r's rounds are
    /// the r-th of `repeats` equal, consecutive slices of `rounds`. Absent for a plan made
    /// once, so such plans keep their bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<u32>,
    /// Every round in order.
    pub rounds: Vec<PlannedRound>,
}

impl Plan {
    /// Total planned requests (rounds × lanes).
    pub fn request_count(&self) -> usize {
        self.rounds.iter().map(|r| r.requests.len()).sum()
    }

    /// The repeat (0-based) round `round_index` belongs to: 0 for a plan made once.
    pub fn repeat_of(&self, round_index: u64) -> u32 {
        repeat_of(self.repeats, self.rounds.len(), round_index)
    }

    /// Rounds whose every lane satisfies `committed` (a request id → committed test).
    pub fn rounds_done(&self, committed: impl Fn(&str) -> bool) -> usize {
        self.rounds
            .iter()
            .filter(|round| round.requests.iter().all(|l| committed(&l.request_id)))
            .count()
    }
}

/// The repeat (0-based) of round `round_index` in a plan of `rounds` rounds run `repeats` times
/// (each repeat `rounds / repeats` consecutive rounds); 0 for a plan made once.
pub fn repeat_of(repeats: Option<u32>, rounds: usize, round_index: u64) -> u32 {
    let n = u64::from(repeats.unwrap_or(1).max(1));
    let per = (rounds as u64 / n).max(1);
    u32::try_from((round_index / per).min(n - 1)).unwrap_or(u32::MAX)
}

/// One line of `raw/reconstructed-responses.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reconstructed {
    /// Request id.
    pub request_id: String,
    /// Provider key.
    pub provider: String,
    /// Lane label.
    pub lane: String,
    /// Item id.
    pub item_id: String,
    /// Task family.
    pub task_family: String,
    /// Visible answer.
    pub answer_text: String,
    /// Reasoning text.
    pub reasoning_text: String,
    /// Final finish reason.
    pub finish_reason: Option<String>,
}

/// One line of `raw/rounds.jsonl`: what the barrier saw for one round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundLine {
    /// Round index.
    pub round_index: u64,
    /// Round id.
    pub round_id: String,
    /// Wall-clock release time, RFC 3339 UTC.
    pub released_at: String,
    /// Release time in ms since this session started.
    pub released_offset_ms: f64,
    /// max − min dispatch instant over the round's lanes, ms.
    pub launch_skew_ms: f64,
    /// Previous round's last terminal record → this release, ms (absent for a session's first
    /// round).
    pub coordinator_overhead_ms: Option<f64>,
    /// Release → last terminal record of this round, ms.
    pub round_ms: f64,
    /// Lanes dispatched in this round (fewer than all on a resumed round).
    pub lanes_dispatched: usize,
    /// Lanes that ended with a harness failure.
    pub harness_errors: usize,
    /// Lane labels in launch order.
    pub launch_order: Vec<String>,
    /// max − min of the instants the round's requests started on their probes (each record's
    /// clock zero, `started_at`, moved onto the coordinator's clock by its region's estimated
    /// clock offset), ms; `None` when fewer than two lanes reached a probe. Unlike
    /// `launch_skew_ms` it includes the gRPC hop (docs/faults.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_launch_skew_ms: Option<f64>,
    /// Region → the latest coordinator↔probe round-trip time (a `Link.Ping`) when the round
    /// ended, ms.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub link_rtt_ms: BTreeMap<String, f64>,
    /// True for a re-run group: harness-failed lanes of this round executed after its other
    /// lanes were measured (records marked `out_of_round`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub out_of_round: bool,
}

/// What one session measured of one region's coordinator↔probe link (`Link.Ping` samples).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegionLink {
    /// Pings answered.
    pub samples: u64,
    /// Smallest round-trip time, ms.
    pub rtt_ms_min: f64,
    /// Median round-trip time (nearest rank), ms.
    pub rtt_ms_p50: f64,
    /// Largest round-trip time, ms.
    pub rtt_ms_max: f64,
    /// Estimated probe clock − coordinator clock, ms, from the sample with the smallest RTT:
    /// probe time − midpoint of the coordinator's send and receive times (NTP-style).
    pub clock_offset_ms: f64,
    /// Bound on the offset's error, ms: half the RTT of the sample it came from.
    pub clock_offset_error_ms: f64,
}

/// One period in which a region could not be reached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RegionOutage {
    /// Region label.
    pub region: String,
    /// When the coordinator declared it unreachable, RFC 3339 UTC.
    pub detected_at: String,
    /// Last answered ping before that, RFC 3339 UTC.
    #[serde(default)]
    pub last_ok_at: Option<String>,
    /// What failed (a ping timeout, a refused connection).
    pub reason: String,
    /// When a ping was answered again, RFC 3339 UTC; `None` while still down at session end.
    #[serde(default)]
    pub restored_at: Option<String>,
}

/// The checkpoint written after every round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// Rounds whose every lane has a terminal record.
    pub rounds_done: usize,
    /// Rounds in the plan.
    pub rounds_total: usize,
    /// Last round finished in this session.
    pub last_round_index: Option<u64>,
    /// Requests with a committed (non-harness) terminal record.
    pub requests_done: usize,
    /// When written, RFC 3339 UTC.
    pub updated_at: String,
}
