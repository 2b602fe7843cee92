//! The runtime stall canary: a task on the runtime it watches, woken by a periodic timer, that
//! measures how late each wake-up came. A runtime kept from running its tasks (a blocked
//! worker, a starved thread, a stolen core) delays the canary exactly as it delays a release or
//! a timestamp, so the canary's lateness bounds the runtime's own contribution to send lag and
//! timing error. Once a second it also reads the process's CPU and the machine's load
//! ([`super::cpu`]).

use super::cpu::{CpuMeter, load_average, process_cpu_s};
use super::histogram::LatenessHistogram;
use super::{RuntimeHealth, StallMoment};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// The canary's period: 100 wake-ups a second cost about nothing and locate a stall to 10 ms.
pub const PERIOD: Duration = Duration::from_millis(10);
/// Worst moments kept (one per wall second).
pub const WORST_KEPT: usize = 5;

/// Everything measured so far, behind the canary's lock.
#[derive(Debug)]
struct Recorder {
    runtime: String,
    started: Instant,
    started_at: SystemTime,
    period: Duration,
    histogram: LatenessHistogram,
    /// The worst tick of the current wall second, and that second's index.
    current: Option<(u64, StallMoment)>,
    worst: Vec<StallMoment>,
    cpu: CpuMeter,
}

impl Recorder {
    fn new(runtime: &str, period: Duration) -> Recorder {
        Recorder {
            runtime: runtime.to_string(),
            started: Instant::now(),
            started_at: SystemTime::now(),
            period,
            histogram: LatenessHistogram::default(),
            current: None,
            worst: Vec::new(),
            cpu: CpuMeter::default(),
        }
    }

    /// One tick that fired at `fired`, due at `due`, after the previous tick fired at `previous`.
    fn tick(&mut self, previous: Instant, due: Instant, fired: Instant) {
        let late_us =
            u64::try_from(fired.saturating_duration_since(due).as_micros()).unwrap_or(u64::MAX);
        self.histogram.record(late_us);
        let offset = |at: Instant| at.saturating_duration_since(self.started).as_secs_f64() * 1e3;
        let moment = StallMoment {
            from_offset_ms: offset(previous),
            to_offset_ms: offset(fired),
            at: crate::clock::rfc3339_utc(self.started_at + fired.duration_since(self.started)),
            lateness_ms: late_us as f64 / 1e3,
        };
        let second = fired.saturating_duration_since(self.started).as_secs();
        match &mut self.current {
            Some((s, worst)) if *s == second => {
                if moment.lateness_ms > worst.lateness_ms {
                    *worst = moment;
                }
            }
            _ => {
                if let Some((_, done)) = self.current.replace((second, moment)) {
                    self.offer(done);
                }
            }
        }
    }

    fn offer(&mut self, moment: StallMoment) {
        self.worst.push(moment);
        self.worst
            .sort_by(|a, b| b.lateness_ms.total_cmp(&a.lateness_ms));
        self.worst.truncate(WORST_KEPT);
    }

    fn sample_cpu(&mut self, now: Instant) {
        if let Some(cpu) = process_cpu_s() {
            let wall = now.saturating_duration_since(self.started).as_secs_f64();
            self.cpu.sample(wall, cpu, load_average());
        }
    }

    fn summary(&self) -> RuntimeHealth {
        let ms = |us: Option<u64>| us.map_or(0.0, |us| us as f64 / 1e3);
        let mut worst = self.worst.clone();
        if let Some((_, current)) = &self.current {
            worst.push(current.clone());
            worst.sort_by(|a, b| b.lateness_ms.total_cmp(&a.lateness_ms));
            worst.truncate(WORST_KEPT);
        }
        let cores = std::thread::available_parallelism()
            .map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX));
        RuntimeHealth {
            runtime: self.runtime.clone(),
            started_at: crate::clock::rfc3339_utc(self.started_at),
            period_ms: self.period.as_secs_f64() * 1e3,
            ticks: self.histogram.total(),
            lateness_ms_p50: ms(self.histogram.percentile_us(0.5)),
            lateness_ms_p99: ms(self.histogram.percentile_us(0.99)),
            lateness_ms_max: self.histogram.max_us() as f64 / 1e3,
            worst,
            cpu: self.cpu.summary(cores),
        }
    }
}

/// A running canary; stops when dropped.
#[derive(Debug)]
pub struct Canary {
    recorder: Arc<Mutex<Recorder>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Canary {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Canary {
    /// Starts a canary named `runtime` on the runtime of `handle`, waking every [`PERIOD`].
    pub fn start(runtime: &str, handle: &tokio::runtime::Handle) -> Canary {
        Canary::start_with_period(runtime, handle, PERIOD)
    }

    /// [`Canary::start`] with another period.
    pub fn start_with_period(
        runtime: &str,
        handle: &tokio::runtime::Handle,
        period: Duration,
    ) -> Canary {
        let recorder = Arc::new(Mutex::new(Recorder::new(runtime, period)));
        let task = handle.spawn(watch(recorder.clone(), period));
        Canary { recorder, task }
    }

    /// What it measured so far.
    pub fn summary(&self) -> RuntimeHealth {
        match self.recorder.lock() {
            Ok(recorder) => recorder.summary(),
            Err(poisoned) => poisoned.into_inner().summary(),
        }
    }
}

/// The canary's loop: sleep to the next due time, record how late it woke, and read the CPU
/// once a second. A stall longer than the period is one late tick, not a burst of catch-up ones.
async fn watch(recorder: Arc<Mutex<Recorder>>, period: Duration) {
    let start = Instant::now();
    if let Ok(mut r) = recorder.lock() {
        r.sample_cpu(start);
    }
    let mut previous = start;
    let mut due = start + period;
    let mut next_cpu = start + Duration::from_secs(1);
    loop {
        tokio::time::sleep_until(due.into()).await;
        let fired = Instant::now();
        if let Ok(mut r) = recorder.lock() {
            r.tick(previous, due, fired);
            if fired >= next_cpu {
                r.sample_cpu(fired);
                next_cpu += Duration::from_secs(1);
            }
        }
        previous = fired;
        due += period;
        if due <= fired {
            due = fired + period;
        }
    }
}

#[cfg(test)]
#[path = "canary_tests.rs"]
mod tests;
