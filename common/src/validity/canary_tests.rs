use super::*;

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A blocking 300 ms sleep on the watched runtime, injected 1.2 s after the canary started,
/// is its largest lateness (≥ 250 ms whatever the machine's load: the canary cannot run while
/// the only thread sleeps) and its worst moment spans the injection.
#[test]
fn a_blocked_runtime_is_located_by_its_worst_moment() {
    let runtime = current_thread();
    let (health, injected_ms) = runtime.block_on(async {
        let canary = Canary::start("test", &tokio::runtime::Handle::current());
        let started = Instant::now();
        tokio::time::sleep(Duration::from_millis(1200)).await;
        let injected = started.elapsed();
        std::thread::sleep(Duration::from_millis(300));
        tokio::time::sleep(Duration::from_millis(600)).await;
        (canary.summary(), injected.as_secs_f64() * 1e3)
    });
    assert!(health.lateness_ms_max >= 250.0, "{health:?}");
    let worst = &health.worst[0];
    assert_eq!(worst.lateness_ms, health.lateness_ms_max);
    assert!(
        worst.from_offset_ms <= injected_ms && worst.to_offset_ms >= injected_ms + 300.0,
        "injected at {injected_ms} ms, worst {worst:?}"
    );
    assert!(health.ticks >= 50, "{health:?}");
    assert!(health.worst.len() <= WORST_KEPT);
}

/// An unstarved canary: generous bounds only (the machine may be loaded by other work).
#[test]
fn a_quiet_runtime_has_no_long_stall() {
    let runtime = current_thread();
    let health = runtime.block_on(async {
        let canary = Canary::start("test", &tokio::runtime::Handle::current());
        tokio::time::sleep(Duration::from_millis(1500)).await;
        canary.summary()
    });
    assert!(health.lateness_ms_max < 250.0, "{health:?}");
    assert!(health.ticks >= 20, "{health:?}");
    assert_eq!(health.runtime, "test");
    assert_eq!(health.period_ms, 10.0);
    #[cfg(target_os = "linux")]
    assert!(health.cpu.is_some(), "{health:?}");
}

#[test]
fn worst_moments_keep_one_per_second_worst_first() {
    let mut r = Recorder::new("t", PERIOD);
    let started = r.started;
    let at = |ms: u64| started + Duration::from_millis(ms);
    let ticks = [
        (100, 105),
        (200, 260),
        (210, 215),
        (1100, 1140),
        (2500, 2600),
    ];
    let mut previous = started;
    for (due, fired) in ticks {
        let (due, fired) = (at(due), at(fired));
        r.tick(previous, due, fired);
        previous = fired;
    }
    let s = r.summary();
    let late: Vec<f64> = s.worst.iter().map(|m| m.lateness_ms.round()).collect();
    assert_eq!(late, vec![100.0, 60.0, 40.0]);
    assert_eq!(s.worst[1].from_offset_ms.round(), 105.0);
    assert_eq!(s.worst[1].to_offset_ms.round(), 260.0);
    assert_eq!(s.lateness_ms_max.round(), 100.0);
    assert_eq!(s.ticks, 5);
}
