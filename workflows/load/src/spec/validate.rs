//! The rules of a `load:` section. Every broken rule is one line naming its field path and value;
//! nothing stops at the first problem.

use super::{
    Agent, Conversation, LengthDist, LoadModel, LoadSection, Measure, Phases, WorkloadSpec,
};
use openbench_common::probe_session::MAX_PROBE_IN_FLIGHT;

/// Metric names an SLO may bound (all in milliseconds, all per request). The `_sched` ones are
/// timed from the scheduled send of an open-loop request; in a closed-loop step they equal the
/// plain ones (there is no schedule).
pub const SLO_METRICS: [&str; 7] = [
    "ttfo_ms",
    "ttfa_ms",
    "e2e_ms",
    "tpot_ms",
    "ttfo_sched_ms",
    "ttfa_sched_ms",
    "e2e_sched_ms",
];

/// Largest rate a step may ask for, requests per second per lane. Above it the client, not the
/// provider, is what a run would measure.
pub const MAX_RATE_PER_S: f64 = 10_000.0;
/// Largest closed-loop concurrency per lane, and largest open-loop in-flight bound
/// (`load.max_in_flight`): the most a probe session lets one lane hold in flight.
pub const MAX_CONCURRENCY: u32 = openbench_common::probe_session::MAX_IN_FLIGHT;
/// Longest warm-up, measured window or cool-down: one day.
pub const MAX_PHASE_S: f64 = 86_400.0;
/// Most measured requests a count window may ask for.
pub const MAX_MEASURED_REQUESTS: u32 = 1_000_000;
/// Most requests one open-loop step may plan per lane (rate × all three phases).
pub const MAX_STEP_REQUESTS: f64 = 10_000_000.0;
/// Longest prompt a workload may ask for, in tokens.
pub const MAX_INPUT_TOKENS: u32 = 1_000_000;
/// Most distinct prompts a shared-prefix workload may build.
pub const MAX_SHARED_PREFIX_PROMPTS: u64 = 1_000_000;
/// Largest gamma shape (`burstiness`): gaps with a coefficient of variation of 0.03.
pub const MAX_BURSTINESS: f64 = 1_000.0;
/// Largest `time_scale` of a trace replay.
pub const MAX_TIME_SCALE: f64 = 1_000.0;
/// Most bisections of a saturation search.
pub const MAX_REFINE_STEPS: u32 = 20;
/// Most turns one conversation may have (each turn re-sends every earlier one).
pub const MAX_TURNS: u32 = 1_000;

/// What the rest of the spec fixes that the load section must fit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The request contract's completion ceiling (`request.max_output_tokens`).
    pub max_output_tokens: u32,
    /// Provider lanes one region's probe serves (every provider of the spec): with the section's
    /// in-flight bound per lane, what the probe would be asked to hold at once.
    pub lanes_per_probe: usize,
}

