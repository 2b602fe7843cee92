//! Spec parsing and validation.

use super::*;

const MINIMAL: &str = r#"
benchmark:
  slug: inference-micro-single-task
  workflow: micro-single-task
  schedule_version: micro-single-task-paired-round-robin-sha256-v1
  families: [ticket-triage]
request:
  temperature: 0
  top_p: 1
  presence_penalty: 0
  frequency_penalty: 0
  max_output_tokens: 256
  response_format: json_object
  reasoning_effort: low
  timeout_ms: 20000
providers:
  - key: zai
    endpoint: https://api.z.ai/api/paas/v4/chat/completions
    model: glm-5.3-flash
    auth: {scheme: bearer, env: ZAI_API_KEY}
    max_tokens_field: max_tokens
    extra_body: {thinking: {type: enabled}}
dataset:
  source: ../data
"#;

#[test]
fn parses_minimal_spec_with_defaults() {
    let spec = Spec::parse(Path::new("s.yaml"), MINIMAL.as_bytes());
    let spec = match spec {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(
        spec.benchmark.workflow_fields.get("families"),
        Some(&serde_json::json!(["ticket-triage"]))
    );
    assert!(spec.workflow_sections.is_empty());
    assert_eq!(spec.request.harness_grace_ms, 5000);
    assert_eq!(spec.credential_names(), vec!["ZAI_API_KEY".to_string()]);
    assert_eq!(spec.region_names(), vec!["local".to_string()]);
}

#[test]
fn resolves_relative_paths_lexically() {
    let loaded = LoadedSpec {
        spec: match Spec::parse(Path::new("s.yaml"), MINIMAL.as_bytes()) {
            Ok(s) => s,
            Err(e) => panic!("{e}"),
        },
        path: PathBuf::from("workflows/w/specs/s.yaml"),
        bytes: Vec::new(),
    };
    assert_eq!(loaded.resolve("../../../runs"), PathBuf::from("runs"));
    assert_eq!(loaded.resolve("../../../../x"), PathBuf::from("../x"));
    assert_eq!(loaded.resolve("/abs/dir"), PathBuf::from("/abs/dir"));
    assert_eq!(loaded.dataset_dir(), PathBuf::from("workflows/w/data"));
}

#[test]
fn unknown_field_is_named() {
    let text = MINIMAL.replace("top_p: 1", "top_p: 1\n  topp: 1");
    let err = Spec::parse(Path::new("s.yaml"), text.as_bytes())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("topp"), "{err}");
    assert!(err.contains("s.yaml"), "{err}");
}

#[test]
fn the_workflow_checks_its_section_and_its_problems_join_the_generic_ones() {
    let text = MINIMAL.replace("top_p: 1", "top_p: 3") + "plans: {full_items_per_family: 0}\n";
    let err = Spec::parse_checked(Path::new("s.yaml"), text.as_bytes(), |spec| {
        let plans = spec.workflow_sections.get("plans").cloned();
        assert_eq!(plans, Some(serde_json::json!({"full_items_per_family": 0})));
        vec!["plans.full_items_per_family: 0 must be at least 1".to_string()]
    })
    .err()
    .map(|e| e.to_string())
    .unwrap_or_default();
    assert!(err.contains("2 problem(s)"), "{err}");
    assert!(err.contains("request.top_p: 3 is outside (0, 1]"), "{err}");
    assert!(err.contains("plans.full_items_per_family: 0"), "{err}");
    // A normalised section is what the spec then holds (and what the lock hashes).
    let spec = Spec::parse_checked(Path::new("s.yaml"), MINIMAL.as_bytes(), |spec| {
        spec.workflow_sections
            .insert("plans".into(), serde_json::json!({"n": 1}));
        Vec::new()
    });
    let sections = spec.map(|s| s.workflow_sections).unwrap_or_default();
    assert_eq!(sections.get("plans"), Some(&serde_json::json!({"n": 1})));
}

#[test]
fn every_problem_is_reported_at_once() {
    let text = MINIMAL
        .replace("top_p: 1", "top_p: 3")
        .replace("https://api.z.ai", "ftp://api.z.ai")
        .replace("extra_body: {thinking", "extra_body: {model: x, thinking");
    let err = Spec::parse(Path::new("s.yaml"), text.as_bytes())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("3 problem(s)"), "{err}");
    assert!(err.contains("request.top_p: 3"), "{err}");
    assert!(err.contains("providers[0] (zai).endpoint"), "{err}");
    assert!(err.contains("extra_body.model"), "{err}");
}

