use super::*;

const FAMILIES: [&str; 3] = [
    "meeting-notes-lookup",
    "ticket-triage",
    "contract-terms-extraction",
];

/// A provider whose every E2E is `base` × the round's common multiplier: a lower base beats a
/// higher one in every shared round.
fn provider(lane: &str, name: &str, base: f64, rounds: u64, success: f64) -> ProviderReport {
    let samples: Vec<Sample> = (0..rounds)
        .map(|r| {
            let e2e = base * (1.0 + (r % 7) as f64 * 0.25);
            Sample {
                round_index: r,
                ttfa_ms: Some(e2e * 0.6),
                e2e_ms: Some(e2e),
                tokens_per_second: Some(20_000.0 / base + (r % 5) as f64),
            }
        })
        .collect();
    let figures = Figures {
        submitted: rounds,
        e2e_p50: Some(base * 1.75),
        e2e_p99: Some(base * 2.5),
        ttfa_p50: Some(base * 1.05),
        tps_p50: Some(20_000.0 / base + 2.0),
        tps_p95_floor: Some(20_000.0 / base),
        task_success_rate: Some(success),
        failure_rate: Some(1.0 - success),
    };
    ProviderReport {
        lane: lane.to_string(),
        display_name: name.to_string(),
        pooled: figures.clone(),
        families: FAMILIES
            .iter()
            .map(|f| FamilyFigures {
                family: f.to_string(),
                figures: figures.clone(),
            })
            .collect(),
        samples,
        rank: None,
        ineligibility_reasons: Vec::new(),
    }
}

