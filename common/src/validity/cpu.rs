//! Process CPU time and the machine's load average from `/proc` (Linux; elsewhere nothing is
//! read and the figures are absent), sampled by the canary once a second.

use super::CpuUse;
use std::collections::VecDeque;

/// Linux reports `/proc/<pid>/stat` times in USER_HZ ticks, fixed at 100 per second for every
/// user-space ABI (the kernel converts from its internal HZ).
const USER_HZ: f64 = 100.0;
/// The window of the worst-minute figure, s.
const WINDOW_S: f64 = 60.0;

/// CPU seconds (user + system, every thread) this process has used, from the text of
/// `/proc/self/stat`; `None` if it does not parse.
pub fn parse_stat_cpu_s(stat: &str) -> Option<f64> {
    // The command name (field 2) is in parentheses and may hold spaces: split after its last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // rest starts at field 3 (state); utime and stime are fields 14 and 15.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / USER_HZ)
}

/// The 1-minute load average from the text of `/proc/loadavg`.
pub fn parse_loadavg(text: &str) -> Option<f64> {
    text.split_whitespace().next()?.parse().ok()
}

/// This process's CPU seconds so far; `None` where `/proc/self/stat` cannot be read.
pub fn process_cpu_s() -> Option<f64> {
    parse_stat_cpu_s(&std::fs::read_to_string("/proc/self/stat").ok()?)
}

/// The machine's 1-minute load average; `None` where `/proc/loadavg` cannot be read.
pub fn load_average() -> Option<f64> {
    parse_loadavg(&std::fs::read_to_string("/proc/loadavg").ok()?)
}

/// Samples (wall s since start, CPU s) and keeps the whole-life and worst-minute figures.
#[derive(Debug, Clone, Default)]
pub struct CpuMeter {
    first: Option<(f64, f64)>,
    last: Option<(f64, f64)>,
    window: VecDeque<(f64, f64)>,
    worst_minute: f64,
    load_max: Option<f64>,
}

impl CpuMeter {
    /// Adds one reading: `wall_s` since the canary started, the process's `cpu_s` then, and
    /// the load average if read.
    pub fn sample(&mut self, wall_s: f64, cpu_s: f64, load: Option<f64>) {
        if let Some(load) = load {
            self.load_max = Some(self.load_max.map_or(load, |m: f64| m.max(load)));
        }
        self.first.get_or_insert((wall_s, cpu_s));
        self.last = Some((wall_s, cpu_s));
        self.window.push_back((wall_s, cpu_s));
        while self
            .window
            .get(1)
            .is_some_and(|(w, _)| wall_s - w >= WINDOW_S)
        {
            self.window.pop_front();
        }
        if let Some(&(w0, c0)) = self.window.front()
            && wall_s - w0 > 0.0
        {
            self.worst_minute = self.worst_minute.max((cpu_s - c0) / (wall_s - w0));
        }
    }

    /// The figures so far; `None` before two readings.
    pub fn summary(&self, cores: u32) -> Option<CpuUse> {
        let ((w0, c0), (w1, c1)) = (self.first?, self.last?);
        let wall_s = w1 - w0;
        if wall_s <= 0.0 {
            return None;
        }
        Some(CpuUse {
            wall_s,
            cpu_s: c1 - c0,
            cpu_per_wall: (c1 - c0) / wall_s,
            worst_minute_cpu_per_wall: self.worst_minute,
            cores,
            load_average_max: self.load_max,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_times_are_read_after_the_command_name_whatever_it_holds() {
        // utime 250 ticks, stime 50 ticks → 3.0 s; the name holds a space and a ')'.
        let stat = "4242 (a b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 3 0";
        assert_eq!(parse_stat_cpu_s(stat), Some(3.0));
        assert_eq!(parse_stat_cpu_s("4242 (x) S 1"), None);
        assert_eq!(parse_loadavg("0.52 0.40 0.33 1/123 4567\n"), Some(0.52));
    }

    #[test]
    fn the_worst_minute_is_the_busiest_sixty_second_window() {
        let mut meter = CpuMeter::default();
        // 0–60 s: 0.1 CPU-s per s; 60–120 s: 0.9 CPU-s per s.
        for s in 0..=120 {
            let cpu = if s <= 60 {
                0.1 * s as f64
            } else {
                6.0 + 0.9 * (s - 60) as f64
            };
            meter.sample(s as f64, cpu, Some(if s == 90 { 1.5 } else { 0.5 }));
        }
        let cpu = meter.summary(2).unwrap();
        assert_eq!(cpu.wall_s, 120.0);
        assert!((cpu.cpu_s - 60.0).abs() < 1e-9);
        assert!((cpu.cpu_per_wall - 0.5).abs() < 1e-9);
        assert!((cpu.worst_minute_cpu_per_wall - 0.9).abs() < 1e-9);
        assert_eq!(cpu.load_average_max, Some(1.5));
    }
}