#[test]
fn endpoints_and_probe_locations_parse_into_their_kinds() {
    assert_eq!(
        Endpoint::parse("sim://zai"),
        Endpoint::Simulator { profile: "zai" }
    );
    assert_eq!(
        Endpoint::parse("env://MY_URL"),
        Endpoint::FromEnv { var: "MY_URL" }
    );
    assert_eq!(
        Endpoint::parse("https://x/v1/chat/completions"),
        Endpoint::Url("https://x/v1/chat/completions")
    );
    assert_eq!(Endpoint::parse("ftp://x"), Endpoint::Unknown("ftp://x"));
    assert_eq!(ProbeLocation::parse("local"), ProbeLocation::InProcess);
    assert_eq!(
        ProbeLocation::parse("http://10.0.0.2:7070"),
        ProbeLocation::Remote("http://10.0.0.2:7070")
    );
    assert_eq!(
        ProbeLocation::parse("Local"),
        ProbeLocation::Unknown("Local")
    );
}

fn problems_of(text: &str) -> String {
    Spec::parse(Path::new("s.yaml"), text.as_bytes())
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default()
}

#[test]
fn extra_body_may_not_set_any_contract_field() {
    // Written out by hand (not taken from CONTRACT_BODY_FIELDS) so a field dropped from the
    // list fails here.
    for field in [
        "temperature",
        "top_p",
        "presence_penalty",
        "frequency_penalty",
        "max_tokens",
        "max_completion_tokens",
        "response_format",
        "reasoning_effort",
        "stream_options",
        "stop",
        "seed",
        "model",
        "messages",
        "stream",
    ] {
        let text = MINIMAL.replace(
            "extra_body: {thinking",
            &format!("extra_body: {{{field}: 1, thinking"),
        );
        let err = problems_of(&text);
        assert!(err.contains("1 problem(s)"), "{field}: {err}");
        assert!(
            err.contains(&format!("extra_body.{field}: the contract owns this field")),
            "{field}: {err}"
        );
    }
    assert!(problems_of(MINIMAL).is_empty());
}

#[test]
fn timeouts_and_grace_have_upper_bounds() {
    let at_bound = MINIMAL.replace(
        "timeout_ms: 20000",
        "timeout_ms: 600000\n  harness_grace_ms: 600000",
    );
    assert!(
        problems_of(&at_bound).is_empty(),
        "{}",
        problems_of(&at_bound)
    );
    let above = MINIMAL.replace(
        "timeout_ms: 20000",
        "timeout_ms: 600001\n  harness_grace_ms: 18446744073709551615",
    );
    let err = problems_of(&above);
    assert!(err.contains("2 problem(s)"), "{err}");
    assert!(
        err.contains("request.timeout_ms: 600001 is outside 1..=600000"),
        "{err}"
    );
    assert!(
        err.contains("request.harness_grace_ms: 18446744073709551615 is above 600000"),
        "{err}"
    );
}

#[test]
fn parse_and_utf8_errors_keep_their_source() {
    use std::error::Error;
    let text = MINIMAL.replace("top_p: 1", "top_p: 1\n  topp: 1");
    let err = Spec::parse(Path::new("s.yaml"), text.as_bytes())
        .err()
        .unwrap_or_else(|| panic!("an unknown field is refused"));
    let source = err.source().unwrap_or_else(|| panic!("no source: {err:?}"));
    assert!(source.is::<Box<serde_saphyr::Error>>(), "{source:?}");
    assert_eq!(
        err.to_string(),
        format!("spec s.yaml is not valid: {source}")
    );

    let err = Spec::parse(Path::new("s.yaml"), b"benchmark: \xff")
        .err()
        .unwrap_or_else(|| panic!("bytes that are not UTF-8 are refused"));
    let source = err.source().unwrap_or_else(|| panic!("no source: {err:?}"));
    assert!(source.is::<std::str::Utf8Error>(), "{source:?}");
    assert!(err.to_string().contains("not UTF-8"), "{err}");
}

#[test]
fn results_section_parses_defaults_and_names_bad_thresholds() {
    let spec = Spec::parse(Path::new("s.yaml"), MINIMAL.as_bytes());
    assert!(spec.is_ok_and(|s| s.results.is_none()));
    let text = format!("{MINIMAL}results:\n  publish: true\n");
    let spec = Spec::parse(Path::new("s.yaml"), text.as_bytes());
    let Ok(Spec {
        results: Some(results),
        ..
    }) = spec
    else {
        panic!("{spec:?}")
    };
    assert!(results.publish);
    assert_eq!(results.regression.min_relative_change_pct, 10.0);
    assert_eq!(results.regression.min_rate_change_points, 2.0);
    let bad = format!(
        "{MINIMAL}results:\n  regression:\n    min_relative_change_pct: -1\n    min_rate_change_points: 101\n"
    );
    let err = problems_of(&bad);
    assert!(err.contains("2 problem(s)"), "{err}");
    assert!(
        err.contains("results.regression.min_relative_change_pct: -1 must be a percentage >= 0"),
        "{err}"
    );
    assert!(
        err.contains("results.regression.min_rate_change_points: 101 must be between 0 and 100"),
        "{err}"
    );
    let unknown = format!("{MINIMAL}results:\n  publsh: true\n");
    assert!(
        problems_of(&unknown).contains("publsh"),
        "{}",
        problems_of(&unknown)
    );
}

