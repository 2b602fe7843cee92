//! The smallest complete workflow, the worked example of `docs/adding-a-workflow.md`: each
//! request asks the model to echo a line of text back as `{"echo": …}`. Its spec section lists
//! load phases (closed and open loop), its dataset is a text file of prompts, its smoke sends one
//! request per lane, the simulator echoes each prompt correctly, and its report is one table of
//! per-lane figures per phase.

mod section;

pub use section::{EchoSection, PhaseSpec};

use openbench_common::arrivals::{Arrivals, Offsets};
use openbench_common::hash::sha256_hex;
use openbench_common::record::TerminalRecord;
use openbench_common::request::{ChatMessage, Role};
use openbench_common::rundir::{
    self as layout, RunLock, counting_records, read_json, write_atomic,
};
use openbench_common::schedule::{
    LoadPhase, LoadPosition, Pacing, Phase, RequestContent, RequestSource, Schedule, lanes,
};
use openbench_common::spec::Spec;
use openbench_common::stats::nearest_rank;
use openbench_common::workflow::{
    CannedAnswer, DatasetRelease, PlanInputs, ReportOptions, ReportOutcome, WorkItem, Workflow,
    WorkflowError, smoke_problem,
};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// The one item group of this workflow.
const GROUP: &str = "echo";

/// What every request's system message asks.
const SYSTEM: &str = "Reply with the JSON object {\"echo\": <the user's text, unchanged>}.";

/// The example workflow.
pub struct ExampleEcho;

impl Workflow for ExampleEcho {
    fn name(&self) -> &'static str {
        "example-echo"
    }
    fn description(&self) -> &'static str {
        "worked example: echo a line, in closed- and open-loop phases"
    }
    fn check_spec(&self, spec: &mut Spec) -> Vec<String> {
        EchoSection::check(spec)
    }
    fn item_groups(&self, _spec: &Spec) -> Vec<String> {
        vec![GROUP.to_string()]
    }
    fn load_dataset(&self, dir: &Path, manifest: &str) -> Result<DatasetRelease, WorkflowError> {
        let path = dir.join(manifest);
        let bytes = openbench_common::input_file::read_regular(
            &path,
            openbench_common::input_file::DATASET_FILE_BYTES,
        )
        .map_err(|e| WorkflowError(format!("prompts {}: {e}", path.display()).into()))?;
        let text = String::from_utf8(bytes.clone())
            .map_err(|e| WorkflowError(format!("prompts {}: {e}", path.display()).into()))?;
        let items: Vec<WorkItem> = text
            .lines()
            .filter(|line| !line.trim().is_empty())
            .enumerate()
            .map(|(i, line)| WorkItem {
                group: GROUP.to_string(),
                item_id: format!("line-{i}"),
                system: SYSTEM.to_string(),
                user: line.to_string(),
                item_hash: sha256_hex(line),
            })
            .collect();
        if items.is_empty() {
            return Err(WorkflowError(
                format!("prompts {}: no line of text", path.display()).into(),
            ));
        }
        let file_hash = sha256_hex(&bytes);
        Ok(DatasetRelease {
            dir: dir.to_path_buf(),
            release_hash: sha256_hex(format!("{manifest}:{file_hash}")),
            file_hashes: BTreeMap::from([(manifest.to_string(), file_hash)]),
            items: BTreeMap::from([(GROUP.to_string(), items)]),
        })
    }
    fn plan(&self, inputs: &PlanInputs<'_>, attempt: u32) -> Result<Schedule, WorkflowError> {
        let section = EchoSection::of(inputs.spec)?;
        let source: Arc<dyn RequestSource> = Arc::new(EchoSource::new(inputs.dataset));
        let lanes = lanes(inputs.spec);
        let phase = |spec: &PhaseSpec| {
            let load = |name: &str, label: String, pacing| LoadPhase {
                name: name.to_string(),
                load: label,
                lanes: lanes.clone(),
                pacing,
                source: source.clone(),
            };
            match spec {
                PhaseSpec::ClosedLoop {
                    name,
                    concurrency,
                    per_slot,
                } => Phase::ClosedLoop(load(
                    name,
                    format!("closed c={concurrency}"),
                    Pacing::Slots {
                        concurrency: *concurrency,
                        per_slot: *per_slot,
                    },
                )),
                PhaseSpec::OpenLoop {
                    name,
                    count,
                    rate_per_s,
                    max_in_flight,
                    poisson_seed,
                } => {
                    // The shared arrival processes: one generator for the repository.
                    let arrivals = match poisson_seed {
                        Some(_) => Arrivals::Poisson,
                        None => Arrivals::Constant,
                    };
                    let offsets: Vec<f64> =
                        Offsets::new(arrivals, *rate_per_s, poisson_seed.unwrap_or(0), 0)
                            .take(usize::try_from(*count).unwrap_or(usize::MAX))
                            .map(|ns| ns as f64 / 1e6)
                            .collect();
                    Phase::OpenLoop(load(
                        name,
                        arrivals.label(*rate_per_s),
                        Pacing::Releases {
                            offsets_ms: vec![offsets; lanes.len()],
                            max_in_flight: *max_in_flight,
                        },
                    ))
                }
            }
        };
        // The smoke: one request per lane, one at a time.
        let smoke = [PhaseSpec::ClosedLoop {
            name: "smoke".into(),
            concurrency: 1,
            per_slot: 1,
        }];
        let specs = if attempt == 0 {
            &section.phases[..]
        } else {
            &smoke[..]
        };
        Ok(Schedule {
            version: inputs.spec.benchmark.schedule_version.clone(),
            attempt,
            phases: specs.iter().map(phase).collect(),
        })
    }
    fn smoke_failures(
        &self,
        schedule: &Schedule,
        records: &BTreeMap<String, TerminalRecord>,
    ) -> Vec<String> {
        let mut failures = Vec::new();
        for index in 0..schedule.phases.len() {
            for id in schedule.load_request_ids(index) {
                let record = records.get(&id);
                let why = smoke_problem(record).or_else(|| {
                    record
                        .filter(|r| echoed(r).is_none())
                        .map(|_| "answer is not {\"echo\": …}".to_string())
                });
                if let Some(why) = why {
                    failures.push(format!("{id}: {why}"));
                }
            }
        }
        failures
    }
    fn simulator_answers(
        &self,
        dataset: &DatasetRelease,
    ) -> Result<Vec<CannedAnswer>, WorkflowError> {
        let items = dataset.items.get(GROUP).map(Vec::as_slice).unwrap_or(&[]);
        Ok(items
            .iter()
            .map(|item| CannedAnswer {
                group: GROUP.to_string(),
                user_prompt: item.user.clone(),
                correct: serde_json::json!({ "echo": item.user }).to_string(),
                incorrect: serde_json::json!({ "echo": "" }).to_string(),
            })
            .collect())
    }
    fn report(
        &self,
        run_dir: &Path,
        _options: &ReportOptions,
    ) -> Result<ReportOutcome, WorkflowError> {
        let fail = |e: layout::RunDirError| WorkflowError(Box::new(e));
        let lock: RunLock = read_json(&layout::path(run_dir, layout::RUN_LOCK)).map_err(fail)?;
        let records =
            counting_records(&layout::path(run_dir, layout::FULL_RESULTS)).map_err(fail)?;
        let summary_table = summary(&lock, records.values());
        let out = layout::path(run_dir, layout::REPORT_MD);
        let text = format!(
            "# {} — {}\n\n```text\n{summary_table}```\n",
            lock.run_id,
            self.name()
        );
        write_atomic(&out, text.as_bytes()).map_err(fail)?;
        Ok(ReportOutcome {
            summary_table,
            written: vec![out],
        })
    }
}

