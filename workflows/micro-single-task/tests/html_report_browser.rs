#![allow(clippy::unwrap_used, clippy::expect_used)]
//! `report.html` in a real browser: headless Chromium (Debian's `chromium`) screenshots the report
//! of a simulated-looking 10-provider, 600-round run, and the test checks that the page rendered
//! (expected PNG size, not blank, many colours) and logged no console error, and that the DOM
//! Chromium built holds the summary table. A page that throws is checked too, so the console
//! check is known to be able to fail.
//!
//! Without `/usr/bin/chromium` the test reports itself skipped (a skip `scripts/test.sh`
//! counts), unless `OPENBENCH_REQUIRE_REAL_TARGETS` is set, in which case it fails. Set
//! `OPENBENCH_HTML_SCREENSHOT_DIR` to keep the page and its screenshot.

#[path = "../../../tests/real_targets/skip.rs"]
mod skip;

#[path = "../../../tests/real_targets/chromium.rs"]
mod browser;

use browser::{CHROMIUM, console_errors};
use openbench_micro_single_task::html::{
    FamilyFigures, Figures, HtmlReportInput, LaneWins, PairedReport, ProviderReport, Sample,
    write_html,
};
use std::path::{Path, PathBuf};

const WIDTH: u32 = 1280;
const HEIGHT: u32 = 2400;
const ROUNDS: u64 = 600;
const FAMILIES: [&str; 3] = [
    "meeting-notes-lookup",
    "ticket-triage",
    "contract-terms-extraction",
];

/// A small deterministic generator (64-bit LCG, top bits).
struct Lcg(u64);