impl LoadSection {
    /// Every rule this section breaks, one line each naming the field (empty when valid).
    pub fn problems(&self, limits: &Limits) -> Vec<String> {
        let mut problems = Vec::new();
        let mut say = |line: String| problems.push(line);
        phase_problems(&self.phases, &mut say);
        match (self.steps.is_empty(), &self.saturation) {
            (true, None) => say("load: give either `steps` or `saturation`".into()),
            (false, Some(_)) => say("load: give `steps` or `saturation`, not both".into()),
            _ => {}
        }
        if let Some(n) = self.repeats {
            if !(2..=super::MAX_REPEATS).contains(&n) {
                say(format!(
                    "load.repeats: {n} is outside 2..={} (leave it out to run once)",
                    super::MAX_REPEATS
                ));
            }
            if self.saturation.is_some() {
                say(
                    "load.repeats: not with `saturation` (each search's next rate depends on \
                     the steps before; repeat a sweep of the rates it found instead)"
                        .into(),
                );
            }
        }
        if let Some(n) = self.max_in_flight
            && (n == 0 || n > MAX_CONCURRENCY)
        {
            say(format!(
                "load.max_in_flight: {n} is outside 1..={MAX_CONCURRENCY}"
            ));
        }
        for (i, step) in self.steps.iter().enumerate() {
            let at = format!("load.steps[{i}]");
            if let Some(c) = self.conversation(i) {
                conversation_problems(&at, c, &mut say);
            }
            if let Some(a) = self.agent(i) {
                agent_problems(&at, a, self.conversation(i).is_some(), &mut say);
            }
            match step {
                LoadModel::Closed {
                    concurrency,
                    ramp_up_s,
                    ..
                } => {
                    if *concurrency == 0 || *concurrency > MAX_CONCURRENCY {
                        say(format!(
                            "{at}.concurrency: {concurrency} is outside 1..={MAX_CONCURRENCY}"
                        ));
                    }
                    if let Some(ramp) = ramp_up_s
                        && !(*ramp >= 0.0 && *ramp <= MAX_PHASE_S)
                    {
                        say(format!(
                            "{at}.ramp_up_s: {ramp} is outside [0, {MAX_PHASE_S}]"
                        ));
                    }
                }
                LoadModel::Constant { rate_per_s, .. } | LoadModel::Poisson { rate_per_s, .. } => {
                    rate_problems(
                        &format!("{at}.rate_per_s"),
                        *rate_per_s,
                        &self.phases,
                        &mut say,
                    );
                }
                LoadModel::Gamma {
                    rate_per_s,
                    burstiness,
                    ..
                } => {
                    rate_problems(
                        &format!("{at}.rate_per_s"),
                        *rate_per_s,
                        &self.phases,
                        &mut say,
                    );
                    if !(*burstiness > 0.0 && *burstiness <= MAX_BURSTINESS) {
                        say(format!(
                            "{at}.burstiness: {burstiness} is outside (0, {MAX_BURSTINESS}]"
                        ));
                    }
                }
                LoadModel::Ramp {
                    from_rate_per_s,
                    to_rate_per_s,
                    ramp_s,
                    ..
                } => ramp_problems(
                    &at,
                    (*from_rate_per_s, *to_rate_per_s, *ramp_s),
                    &self.phases,
                    &mut say,
                ),
                LoadModel::Trace {
                    path, time_scale, ..
                } => {
                    if path.trim().is_empty() {
                        say(format!("{at}.path: must name a trace file"));
                    }
                    if !(*time_scale > 0.0 && *time_scale <= MAX_TIME_SCALE) {
                        say(format!(
                            "{at}.time_scale: {time_scale} is outside (0, {MAX_TIME_SCALE}]"
                        ));
                    }
                }
            }
        }
        if let Some(s) = &self.saturation {
            rate_problems(
                "load.saturation.start_rate_per_s",
                s.start_rate_per_s,
                &self.phases,
                &mut say,
            );
            rate_problems(
                "load.saturation.max_rate_per_s",
                s.max_rate_per_s,
                &self.phases,
                &mut say,
            );
            if s.max_rate_per_s < s.start_rate_per_s {
                say(format!(
                    "load.saturation.max_rate_per_s: {} is below start_rate_per_s {}",
                    s.max_rate_per_s, s.start_rate_per_s
                ));
            }
            if !(s.growth > 1.0 && s.growth <= 100.0) {
                say(format!(
                    "load.saturation.growth: {} is outside (1, 100]",
                    s.growth
                ));
            }
            if s.refine_steps > MAX_REFINE_STEPS {
                say(format!(
                    "load.saturation.refine_steps: {} is above {MAX_REFINE_STEPS}",
                    s.refine_steps
                ));
            }
        }
        for (metric, bound) in &self.slo {
            if !SLO_METRICS.contains(&metric.as_str()) {
                say(format!(
                    "load.slo.{metric}: unknown metric; known: {}",
                    SLO_METRICS.join(", ")
                ));
            } else if !(*bound > 0.0 && bound.is_finite()) {
                say(format!(
                    "load.slo.{metric}: {bound} must be a positive number"
                ));
            }
        }
        for (field, value) in [
            ("goodput_threshold", self.goodput_threshold),
            ("sustain_fraction", self.sustain_fraction),
        ] {
            if !(value > 0.0 && value <= 1.0) {
                say(format!("load.{field}: {value} is outside (0, 1]"));
            }
        }
        workload_problems(&self.workload, limits, &mut say);
        probe_bound_problems(self, limits, &mut say);
        problems
    }

    /// The most requests one lane may hold in flight in any step: a closed step's users, or the
    /// open-loop bound when any step (or the saturation search) is open.
    pub fn lane_in_flight_bound(&self) -> u32 {
        let open = self.saturation.is_some()
            || self
                .steps
                .iter()
                .any(|step| !matches!(step, LoadModel::Closed { .. }));
        self.steps
            .iter()
            .filter_map(|step| match step {
                LoadModel::Closed { concurrency, .. } => Some(*concurrency),
                _ => None,
            })
            .chain(open.then(|| self.open_loop_in_flight()))
            .max()
            .unwrap_or(1)
    }
}

