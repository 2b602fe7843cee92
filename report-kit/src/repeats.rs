//! The interval of a figure across a run's repeats (`load.repeats`, micro-single-task's
//! `plans.repeats`): each repeat gives the
//! figure once, and the repeats are the independent units.
//!
//! A repeat is a whole pass of the load with its own seeded schedule, so a run holds a handful
//! of them (3–10, as AIPerf's `--num-profile-runs` is used). The percentile bootstrap the
//! comparisons use ([`crate::bootstrap`]) needs [`crate::bootstrap::MIN_SAMPLE_VALUES`] units
//! before its interval stops being falsely narrow (a resample of three values has ten distinct
//! outcomes, and its 95% interval is the range of the three); the Student t interval is the one
//! built for few units: mean ± t₀.₉₇₅,ₙ₋₁ · s ⁄ √n, with s the sample standard deviation
//! (n − 1 in the denominator). It assumes the per-repeat figures scatter roughly normally
//! around the run's true value, which a percentile of hundreds of requests does.

use serde::{Deserialize, Serialize};

/// A figure's mean over the repeats and its two-sided 95% Student t interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RepeatInterval {
    /// Repeats that had the figure.
    pub n: usize,
    /// Their mean.
    pub mean: f64,
    /// Lower end (mean − t · s ⁄ √n).
    pub low: f64,
    /// Upper end.
    pub high: f64,
}

impl RepeatInterval {
    /// True when the two intervals share no point: only then do repeats say two runs differ.
    pub fn separated_from(&self, other: &RepeatInterval) -> bool {
        self.high < other.low || other.high < self.low
    }
}

/// t₀.₉₇₅ for 1..=30 degrees of freedom, then at 40, 60 and 80 (Student's tables).
const T_975: [(usize, f64); 33] = [
    (1, 12.7062),
    (2, 4.3027),
    (3, 3.1824),
    (4, 2.7764),
    (5, 2.5706),
    (6, 2.4469),
    (7, 2.3646),
    (8, 2.3060),
    (9, 2.2622),
    (10, 2.2281),
    (11, 2.2010),
    (12, 2.1788),
    (13, 2.1604),
    (14, 2.1448),
    (15, 2.1314),
    (16, 2.1199),
    (17, 2.1098),
    (18, 2.1009),
    (19, 2.0930),
    (20, 2.0860),
    (21, 2.0796),
    (22, 2.0739),
    (23, 2.0687),
    (24, 2.0639),
    (25, 2.0595),
    (26, 2.0555),
    (27, 2.0518),
    (28, 2.0484),
    (29, 2.0452),
    (30, 2.0423),
    (40, 2.0211),
    (60, 2.0003),
    (80, 1.9901),
];

/// t₀.₉₇₅ at `df` degrees of freedom: the tabled value at the largest tabled df not above it
/// (between tabled rows that is slightly wider than the exact value, never narrower).
pub fn t_975(df: usize) -> Option<f64> {
    T_975.iter().rev().find(|(d, _)| *d <= df).map(|(_, t)| *t)
}

/// The 95% t interval of the mean of `values` (one per repeat; repeats without the figure are
/// left out by the caller); `None` under two values.
pub fn repeat_interval(values: &[f64]) -> Option<RepeatInterval> {
    let n = values.len();
    let t = t_975(n.checked_sub(1)?)?;
    let mean = values.iter().sum::<f64>() / n as f64;
    let ss: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
    let half = t * (ss / (n - 1) as f64).sqrt() / (n as f64).sqrt();
    Some(RepeatInterval {
        n,
        mean,
        low: mean - half,
        high: mean + half,
    })
}

/// A figure's table cells over `width` repeats: each repeat's value (missing ones as
/// [`crate::format::MISSING`]), then the mean and the interval (`low – high`), each formatted by
/// `cell`; the tables of every workflow's "Repeats" section.
pub fn cells(
    per_repeat: &[Option<f64>],
    width: usize,
    across: Option<&RepeatInterval>,
    cell: impl Fn(Option<f64>) -> String,
) -> Vec<String> {
    let mut out: Vec<String> = (0..width)
        .map(|i| cell(per_repeat.get(i).copied().flatten()))
        .collect();
    match across {
        Some(i) => {
            out.push(cell(Some(i.mean)));
            out.push(format!("{} – {}", cell(Some(i.low)), cell(Some(i.high))));
        }
        None => out.extend([
            crate::format::MISSING.to_string(),
            crate::format::MISSING.to_string(),
        ]),
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_repeats_give_the_hand_computed_t_interval() {
        // 10, 12, 14: mean 12, s² = (4 + 0 + 4) / 2 = 4, s = 2, s/√3 = 1.154701;
        // t(2) = 4.3027 → half-width 4.968330.
        let i = repeat_interval(&[10.0, 12.0, 14.0]).unwrap();
        assert_eq!(i.n, 3);
        assert_eq!(i.mean, 12.0);
        assert!((i.high - 16.968330).abs() < 1e-5, "{i:?}");
        assert!((i.low - 7.031670).abs() < 1e-5, "{i:?}");
        assert_eq!(repeat_interval(&[5.0]), None);
        assert_eq!(repeat_interval(&[]), None);
        // Identical repeats: a zero-width interval at the value.
        let same = repeat_interval(&[3.0, 3.0]).unwrap();
        assert_eq!((same.low, same.high), (3.0, 3.0));
    }

    #[test]
    fn cells_list_each_repeat_then_the_mean_and_interval() {
        let i = repeat_interval(&[10.0, 12.0, 14.0]).unwrap();
        let one = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.1}"));
        assert_eq!(
            cells(&[Some(10.0), None, Some(14.0)], 4, Some(&i), one),
            ["10.0", "-", "14.0", "-", "12.0", "7.0 – 17.0"]
        );
        assert_eq!(
            cells(&[], 1, None, one),
            ["-", crate::format::MISSING, crate::format::MISSING]
        );
    }

    #[test]
    fn untabled_degrees_of_freedom_take_the_wider_row_below() {
        assert_eq!(t_975(30), Some(2.0423));
        assert_eq!(t_975(35), Some(2.0423));
        assert_eq!(t_975(99), Some(1.9901));
        assert_eq!(t_975(0), None);
    }

    #[test]
    fn intervals_that_touch_are_not_separated() {
        let a = RepeatInterval {
            n: 3,
            mean: 1.0,
            low: 0.0,
            high: 2.0,
        };
        let b = RepeatInterval {
            n: 3,
            mean: 3.0,
            low: 2.0,
            high: 4.0,
        };
        let c = RepeatInterval {
            n: 3,
            mean: 3.5,
            low: 2.5,
            high: 4.5,
        };
        assert!(!a.separated_from(&b));
        assert!(a.separated_from(&c) && c.separated_from(&a));
    }
}
