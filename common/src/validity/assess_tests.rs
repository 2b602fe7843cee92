use super::*;
use crate::validity::{CpuUse, StallMoment};

fn health(runtime: &str, p99: f64, max: f64, worst_minute: f64) -> RuntimeHealth {
    RuntimeHealth {
        runtime: runtime.into(),
        started_at: "2026-01-01T00:00:00Z".into(),
        period_ms: 10.0,
        ticks: 1000,
        lateness_ms_p50: 0.1,
        lateness_ms_p99: p99,
        lateness_ms_max: max,
        worst: vec![StallMoment {
            from_offset_ms: 1190.0,
            to_offset_ms: 1500.0,
            at: "2026-01-01T00:00:01.5Z".into(),
            lateness_ms: max,
        }],
        cpu: Some(CpuUse {
            wall_s: 10.0,
            cpu_s: 1.0,
            cpu_per_wall: 0.1,
            worst_minute_cpu_per_wall: worst_minute,
            cores: 2,
            load_average_max: Some(0.5),
        }),
    }
}

#[test]
fn a_stalled_probe_fails_and_names_where_a_quiet_run_passes() {
    let quiet = SittingHealth {
        session: 1,
        attempt: 0,
        coordinator: vec![health("coordinator", 0.2, 3.0, 0.3)],
        probes: [("west".to_string(), vec![health("probe", 0.3, 4.0, 0.2)])].into(),
    };
    let section = ValiditySection::default()
        .with_send_lag(&[0.1, 0.2, 0.4])
        .with_runtimes(std::slice::from_ref(&quiet))
        .with_harness_failures(0);
    assert!(section.passed(), "{:?}", section.failures());
    // Two runtimes × (p99, max, CPU, load) + send lag + harness.
    assert_eq!(section.checks.len(), 10);
    assert_eq!(section.measured_error_ms(), 0.4);

    let mut stalled = quiet.clone();
    stalled
        .probes
        .insert("west".into(), vec![health("probe", 0.3, 300.0, 1.8)]);
    let section = ValiditySection::default()
        .with_runtimes(&[stalled])
        .with_harness_failures(2);
    let failed: Vec<(String, String)> = section
        .failures()
        .iter()
        .map(|c| (c.item.clone(), c.scope.clone()))
        .collect();
    assert_eq!(
        failed,
        vec![
            (
                "canary max".to_string(),
                "probe west · sitting 1".to_string()
            ),
            (
                "CPU worst minute".to_string(),
                "probe west · sitting 1".to_string()
            ),
            ("harness failures".to_string(), "run".to_string()),
        ]
    );
    let banner = crate::validity::render::banner(&section);
    assert!(banner.contains("FAILED"), "{banner}");
    assert!(
        banner.contains("canary max (probe west · sitting 1): 300 against 100 ms"),
        "{banner}"
    );
    let md = crate::validity::render::markdown(&section);
    assert!(
        md.contains("300.0 ms late at 2026-01-01T00:00:01.5Z (1190–1500 ms"),
        "{md}"
    );
}

#[test]
fn thresholds_apply_on_their_side() {
    let s = ValiditySection::default()
        .with_send_lag(
            &[1.0; 99]
                .iter()
                .copied()
                .chain([50.0, 60.0])
                .collect::<Vec<_>>(),
        )
        .with_launch_skew(&[2.0])
        .with_arrivals(
            "step 1",
            crate::validity::ks::KsFit {
                n: 10,
                statistic: 0.5,
                p_value: 0.0005,
            },
        )
        .with_token_disagreement("a", -0.2)
        .with_check(Check::met("rate within tolerance", "step 1 · lane a", true));
    let verdicts: Vec<(&str, bool)> = s
        .checks
        .iter()
        .map(|c| (c.item.as_str(), c.passed))
        .collect();
    // send lag p99 = rank 100 of 101 = 50 ms > 10 ms.
    assert_eq!(s.send_lag_ms.unwrap().p99, 50.0);
    assert_eq!(
        verdicts,
        vec![
            ("send lag p99", false),
            ("launch skew p99", true),
            ("Poisson fit (KS p)", false),
            // Noted (20 % against the 10 % reference), never failing the run.
            ("usage vs o200k tokens", true),
            ("rate within tolerance", true),
        ]
    );
    let verdicts: Vec<&str> = s.checks.iter().map(Check::verdict).collect();
    assert_eq!(verdicts, ["FAIL", "pass", "FAIL", "noted", "pass"]);
    assert_eq!(s.measured_error_ms(), 50.0);
}

/// The machine's load and the tokenizers' disagreement are shown, never failing: a busy machine
/// whose canaries kept time, and a provider counting its own tokens, leave a run valid.
#[test]
fn load_average_and_token_disagreement_are_noted_not_failed() {
    let mut busy = health("coordinator", 1.1, 3.0, 0.4);
    if let Some(cpu) = busy.cpu.as_mut() {
        cpu.load_average_max = Some(8.0);
    }
    let sitting = SittingHealth {
        session: 1,
        attempt: 0,
        coordinator: vec![busy],
        probes: BTreeMap::new(),
    };
    let s = ValiditySection::default()
        .with_runtimes(&[sitting])
        .with_token_disagreement("a", 0.45);
    let load = s
        .checks
        .iter()
        .find(|c| c.item == "load average max")
        .unwrap();
    assert!(load.informational && load.passed && load.value == 8.0);
    assert_eq!(load.verdict(), "noted");
    assert!(s.passed(), "{:?}", s.failures());
}
