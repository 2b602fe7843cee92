use super::*;

const LIMITS: Limits = Limits {
    max_output_tokens: 256,
    lanes_per_probe: 1,
};

const GOOD: &str = r#"
seed: 7
phases: {warmup_s: 5, measure: {duration_s: 30}, cooldown_s: 2}
steps:
  - {model: closed, concurrency: 4}
  - {model: constant, rate_per_s: 2.5}
  - {model: poisson, rate_per_s: 8}
slo: {ttfa_ms: 500, tpot_ms: 50}
workload:
  kind: synthetic
  input_tokens: {dist: uniform, min: 100, max: 200}
  output_tokens: {dist: fixed, tokens: 128}
  shared_prefix: {prefixes: 4, suffixes_per_prefix: 8, prefix_tokens: 1000}
"#;

#[test]
fn a_good_section_parses_validates_and_expands_in_order() {
    let load = LoadSection::from_yaml(GOOD, "spec.yaml").unwrap();
    load.validate("spec.yaml", &LIMITS).unwrap();
    assert_eq!(load.goodput_threshold, 0.9);
    assert_eq!(load.sustain_fraction, 0.95);
    let steps = load.sweep_steps(&crate::trace::Traces::new());
    let labels: Vec<String> = steps.iter().map(|s| s.model.label()).collect();
    assert_eq!(labels, ["closed c=4", "constant 2.5/s", "poisson 8/s"]);
    assert_eq!(steps[2].index, 2);
    assert_eq!(steps[1].model.target_rate(), Some(2.5));
    assert_eq!(steps[0].model.target_rate(), None);
    assert_eq!(steps[0].phases.measure, Measure::DurationS(30.0));
}

#[test]
fn every_problem_is_listed_at_once_naming_its_field() {
    let text = r#"
seed: 1
phases: {warmup_s: -1, measure: {duration_s: 10}, cooldown_s: 0}
steps:
  - {model: closed, concurrency: 0}
  - {model: constant, rate_per_s: 0}
  - {model: poisson, rate_per_s: -3}
  - {model: constant, rate_per_s: 1.0e9}
  - {model: constant, rate_per_s: 0.05}
saturation: {arrivals: poisson, start_rate_per_s: 4, max_rate_per_s: 2, growth: 1}
slo: {ttft_ms: 500, e2e_ms: 0}
goodput_threshold: 1.5
workload:
  kind: synthetic
  input_tokens: {dist: list, values: []}
  output_tokens: {dist: normal, mean: 300, sd: 50, min: 1, max: 400}
"#;
    let load = LoadSection::from_yaml(text, "bad.yaml").unwrap();
    let err = load.validate("bad.yaml", &LIMITS).unwrap_err().to_string();
    let expected = [
        "load.phases.warmup_s: -1 is outside 0..=86400",
        "load: give `steps` or `saturation`, not both",
        "load.steps[0].concurrency: 0 is outside 1..=10000",
        "load.steps[1].rate_per_s: 0 is outside (0, 10000]",
        "load.steps[2].rate_per_s: -3 is outside (0, 10000]",
        "load.steps[3].rate_per_s: 1000000000 is outside (0, 10000]",
        "load.steps[4].rate_per_s: 0.05/s sends no request in a 10 s measured window",
        "load.saturation.max_rate_per_s: 2 is below start_rate_per_s 4",
        "load.saturation.growth: 1 is outside (1, 100]",
        "load.slo.e2e_ms: 0 must be a positive number",
        "load.slo.ttft_ms: unknown metric; known: ttfo_ms, ttfa_ms, e2e_ms, tpot_ms",
        "load.goodput_threshold: 1.5 is outside (0, 1]",
        "load.workload.input_tokens.values: must be a non-empty list of lengths >= 1",
        "load.workload.output_tokens: lengths up to 400 tokens cannot fit the contract's ceiling request.max_output_tokens = 256",
    ];
    for line in expected {
        assert!(err.contains(line), "missing {line:?} in:\n{err}");
    }
    assert!(
        err.starts_with("bad.yaml: load section has 14 problem(s)"),
        "{err}"
    );
}

