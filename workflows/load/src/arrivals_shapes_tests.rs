//! The arrival shapes beyond constant and Poisson: gamma gaps (vLLM's burstiness), linear ramps
//! (constant and Poisson), and trace replay.

use super::*;
use crate::spec::Phases;
use crate::spec::TraceFormat;
use crate::trace::TraceEntry;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::SeedableRng;
use rand_distr::Distribution;
use sha2::{Digest, Sha256};

fn step(index: usize, model: StepModel, phases: Phases) -> Step {
    Step {
        index,
        model,
        phases,
        trace: None,
        repeat: None,
    }
}

fn phases(warmup_s: f64, measure: Measure, cooldown_s: f64) -> Phases {
    Phases {
        warmup_s,
        measure,
        cooldown_s,
    }
}

fn gamma(rate_per_s: f64, burstiness: f64) -> StepModel {
    StepModel::Gamma {
        rate_per_s,
        burstiness,
    }
}

/// The first `n` gaps (seconds) of a gamma step, from its offsets.
fn gaps(model: StepModel, seed: u64, n: usize) -> Vec<f64> {
    let offsets: Vec<u64> = Offsets::of_step(
        &step(0, model, phases(0.0, Measure::DurationS(1.0), 0.0)),
        seed,
    )
    .unwrap()
    .take(n + 1)
    .collect();
    offsets
        .windows(2)
        .map(|w| (w[1] - w[0]) as f64 / 1e9)
        .collect()
}

fn mean_and_cv(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var.sqrt() / mean)
}

#[test]
fn gamma_gaps_have_mean_one_over_rate_and_cv_one_over_root_burstiness() {
    // 100,000 gaps at 10/s: mean 0.1 s whatever the burstiness; CV = 1/√b: 2 at b = 0.25, 1 at
    // b = 1 (Poisson), 0.5 at b = 4. Standard errors over n = 100,000: the mean's is CV·0.1/√n
    // (0.63% of the mean at CV 2); the sd's relative one ≈ √((2 + 6/b)/(4n)) (gamma's excess
    // kurtosis is 6/b): 0.81% at b = 0.25, 0.45% at b = 1. Tolerances are 4 of them, rounded up.
    for (b, cv, mean_tol, cv_tol) in [
        (0.25, 2.0, 0.026, 0.04),
        (1.0, 1.0, 0.013, 0.02),
        (4.0, 0.5, 0.007, 0.01),
    ] {
        let (mean, got_cv) = mean_and_cv(&gaps(gamma(10.0, b), 11, 100_000));
        assert!((mean / 0.1 - 1.0).abs() < mean_tol, "b = {b}: mean {mean}");
        assert!((got_cv / cv - 1.0).abs() < cv_tol, "b = {b}: cv {got_cv}");
    }
}

#[test]
fn gamma_offsets_replay_by_seed_from_the_arrival_stream() {
    // Built by hand: the stream of step 3 is ChaCha8 keyed by sha256(seed LE ‖ 0 ‖ "arrivals" ‖
    // 0 ‖ "3"); the first request is at 0, the next after one gamma(0.5, 1/(4·0.5)) draw.
    let mut bytes = 21u64.to_le_bytes().to_vec();
    bytes.extend_from_slice(b"\0arrivals\x003");
    let key: [u8; 32] = Sha256::digest(&bytes).into();
    let dist = rand_distr::Gamma::new(0.5, 1.0 / (4.0 * 0.5)).unwrap();
    let mut rng = ChaCha8Rng::from_seed(key);
    let first_gap: f64 = dist.sample(&mut rng);
    let second_gap: f64 = dist.sample(&mut rng);
    let s = step(
        3,
        gamma(4.0, 0.5),
        phases(0.0, Measure::DurationS(10.0), 0.0),
    );
    let offsets: Vec<u64> = Offsets::of_step(&s, 21).unwrap().take(3).collect();
    assert_eq!(
        offsets,
        [
            0,
            (first_gap * 1e9).round() as u64,
            ((first_gap + second_gap) * 1e9).round() as u64
        ]
    );
    let again: Vec<u64> = Offsets::of_step(&s, 21).unwrap().take(50).collect();
    let other_seed: Vec<u64> = Offsets::of_step(&s, 22).unwrap().take(50).collect();
    assert_eq!(
        again,
        Offsets::of_step(&s, 21)
            .unwrap()
            .take(50)
            .collect::<Vec<_>>()
    );
    assert_ne!(again, other_seed);
}

fn ramp(arrivals: Arrivals, from: f64, to: f64, ramp_s: f64) -> StepModel {
    StepModel::Ramp {
        arrivals,
        from_rate_per_s: from,
        to_rate_per_s: to,
        ramp_s,
    }
}

fn offsets_of(model: StepModel, n: usize) -> Vec<u64> {
    Offsets::of_step(
        &step(0, model, phases(0.0, Measure::DurationS(1.0), 0.0)),
        5,
    )
    .unwrap()
    .take(n)
    .collect()
}