/// The echoed text of a record whose answer is `{"echo": <its prompt's text>}`'s shape.
fn echoed(record: &TerminalRecord) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(&record.answer_text).ok()?;
    value.get("echo")?.as_str().map(str::to_string)
}

/// Each request's content: a prompt line picked by the request's place (a pure function of it).
struct EchoSource {
    prompts: Vec<String>,
}

impl EchoSource {
    fn new(dataset: &DatasetRelease) -> EchoSource {
        let items = dataset.items.get(GROUP).map(Vec::as_slice).unwrap_or(&[]);
        EchoSource {
            prompts: items.iter().map(|item| item.user.clone()).collect(),
        }
    }
}

impl RequestSource for EchoSource {
    fn request(&self, at: &LoadPosition) -> RequestContent {
        let n = self.prompts.len().max(1) as u64;
        let index = (at.lane_index as u64 * 7 + u64::from(at.slot) * 3 + at.sequence) % n;
        let user = self
            .prompts
            .get(index as usize)
            .cloned()
            .unwrap_or_default();
        RequestContent {
            group: GROUP.to_string(),
            item_key: format!("line-{index}"),
            messages: vec![
                ChatMessage::text(Role::System, SYSTEM.to_string()),
                ChatMessage::text(Role::User, user),
            ],
            output: None,
            tools: Vec::new(),
        }
    }
}

/// One line per lane and phase: requests, completed, E2E p50, send lag p50 and max.
fn summary<'a>(lock: &RunLock, records: impl Iterator<Item = &'a TerminalRecord>) -> String {
    let mut cells: BTreeMap<(u32, String), Vec<&TerminalRecord>> = BTreeMap::new();
    for r in records {
        cells
            .entry((r.phase.unwrap_or(0), r.lane.clone()))
            .or_default()
            .push(r);
    }
    let mut out = format!(
        "{:<6} {:<12} {:>8} {:>9} {:>12} {:>13} {:>13}\n",
        "Phase", "Lane", "Requests", "Completed", "E2E p50 ms", "Send lag p50", "Send lag max"
    );
    let fmt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
    for ((phase, lane), rs) in &cells {
        let completed = rs
            .iter()
            .filter(|r| r.outcome.is_committed() && echoed(r).is_some());
        let e2e: Vec<f64> = rs.iter().filter_map(|r| r.e2e_ms).collect();
        let lag: Vec<f64> = rs.iter().filter_map(|r| r.send_lag_ms).collect();
        out.push_str(&format!(
            "{:<6} {:<12} {:>8} {:>9} {:>12} {:>13} {:>13}\n",
            phase,
            lane,
            rs.len(),
            completed.count(),
            fmt(nearest_rank(&e2e, 0.5)),
            fmt(nearest_rank(&lag, 0.5)),
            fmt(nearest_rank(&lag, 1.0)),
        ));
    }
    let _ = lock;
    out
}
