//! The plain-text view, for a `watch` whose output is not a terminal (a log, a pipe, CI): the
//! same figures as the TUI, no colours, no cursor movement. Every name and error message is
//! escaped for the terminal (`openbench_common::untrusted_text::terminal`): an upstream's error
//! body or a spec's name is shown, never obeyed.

use crate::view::{LaneView, LoadLaneView, LoadView, Percentiles, View};
use openbench_common::rundir::{RunMode, RunStatus};
use openbench_common::untrusted_text::terminal;

/// Eight block characters, lowest first: one per sparkline sample.
const BLOCKS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// The run's one-line title: `run ID  [full, running]`.
pub fn title(v: &View) -> String {
    let what = match v.mode {
        _ if v.attempt > 0 => format!("smoke attempt {}", v.attempt),
        RunMode::Init => "init".to_string(),
        RunMode::Smoke => "smoke".to_string(),
        RunMode::Full => "full".to_string(),
    };
    let simulated = v
        .simulator_time_scale
        .map(|s| format!("  simulated: times ×{s} of the profiles'"))
        .unwrap_or_default();
    format!(
        "run {}  [{what}, {}]{simulated}",
        terminal(&v.run_id),
        v.status.map_or("unknown", RunStatus::as_str)
    )
}

/// Progress, failures and ETA on one line.
pub fn progress_line(v: &View) -> String {
    let mut line = format!(
        "{} {}/{}  requests {}/{}  failures {}  harness {}  ETA {}",
        if v.by_phase { "phases" } else { "rounds" },
        v.rounds_done,
        v.rounds_total,
        v.requests_done,
        v.requests_total,
        v.failures,
        v.harness_errors,
        duration(v.eta_s)
    );
    if v.unreadable_lines > 0 {
        line.push_str(&format!("  unreadable lines {}", v.unreadable_lines));
    }
    line
}

/// The filters and sort in force.
pub fn options_line(v: &View) -> String {
    format!(
        "sort {}{}  family {}  region {}",
        v.options.sort.label(),
        if v.options.reverse { " (reversed)" } else { "" },
        terminal(v.options.family.as_deref().unwrap_or("all")),
        terminal(v.options.region.as_deref().unwrap_or("all")),
    )
}

/// Seconds as `1 h 02 m`, `3 m 05 s` or `42 s`; `-` when unknown.
pub fn duration(seconds: Option<f64>) -> String {
    let Some(s) = seconds.filter(|s| s.is_finite() && *s >= 0.0) else {
        return "-".into();
    };
    let s = s.round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} m {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} m", s / 3600, (s % 3600) / 60),
    }
}

/// A millisecond figure with one decimal; `-` when absent.
pub fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |x| format!("{x:.1}"))
}

/// `p50/p95/p99` of a population.
pub fn triple(p: &Percentiles) -> String {
    format!("{}/{}/{}", ms(p.p50), ms(p.p95), ms(p.p99))
}

/// A sparkline of `values` scaled from 0 to `max`.
pub fn sparkline(values: &[f64], max: f64) -> String {
    values
        .iter()
        .map(|v| {
            let frac = if max > 0.0 {
                (v / max).clamp(0.0, 1.0)
            } else {
                0.0
            };
            BLOCKS[((frac * 7.0).round() as usize).min(7)]
        })
        .collect()
}

/// The largest recent E2E of the lanes shown: the common scale of their sparklines.
pub fn sparkline_scale(v: &View) -> f64 {
    v.lanes
        .iter()
        .flat_map(|l| l.recent_e2e_ms.iter().copied())
        .fold(0.0, f64::max)
}

/// `done/planned` and the percentage; `done/planned+` when a timed closed loop sends on the
/// lane as many requests as its window allows (no total, so no percentage).
pub fn lane_progress(l: &LaneView) -> String {
    if l.open_ended {
        return format!("{}/{}+", l.submitted, l.planned);
    }
    let pct = if l.planned > 0 {
        100.0 * l.submitted as f64 / l.planned as f64
    } else {
        0.0
    };
    format!("{}/{} {pct:.0}%", l.submitted, l.planned)
}

