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
mod site_support;

#[path = "real_targets/chromium.rs"]
mod browser;

use openbench_site::model::{SnapshotResults, slug};
use openbench_store::{Store, Value};
use real_targets::postgres::own_database;
use real_targets::skip::skip_or_fail;
use site_support::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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

    // Paired comparisons: every figure is the store's `paired_wins` / `paired_pairs` row.
    checks::assert_paired_page_is_the_stores(&site, &bench, store, &results);

    // The JSON validates against its schema.
    validate(
        &site.join("results"),
        &format!("{run_id}.json"),
        "schema-v2.json",
    );
    validate(&site.join("results"), "index.json", "index.schema-v2.json");

    // Every internal link resolves (fragments too); nothing is fetched from elsewhere.
    assert_links_resolve(&a);

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
        "schema-v2.json",
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
    // Goodput, TTFA and ITL against the load steps.
    assert_eq!(html.matches("<svg class=\"chart\"").count(), 3);
    // Its history: the store's load history of the one run, its saturation point listed.
    let history =
        std::fs::read_to_string(site.join(format!("{}-history.html", results.benchmark))).unwrap();
    assert!(history.contains(&run_id) && history.contains("<h2>Saturation points</h2>"));
    assert!(history.contains("<p>0 regression(s).</p>"));
    assert_links_resolve(&files(&site));
}

/// `GET path` over HTTP/1.1 on `addr`: the status line and the body.
fn http_get(addr: &str, path: &str) -> (String, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    (head.lines().next().unwrap().to_string(), body.to_string())
}

#[test]
fn site_serve_serves_the_folder_and_nothing_outside_it() {
    use std::io::BufRead;
    let tmp = tempfile::tempdir().unwrap();
    let site = tmp.path().join("public");
    std::fs::create_dir_all(site.join("results")).unwrap();
    std::fs::write(site.join("index.html"), "<p>front</p>").unwrap();
    std::fs::write(site.join("results/index.json"), "{}").unwrap();
    std::fs::write(tmp.path().join("secret.txt"), "outside").unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_openbench-inference"))
        .args(["site", "serve", site.to_str().unwrap(), "--port", "0"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    // "serving DIR at http://127.0.0.1:PORT/"
    let addr = line
        .trim()
        .rsplit("http://")
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    let got = [
        http_get(&addr, "/"),
        http_get(&addr, "/results/index.json"),
        http_get(&addr, "/../secret.txt"),
        http_get(&addr, "/results/%2e%2e/%2e%2e/secret.txt"),
        http_get(&addr, "/missing.html"),
    ];
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(
        got[0],
        ("HTTP/1.1 200 OK".to_string(), "<p>front</p>".to_string())
    );
    assert_eq!(got[1], ("HTTP/1.1 200 OK".to_string(), "{}".to_string()));
    for (status, body) in &got[2..] {
        assert_eq!(status, "HTTP/1.1 404 Not Found", "{body}");
        assert!(!body.contains("outside"));
    }
}