fn fixture() -> HtmlReportInput {
    let mut providers = vec![
        provider("zeta", "Zeta Cloud", 400.0, 42, 0.99),
        provider("alpha", "Alpha AI", 1826.9 / 1.75, 42, 0.955),
        provider("evil", "<b>&\"x\"", 900.0, 42, 0.80),
    ];
    providers[0].rank = Some(1);
    providers[1].rank = Some(2);
    providers[2].ineligibility_reasons = vec!["task success 80.00% is below 95%".to_string()];
    let lanes: Vec<String> = ["alpha", "evil", "zeta"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    HtmlReportInput {
        time_scale: None,
        validity: None,
        repeats: None,
        title: "Inference benchmark: test".to_string(),
        subtitle: "Run run-1 · micro-single-task · 42 rounds · 3 providers".to_string(),
        header_notes: Vec::new(),
        families: FAMILIES.iter().map(|f| f.to_string()).collect(),
        providers,
        paired: PairedReport {
            lanes: lanes.clone(),
            excluded: Vec::new(),
            rounds_with_winner: 42,
            wins: lanes
                .iter()
                .map(|l| LaneWins {
                    lane: l.clone(),
                    wins: if l == "zeta" { 42.0 } else { 0.0 },
                    win_share: Some(if l == "zeta" { 1.0 } else { 0.0 }),
                })
                .collect(),
            pairs: vec![PairMedian {
                a: "zeta".to_string(),
                b: "alpha".to_string(),
                count: 42,
                e2e_diff_p50: Some(-1234.5),
            }],
        },
        min_task_success_rate: 0.95,
        max_failure_rate: 0.01,
        provenance: vec![
            ("Run id".to_string(), "run-1".to_string()),
            (
                "Tokenizer".to_string(),
                "o200k_base (ranks sha256 abc)".to_string(),
            ),
        ],
        notes: vec!["Simulated providers: time scale 0.02.".to_string()],
    }
}

#[test]
fn escape_handles_the_five_special_characters() {
    assert_eq!(escape("<b>&\"x\"'"), "&lt;b&gt;&amp;&quot;x&quot;&#39;");
    assert_eq!(escape("plain — text"), "plain — text");
}

#[test]
fn page_has_every_section_and_provider() {
    let html = render_html(&fixture());
    for id in [
        "summary",
        "latency",
        "tokens",
        "outcomes",
        "paired",
        "families",
        "provenance",
    ] {
        assert!(
            html.contains(&format!("<section id=\"{id}\">")),
            "section {id}"
        );
    }
    for name in ["Alpha AI", "Zeta Cloud", "&lt;b&gt;&amp;&quot;x&quot;"] {
        assert!(html.contains(name), "{name}");
    }
    for family in FAMILIES {
        assert!(html.contains(&format!("<h3>{family}</h3>")), "{family}");
    }
    // Two CDFs, the strip, two bar charts and three family charts.
    assert_eq!(html.matches("<svg class=\"chart\"").count(), 8);
    assert!(html.contains("o200k_base (ranks sha256 abc)"));
    assert!(html.contains("Simulated providers: time scale 0.02."));
}

#[test]
fn simulated_runs_also_show_the_summary_in_simulated_time() {
    let mut input = fixture();
    assert!(!render_html(&input).contains("In simulated time"));
    input.time_scale = Some(0.5);
    let html = render_html(&input);
    let at = html
        .find("<h3>In simulated time</h3>")
        .expect("second table");
    let alpha = html[at..]
        .find("<tr><th scope=\"row\">Alpha AI</th>")
        .expect("alpha row")
        + at;
    let row = &html[alpha..alpha + html[alpha..].find("</tr>").expect("row end")];
    // E2E p50 1,826.9 ms ÷ 0.5 = 3,653.8 ms; task success unchanged.
    assert!(row.contains("<td>3,653.8</td>"), "{row}");
    assert!(row.contains("<td>95.50%</td>"), "{row}");
}

#[test]
fn summary_rows_are_alphabetical_with_the_seed_formatting() {
    let html = render_html(&fixture());
    let alpha = html
        .find("<tr><th scope=\"row\">Alpha AI</th>")
        .expect("alpha row");
    let evil = html
        .find("<tr><th scope=\"row\">&lt;b&gt;&amp;&quot;x&quot;</th>")
        .expect("evil row");
    let zeta = html
        .find("<tr><th scope=\"row\">Zeta Cloud</th>")
        .expect("zeta row");
    // Case-insensitive by display name: "<b>…" sorts before letters.
    assert!(evil < alpha && alpha < zeta);
    let row_end = html[alpha..].find("</tr>").expect("row end") + alpha;
    let row = &html[alpha..row_end];
    // E2E p50 1,826.9; success 95.50%; failures 4.50%.
    assert!(row.contains("<td>1,826.9</td>"), "{row}");
    assert!(row.contains("<td>95.50%</td>"), "{row}");
    assert!(row.contains("<td>4.50%</td>"), "{row}");
    for h in ["E2E p50 (ms)", "Tokens/s p95 floor", "Operational failures"] {
        assert!(html.contains(&format!("<th>{h}</th>")), "{h}");
    }
    assert!(html.contains("1. Zeta Cloud (1,000.0 ms) · 2. Alpha AI (2,609.9 ms)"));
    assert!(html.contains("task success 80.00% is below 95%"));
}

#[test]
fn win_matrix_shows_head_to_head_shares() {
    let html = render_html(&fixture());
    let start = html.find("<section id=\"paired\">").expect("paired");
    let section = &html[start..];
    let zeta = section
        .find("<tr><th scope=\"row\">Zeta Cloud</th>")
        .expect("zeta row");
    let row = &section[zeta..zeta + section[zeta..].find("</tr>").expect("end")];
    // Zeta (base 400) beats both others in all 42 rounds; its round-win share is 100%.
    assert_eq!(row.matches(">100%</td>").count(), 2, "{row}");
    assert!(row.contains("<td class=\"wins\">100.00%</td>"), "{row}");
    assert!(row.contains("Zeta Cloud vs Alpha AI: 42 rounds, median E2E difference -1,234.5 ms"));
    let alpha = section
        .find("<tr><th scope=\"row\">Alpha AI</th>")
        .expect("alpha row");
    let row = &section[alpha..alpha + section[alpha..].find("</tr>").expect("end")];
    // Alpha (base ≈ 1044) loses to both.
    assert_eq!(row.matches(">0%</td>").count(), 2, "{row}");
}

#[test]
fn page_references_nothing_outside_itself() {
    let html = render_html(&fixture());
    for needle in [
        "<script", "<link", "@import", "url(", "http://", "https://", "src=", "<iframe", "<img",
    ] {
        assert!(!html.contains(needle), "found {needle}");
    }
}

#[test]
fn rendering_is_deterministic_and_order_independent() {
    let input = fixture();
    let a = render_html(&input);
    assert_eq!(a, render_html(&input));
    let mut shuffled = input.clone();
    shuffled.providers.reverse();
    assert_eq!(a, render_html(&shuffled));
}

#[test]
fn hostile_names_are_escaped_everywhere() {
    let html = render_html(&fixture());
    assert!(!html.contains("<b>&\"x\""));
    assert!(!html.contains("<b>"));
    assert!(html.contains("&lt;b&gt;&amp;&quot;x&quot;"));
}

#[test]
fn empty_input_renders_placeholders() {
    let html = render_html(&HtmlReportInput::default());
    assert!(html.contains("No completed requests."));
    assert!(html.contains("No tokens/s population."));
    assert!(html.contains("Fewer than two comparable providers."));
    assert!(html.ends_with("</html>\n"));
}

#[test]
fn write_html_writes_report_html_in_the_run_dir() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_html(dir.path(), &fixture()).expect("write");
    assert_eq!(path, dir.path().join("report.html"));
    let written = std::fs::read_to_string(&path).expect("read");
    assert_eq!(written, render_html(&fixture()));
    // A run directory that cannot hold files (here: it is a file): the error names it.
    let not_a_dir = dir.path().join("not-a-dir");
    std::fs::write(&not_a_dir, b"").expect("write a plain file");
    let e = write_html(&not_a_dir, &fixture()).expect_err("a file is not a run directory");
    assert!(e.to_string().contains("not-a-dir"), "{e}");
}

#[test]
fn large_series_are_thinned_to_the_cap_and_say_so() {
    let section = |rounds: u64| {
        let input = HtmlReportInput {
            providers: vec![provider("big", "Big", 400.0, rounds, 0.99)],
            ..HtmlReportInput::default()
        };
        let html = render_html(&input);
        let start = html.find("<section id=\"tokens\">").expect("tokens");
        let end = start + html[start..].find("</section>").expect("end");
        html[start..end].to_string()
    };
    // One dot per response up to the cap (2,000), then exactly the cap.
    let at_cap = section(2_000);
    assert_eq!(at_cap.matches("<circle").count(), 2_000);
    assert!(!at_cap.contains("evenly spaced order statistics"));
    let above = section(5_000);
    assert_eq!(above.matches("<circle").count(), 2_000);
    assert!(above.contains("drawn as 2000 evenly spaced order statistics"));
}
