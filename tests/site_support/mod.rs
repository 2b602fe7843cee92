//! Helpers of `tests/site.rs`: the simulated runs, reading the built site back (files, links,
//! `<data>` figures), the expected text of a figure, JSON Schema validation (Python's
//! `jsonschema`) and headless Chromium's layout probe.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod checks;

use crate::browser;
use crate::coordinator_support::*;
use crate::real_targets::skip::skip_or_fail;
use openbench_store::{Store, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

pub fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
}

/// Simulated run `n` (1 or 2) of three providers, 12 items per family (36 rounds: enough for
/// `history`'s intervals). The `slowed` lane (exact-schedule mode, real milliseconds) writes its
/// first byte 5 ms after each request in run 1 and 205 ms after it in run 2, so run 2's E2E of
/// that lane is at least 208 ms: a regression `history` flags.
pub fn simulated_run(dir: &Path, n: usize) -> PathBuf {
    let dataset = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/micro-single-task");
    let providers = vec![
        Prov {
            key: "baseten".into(),
            profile: "baseten".into(),
            extra: "    display_name: Baseten\n".into(),
        },
        Prov {
            key: "modal".into(),
            profile: "modal".into(),
            extra: "    display_name: Modal\n".into(),
        },
        Prov {
            key: "nebius".into(),
            profile: "nebius".into(),
            extra: "    display_name: Nebius\n".into(),
        },
        Prov {
            key: "slowed".into(),
            profile: "plain".into(),
            extra: format!(
                "    display_name: Slowed\n    extra_headers: {{x-sim-schedule: \"{},1,1,1\"}}\n",
                if n == 2 { 205 } else { 5 }
            ),
        },
    ];
    let spec = write_spec(dir, &dataset, &providers, 12, 0.01, 5000);
    let o = run_bin(
        dir,
        &[
            "run",
            "--spec",
            spec.to_str().unwrap(),
            "--full",
            "--approve-full",
            "--approval-id",
            &format!("SITE-RUN-{n}"),
        ],
        &[],
    );
    assert!(o.status.success(), "run: {}", text(&o));
    printed_run_dir(&o.stdout)
}

pub fn bin(dir: &Path, args: &[&str]) -> Output {
    run_bin(dir, args, &[])
}

/// Every `<data value=… data-lane=… data-metric=…>text</data>` of `html`.
pub fn figures(html: &str) -> Vec<(f64, String, String, String)> {
    let attr = |tag: &str, name: &str| {
        let start = tag.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
        tag[start..start + tag[start..].find('"').unwrap()].to_string()
    };
    html.split("<data ")
        .skip(1)
        .map(|rest| {
            let tag = &rest[..rest.find('>').unwrap()];
            let inner = &rest[tag.len() + 1..rest.find("</data>").unwrap()];
            (
                attr(tag, "value").parse().unwrap(),
                attr(tag, "data-lane"),
                attr(tag, "data-metric"),
                inner.to_string(),
            )
        })
        .collect()
}

/// The store's pooled figures of `run_id`, lane → metric → value, read with plain SQL.
pub fn stored(store: &str, run_id: &str) -> BTreeMap<String, BTreeMap<String, Option<f64>>> {
    let mut s = Store::open(store).unwrap();
    let mut out: BTreeMap<String, BTreeMap<String, Option<f64>>> = BTreeMap::new();
    for r in s
        .query(
            "SELECT lane, metric, value FROM metrics WHERE run_id = $1 AND family = 'pooled'",
            &[Value::from(run_id)],
        )
        .unwrap()
    {
        out.entry(r[0].text().unwrap().to_string())
            .or_default()
            .insert(r[1].text().unwrap().to_string(), r[2].real());
    }
    out
}

/// How the site must show `value` of `metric`, written here independently of the site's code:
/// rates as percentages with two decimals, ms and tokens/s with one decimal and thousands
/// separators, counts whole.
pub fn expected_text(value: f64, metric: &str) -> String {
    let group = |text: String| {
        let (sign, text) = match text.strip_prefix('-') {
            Some(rest) => ("-", rest.to_string()),
            None => ("", text),
        };
        let (int, frac) = text
            .split_once('.')
            .map_or((text.as_str(), None), |(i, f)| (i, Some(f)));
        let mut out = String::new();
        for (i, c) in int.chars().enumerate() {
            if i > 0 && (int.len() - i) % 3 == 0 {
                out.push(',');
            }
            out.push(c);
        }
        let text = frac.map_or(out.clone(), |f| format!("{out}.{f}"));
        // A value that rounds to zero reads "0.0", never "-0.0".
        let sign = if text.chars().all(|c| matches!(c, '0' | '.' | ',')) {
            ""
        } else {
            sign
        };
        sign.to_string() + &text
    };
    match metric {
        m if m.ends_with("_rate") => format!("{}%", group(format!("{:.2}", value * 100.0))),
        m if m.starts_with("output_tokens_per_second")
            || m.contains("latency")
            || m.starts_with("ttfa") =>
        {
            group(format!("{value:.1}"))
        }
        _ => group(format!("{value:.0}")),
    }
}