impl Lcg {
    fn unit(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    /// Roughly log-normal: median `m`, spread `s`.
    fn lognormal(&mut self, m: f64, s: f64) -> f64 {
        let z = (0..4).map(|_| self.unit()).sum::<f64>() - 2.0;
        m * (s * z * 1.7).exp()
    }
}

fn nearest_rank(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let i = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    Some(sorted[i])
}

fn figures(samples: &[Sample], submitted: u64, correct: u64, failed: u64) -> Figures {
    let sorted = |f: fn(&Sample) -> Option<f64>| {
        let mut v: Vec<f64> = samples.iter().filter_map(f).collect();
        v.sort_by(f64::total_cmp);
        v
    };
    let e2e = sorted(|s| s.e2e_ms);
    let ttfa = sorted(|s| s.ttfa_ms);
    let tps = sorted(|s| s.tokens_per_second);
    Figures {
        submitted,
        e2e_p50: nearest_rank(&e2e, 0.5),
        e2e_p99: nearest_rank(&e2e, 0.99),
        ttfa_p50: nearest_rank(&ttfa, 0.5),
        tps_p50: nearest_rank(&tps, 0.5),
        tps_p95_floor: nearest_rank(&tps, 0.05),
        task_success_rate: Some(correct as f64 / submitted as f64),
        failure_rate: Some(failed as f64 / submitted as f64),
    }
}

/// Ten providers shaped like the seed's snapshot: (name, E2E median ms, spread, tokens/s,
/// failure rate, wrong-answer rate).
fn simulated_input() -> HtmlReportInput {
    let shapes = [
        ("Baseten", 330.0, 0.45, 240.0, 0.0, 0.04),
        ("DeepInfra", 1800.0, 0.6, 69.0, 0.04, 0.005),
        ("Fireworks AI", 1950.0, 0.45, 58.0, 0.0, 0.005),
        ("Modal", 570.0, 0.4, 222.0, 0.0, 0.007),
        ("Nebius", 1450.0, 0.6, 269.0, 0.148, 0.003),
        ("Novita AI", 1740.0, 0.4, 60.0, 0.04, 0.02),
        ("Parasail", 1590.0, 0.45, 52.0, 0.013, 0.003),
        ("Telnyx", 670.0, 0.4, 184.0, 0.0, 0.005),
        ("Together AI", 610.0, 0.55, 151.0, 0.01, 0.005),
        ("Z.AI", 1750.0, 0.45, 56.0, 0.0017, 0.023),
    ];
    let mut rng = Lcg(42);
    let providers: Vec<ProviderReport> = shapes
        .iter()
        .map(|(name, median, spread, tps, fail, wrong)| {
            let lane = name.to_lowercase().replace([' ', '.'], "");
            let mut per_family: Vec<(Vec<Sample>, u64, u64)> = vec![(Vec::new(), 0, 0); 3];
            for r in 0..ROUNDS {
                let cell = &mut per_family[(r % 3) as usize];
                if rng.unit() < *fail {
                    cell.2 += 1;
                    continue;
                }
                if rng.unit() >= *wrong {
                    cell.1 += 1;
                }
                let e2e = rng.lognormal(*median, *spread);
                let ttfa = e2e * (0.55 + 0.3 * rng.unit());
                cell.0.push(Sample {
                    round_index: r,
                    ttfa_ms: Some(ttfa),
                    e2e_ms: Some(e2e),
                    tokens_per_second: Some(rng.lognormal(*tps, 0.25)),
                });
            }
            let per_round = ROUNDS / 3;
            let families = FAMILIES
                .iter()
                .zip(&per_family)
                .map(|(f, (s, correct, failed))| FamilyFigures {
                    family: f.to_string(),
                    figures: figures(s, per_round, *correct, *failed),
                })
                .collect();
            let samples: Vec<Sample> = per_family.iter().flat_map(|c| c.0.clone()).collect();
            let correct = per_family.iter().map(|c| c.1).sum();
            let failed = per_family.iter().map(|c| c.2).sum();
            ProviderReport {
                lane,
                display_name: name.to_string(),
                pooled: figures(&samples, ROUNDS, correct, failed),
                families,
                samples,
                rank: None,
                ineligibility_reasons: Vec::new(),
            }
        })
        .collect();
    let lanes: Vec<String> = providers.iter().map(|p| p.lane.clone()).collect();
    HtmlReportInput {
        time_scale: None,
        validity: None,
        repeats: None,
        title: "Inference benchmark: GLM 5.3 Flash (simulated)".to_string(),
        subtitle: "Run run-browser-test · micro-single-task · 600 rounds · 10 providers"
            .to_string(),
        header_notes: Vec::new(),
        families: FAMILIES.iter().map(|f| f.to_string()).collect(),
        providers,
        paired: PairedReport {
            wins: lanes
                .iter()
                .map(|l| LaneWins {
                    lane: l.clone(),
                    wins: 60.0,
                    win_share: Some(0.1),
                })
                .collect(),
            lanes,
            excluded: Vec::new(),
            rounds_with_winner: ROUNDS,
            pairs: Vec::new(),
        },
        min_task_success_rate: 0.95,
        max_failure_rate: 0.01,
        provenance: vec![
            ("Run id".to_string(), "run-browser-test".to_string()),
            ("Tokenizer".to_string(), "o200k_base".to_string()),
        ],
        notes: vec!["Simulated providers (time scale 0.02).".to_string()],
    }
}

/// Chromium on `page` at the screenshot size.
fn chromium(page: &Path, profile: &Path, extra: &[String]) -> std::process::Output {
    browser::run(page, profile, (WIDTH, HEIGHT), extra)
}

fn dump_dom(page: &Path, profile: &Path) -> (String, String) {
    browser::dump_dom(page, profile, (WIDTH, HEIGHT))
}

#[test]
fn report_html_renders_in_headless_chromium() {
    if !Path::new(CHROMIUM).is_file() {
        skip::skip_or_fail(
            "html_report_browser::report_html_renders_in_headless_chromium",
            &format!("chromium is not installed ({CHROMIUM} missing; deploy/setup.sh installs it)"),
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let input = simulated_input();
    let page = write_html(dir.path(), &input).unwrap();
    // The file written: a whole HTML page under the run directory, no temporary file left.
    assert_eq!(page, dir.path().join("report.html"));
    let text = std::fs::read_to_string(&page).unwrap();
    assert!(
        text.starts_with("<!DOCTYPE html>\n<html lang=\"en\">\n"),
        "{}",
        &text[..80]
    );
    assert!(
        text.contains("<title>Inference benchmark: GLM 5.3 Flash (simulated)</title>"),
        "no title"
    );
    assert!(
        text.ends_with("</main>\n</body>\n</html>\n"),
        "a truncated page"
    );
    assert!(!dir.path().join("report.html.tmp").exists());
    let keep = std::env::var_os("OPENBENCH_HTML_SCREENSHOT_DIR").map(PathBuf::from);
    if let Some(keep) = &keep {
        std::fs::create_dir_all(keep).unwrap();
        std::fs::copy(&page, keep.join("report.html")).unwrap();
    }

    // 1. Screenshot: expected size, not blank.
    let png_path: PathBuf = dir.path().join("report.png");
    let out = chromium(
        &page,
        &dir.path().join("profile-1"),
        &[format!("--screenshot={}", png_path.display())],
    );
    assert!(
        out.status.success(),
        "chromium --screenshot failed: {out:?}"
    );
    if let Some(keep) = &keep {
        std::fs::copy(&png_path, keep.join("report.png")).unwrap();
    }
    let decoder = png::Decoder::new(std::io::BufReader::new(
        std::fs::File::open(&png_path).unwrap(),
    ));
    let mut reader = decoder.read_info().unwrap();
    let (width, height) = (reader.info().width, reader.info().height);
    assert_eq!((width, height), (WIDTH, HEIGHT), "screenshot size");
    let mut buf = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut buf).unwrap();
    let channels = frame.color_type.samples();
    assert!(
        channels >= 3,
        "unexpected PNG colour type {:?}",
        frame.color_type
    );
    let pixels = &buf[..frame.buffer_size()];
    // Not blank: most pixels may be the page background, but a rendered report paints a good
    // share of others (tables, text, charts) in many distinct colours.
    let mut counts: std::collections::HashMap<(u8, u8, u8), usize> = Default::default();
    for px in pixels.chunks_exact(channels) {
        *counts.entry((px[0], px[1], px[2])).or_default() += 1;
    }
    let total = (width * height) as usize;
    let (background, most) = counts
        .iter()
        .max_by_key(|(_, n)| **n)
        .map(|(c, n)| (*c, *n))
        .unwrap();
    let white = counts.get(&(255, 255, 255)).copied().unwrap_or(0);
    let painted = (total - most) as f64 / total as f64;
    println!(
        "screenshot {width}x{height}: background {background:?} {:.1}%, white {:.1}%, other {:.1}%, {} distinct colours",
        most as f64 * 100.0 / total as f64,
        white as f64 * 100.0 / total as f64,
        painted * 100.0,
        counts.len()
    );
    assert!(
        painted > 0.25,
        "page looks blank: only {:.2}% differs from the background",
        painted * 100.0
    );
    assert!(counts.len() > 500, "too few colours: {}", counts.len());

    // 2. No console errors; the DOM Chromium built holds the summary table and every provider.
    let (dom, stderr) = dump_dom(&page, &dir.path().join("profile-2"));
    let errors = console_errors(&stderr);
    assert!(errors.is_empty(), "console errors: {errors:#?}");
    assert!(
        dom.contains("<table class=\"summary\">"),
        "no summary table in the DOM"
    );
    for p in &input.providers {
        assert!(
            dom.contains(&p.display_name),
            "{} missing from the DOM",
            p.display_name
        );
    }
    assert_eq!(
        dom.matches("<svg class=\"chart\"").count(),
        8,
        "charts in the DOM"
    );

    // 3. The console check can fail: a page that throws is caught.
    let bad = dir.path().join("throws.html");
    std::fs::write(
        &bad,
        "<!DOCTYPE html><html><body><p>x</p><script>throw new Error('boom');</script></body></html>",
    )
    .unwrap();
    let (_, stderr) = dump_dom(&bad, &dir.path().join("profile-3"));
    assert!(
        console_errors(&stderr).iter().any(|l| l.contains("boom")),
        "a throwing page was not detected; stderr:\n{stderr}"
    );
}
