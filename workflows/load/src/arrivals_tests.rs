use super::*;
use crate::spec::Phases;
use rand_chacha::ChaCha8Rng;
use rand_chacha::rand_core::{RngCore, SeedableRng};
use sha2::{Digest, Sha256};

fn step(index: usize, arrivals: Arrivals, rate_per_s: f64, phases: Phases) -> Step {
    Step {
        index,
        model: StepModel::Open {
            arrivals,
            rate_per_s,
        },
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

#[test]
fn constant_rate_releases_with_exact_offsets_and_phases() {
    // 4/s: every 250 ms. Warm-up [0, 1 s): 0, .25, .5, .75; window [1, 3 s): 1.0 … 2.75 (8);
    // cool-down [3, 3.5 s): 3.0, 3.25. Then nothing.
    let s = step(
        0,
        Arrivals::Constant,
        4.0,
        phases(1.0, Measure::DurationS(2.0), 0.5),
    );
    let schedule = OpenSchedule::new(&s, 9).unwrap();
    let w = schedule.window();
    assert_eq!(
        (w.start_ns, w.end_ns, w.load_end_ns),
        (1_000_000_000, 3_000_000_000, 3_500_000_000)
    );
    let releases: Vec<Release> = schedule.releases().collect();
    let offsets: Vec<u64> = releases.iter().map(|r| r.offset_ns).collect();
    let want: Vec<u64> = (0..14).map(|k| k * 250_000_000).collect();
    assert_eq!(offsets, want);
    let phases: Vec<Phase> = releases.iter().map(|r| r.phase).collect();
    let mut expected = vec![Phase::Warmup; 4];
    expected.extend([Phase::Measured; 8]);
    expected.extend([Phase::Cooldown; 2]);
    assert_eq!(phases, expected);
    assert_eq!(releases[13].index, 13);
    assert_eq!(w.length_s(), 2.0);
}

#[test]
fn constant_offsets_are_computed_from_the_index_not_summed() {
    // 3/s: k/3 s rounded to the nanosecond. 1/3 → 333,333,333; 2/3 → 666,666,667; 3/3 → 1 s
    // exactly, and request 3,000,000 lands exactly on 1,000,000 s (a sum of rounded gaps
    // would be 1 ms early there).
    let mut offsets = Offsets::new(Arrivals::Constant, 3.0, 0, 0);
    let first: Vec<u64> = offsets.by_ref().take(4).collect();
    assert_eq!(first, [0, 333_333_333, 666_666_667, 1_000_000_000]);
    let far = Offsets::new(Arrivals::Constant, 3.0, 0, 0)
        .nth(3_000_000)
        .unwrap();
    assert_eq!(far, 1_000_000 * 1_000_000_000);
}

#[test]
fn a_count_window_ends_when_the_next_request_is_due() {
    // 2/s, warm-up 1 s: due 0, .5 (warm-up), then 1.0, 1.5, 2.0 measured (3 requests); the next
    // is due at 2.5 s, where the window ends; cool-down 1 s → load ends at 3.5 s.
    let s = step(
        0,
        Arrivals::Constant,
        2.0,
        phases(1.0, Measure::Requests(3), 1.0),
    );
    let schedule = OpenSchedule::new(&s, 0).unwrap();
    let w = schedule.window();
    assert_eq!(
        (w.start_ns, w.end_ns, w.load_end_ns),
        (1_000_000_000, 2_500_000_000, 3_500_000_000)
    );
    let measured = schedule
        .releases()
        .filter(|r| r.phase == Phase::Measured)
        .count();
    assert_eq!(measured, 3);
    assert_eq!(schedule.releases().count(), 7); // 0 … 3.0 s
}

#[test]
fn poisson_gaps_follow_the_documented_seeded_stream() {
    // The stream is ChaCha8 keyed by sha256(seed LE ‖ 0 ‖ "arrivals" ‖ 0 ‖ "2"); each gap is
    // −ln(1 − u)/rate with u the top 53 bits of the next u64. Rebuilt here by hand.
    let mut key_input = 11u64.to_le_bytes().to_vec();
    key_input.extend_from_slice(b"\0arrivals\x002");
    let key: [u8; 32] = Sha256::digest(&key_input).into();
    let mut rng = ChaCha8Rng::from_seed(key);
    let rate = 5.0;
    let mut at = 0.0f64;
    let mut want = vec![0u64];
    for _ in 0..3 {
        let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        at += -(1.0 - u).ln() / rate;
        want.push((at * 1e9).round() as u64);
    }
    let got: Vec<u64> = Offsets::new(Arrivals::Poisson, rate, 11, 2)
        .take(4)
        .collect();
    assert_eq!(got, want);
    // Another step index or seed is another stream.
    let other: Vec<u64> = Offsets::new(Arrivals::Poisson, rate, 11, 3)
        .take(4)
        .collect();
    assert_ne!(got, other);
}

#[test]
fn poisson_gaps_have_the_mean_and_spread_of_an_exponential() {
    let n = 20_000usize;
    let rate = 8.0;
    let offsets: Vec<u64> = Offsets::new(Arrivals::Poisson, rate, 3, 0)
        .take(n + 1)
        .collect();
    let gaps: Vec<f64> = offsets
        .windows(2)
        .map(|w| (w[1] - w[0]) as f64 / 1e9)
        .collect();
    let mean = gaps.iter().sum::<f64>() / n as f64;
    let sd = (gaps.iter().map(|g| (g - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
    // Exponential(8): mean = sd = 0.125 s. The sample mean's sd is 0.125/√20000 ≈ 0.00088;
    // allow 4 of them. The sample sd's own sd is ≈ 0.125·√(8/4)/√20000·… < 0.0015; allow 0.005.
    assert!((mean - 0.125).abs() < 0.0036, "{mean}");
    assert!((sd - 0.125).abs() < 0.005, "{sd}");
    // Deterministic: the same seed replays the same schedule.
    let again: Vec<u64> = Offsets::new(Arrivals::Poisson, rate, 3, 0)
        .take(n + 1)
        .collect();
    assert_eq!(offsets, again);
}

#[test]
fn closed_loop_has_no_schedule_and_its_count_window_waits_for_the_run() {
    let closed = Step {
        index: 0,
        model: StepModel::Closed { concurrency: 2 },
        phases: phases(1.0, Measure::Requests(2), 0.5),
        trace: None,
        repeat: None,
    };
    assert!(OpenSchedule::new(&closed, 0).is_none());
    // Sends (ns): two in warm-up, then 1.0 s and 1.2 s measured; the window ends at the third
    // send after warm-up, 1.7 s — unknown until it happened.
    let ms = 1_000_000;
    assert_eq!(
        closed_window(&closed.phases, &[0, 300 * ms, 1000 * ms, 1200 * ms]),
        None
    );
    let w = closed_window(
        &closed.phases,
        &[0, 300 * ms, 1000 * ms, 1200 * ms, 1700 * ms],
    )
    .unwrap();
    assert_eq!(
        (w.start_ns, w.end_ns, w.load_end_ns),
        (1000 * ms, 1700 * ms, 2200 * ms)
    );
    assert_eq!(w.phase_of(999 * ms), Some(Phase::Warmup));
    assert_eq!(w.phase_of(1000 * ms), Some(Phase::Measured));
    assert_eq!(w.phase_of(1700 * ms), Some(Phase::Cooldown));
    assert_eq!(w.phase_of(2200 * ms), None);
    let timed = closed_window(&phases(2.0, Measure::DurationS(3.0), 1.0), &[]).unwrap();
    assert_eq!((timed.start_ms(), timed.end_ms()), (2000.0, 5000.0));
}

/// A record's send in milliseconds rounds to the nanosecond the count window was taken from, so
/// the send that closed the window is outside it even when, in milliseconds, it sits a fraction
/// of a nanosecond below the window's end (1,700.0000007 ms rounds up to 1,700,000,001 ns, and
/// 1,700.000001 ms is above it).
#[test]
fn the_send_that_closes_a_count_window_is_never_inside_it() {
    let count = phases(1.0, Measure::Requests(2), 0.5);
    let sends_ms = [1_000.0, 1_200.0, 1_700.000_000_7];
    let sends_ns: Vec<u64> = sends_ms.iter().map(|&ms| ms_to_ns(ms)).collect();
    assert_eq!(sends_ns, [1_000_000_000, 1_200_000_000, 1_700_000_001]);
    let w = closed_window(&count, &sends_ns).unwrap();
    assert!(w.end_ms() > sends_ms[2]);
    let inside: Vec<bool> = sends_ms.iter().map(|&ms| w.contains_ms(ms)).collect();
    assert_eq!(inside, [true, true, false]);
    assert!(w.before_end_ms(1200.0) && !w.before_end_ms(sends_ms[2]));
    assert!(!w.contains_ms(999.999_999_4) && w.contains_ms(999.999_999_6));
    assert_eq!((ms_to_ns(-1.0), ms_to_ns(f64::NAN)), (0, 0));
}