#[test]
fn a_request_block_with_one_field_gets_the_contract_for_the_others() {
    let text = "request: {timeout_ms: 5000}\n\
                providers: [{key: mine, endpoint: 'http://127.0.0.1:8000/v1', model: m}]\n";
    let spec = match Spec::parse(Path::new("s.yaml"), text.as_bytes()) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    let r = &spec.request;
    assert_eq!(
        (
            r.temperature,
            r.top_p,
            r.presence_penalty,
            r.frequency_penalty
        ),
        (0.0, 1.0, 0.0, 0.0)
    );
    assert_eq!(r.max_output_tokens, 256);
    assert_eq!(r.response_format, "json_object");
    assert_eq!((r.timeout_ms, r.harness_grace_ms), (5000, 5000));
    assert_eq!(r.reasoning_effort, "");
    let p = &spec.providers[0];
    assert_eq!(
        (&p.auth, p.max_tokens_field),
        (&Auth::None, MaxTokensField::MaxTokens)
    );
    assert_eq!(spec.dataset.manifest, "none");
}

#[test]
fn a_base_url_gets_the_chat_completions_path_once() {
    assert_eq!(
        chat_completions_url("https://api.together.ai/v1"),
        "https://api.together.ai/v1/chat/completions"
    );
    assert_eq!(
        chat_completions_url("http://127.0.0.1:8000/v1/"),
        "http://127.0.0.1:8000/v1/chat/completions"
    );
    assert_eq!(
        chat_completions_url("https://api.together.ai/v1/chat/completions"),
        "https://api.together.ai/v1/chat/completions"
    );
}

#[test]
fn a_cached_input_price_is_parsed_checked_and_bills_the_cached_tokens() {
    let priced = MINIMAL.replace(
        "    extra_body: {thinking: {type: enabled}}",
        "    extra_body: {thinking: {type: enabled}}\n    price: {input_per_mtok: 2.0, output_per_mtok: 8.0, cached_input_per_mtok: 0.5}",
    );
    let spec = Spec::parse(Path::new("s.yaml"), priced.as_bytes()).unwrap();
    let price = spec.providers[0].price.unwrap();
    assert_eq!(price.cached_input_per_mtok, Some(0.5));
    // 1,000 prompt tokens of which 800 cached, 100 completion tokens:
    // (200 × 2.0 + 800 × 0.5 + 100 × 8.0) / 1e6 = (400 + 400 + 800) / 1e6 = 0.0016 USD.
    assert!((price.cost_usd(1000, 800, 0, 100) - 0.0016).abs() < 1e-15);
    // Without a cached price, cached tokens cost the input price: (1000 × 2 + 800) / 1e6.
    let plain = Price {
        cached_input_per_mtok: None,
        ..price
    };
    assert!((plain.cost_usd(1000, 800, 0, 100) - 0.0028).abs() < 1e-15);
    // A report of more cached tokens than prompt tokens bills at most the prompt as cached.
    assert!((price.cost_usd(100, 500, 0, 0) - 0.00005).abs() < 1e-15);
    // Cache writes (Anthropic's cache creation), part of the prompt: by default 1.25 × input.
    // 1,000 prompt = 300 cached + 500 written + 200 plain, 100 completion:
    // (200 × 2.0 + 300 × 0.5 + 500 × 2.5 + 100 × 8.0) / 1e6 = (400 + 150 + 1250 + 800) / 1e6.
    assert!((price.cost_usd(1000, 300, 500, 100) - 0.0026).abs() < 1e-15);
    // Writes beyond the uncached rest are capped: 800 cached leave 200 to write.
    // (800 × 0.5 + 200 × 2.5) / 1e6 = 0.0009.
    assert!((price.cost_usd(1000, 800, 500, 0) - 0.0009).abs() < 1e-15);
    // The spec's own cache-write price overrides the default: 500 × 3.0 instead of 500 × 2.5.
    let writes = priced.replace(
        "cached_input_per_mtok: 0.5}",
        "cached_input_per_mtok: 0.5, cache_write_input_per_mtok: 3.0}",
    );
    let spec = Spec::parse(Path::new("s.yaml"), writes.as_bytes()).unwrap();
    let with_writes = spec.providers[0].price.unwrap();
    assert_eq!(with_writes.cache_write_input_per_mtok, Some(3.0));
    assert!((with_writes.cost_usd(1000, 300, 500, 100) - 0.00285).abs() < 1e-15);
    let err = problems_of(&writes.replace(
        "cache_write_input_per_mtok: 3.0",
        "cache_write_input_per_mtok: -2",
    ));
    assert!(
        err.contains(
            "providers[0] (zai).price.cache_write_input_per_mtok: -2 must be a price >= 0"
        ),
        "{err}"
    );
    let negative = priced.replace("cached_input_per_mtok: 0.5", "cached_input_per_mtok: -1");
    let err = problems_of(&negative);
    assert!(
        err.contains("providers[0] (zai).price.cached_input_per_mtok: -1 must be a price >= 0"),
        "{err}"
    );
}
