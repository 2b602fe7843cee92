//! What a `bench` window costs this process, from the kernel's own counters: CPU seconds
//! (`/proc/self/stat`), context switches (`/proc/self/task/*/status`), peak RSS (VmHWM, reset
//! with `clear_refs`), and the 1-minute load average every figure is noted beside. Shared by
//! `bench analysis`, `bench fidelity` and `bench load-generator`.

use serde::Serialize;
use std::time::Instant;

/// What a measured window cost this process: wall time, CPU, context switches, peak RSS.
#[derive(Debug, Clone, Serialize)]
pub struct Cost {
    /// Wall time of the window, s.
    pub wall_seconds: f64,
    /// User CPU of the whole process in the window, s.
    pub cpu_user_seconds: f64,
    /// System CPU of the whole process in the window, s.
    pub cpu_sys_seconds: f64,
    /// (user + sys) × 1,000 ÷ requests.
    pub cpu_seconds_per_1000_requests: f64,
    /// Context switches of this process's threads (voluntary + involuntary) per request.
    pub context_switches_per_request: Option<f64>,
    /// VmHWM at the end of the window (reset when it started), bytes.
    pub peak_rss_bytes: Option<u64>,
}

/// The process's counters at the start of a measured window; resets the peak-RSS mark.
pub struct Meter {
    cpu: (f64, f64),
    switches: Option<u64>,
    start: Instant,
}

impl Meter {
    /// Starts a window now (and resets the peak-RSS mark where the kernel allows it).
    pub fn start() -> Meter {
        reset_peak_rss();
        Meter {
            cpu: cpu_seconds(),
            switches: context_switches(),
            start: Instant::now(),
        }
    }

    /// What the window cost, for `requests` requests.
    pub fn stop(&self, requests: usize) -> Cost {
        let wall_seconds = self.start.elapsed().as_secs_f64();
        let (cpu, switches) = (cpu_seconds(), context_switches());
        let (user, sys) = (cpu.0 - self.cpu.0, cpu.1 - self.cpu.1);
        let requests = requests.max(1) as f64;
        Cost {
            wall_seconds,
            cpu_user_seconds: user,
            cpu_sys_seconds: sys,
            cpu_seconds_per_1000_requests: (user + sys) * 1000.0 / requests,
            context_switches_per_request: match (self.switches, switches) {
                (Some(before), Some(after)) => Some(after.saturating_sub(before) as f64 / requests),
                _ => None,
            },
            peak_rss_bytes: peak_rss_bytes(),
        }
    }
}

/// User and system CPU seconds of this process so far (`/proc/self/stat` fields 14 and 15, in
/// clock ticks of 1/100 s: Linux's fixed `USER_HZ`); zeros off Linux.
pub fn cpu_seconds() -> (f64, f64) {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return (0.0, 0.0);
    };
    // The command name (field 2) may hold spaces; fields after it follow its closing ')'.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // After ')': field 3 (state) is index 0, so utime (14) is 11 and stime (15) is 12.
    (ticks(11) / 100.0, ticks(12) / 100.0)
}

/// Context switches so far (voluntary + involuntary) summed over this process's live threads
/// (`/proc/self/task/*/status`); `None` off Linux. Threads that have exited are not counted, so
/// the figure is a lower bound where the blocking pool retired threads during the window.
fn context_switches() -> Option<u64> {
    let mut total = 0;
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let Ok(status) = std::fs::read_to_string(task.path().join("status")) else {
            continue;
        };
        for line in status.lines() {
            if let Some(rest) = line
                .strip_prefix("voluntary_ctxt_switches:")
                .or_else(|| line.strip_prefix("nonvoluntary_ctxt_switches:"))
            {
                total += rest.trim().parse::<u64>().unwrap_or(0);
            }
        }
    }
    Some(total)
}

/// Resets the process's peak-RSS high-water mark (Linux ≥ 4.0: writing 5 to `clear_refs`), so
/// VmHWM afterwards covers only what follows. False where that is not possible.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", b"5").is_ok()
}

/// VmHWM from `/proc/self/status`, in bytes; `None` off Linux.
pub fn peak_rss_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// The 1-minute load average (`/proc/loadavg`), to note beside every figure.
pub fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// A load average as printed beside every figure.
pub fn load_text(load: Option<f64>) -> String {
    load.map_or("?".into(), |l| format!("{l:.2}"))
}

/// A byte count as printed (`123 MB`), or `unknown`.
pub fn megabytes(bytes: Option<u64>) -> String {
    bytes.map_or("unknown".into(), |b| format!("{:.0} MB", b as f64 / 1e6))
}

/// One line: CPU, context switches and peak RSS of a measured window.
pub fn cost_text(c: &Cost) -> String {
    format!(
        "CPU {:.2} s user + {:.2} s sys = {:.3} CPU-s per 1,000 requests; {} context switches \
         per request; peak RSS {}\n",
        c.cpu_user_seconds,
        c.cpu_sys_seconds,
        c.cpu_seconds_per_1000_requests,
        c.context_switches_per_request
            .map_or("?".into(), |n| format!("{n:.1}")),
        megabytes(c.peak_rss_bytes),
    )
}

/// Prints `figures` as one JSON object, or `text` as it is.
pub fn print_figures<T: Serialize>(json: bool, figures: &T, text: String) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string(figures)?);
    } else {
        print!("{text}");
    }
    Ok(())
}