#[test]
fn shapes_and_absurd_sizes_are_refused() {
    let text = r#"
seed: 1
phases: {warmup_s: 0, measure: {requests: 0}, cooldown_s: 0}
workload:
  kind: synthetic
  input_tokens: {dist: uniform, min: 10, max: 5}
  output_tokens: {dist: fixed, tokens: 0}
  shared_prefix: {prefixes: 2000, suffixes_per_prefix: 1000, prefix_tokens: 0}
"#;
    let load = LoadSection::from_yaml(text, "s.yaml").unwrap();
    let problems = load.problems(&LIMITS);
    assert_eq!(
        problems,
        [
            "load.phases.measure.requests: 0 is outside 1..=1000000",
            "load: give either `steps` or `saturation`",
            "load.workload.input_tokens: min 10 and max 5 must satisfy 1 <= min <= max",
            "load.workload.output_tokens.tokens: must be at least 1",
            "load.workload.shared_prefix.prefix_tokens: must be at least 1",
            "load.workload.shared_prefix: 2000 × 1000 = 2000000 prompts, above 1000000",
        ]
    );
}

#[test]
fn unknown_fields_and_models_are_parse_errors_naming_them() {
    let text = GOOD.replace("concurrency: 4", "concurency: 4");
    let err = LoadSection::from_yaml(&text, "spec.yaml")
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("spec.yaml: load section is not valid:"),
        "{err}"
    );
    assert!(err.contains("concurency"), "{err}");
    let text = GOOD.replace("model: poisson", "model: bursty");
    let err = LoadSection::from_yaml(&text, "spec.yaml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("bursty"), "{err}");
}

#[test]
fn a_saturation_search_expands_one_step_at_a_time() {
    let text = r#"
seed: 1
phases: {warmup_s: 1, measure: {duration_s: 10}, cooldown_s: 1}
saturation: {arrivals: constant, start_rate_per_s: 1, max_rate_per_s: 64}
workload: {kind: tasks}
"#;
    let load = LoadSection::from_yaml(text, "s.yaml").unwrap();
    assert_eq!(load.problems(&LIMITS), Vec::<String>::new());
    assert!(load.sweep_steps(&crate::trace::Traces::new()).is_empty());
    let step = load.saturation_step(3, 8.0).unwrap();
    assert_eq!(step.model.label(), "constant 8/s");
    assert_eq!(step.index, 3);
    let search = load.saturation.as_ref().unwrap();
    assert_eq!((search.growth, search.refine_steps), (2.0, 2));
}

#[test]
fn the_open_loop_in_flight_bound_defaults_to_1000_and_is_refused_outside_1_to_10000() {
    let load = LoadSection::from_yaml(GOOD, "spec.yaml").unwrap();
    assert_eq!(load.max_in_flight, None);
    assert_eq!(load.open_loop_in_flight(), 1_000);
    let with = |bound: &str| {
        let text = format!("{GOOD}max_in_flight: {bound}\n");
        let load = LoadSection::from_yaml(&text, "spec.yaml").unwrap();
        (
            load.open_loop_in_flight(),
            load.validate("spec.yaml", &LIMITS)
                .err()
                .map(|e| e.to_string()),
        )
    };
    assert_eq!(with("10000"), (10_000, None));
    assert_eq!(with("1"), (1, None));
    for bad in ["0", "10001"] {
        let (_, err) = with(bad);
        let err = err.unwrap_or_default();
        assert!(
            err.contains(&format!("load.max_in_flight: {bad} is outside 1..=10000")),
            "{err}"
        );
        assert!(err.contains("1 problem(s)"), "{err}");
    }
}

