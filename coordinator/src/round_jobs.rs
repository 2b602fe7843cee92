//! Rounds planned lazily: a remaining round refers to its place in the one shared plan and to
//! the workflow's source of its messages, never to per-lane copies of the prompt. Its requests
//! (identity, messages, JSON body) are built when the round is prepared, one round ahead of its
//! release, so memory holds the plan once plus two rounds of requests, whatever the number of
//! rounds.

use crate::error::CoordinatorError;
use openbench_common::request::{PlannedRequest, RequestIdentity};
use openbench_common::rundir::{Plan, PlannedLane, PlannedRound};
use openbench_common::schedule::RoundPrompts;
use std::borrow::Cow;
use std::collections::{BTreeSet, VecDeque};
use std::ops::Deref;
use std::sync::Arc;

/// A round of the shared plan (dereferences to its [`PlannedRound`]); cloning it copies a
/// pointer, not the round.
#[derive(Debug, Clone)]
pub struct RoundRef {
    plan: Arc<Plan>,
    position: usize,
}

impl Deref for RoundRef {
    type Target = PlannedRound;

    fn deref(&self) -> &PlannedRound {
        &self.plan.rounds[self.position]
    }
}

/// One round still to execute: the planned round, which of its lanes still lack a committed
/// record (in launch order) and where its prompt is.
#[derive(Debug, Clone)]
pub struct RoundJob {
    /// The planned round.
    pub round: RoundRef,
    /// Positions in the round's `requests` still to execute, in launch order.
    lanes: Positions,
    /// Where the round's messages come from.
    prompts: Arc<dyn RoundPrompts>,
    run_id: Arc<str>,
    deadline_ms: u64,
    /// True when the round's other lanes were measured earlier (a re-run, or a resumed partial
    /// round): its records are marked `out_of_round`.
    pub out_of_round: bool,
}

impl RoundJob {
    /// Lanes this job executes.
    pub fn len(&self) -> usize {
        self.lanes.len()
    }

    /// True when no lane is left (never for a job [`jobs`] returns).
    pub fn is_empty(&self) -> bool {
        self.lanes.is_empty()
    }

    /// The run the requests belong to.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Builds the round's requests, one per remaining lane in launch order (the prompt is copied
    /// here, for this round only).
    pub fn requests(&self) -> Vec<(PlannedLane, PlannedRequest)> {
        let round = &*self.round;
        let messages = self.prompts.messages(round);
        self.lanes
            .iter()
            .filter_map(|i| round.requests.get(i))
            .map(|lane| {
                let request = PlannedRequest {
                    identity: identity(&self.run_id, &self.round.plan, round, &lane),
                    messages: messages.clone(),
                    deadline_ms: self.deadline_ms,
                    output: None,
                    load: None,
                    tool: self.prompts.tool(round),
                    tools: Vec::new(),
                };
                (lane.into_owned(), request)
            })
            .collect()
    }

    /// The same round with only the lanes `keep` accepts, marked out of round: an end-of-session
    /// re-run of lanes that failed. `None` when no lane is kept.
    pub fn rerun(&self, keep: impl Fn(&PlannedLane) -> bool) -> Option<RoundJob> {
        let round = &*self.round;
        let lanes: Vec<u32> = self
            .lanes
            .iter()
            .filter(|&i| round.requests.get(i).is_some_and(|l| keep(&l)))
            .filter_map(|i| u32::try_from(i).ok())
            .collect();
        (!lanes.is_empty()).then(|| RoundJob {
            lanes: Positions::Listed(lanes),
            out_of_round: true,
            ..self.clone()
        })
    }

    /// The lanes this job executes, in launch order.
    pub fn lanes(&self) -> impl Iterator<Item = Cow<'_, PlannedLane>> {
        let round = &*self.round;
        self.lanes.iter().filter_map(|i| round.requests.get(i))
    }
}

/// Who the request of one lane of a round is.
fn identity(
    run_id: &str,
    plan: &Plan,
    round: &PlannedRound,
    lane: &PlannedLane,
) -> RequestIdentity {
    RequestIdentity {
        run_id: run_id.to_string(),
        round_id: round.round_id.clone(),
        request_id: lane.request_id.clone(),
        round_index: round.round_index,
        attempt: plan.attempt,
        task_family: round.task_family.clone(),
        item_id: round.item_id.clone(),
        provider: lane.provider.clone(),
        region: lane.region.clone(),
        lane: lane.lane.clone(),
        ..RequestIdentity::default()
    }
}