#[test]
fn a_constant_ramp_releases_request_k_at_the_inverse_cumulative_rate() {
    // 2 → 6/s over 4 s: Λ(t) = 2t + t²/2 up to Λ(4) = 16, then 16 + 6(t − 4).
    // k = 1: t²/2 + 2t − 1 = 0, t = √6 − 2 = 0.449489742783… s; k = 5: t = √14 − 2 =
    // 1.741657386773… s; k = 16: 4 s; k = 22: 4 + 6/6 = 5 s.
    let up = offsets_of(ramp(Arrivals::Constant, 2.0, 6.0, 4.0), 23);
    assert_eq!(up[0], 0);
    assert_eq!(up[1], 449_489_743);
    assert_eq!(up[5], 1_741_657_387);
    assert_eq!(up[16], 4_000_000_000);
    assert_eq!(up[22], 5_000_000_000);
    // 6 → 2/s over 4 s: Λ(t) = 6t − t²/2; k = 5: t = 6 − √26 = 0.900980486407… s; k = 16: 4 s;
    // k = 18: 4 + 2/2 = 5 s.
    let down = offsets_of(ramp(Arrivals::Constant, 6.0, 2.0, 4.0), 19);
    assert_eq!(down[5], 900_980_486);
    assert_eq!(down[16], 4_000_000_000);
    assert_eq!(down[18], 5_000_000_000);
    // 0 → 4/s over 2 s: Λ(t) = t²; k = 1, 2, 3 at 1, √2, √3 s; k = 6 at 2 + 2/4 = 2.5 s.
    let from_zero = offsets_of(ramp(Arrivals::Constant, 0.0, 4.0, 2.0), 7);
    assert_eq!(
        [
            from_zero[0],
            from_zero[1],
            from_zero[2],
            from_zero[3],
            from_zero[6]
        ],
        [
            0,
            1_000_000_000,
            1_414_213_562,
            1_732_050_808,
            2_500_000_000
        ]
    );
    // A flat ramp is the constant process.
    let flat = offsets_of(ramp(Arrivals::Constant, 4.0, 4.0, 3.0), 20);
    let constant = offsets_of(
        StepModel::Open {
            arrivals: Arrivals::Constant,
            rate_per_s: 4.0,
        },
        20,
    );
    assert_eq!(flat, constant);
}

#[test]
fn a_poisson_ramp_maps_unit_rate_arrivals_through_the_inverse() {
    // The unit-rate arrivals are the stream's exponential draws summed (first at 0); each is
    // mapped by the hand-solved root of Λ(t) = 2t + t²/2 = u, t = √(4 + 2u) − 2, up to u = 16,
    // then 4 + (u − 16)/6.
    let mut stream = Stream::derive(5, &["arrivals", "0"]);
    let mut u: f64 = 0.0;
    let got = offsets_of(ramp(Arrivals::Poisson, 2.0, 6.0, 4.0), 60);
    for (k, &offset) in got.iter().enumerate() {
        let t = if u <= 16.0 {
            (4.0 + 2.0 * u).sqrt() - 2.0
        } else {
            4.0 + (u - 16.0) / 6.0
        };
        let want = (t * 1e9).round() as i64;
        assert!(
            (offset as i64 - want).abs() <= 1,
            "k = {k}: {offset} vs {want}"
        );
        u += stream.exponential();
    }
    assert!(u > 16.0, "the draws ran past the ramp: {u}");
}

#[test]
fn a_ramp_window_counts_what_it_plans() {
    // 2 → 6/s over 4 s, window [1, 4) s: Λ(1) = 2.5 and Λ(4) = 16, so k = 3..=15 fall in it
    // (k = 16 is due at exactly 4 s, the window's end): 13 measured.
    let s = step(
        0,
        ramp(Arrivals::Constant, 2.0, 6.0, 4.0),
        phases(1.0, Measure::DurationS(3.0), 0.0),
    );
    let schedule = OpenSchedule::new(&s, 5).unwrap();
    let measured: Vec<u64> = schedule
        .releases()
        .filter(|r| r.phase == Phase::Measured)
        .map(|r| r.index)
        .collect();
    assert_eq!(measured, (3..=15).collect::<Vec<u64>>());
}

fn trace_step(offsets_ms: &[u64], time_scale: f64, measure: Measure) -> Step {
    let entries = offsets_ms
        .iter()
        .enumerate()
        .map(|(i, &ms)| TraceEntry {
            line: i + 2,
            offset_ns: ms * 1_000_000,
            input_tokens: 10,
            output_tokens: 5,
            hash_ids: Vec::new(),
            conversation: None,
        })
        .collect();
    Step {
        index: 1,
        model: StepModel::Trace { time_scale },
        phases: phases(0.0, measure, 0.0),
        trace: Some(Arc::new(Trace {
            path: "t.csv".into(),
            format: TraceFormat::AzureCsv,
            entries,
        })),
        repeat: None,
    }
}

#[test]
fn a_trace_replays_its_offsets_time_scaled_and_ends_with_the_file() {
    let recorded = [0, 0, 250, 1_000, 1_003];
    let s = trace_step(&recorded, 0.5, Measure::DurationS(10.0));
    let schedule = OpenSchedule::new(&s, 0).unwrap();
    let offsets: Vec<u64> = schedule.releases().map(|r| r.offset_ns).collect();
    assert_eq!(offsets, [0, 0, 125_000_000, 500_000_000, 501_500_000]);
    // A count window longer than the trace measures all of it and ends 1 ns after the last.
    let counted = trace_step(&recorded, 1.0, Measure::Requests(50));
    let w = OpenSchedule::new(&counted, 0).unwrap().window();
    assert_eq!((w.start_ns, w.end_ns), (0, 1_003_000_001));
    // One that fits ends at the next request's due time, as for any open loop.
    let three = trace_step(&recorded, 1.0, Measure::Requests(3));
    assert_eq!(
        OpenSchedule::new(&three, 0).unwrap().window().end_ns,
        1_000_000_000
    );
    // A trace step without its file has no schedule.
    let mut orphan = counted.clone();
    orphan.trace = None;
    assert!(OpenSchedule::new(&orphan, 0).is_none());
}