/// issue 36 class 5: a spec whose providers × in-flight bound per lane passes the probe's
/// 20,000 is refused at `init` (the probe would refuse the session only when the run starts).
#[test]
fn providers_times_the_lane_bound_above_the_probes_20000_is_refused() {
    let problems = |lanes: usize, extra: &str| {
        let load = LoadSection::from_yaml(&format!("{GOOD}{extra}"), "spec.yaml").unwrap();
        let limits = Limits {
            lanes_per_probe: lanes,
            ..LIMITS
        };
        (load.lane_in_flight_bound(), load.problems(&limits))
    };
    // GOOD has a closed step of 4 users and open steps: the open bound (1,000 by default) rules.
    assert_eq!(problems(20, "").0, 1_000);
    assert!(problems(20, "").1.is_empty());
    let (bound, refused) = problems(21, "");
    assert_eq!(bound, 1_000);
    assert_eq!(
        refused,
        vec![
            "load: 21 providers × 1000 requests in flight per lane = 21000 on one region's \
             probe, above its 20000 (fewer users, a lower load.max_in_flight, fewer providers, \
             or run them in separate regions)"
                .to_string()
        ]
    );
    assert!(problems(2, "max_in_flight: 10000\n").1.is_empty());
    assert_eq!(problems(3, "max_in_flight: 10000\n").1.len(), 1);
    // A closed-only sweep counts its largest number of users.
    let closed = "seed: 1\nphases: {warmup_s: 1, measure: {duration_s: 2}, cooldown_s: 0}\n\
                  steps: [{model: closed, concurrency: 2}, {model: closed, concurrency: 7000}]\n\
                  workload: {kind: synthetic, input_tokens: {dist: fixed, tokens: 10}, \
                  output_tokens: {dist: fixed, tokens: 10}}\n";
    let load = LoadSection::from_yaml(closed, "spec.yaml").unwrap();
    assert_eq!(load.lane_in_flight_bound(), 7_000);
    let limits = |lanes| Limits {
        lanes_per_probe: lanes,
        ..LIMITS
    };
    assert!(load.problems(&limits(2)).is_empty());
    assert_eq!(load.problems(&limits(3)).len(), 1);
}