/// Which positions of a round's `requests` a job executes, in launch order.
#[derive(Debug, Clone)]
enum Positions {
    /// All of the round's `n` lanes (no memory per lane).
    All(usize),
    /// These positions only.
    Listed(Vec<u32>),
}

impl Positions {
    fn len(&self) -> usize {
        match self {
            Positions::All(n) => *n,
            Positions::Listed(positions) => positions.len(),
        }
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn iter(&self) -> Box<dyn Iterator<Item = usize> + '_> {
        match self {
            Positions::All(n) => Box::new(0..*n),
            Positions::Listed(positions) => Box::new(positions.iter().map(|&i| i as usize)),
        }
    }
}

/// The rounds of `plan` that still lack a committed record, each with only its missing lanes.
/// Fails when a round's messages cannot be built (its item is not in the dataset).
pub fn jobs(
    plan: Arc<Plan>,
    prompts: Arc<dyn RoundPrompts>,
    run_id: &str,
    deadline_ms: u64,
    committed: &BTreeSet<String>,
) -> Result<VecDeque<RoundJob>, CoordinatorError> {
    let run_id: Arc<str> = Arc::from(run_id);
    let mut out = VecDeque::new();
    for (position, round) in plan.rounds.iter().enumerate() {
        prompts.check(round).map_err(CoordinatorError::Workflow)?;
        let all = round.requests.len();
        // A fresh run has nothing committed: every lane of every round runs, and no request id
        // needs deriving here.
        let lanes = if committed.is_empty() {
            Positions::All(all)
        } else {
            let missing: Vec<u32> = round
                .requests
                .iter()
                .enumerate()
                .filter(|(_, l)| !committed.contains(&l.request_id))
                .filter_map(|(i, _)| u32::try_from(i).ok())
                .collect();
            if missing.len() == all {
                Positions::All(all)
            } else {
                Positions::Listed(missing)
            }
        };
        if !lanes.is_empty() {
            // Lanes of this round measured in an earlier session: these are not paired in time.
            let out_of_round = lanes.len() < all;
            out.push_back(RoundJob {
                round: RoundRef {
                    plan: plan.clone(),
                    position,
                },
                lanes,
                prompts: prompts.clone(),
                run_id: run_id.clone(),
                deadline_ms,
                out_of_round,
            });
        }
    }
    Ok(out)
}

/// What a full run holds before its first request is sent: every remaining round and the two
/// rounds of built, encoded requests the actor keeps (the released round and the next one).
pub struct PlannedWork {
    /// Every round still to execute.
    pub jobs: VecDeque<RoundJob>,
    /// The first two rounds' requests with their JSON bodies.
    pub prepared: Vec<(PlannedLane, PlannedRequest, String)>,
}

/// Plans the full run of `run` exactly as [`crate::runner::run_full`] does (the workflow's schedule,
/// written to `artifacts/full-plan.json` and split into jobs) and builds the first two rounds'
/// requests, without starting any probe: what `bench fidelity --plan-only` measures. The
/// schedule must be one phase of paired rounds.
pub fn plan_full(
    inputs: &crate::run_dir::RunInputs,
    run: &crate::run_dir::RunDir,
) -> Result<PlannedWork, CoordinatorError> {
    let manifest = openbench_common::rundir::RunManifest::load(&run.dir).unwrap_or_else(|_| {
        openbench_common::rundir::RunManifest::new(run.run_id(), &run.lock.workflow)
    });
    let schedule = crate::schedule_files::plan_attempt(inputs, run, 0, &manifest)?;
    let Some(openbench_common::schedule::Phase::PairedRounds(paired)) = schedule.phases.first()
    else {
        return Err(CoordinatorError::Workflow(
            "the schedule does not start with paired rounds".into(),
        ));
    };
    let jobs = jobs(
        paired.plan.clone(),
        paired.prompts.clone(),
        run.run_id(),
        inputs.spec.spec.request.timeout_ms,
        &BTreeSet::new(),
    )?;
    let mut prepared = Vec::new();
    for job in jobs.iter().take(2) {
        for (lane, request) in job.requests() {
            let body = serde_json::to_string(&request)
                .map_err(|e| CoordinatorError::Workflow(format!("cannot encode a request: {e}")))?;
            prepared.push((lane, request, body));
        }
    }
    Ok(PlannedWork { jobs, prepared })
}
