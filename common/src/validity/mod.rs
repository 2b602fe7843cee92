//! How far a run's own timing can be trusted, measured during the run (issue 41, docs/validity.md):
//! runtime stall canaries ([`canary`]), process CPU and machine load ([`cpu`]), the
//! Kolmogorov–Smirnov fit of Poisson arrivals ([`ks`]), and the thresholds every report applies
//! to them ([`assess`]). The coordinator and every probe run canaries; their summaries land in
//! the run manifest (`runtime_health`), one [`SittingHealth`] per sitting.

pub mod assess;
pub mod canary;
pub mod cpu;
pub mod histogram;
pub mod ks;
pub mod render;

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// One moment a runtime was late: the canary tick that fired `lateness_ms` after it was due.
/// The runtime did not run the canary anywhere in `[from, to]` (the previous tick's firing and
/// this one's), so a stall that caused it lies inside that span.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StallMoment {
    /// When the previous tick fired, ms from the canary's start.
    pub from_offset_ms: f64,
    /// When this late tick fired, ms from the canary's start.
    pub to_offset_ms: f64,
    /// When this late tick fired, RFC 3339 UTC (wall clock of the runtime's host).
    pub at: String,
    /// How late the tick fired, ms.
    pub lateness_ms: f64,
}

/// Process CPU and machine load over a canary's life, sampled once a second.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CpuUse {
    /// Wall seconds covered.
    pub wall_s: f64,
    /// Process CPU seconds (user + system, all threads) in that time.
    pub cpu_s: f64,
    /// `cpu_s / wall_s`: cores' worth of CPU the process used on average.
    pub cpu_per_wall: f64,
    /// The largest CPU per wall second over any 60 s window (the whole life when shorter).
    pub worst_minute_cpu_per_wall: f64,
    /// Cores the process may run on.
    pub cores: u32,
    /// The largest 1-minute load average read (`/proc/loadavg`); `None` where unreadable.
    #[serde(default)]
    pub load_average_max: Option<f64>,
}

/// One runtime's canary summary: how late its periodic timer fired.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RuntimeHealth {
    /// Which runtime: `coordinator`, `probe` (the requests' runtime) or `probe-link` (the probe's
    /// gRPC thread, which stamps pings).
    pub runtime: String,
    /// When the canary started, RFC 3339 UTC.
    pub started_at: String,
    /// The timer's period, ms.
    pub period_ms: f64,
    /// Ticks measured.
    pub ticks: u64,
    /// Median lateness, ms (histogram bucket's upper bound: 10 µs below 10 ms, 1 ms above).
    pub lateness_ms_p50: f64,
    /// 99th-percentile lateness, ms (same resolution).
    pub lateness_ms_p99: f64,
    /// Largest lateness, ms (exact).
    pub lateness_ms_max: f64,
    /// The worst ticks, at most one per wall second, worst first (at most five).
    pub worst: Vec<StallMoment>,
    /// Process CPU and machine load; `None` where `/proc` cannot be read.
    #[serde(default)]
    pub cpu: Option<CpuUse>,
}

/// What one sitting measured of its own runtimes: the coordinator's and each region's probe's.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SittingHealth {
    /// The sitting (the manifest's `sessions` count when it ran).
    pub session: u32,
    /// The plan attempt it executed (0 = full run).
    pub attempt: u32,
    /// The coordinator's canaries.
    pub coordinator: Vec<RuntimeHealth>,
    /// Region → its probe's canaries (empty for a probe that could not say).
    pub probes: BTreeMap<String, Vec<RuntimeHealth>>,
}
