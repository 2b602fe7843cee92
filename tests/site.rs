#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The leaderboard site end to end, through the binary: a small simulated run (three providers,
//! 36 paired rounds) published to a real SQLite store, named as a snapshot with `site publish`,
//! built twice with `site build`. Checked: the two builds are byte-identical; every figure of the
//! results JSON and every number of the leaderboard and the analysis texts (a `<data>` element
//! naming lane and metric) equals the value read from the store independently (SQL on
//! `metrics`), its text the value rounded; the analysis texts hold no other number; the JSON
//! validates against the shipped schema (Python's `jsonschema`, a maintained implementation
//! independent of schemars); every internal link and fragment resolves and nothing is loaded
//! from elsewhere; in headless Chromium every page has no sideways scroll at 390 px and the
//! leaderboard renders at 390, 1,280 and 1,920 px with no console error.

mod coordinator_support;
mod real_targets;

#[path = "real_targets/chromium.rs"]
mod browser;

use coordinator_support::*;
use openbench_site::model::{SnapshotResults, slug};
use openbench_store::{Store, Value};
use real_targets::skip::skip_or_fail;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Output;

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
}

/// Simulated run `n` (1 or 2) of three providers, 12 items per family (36 rounds: enough for
/// `history`'s intervals). The `slowed` lane (exact-schedule mode, real milliseconds) writes its
/// first byte 5 ms after each request in run 1 and 205 ms after it in run 2, so run 2's E2E of
/// that lane is at least 208 ms: a regression `history` flags.
fn simulated_run(dir: &Path, n: usize) -> PathBuf {
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

fn bin(dir: &Path, args: &[&str]) -> Output {
    run_bin(dir, args, &[])
}

/// Every `<data value=… data-lane=… data-metric=…>text</data>` of `html`.
fn figures(html: &str) -> Vec<(f64, String, String, String)> {
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
fn stored(store: &str, run_id: &str) -> BTreeMap<String, BTreeMap<String, Option<f64>>> {
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
fn expected_text(value: f64, metric: &str) -> String {
    let group = |text: String| {
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
        frac.map_or(out.clone(), |f| format!("{out}.{f}"))
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

fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
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
fn links(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    for key in ["href=\"", "src=\""] {
        for rest in html.split(key).skip(1) {
            out.push(rest[..rest.find('"').unwrap()].to_string());
        }
    }
    out
}

#[test]
fn a_published_snapshot_builds_one_site_whose_numbers_are_the_stores() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    let store_path = cwd.join("results.sqlite");
    let store = store_path.to_str().unwrap();
    let mut ids = Vec::new();
    let mut dirs = Vec::new();
    for n in [1, 2] {
        let run_dir = simulated_run(cwd, n);
        dirs.push(run_dir.clone());
        ids.push(run_dir.file_name().unwrap().to_str().unwrap().to_string());
        let dir = run_dir.to_str().unwrap();
        let o = bin(cwd, &["publish", "--run-dir", dir, "--store", store]);
        assert!(o.status.success(), "{}", text(&o));
    }
    let (earlier, run_id) = (ids[0].clone(), ids[1].clone());

    // Before publication the site shows nothing of the run.
    let o = bin(cwd, &["site", "build", "--store", store, "--out", "empty"]);
    assert!(o.status.success(), "{}", text(&o));
    let index = std::fs::read_to_string(cwd.join("empty/index.html")).unwrap();
    assert!(index.contains("No snapshot has been published yet."));
    assert!(!index.contains(&run_id) && !index.contains(&earlier));

    // Publishing needs a stored run and an approval id.
    let o = bin(
        cwd,
        &[
            "site",
            "publish",
            "--run",
            "run-nope",
            "--approval-id",
            "OK-1",
            "--store",
            store,
        ],
    );
    assert!(!o.status.success());
    assert!(text(&o).contains("no run with this id"), "{}", text(&o));
    let o = bin(
        cwd,
        &[
            "site",
            "publish",
            "--run",
            &run_id,
            "--approval-id",
            "REVIEW-7",
            "--store",
            store,
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("published snapshot: run "),
        "{}",
        text(&o)
    );

    for out in ["a", "b"] {
        let o = bin(cwd, &["site", "build", "--store", store, "--out", out]);
        assert!(o.status.success(), "{}", text(&o));
    }
    let (a, b) = (files(&cwd.join("a")), files(&cwd.join("b")));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    for (name, bytes) in &a {
        assert!(bytes == &b[name], "{name} differs between two builds");
    }
    let site = cwd.join("a");
    if let Some(keep) = std::env::var_os("OPENBENCH_KEEP_SITE") {
        copy_tree(&site, Path::new(&keep));
    }

    // The results JSON: every lane's pooled figures are the store's, bit for bit.
    let expected = stored(store, &run_id);
    let json = std::fs::read_to_string(site.join(format!("results/{run_id}.json"))).unwrap();
    let results: SnapshotResults = serde_json::from_str(&json).unwrap();
    assert_eq!(results.run_id, run_id);
    assert_eq!(results.approval_id, "REVIEW-7");
    assert!(results.simulated);
    assert_eq!(results.lanes.len(), 4);
    // Run 1 is stored but not published: only the history (every stored run) names it.
    for (name, bytes) in &a {
        assert_eq!(
            String::from_utf8_lossy(bytes).contains(&earlier),
            name.ends_with("-history.html"),
            "{name}"
        );
    }
    for lane in &results.lanes {
        assert_eq!(lane.pooled, expected[&lane.lane], "lane {}", lane.lane);
    }

    // The leaderboard and each analysis text: every number is a stored figure, shown rounded.
    let bench = slug("micro-single-task", &results.model);
    let mut checked = 0;
    for page in ["", "-latency", "-speed", "-accuracy"] {
        let html = std::fs::read_to_string(site.join(format!("{bench}{page}.html"))).unwrap();
        assert!(
            html.contains("<p class=\"simulated\""),
            "{page}: the simulated banner"
        );
        for (value, lane, metric, shown_text) in figures(&html) {
            let want = expected[&lane][&metric].unwrap();
            assert_eq!(value.to_bits(), want.to_bits(), "{page}: {lane} {metric}");
            assert!(
                [" ms", " tokens/s", ""]
                    .iter()
                    .any(|unit| shown_text == format!("{}{unit}", expected_text(want, &metric))),
                "{page}: {lane} {metric}: {shown_text}"
            );
            checked += 1;
        }
        if let Some(p) = html.split("<p class=\"analysis\">").nth(1) {
            let p = &p[..p.find("</p>").unwrap()];
            let mut outside = String::new();
            for (i, part) in p.split("<data ").enumerate() {
                outside.push_str(if i == 0 {
                    part
                } else {
                    part.split("</data>").nth(1).unwrap()
                });
            }
            let words = outside
                .replace("p99", "")
                .replace("p95", "")
                .replace("E2E", "");
            assert!(
                !words.chars().any(|c| c.is_ascii_digit()),
                "{page}: a number not from the store: {outside}"
            );
        }
    }
    // 4 lanes × 7 columns on the leaderboard, plus the analysis texts' figures.
    assert!(checked > 28 + 12, "{checked} figures checked");
    let leaderboard = std::fs::read_to_string(site.join(format!("{bench}.html"))).unwrap();
    let order: Vec<usize> = ["Baseten", "Modal", "Nebius", "Slowed"]
        .iter()
        .map(|n| {
            leaderboard
                .find(&format!("<th scope=\"row\">{n}</th>"))
                .unwrap()
        })
        .collect();
    assert!(
        order.windows(2).all(|w| w[0] < w[1]),
        "providers alphabetical"
    );
    assert!(leaderboard.contains(&run_id) && leaderboard.contains("REVIEW-7"));
    assert!(leaderboard.contains("no single metric determines an overall winner"));

    // History: both stored runs, the slowed lane's E2E p50 flagged as a regression from #1 to
    // #2 (the store's rule), in its trend table and among the regressions.
    let history = std::fs::read_to_string(site.join(format!("{bench}-history.html"))).unwrap();
    assert!(history.contains(&earlier) && history.contains(&run_id));
    assert!(
        history.contains("<li class=\"regression\">#1 → #2: Slowed, pooled: E2E p50 "),
        "{history}"
    );
    let slowed = &history[history.find("<h2 id=\"lane-slowed-local\">").unwrap()..];
    let row2 = &slowed[slowed.find("<a href=\"#run-2\">").unwrap()..];
    let row2 = &row2[..row2.find("</tr>").unwrap()];
    assert!(row2.contains("<td class=\"regression\">▼ "), "{row2}");
    assert!(history.contains("Latest change, with 95% intervals"));

    // The JSON validates against its schema.
    validate(
        &site.join("results"),
        &format!("{run_id}.json"),
        "schema-v1.json",
    );
    validate(&site.join("results"), "index.json", "index.schema-v1.json");

    // Every internal link resolves (fragments too); nothing is fetched from elsewhere.
    for (name, bytes) in &a {
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
            let target_bytes = a
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

    postgres_builds_the_same_site(cwd, &dirs, &run_id, &results.published_at, &a);
    chromium(&site, &bench, a.keys().filter(|k| k.ends_with(".html")));
}

/// The URL `deploy/postgres/test-server.sh` exports.
const POSTGRES_ENV: &str = "OPENBENCH_TEST_POSTGRES_URL";

/// The same runs stored in PostgreSQL and the same run published there give the same site as
/// SQLite, byte for byte once the publication time (the one value that differs) is swapped.
fn postgres_builds_the_same_site(
    cwd: &Path,
    dirs: &[PathBuf],
    run_id: &str,
    sqlite_published_at: &str,
    sqlite_site: &BTreeMap<String, Vec<u8>>,
) {
    let Ok(url) = std::env::var(POSTGRES_ENV) else {
        skip_or_fail(
            "site::postgres",
            &format!("{POSTGRES_ENV} is not set (deploy/postgres/test-server.sh)"),
        );
        return;
    };
    let url = own_database(&url, "openbench_site_test");
    for dir in dirs {
        let o = bin(
            cwd,
            &[
                "publish",
                "--run-dir",
                dir.to_str().unwrap(),
                "--store",
                &url,
            ],
        );
        assert!(o.status.success(), "{}", text(&o));
    }
    let o = bin(
        cwd,
        &[
            "site",
            "publish",
            "--run",
            run_id,
            "--approval-id",
            "REVIEW-7",
            "--store",
            &url,
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = bin(cwd, &["site", "build", "--store", &url, "--out", "pg"]);
    assert!(o.status.success(), "{}", text(&o));
    let pg = files(&cwd.join("pg"));
    let json = String::from_utf8_lossy(&pg[&format!("results/{run_id}.json")]).into_owned();
    let pg_published_at: SnapshotResults = serde_json::from_str(&json).unwrap();
    let swap = |bytes: &Vec<u8>| {
        String::from_utf8_lossy(bytes)
            .replace(&pg_published_at.published_at, sqlite_published_at)
            .replace(
                &pg_published_at.published_at[..10],
                &sqlite_published_at[..10],
            )
    };
    assert_eq!(
        pg.keys().collect::<Vec<_>>(),
        sqlite_site.keys().collect::<Vec<_>>()
    );
    for (name, bytes) in &pg {
        assert!(
            swap(bytes) == String::from_utf8_lossy(&sqlite_site[name]),
            "{name} differs between PostgreSQL and SQLite"
        );
    }
}

/// A fresh database `name` on the server of `url` (dropped first), and its URL.
fn own_database(url: &str, name: &str) -> String {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    client
        .batch_execute(&format!("DROP DATABASE IF EXISTS {name}"))
        .unwrap();
    client
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .unwrap();
    let (base, query) = url.split_once('?').map_or((url, ""), |(b, q)| (b, q));
    let (server, _) = base.rsplit_once('/').unwrap();
    if query.is_empty() {
        format!("{server}/{name}")
    } else {
        format!("{server}/{name}?{query}")
    }
}

/// Validates `dir/file` against `dir/schema` with Python's `jsonschema` (Draft 2020-12).
fn validate(dir: &Path, file: &str, schema: &str) {
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

/// Appended to a copy of each page: reports whether the page scrolls sideways.
const LAYOUT_PROBE: &str = r#"<script>
window.addEventListener('load', () => {
  const out = document.createElement('pre');
  out.id = 'layout-probe';
  out.textContent = JSON.stringify({page_scrolls_sideways:
    document.documentElement.scrollWidth > window.innerWidth + 1, width: window.innerWidth});
  document.body.appendChild(out);
});
</script>"#;

fn chromium<'a>(site: &Path, bench: &str, pages: impl Iterator<Item = &'a String>) {
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
            html.replace("</body>", &format!("{LAYOUT_PROBE}</body>")),
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
        assert!(
            dom.contains("\"page_scrolls_sideways\":false"),
            "{page} at {width} px scrolls sideways"
        );
    };
    for page in pages {
        probe(page, 390);
    }
    let leaderboard = format!("{bench}.html");
    for width in [390u32, 1280, 1920] {
        probe(&leaderboard, width);
        let png = profiles.path().join(format!("shot-{width}.png"));
        let out = browser::run(
            &site.join(&leaderboard),
            &profiles.path().join(format!("shot-{width}")),
            (width, 1200),
            &[format!("--screenshot={}", png.display())],
        );
        assert!(out.status.success(), "screenshot at {width}: {out:?}");
        let bytes = std::fs::read(&png).unwrap();
        assert!(
            bytes.len() > 20_000,
            "{width} px: {} bytes looks blank",
            bytes.len()
        );
    }
}

fn copy_tree(from: &Path, to: &Path) {
    for (name, bytes) in files(from) {
        let path = to.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
}

/// A simulated closed-loop load run (one lane, 1 then 4 users, 64-token answers).
fn load_run(dir: &Path) -> PathBuf {
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

#[test]
fn a_load_snapshot_gets_a_load_page_whose_numbers_are_the_stores() {
    let tmp = tempfile::tempdir().unwrap();
    let cwd = tmp.path();
    let run_dir = load_run(cwd);
    let run_id = run_dir.file_name().unwrap().to_str().unwrap().to_string();
    let store = cwd.join("results.sqlite");
    let store = store.to_str().unwrap();
    let o = bin(
        cwd,
        &[
            "publish",
            "--run-dir",
            run_dir.to_str().unwrap(),
            "--store",
            store,
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = bin(
        cwd,
        &[
            "site",
            "publish",
            "--run",
            &run_id,
            "--approval-id",
            "LOAD-OK",
            "--store",
            store,
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let o = bin(cwd, &["site", "build", "--store", store, "--out", "site"]);
    assert!(o.status.success(), "{}", text(&o));
    let site = cwd.join("site");
    let json = std::fs::read_to_string(site.join(format!("results/{run_id}.json"))).unwrap();
    let results: SnapshotResults = serde_json::from_str(&json).unwrap();
    assert!(results.load.is_some());
    validate(
        &site.join("results"),
        &format!("{run_id}.json"),
        "schema-v1.json",
    );
    let html =
        std::fs::read_to_string(site.join(format!("{}-load.html", results.benchmark))).unwrap();

    // Every step figure on the page is the stored `load_steps` value, every saturation figure
    // the stored `load_saturation` one (read here with SQL).
    let mut db = Store::open(store).unwrap();
    let mut checked = 0;
    for part in html.split("<data ").skip(1) {
        let tag = &part[..part.find('>').unwrap()];
        let attr = |name: &str| {
            tag.split(&format!("{name}=\""))
                .nth(1)
                .map(|r| r[..r.find('"').unwrap()].to_string())
        };
        let value: f64 = attr("value").unwrap().parse().unwrap();
        let (lane, metric) = (attr("data-lane").unwrap(), attr("data-metric").unwrap());
        let stored = match attr("data-step") {
            Some(step) => db
                .query(
                    &format!(
                        "SELECT {metric} FROM load_steps WHERE run_id = $1 AND row_name = $2 \
                         AND step = $3"
                    ),
                    &[
                        Value::from(run_id.as_str()),
                        Value::from(lane.as_str()),
                        Value::Int(step.parse::<f64>().unwrap() as i64),
                    ],
                )
                .unwrap(),
            None => db
                .query(
                    &format!(
                        "SELECT {metric} FROM load_saturation WHERE run_id = $1 AND row_name = $2"
                    ),
                    &[Value::from(run_id.as_str()), Value::from(lane.as_str())],
                )
                .unwrap(),
        };
        let want = stored[0][0].real().unwrap();
        assert_eq!(value.to_bits(), want.to_bits(), "{lane} {metric} {tag}");
        checked += 1;
    }
    // 2 steps × 9 columns for lane p, and its closed-loop saturation point (load, achieved).
    assert_eq!(checked, 2 * 9 + 2, "{html}");
    assert!(html.contains("<p class=\"simulated\""));
}