/// The current load step's heading: `load step 2: step-2 poisson 8/s`, flagged when the step
/// was interrupted and resumed mid-way.
pub fn load_title(load: &LoadView) -> String {
    let resumed = if load.sittings.len() > 1 {
        let list: Vec<String> = load.sittings.iter().map(u32::to_string).collect();
        format!(
            "  RESUMED MID-STEP (sittings {}): rates span the pause",
            list.join(", ")
        )
    } else {
        String::new()
    };
    format!(
        "load step {}: {}{resumed}",
        load.phase,
        terminal(&load.name)
    )
}

/// A lane's target: `8.00/s` (open loop), `4 users` (closed loop) or `-`.
pub fn load_target(l: &LoadLaneView) -> String {
    match (l.target_per_s, l.users) {
        (Some(rate), _) => format!("{rate:.2}/s"),
        (None, Some(users)) => format!("{users} users"),
        (None, None) => "-".into(),
    }
}

/// A lane's achieved rate: `7.95/s`, or `-` before two sends.
pub fn load_achieved(l: &LoadLaneView) -> String {
    l.achieved_per_s
        .map_or_else(|| "-".into(), |rate| format!("{rate:.2}/s"))
}

/// A lane's live ITL: `p50/p99 (gaps)`.
pub fn load_itl(l: &LoadLaneView) -> String {
    format!("{}/{} ({})", ms(l.itl_p50_ms), ms(l.itl_p99_ms), l.itl_gaps)
}

/// The load step's table, as text.
fn load_section(load: &LoadView) -> String {
    let mut out = format!(
        "\n{}\n{:<24} {:>10} {:>10} {:>8} {:>24}\n",
        load_title(load),
        "lane",
        "target",
        "achieved",
        "requests",
        "ITL p50/p99 ms (gaps)"
    );
    for l in &load.lanes {
        out.push_str(&format!(
            "{:<24} {:>10} {:>10} {:>8} {:>24}\n",
            terminal(&l.lane),
            load_target(l),
            load_achieved(l),
            l.requests,
            load_itl(l)
        ));
    }
    out
}

/// The whole view as text.
pub fn render(v: &View) -> String {
    let mut out = format!(
        "{}\n{}\n{}\n\n",
        title(v),
        progress_line(v),
        options_line(v)
    );
    out.push_str(&format!(
        "{:<24} {:<10} {:>13} {:>5} {:>5} {:>22} {:>22} {:>14}  {}\n",
        "lane",
        "region",
        "done",
        "fail",
        "harn",
        "TTFA p50/p95/p99 ms",
        "E2E p50/p95/p99 ms",
        "tok/s p50/flr",
        "latest error"
    ));
    for l in &v.lanes {
        out.push_str(&format!(
            "{:<24} {:<10} {:>13} {:>5} {:>5} {:>22} {:>22} {:>14}  {}\n",
            terminal(&l.lane),
            terminal(&l.region),
            lane_progress(l),
            l.failures,
            l.harness_errors,
            triple(&l.ttfa_ms),
            triple(&l.e2e_ms),
            format!(
                "{}/{}",
                ms(l.tokens_per_second_p50),
                ms(l.tokens_per_second_p95_floor)
            ),
            terminal(l.latest_error.as_deref().unwrap_or("-"))
        ));
    }
    if let Some(load) = &v.load {
        out.push_str(&load_section(load));
    }
    out.push_str("\nfailures by class: ");
    if v.failure_classes.is_empty() {
        out.push_str("none");
    } else {
        let parts: Vec<String> = v
            .failure_classes
            .iter()
            .map(|(class, n)| format!("{} {n}", terminal(class)))
            .collect();
        out.push_str(&parts.join(", "));
    }
    let r = &v.rounds;
    out.push_str(&format!(
        "\nrounds: {} lines, launch skew p50/p95/p99 {} ms, round p50 {} ms\n",
        r.lines,
        triple(&r.launch_skew_ms),
        ms(r.round_ms.p50)
    ));
    out
}