/// The probe's whole-session bound ([`MAX_PROBE_IN_FLIGHT`]), checked at `init` rather than
/// when the first session opens: lanes × the largest in-flight bound of any step.
fn probe_bound_problems(section: &LoadSection, limits: &Limits, say: &mut impl FnMut(String)) {
    let per_lane = section.lane_in_flight_bound();
    let lanes = u64::try_from(limits.lanes_per_probe).unwrap_or(u64::MAX);
    let asked = lanes.saturating_mul(u64::from(per_lane));
    if asked > MAX_PROBE_IN_FLIGHT {
        say(format!(
            "load: {lanes} providers × {per_lane} requests in flight per lane = {asked} on one \
             region's probe, above its {MAX_PROBE_IN_FLIGHT} (fewer users, a lower \
             load.max_in_flight, fewer providers, or run them in separate regions)"
        ));
    }
}

fn phase_problems(phases: &Phases, say: &mut impl FnMut(String)) {
    for (field, value) in [
        ("warmup_s", phases.warmup_s),
        ("cooldown_s", phases.cooldown_s),
    ] {
        if !(0.0..=MAX_PHASE_S).contains(&value) {
            say(format!(
                "load.phases.{field}: {value} is outside 0..={MAX_PHASE_S}"
            ));
        }
    }
    match phases.measure {
        Measure::DurationS(d) => {
            if !(d > 0.0 && d <= MAX_PHASE_S) {
                say(format!(
                    "load.phases.measure.duration_s: {d} is outside (0, {MAX_PHASE_S}]"
                ));
            }
        }
        Measure::Requests(n) => {
            if n == 0 || n > MAX_MEASURED_REQUESTS {
                say(format!(
                    "load.phases.measure.requests: {n} is outside 1..={MAX_MEASURED_REQUESTS}"
                ));
            }
        }
    }
}

/// An open-loop rate: positive, not absurd, at least one request in a duration window, and a
/// bounded number of requests over the whole step.
fn rate_problems(at: &str, rate: f64, phases: &Phases, say: &mut impl FnMut(String)) {
    if !(rate > 0.0 && rate <= MAX_RATE_PER_S) {
        say(format!("{at}: {rate} is outside (0, {MAX_RATE_PER_S}]"));
        return;
    }
    let sane = |s: f64| if s.is_finite() { s.max(0.0) } else { 0.0 };
    if let Measure::DurationS(d) = phases.measure {
        if d.is_finite() && d > 0.0 && rate * d < 1.0 {
            say(format!(
                "{at}: {rate}/s sends no request in a {d} s measured window"
            ));
        }
        let planned = rate * (sane(phases.warmup_s) + sane(d) + sane(phases.cooldown_s));
        if planned > MAX_STEP_REQUESTS {
            say(format!(
                "{at}: {rate}/s plans {planned:.0} requests per lane in one step, above {MAX_STEP_REQUESTS:.0}"
            ));
        }
    }
}

/// A ramp: a start rate in [0, max], a final rate as any open-loop rate (positive, a request in
/// the window, bounded plan; checked at the higher of the two), and a ramp of (0, one day].
fn ramp_problems(
    at: &str,
    (from, to, ramp_s): (f64, f64, f64),
    phases: &Phases,
    say: &mut impl FnMut(String),
) {
    if !(0.0..=MAX_RATE_PER_S).contains(&from) {
        say(format!(
            "{at}.from_rate_per_s: {from} is outside [0, {MAX_RATE_PER_S}]"
        ));
    }
    rate_problems(
        &format!("{at}.to_rate_per_s"),
        if from > to { from } else { to },
        phases,
        say,
    );
    if from > to && to <= 0.0 {
        // A falling ramp was checked at its start rate; its end must still send.
        say(format!("{at}.to_rate_per_s: {to} must be above 0"));
    }
    if !(ramp_s > 0.0 && ramp_s <= MAX_PHASE_S) {
        say(format!(
            "{at}.ramp_s: {ramp_s} is outside (0, {MAX_PHASE_S}]"
        ));
    }
}