#[test]
fn gamma_ramp_and_trace_steps_parse_label_and_are_checked() {
    let text = r#"
seed: 1
phases: {warmup_s: 1, measure: {duration_s: 10}, cooldown_s: 1}
steps:
  - {model: gamma, rate_per_s: 8, burstiness: 0.5}
  - {model: ramp, arrivals: poisson, from_rate_per_s: 1, to_rate_per_s: 8, ramp_s: 30}
  - {model: trace, path: traces/a.csv, format: azure_csv}
  - {model: trace, path: m.jsonl, format: mooncake_jsonl, time_scale: 0.5}
workload: {kind: tasks}
"#;
    let load = LoadSection::from_yaml(text, "s.yaml").unwrap();
    assert_eq!(load.problems(&LIMITS), Vec::<String>::new());
    let steps = load.sweep_steps(&crate::trace::Traces::new());
    let labels: Vec<String> = steps.iter().map(|s| s.model.label()).collect();
    assert_eq!(
        labels,
        [
            "gamma 8/s b=0.5",
            "ramp poisson 1→8/s in 30s",
            "trace ×1",
            "trace ×0.5"
        ]
    );
    assert!(steps.iter().all(|s| s.model.is_open()));
    assert_eq!(load.lane_in_flight_bound(), 1000);
    let bad = r#"
seed: 1
phases: {warmup_s: 1, measure: {duration_s: 10}, cooldown_s: 1}
steps:
  - {model: gamma, rate_per_s: 8, burstiness: 0}
  - {model: ramp, arrivals: constant, from_rate_per_s: -1, to_rate_per_s: 0, ramp_s: 0}
  - {model: trace, path: " ", format: azure_csv, time_scale: 0}
  - {model: ramp, arrivals: constant, from_rate_per_s: 2, to_rate_per_s: 0, ramp_s: 1}
workload: {kind: tasks}
"#;
    let load = LoadSection::from_yaml(bad, "s.yaml").unwrap();
    assert_eq!(
        load.problems(&LIMITS),
        [
            "load.steps[0].burstiness: 0 is outside (0, 1000]",
            "load.steps[1].from_rate_per_s: -1 is outside [0, 10000]",
            "load.steps[1].to_rate_per_s: 0 is outside (0, 10000]",
            "load.steps[1].ramp_s: 0 is outside (0, 86400]",
            "load.steps[2].path: must name a trace file",
            "load.steps[2].time_scale: 0 is outside (0, 1000]",
            "load.steps[3].to_rate_per_s: 0 must be above 0",
        ]
    );
    let unknown = "seed: 1\nphases: {warmup_s: 1, measure: {duration_s: 1}, cooldown_s: 1}\n\
                   steps: [{model: trace, path: a, format: burstgpt}]\nworkload: {kind: tasks}\n";
    let err = LoadSection::from_yaml(unknown, "s.yaml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("burstgpt"), "{err}");
}

#[test]
fn a_closed_steps_user_ramp_parses_and_is_checked() {
    let text = "seed: 1\nphases: {warmup_s: 1, measure: {duration_s: 1}, cooldown_s: 1}\n\
                steps: [{model: closed, concurrency: 4, ramp_up_s: 2}, {model: closed, \
                concurrency: 2}, {model: closed, concurrency: 1, ramp_up_s: -1}, \
                {model: closed, concurrency: 1, ramp_up_s: 90000}]\nworkload: {kind: tasks}\n";
    let load = LoadSection::from_yaml(text, "s.yaml").unwrap();
    assert_eq!(
        (load.ramp_up_s(0), load.ramp_up_s(1), load.ramp_up_s(9)),
        (Some(2.0), None, None)
    );
    assert_eq!(
        load.problems(&LIMITS),
        [
            "load.steps[2].ramp_up_s: -1 is outside [0, 86400]",
            "load.steps[3].ramp_up_s: 90000 is outside [0, 86400]",
        ]
    );
}

#[test]
fn every_steps_conversations_parse_and_are_checked() {
    let text = "seed: 1\nphases: {warmup_s: 1, measure: {duration_s: 1}, cooldown_s: 1}\n\
                steps: [{model: closed, concurrency: 2, conversation: {turns: {dist: fixed, \
                tokens: 3}, think_ms: {dist: uniform, min: 100, max: 900}}}, {model: closed, \
                concurrency: 1, conversation: {turns: {dist: fixed, tokens: 0}}}, {model: \
                closed, concurrency: 1, conversation: {turns: {dist: list, values: [2, 5000]}, \
                think_ms: {dist: fixed, tokens: 90000000}}}]\nworkload: {kind: tasks}\n";
    let load = LoadSection::from_yaml(text, "s.yaml").unwrap();
    assert_eq!(
        load.conversation(0),
        Some(&Conversation {
            turns: LengthDist::Fixed { tokens: 3 },
            think_ms: Some(LengthDist::Uniform { min: 100, max: 900 }),
        })
    );
    assert_eq!(load.conversation(9), None);
    assert_eq!(
        load.problems(&LIMITS),
        [
            "load.steps[1].conversation.turns.tokens: must be at least 1",
            "load.steps[2].conversation.turns: 5000 turns is over 1000",
            "load.steps[2].conversation.think_ms: 90000000 ms is longer than a day",
        ]
    );
    // Open loops: every open model takes conversations (each release opens one), checked
    // alike.
    let open = "seed: 1\nphases: {warmup_s: 1, measure: {duration_s: 1}, cooldown_s: 1}\n\
                steps: [{model: poisson, rate_per_s: 2, conversation: {turns: {dist: fixed, \
                tokens: 0}}}]\nworkload: {kind: tasks}\n";
    for model in [
        "poisson, rate_per_s: 2",
        "constant, rate_per_s: 2",
        "gamma, rate_per_s: 2, burstiness: 0.5",
        "ramp, arrivals: constant, from_rate_per_s: 0, to_rate_per_s: 4, ramp_s: 1",
        "trace, path: t.csv, format: azure_csv",
    ] {
        let text = open.replace("poisson, rate_per_s: 2", model);
        let load = LoadSection::from_yaml(&text, "s.yaml").unwrap();
        assert_eq!(
            load.conversation(0),
            Some(&Conversation {
                turns: LengthDist::Fixed { tokens: 0 },
                think_ms: None,
            }),
            "{model}"
        );
        assert_eq!(
            load.problems(&LIMITS),
            ["load.steps[0].conversation.turns.tokens: must be at least 1"],
            "{model}"
        );
    }
    let typo = "seed: 1\nphases: {warmup_s: 1, measure: {duration_s: 1}, cooldown_s: 1}\n\
                steps: [{model: closed, concurrency: 2, conversation: {turn: 3}}]\n\
                workload: {kind: tasks}\n";
    let err = LoadSection::from_yaml(typo, "s.yaml")
        .unwrap_err()
        .to_string();
    assert!(err.contains("turn"), "{err}");
}

#[test]
fn agent_runs_parse_and_are_checked_on_closed_and_open_steps() {
    let text = "seed: 1\nphases: {warmup_s: 1, measure: {duration_s: 1}, cooldown_s: 1}\n\
                steps: [{model: closed, concurrency: 2, agent: {max_steps: 4, think_ms: {dist: \
                fixed, tokens: 50}}}, {model: closed, concurrency: 1, agent: {max_steps: 0}}, \
                {model: closed, concurrency: 1, agent: {max_steps: 65}, conversation: {turns: \
                {dist: fixed, tokens: 2}}}]\nworkload: {kind: tasks}\n";
    let load = LoadSection::from_yaml(text, "s.yaml").unwrap();
    assert_eq!(
        load.agent(0),
        Some(&Agent {
            max_steps: 4,
            think_ms: Some(LengthDist::Fixed { tokens: 50 }),
        })
    );
    assert_eq!(load.agent(1).map(|a| a.max_steps), Some(0));
    assert_eq!(load.agent(9), None);
    assert_eq!(
        load.problems(&LIMITS),
        [
            "load.steps[1].agent.max_steps: 0 is outside 1..=64",
            "load.steps[2].agent.max_steps: 65 is outside 1..=64",
            "load.steps[2]: give `conversation` or `agent`, not both",
        ]
    );
    // Every open loop takes agents too (each release starts a run), checked the same way.
    for model in [
        "constant, rate_per_s: 2",
        "poisson, rate_per_s: 2",
        "gamma, rate_per_s: 2, burstiness: 0.5",
        "ramp, arrivals: constant, from_rate_per_s: 1, to_rate_per_s: 3, ramp_s: 1",
    ] {
        let open = text.replace("closed, concurrency: 1", model);
        let load = LoadSection::from_yaml(&open, "s.yaml").unwrap();
        assert_eq!(load.agent(1).map(|a| a.max_steps), Some(0), "{model}");
        assert_eq!(
            load.problems(&LIMITS),
            [
                "load.steps[1].agent.max_steps: 0 is outside 1..=64",
                "load.steps[2].agent.max_steps: 65 is outside 1..=64",
                "load.steps[2]: give `conversation` or `agent`, not both",
            ],
            "{model}"
        );
    }
}

#[test]
fn repeats_run_the_sweep_in_passes_each_step_its_own_phase() {
    let text = format!("{GOOD}repeats: 2\n");
    let load = LoadSection::from_yaml(&text, "spec.yaml").unwrap();
    load.validate("spec.yaml", &LIMITS).unwrap();
    let steps = load.sweep_steps(&crate::trace::Traces::new());
    // Pass 0 is steps 0..3 as written, pass 1 steps 3..6: phase r × 3 + s.
    let seen: Vec<(usize, String, usize, u32)> = steps
        .iter()
        .map(|s| {
            let r = s.repeat.unwrap();
            (s.index, s.model.label(), s.written(), r.repeat)
        })
        .collect();
    assert_eq!(
        seen,
        [
            (0, "closed c=4".to_string(), 0, 0),
            (1, "constant 2.5/s".to_string(), 1, 0),
            (2, "poisson 8/s".to_string(), 2, 0),
            (3, "closed c=4".to_string(), 0, 1),
            (4, "constant 2.5/s".to_string(), 1, 1),
            (5, "poisson 8/s".to_string(), 2, 1),
        ]
    );
    assert!(steps.iter().all(|s| s.repeat.unwrap().of == 2));
    // Without `repeats` nothing changes: no repeat, and the section writes no field.
    let once = LoadSection::from_yaml(GOOD, "spec.yaml").unwrap();
    assert!(
        once.sweep_steps(&crate::trace::Traces::new())
            .iter()
            .all(|s| s.repeat.is_none())
    );
    assert!(
        serde_json::to_value(&once)
            .unwrap()
            .get("repeats")
            .is_none()
    );
}

#[test]
fn repeats_are_refused_outside_2_to_100_and_with_a_saturation_search() {
    let err = |extra: &str| {
        let text = format!("{GOOD}{extra}");
        let load = LoadSection::from_yaml(&text, "spec.yaml").unwrap();
        load.validate("spec.yaml", &LIMITS)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default()
    };
    assert!(err("repeats: 1\n").contains("load.repeats: 1 is outside 2..=100"));
    assert!(err("repeats: 101\n").contains("load.repeats: 101 is outside 2..=100"));
    assert_eq!(err("repeats: 100\n"), "");
    let search = r#"
seed: 7
phases: {warmup_s: 0, measure: {duration_s: 5}, cooldown_s: 0}
saturation: {arrivals: poisson, start_rate_per_s: 1, growth: 2, max_rate_per_s: 8}
repeats: 3
workload:
  kind: synthetic
  input_tokens: {dist: fixed, tokens: 10}
  output_tokens: {dist: fixed, tokens: 10}
"#;
    let load = LoadSection::from_yaml(search, "spec.yaml").unwrap();
    let e = load.validate("spec.yaml", &LIMITS).unwrap_err().to_string();
    assert!(e.contains("load.repeats: not with `saturation`"), "{e}");
}