pub fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let name = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                out.insert(name, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// Every `href="…"` and `src="…"` of `html`.
pub fn links(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    for key in ["href=\"", "src=\""] {
        for rest in html.split(key).skip(1) {
            out.push(rest[..rest.find('"').unwrap()].to_string());
        }
    }
    out
}

/// Validates `dir/file` against `dir/schema` with Python's `jsonschema` (Draft 2020-12).
pub fn validate(dir: &Path, file: &str, schema: &str) {
    let script = "import json,sys,jsonschema\n\
                  s=json.load(open(sys.argv[1]));d=json.load(open(sys.argv[2]))\n\
                  jsonschema.Draft202012Validator.check_schema(s)\n\
                  jsonschema.Draft202012Validator(s).validate(d)\nprint('valid')";
    let o = std::process::Command::new("python3")
        .args(["-c", script, schema, file])
        .current_dir(dir)
        .output();
    match o {
        Ok(o) if String::from_utf8_lossy(&o.stderr).contains("No module named") => {
            skip_or_fail("site::validate", "python3 has no jsonschema module")
        }
        Ok(o) => assert!(o.status.success(), "{file} against {schema}: {}", text(&o)),
        Err(e) => skip_or_fail("site::validate", &format!("python3: {e}")),
    }
}

/// Every page in headless Chromium (the shared helper's layout probe): at 390 px no page scrolls
/// sideways (wide tables scroll inside their box); at 1,280 and 1,920 px nothing is clipped
/// either; no console error anywhere; the leaderboard's screenshots have the window's size and
/// are far from blank.
pub fn chromium<'a>(site: &Path, bench: &str, pages: impl Iterator<Item = &'a String>) {
    if !Path::new(browser::CHROMIUM).is_file() {
        skip_or_fail("site::chromium", "chromium is not installed");
        return;
    }
    let profiles = tempfile::tempdir().unwrap();
    let probe = |page: &str, width: u32| {
        let html = std::fs::read_to_string(site.join(page)).unwrap();
        let probed = site.join(format!("probed-{page}"));
        std::fs::write(
            &probed,
            html.replace("</body>", &format!("{}</body>", browser::LAYOUT_PROBE)),
        )
        .unwrap();
        let (dom, log) = browser::dump_dom(
            &probed,
            &profiles.path().join(format!("{page}-{width}")),
            (width, 900),
        );
        std::fs::remove_file(&probed).unwrap();
        assert_eq!(
            browser::console_errors(&log),
            Vec::<String>::new(),
            "{page}"
        );
        let report = browser::layout_report(&dom);
        assert!(
            report.contains("\"page_scrolls_sideways\":false"),
            "{page} at {width} px scrolls sideways: {report}"
        );
        if width > 390 {
            assert!(
                report.contains("\"clipped\":[]"),
                "{page} at {width} px: {report}"
            );
        }
    };
    for page in pages {
        for width in [390u32, 1280, 1920] {
            probe(page, width);
        }
    }
    let leaderboard = format!("{bench}.html");
    for width in [390u32, 1280, 1920] {
        let png = profiles.path().join(format!("shot-{width}.png"));
        let out = browser::run(
            &site.join(&leaderboard),
            &profiles.path().join(format!("shot-{width}")),
            (width, 1200),
            &[format!("--screenshot={}", png.display())],
        );
        assert!(out.status.success(), "screenshot at {width}: {out:?}");
        let bytes = std::fs::read(&png).unwrap();
        assert_eq!(browser::png_size(&bytes), (width, 1200));
        assert!(
            bytes.len() > 20_000,
            "{width} px: {} bytes looks blank",
            bytes.len()
        );
    }
}

pub fn copy_tree(from: &Path, to: &Path) {
    for (name, bytes) in files(from) {
        let path = to.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

/// A simulated closed-loop load run (one lane, 1 then 4 users, 64-token answers).
pub fn load_run(dir: &Path) -> PathBuf {
    let spec = dir.join("load.yaml");
    std::fs::write(
        &spec,
        "benchmark: {slug: load-site, workflow: load, schedule_version: load-site-v1}
request: {temperature: 0, top_p: 1, presence_penalty: 0, frequency_penalty: 0,
  max_output_tokens: 64, response_format: json_object, timeout_ms: 20000,
  harness_grace_ms: 60000}
providers:
  - {key: p, endpoint: 'sim://plain?slots=4', model: m, max_tokens_field: max_tokens,
      auth: {scheme: none}}
dataset: {source: ., manifest: none}
simulator: {time_scale: 1.0, seed: 7}
run_root: runs
load:
  seed: 5
  phases: {warmup_s: 0.5, measure: {duration_s: 2}, cooldown_s: 0}
  steps: [{model: closed, concurrency: 1}, {model: closed, concurrency: 4}]
  slo: {e2e_ms: 1000}
  workload:
    kind: synthetic
    input_tokens: {dist: fixed, tokens: 20}
    output_tokens: {dist: fixed, tokens: 64}
  ignore_eos: [p]
",
    )
    .unwrap();
    let o = bin(
        dir,
        &[
            "run",
            "--workflow",
            "load",
            "--spec",
            spec.to_str().unwrap(),
            "--full",
            "--approve-full",
            "--approval-id",
            "LOAD-SITE",
        ],
    );
    assert!(o.status.success(), "load run: {}", text(&o));
    printed_run_dir(&o.stdout)
}

/// Every `href`/`src` of every page of `site` (path → bytes) names a file of the site, and an
/// id on it when it has a fragment; none points elsewhere.
pub fn assert_links_resolve(site: &BTreeMap<String, Vec<u8>>) {
    for (name, bytes) in site {
        if !name.ends_with(".html") {
            continue;
        }
        let html = String::from_utf8_lossy(bytes);
        for link in links(&html) {
            assert!(
                !link.contains("://") && !link.starts_with("//"),
                "{name}: external reference {link}"
            );
            let (file, fragment) = link.split_once('#').unwrap_or((&link, ""));
            let target = if file.is_empty() { name.as_str() } else { file };
            let target_bytes = site
                .get(target)
                .unwrap_or_else(|| panic!("{name}: link {link} to a missing file"));
            if !fragment.is_empty() {
                let target_html = String::from_utf8_lossy(target_bytes);
                assert!(
                    target_html.contains(&format!("id=\"{fragment}\"")),
                    "{name}: link {link}: no such id"
                );
            }
        }
    }
}