fn workload_problems(workload: &WorkloadSpec, limits: &Limits, say: &mut impl FnMut(String)) {
    match workload {
        WorkloadSpec::Synthetic {
            input_tokens,
            output_tokens,
            shared_prefix,
        } => {
            let prefix = shared_prefix.map_or(0, |p| p.prefix_tokens);
            let input_at = "load.workload.input_tokens";
            if let Some((_, max)) = dist_problems(input_at, input_tokens, say)
                && u64::from(max) + u64::from(prefix) > u64::from(MAX_INPUT_TOKENS)
            {
                say(format!(
                    "{input_at}: prompts of up to {} tokens exceed {MAX_INPUT_TOKENS}",
                    u64::from(max) + u64::from(prefix)
                ));
            }
            output_problems(output_tokens, limits, say);
            if let Some(p) = shared_prefix {
                let at = "load.workload.shared_prefix";
                if p.prefixes == 0 {
                    say(format!("{at}.prefixes: must be at least 1"));
                }
                if p.suffixes_per_prefix == 0 {
                    say(format!("{at}.suffixes_per_prefix: must be at least 1"));
                }
                if p.prefix_tokens == 0 {
                    say(format!("{at}.prefix_tokens: must be at least 1"));
                }
                let prompts = u64::from(p.prefixes) * u64::from(p.suffixes_per_prefix);
                if prompts > MAX_SHARED_PREFIX_PROMPTS {
                    say(format!(
                        "{at}: {} × {} = {prompts} prompts, above {MAX_SHARED_PREFIX_PROMPTS}",
                        p.prefixes, p.suffixes_per_prefix
                    ));
                }
            }
        }
        WorkloadSpec::Jsonl {
            path,
            output_tokens,
            ..
        } => {
            if path.trim().is_empty() {
                say("load.workload.path: must name a file".into());
            }
            if let Some(dist) = output_tokens {
                output_problems(dist, limits, say);
            }
        }
        WorkloadSpec::Tasks => {}
    }
}

fn output_problems(dist: &LengthDist, limits: &Limits, say: &mut impl FnMut(String)) {
    let at = "load.workload.output_tokens";
    if let Some((_, max)) = dist_problems(at, dist, say)
        && max > limits.max_output_tokens
    {
        say(format!(
            "{at}: lengths up to {max} tokens cannot fit the contract's ceiling request.max_output_tokens = {}",
            limits.max_output_tokens
        ));
    }
}

/// Most model calls one agent run may make.
pub const MAX_AGENT_STEPS: u32 = 64;

/// The problems of step `at`'s agent runs: `max_steps` within 1..=[`MAX_AGENT_STEPS`], the think
/// time as a distribution of at most a day, and not beside `conversation`.
fn agent_problems(at: &str, a: &Agent, conversation: bool, say: &mut impl FnMut(String)) {
    if a.max_steps == 0 || a.max_steps > MAX_AGENT_STEPS {
        say(format!(
            "{at}.agent.max_steps: {} is outside 1..={MAX_AGENT_STEPS}",
            a.max_steps
        ));
    }
    if let Some(think) = &a.think_ms
        && let Some((_, max)) = dist_problems(&format!("{at}.agent.think_ms"), think, say)
        && max > 86_400_000
    {
        say(format!(
            "{at}.agent.think_ms: {max} ms is longer than a day"
        ));
    }
    if conversation {
        say(format!("{at}: give `conversation` or `agent`, not both"));
    }
}

/// The problems of step `at`'s conversations: its turns and think time as length distributions,
/// at most [`MAX_TURNS`] turns and a day of think.
fn conversation_problems(at: &str, c: &Conversation, say: &mut impl FnMut(String)) {
    if let Some((_, max)) = dist_problems(&format!("{at}.conversation.turns"), &c.turns, say)
        && max > MAX_TURNS
    {
        say(format!(
            "{at}.conversation.turns: {max} turns is over {MAX_TURNS}"
        ));
    }
    if let Some(think) = &c.think_ms
        && let Some((_, max)) = dist_problems(&format!("{at}.conversation.think_ms"), think, say)
        && f64::from(max) > MAX_PHASE_S * 1000.0
    {
        say(format!(
            "{at}.conversation.think_ms: {max} ms is longer than a day"
        ));
    }
}

/// The problems of one length distribution; its bounds when it has none.
fn dist_problems(at: &str, dist: &LengthDist, say: &mut impl FnMut(String)) -> Option<(u32, u32)> {
    let before = {
        let mut count = 0;
        let mut note = |line: String| {
            count += 1;
            say(line);
        };
        match dist {
            LengthDist::Fixed { tokens } if *tokens == 0 => {
                note(format!("{at}.tokens: must be at least 1"));
            }
            LengthDist::Uniform { min, max } | LengthDist::Normal { min, max, .. }
                if *min == 0 || min > max =>
            {
                note(format!(
                    "{at}: min {min} and max {max} must satisfy 1 <= min <= max"
                ));
            }
            LengthDist::List { values } if values.is_empty() || values.contains(&0) => {
                note(format!(
                    "{at}.values: must be a non-empty list of lengths >= 1"
                ));
            }
            _ => {}
        }
        if let LengthDist::Normal { mean, sd, .. } = dist
            && !(mean.is_finite() && sd.is_finite() && *sd >= 0.0)
        {
            note(format!(
                "{at}: mean {mean} and sd {sd} must be finite, sd >= 0"
            ));
        }
        count
    };
    if before > 0 {
        return None;
    }
    dist.bounds()
}
