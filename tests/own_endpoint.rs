//! Your own endpoint in one line (issue 38 items 1, 2, 8), through the binary: `load` against
//! the simulator served on 127.0.0.1 writes its spec into the run directory and a report, and
//! every command it prints (re-run, resume) works; against a port with nothing listening it
//! exits 4 within seconds; a spec of only `providers` and `load:` passes `init`, whose printed
//! `next:` command runs; a typo is printed once; an unknown workflow lists the known ones.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;

use coordinator_support::{printed_run_dir, run_bin};
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

/// The simulator's `plain` profile on 127.0.0.1, in its own runtime (kept alive by the caller).
fn serve_simulator() -> (tokio::runtime::Runtime, std::net::SocketAddr) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let server = rt
        .block_on(openbench_simulator::start(
            openbench_simulator::SimConfig {
                time_scale: 0.1,
                seed: 7,
                default_profile: "plain".into(),
                answers: Vec::new(),
            },
            std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
        ))
        .unwrap();
    let addr = server.addr();
    std::mem::forget(server);
    (rt, addr)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs a printed command line (`openbench-inference …`, no quoting needed) in `cwd`.
fn run_printed(cwd: &Path, line: &str) -> Output {
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words.first(), Some(&"openbench-inference"), "{line}");
    run_bin(cwd, &words[1..], &[])
}

/// The command printed after `prefix` (on the same line, or alone on the next one).
fn printed_command(stdout: &str, prefix: &str) -> String {
    let mut lines = stdout.lines();
    while let Some(line) = lines.next() {
        if let Some(rest) = line.split_once(prefix).map(|(_, r)| r.trim()) {
            let command = if rest.is_empty() {
                lines.next().unwrap_or_default().trim()
            } else {
                rest
            };
            return command.to_string();
        }
    }
    panic!("no {prefix:?} in: {stdout}")
}

#[test]
fn one_line_load_writes_its_spec_and_report_and_its_printed_commands_work() {
    let (_rt, addr) = serve_simulator();
    let tmp = tempfile::tempdir().unwrap();
    let target = format!("http://{addr}/v1");
    let args = [
        "load",
        "--target",
        &target,
        "--model",
        "sim",
        "--concurrency",
        "1,2",
        "--duration-s",
        "1",
        "--warmup-s",
        "0",
        "--cooldown-s",
        "0",
        "--output-tokens",
        "16",
        "--input-tokens",
        "32",
    ];
    let o = run_bin(tmp.path(), &args, &[]);
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", text(&o.stderr));
    let dir = tmp.path().join(printed_run_dir(&o.stdout));
    let spec = std::fs::read_to_string(dir.join("spec.yaml")).unwrap();
    // The base URL as given: the adapter adds /chat/completions (no 404 from a doubled path).
    assert!(spec.contains(&format!("endpoint: \"{target}\"")), "{spec}");
    assert!(spec.contains("- {model: closed, concurrency: 2}"), "{spec}");
    assert!(dir.join("report.md").is_file());
    let summary = out.lines().find(|l| l.starts_with("Step")).unwrap();
    assert!(summary.contains("Failed  Failed %"), "{summary}");
    let key = format!("127_0_0_1-{}", addr.port());
    let row = out
        .lines()
        .find(|l| l.starts_with("1 closed c=2") && l.contains(&key))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(row.contains(" 0     0.00%"), "{row}");

    // The printed re-run command makes a second run from the same spec.
    let again = printed_command(&out, "again, from the same spec:");
    let o2 = run_printed(tmp.path(), &again);
    assert!(o2.status.success(), "{again}\n{}", text(&o2.stderr));
    assert_ne!(printed_run_dir(&o2.stdout), printed_run_dir(&o.stdout));
}

#[test]
fn one_line_load_against_a_dead_port_exits_4_within_10_s_and_names_the_url() {
    // A port bound then released: nothing listens on it.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let tmp = tempfile::tempdir().unwrap();
    let target = format!("http://127.0.0.1:{port}/v1");
    let started = Instant::now();
    let o = run_bin(
        tmp.path(),
        &[
            "load",
            "--target",
            &target,
            "--model",
            "m",
            "--concurrency",
            "8",
            "--duration-s",
            "20",
        ],
        &[],
    );
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(o.status.code(), Some(4), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains(&format!("POST http://127.0.0.1:{port}/v1/chat/completions")),
        "{err}"
    );
    let out = text(&o.stdout);
    assert!(out.contains("exit code 4 (nothing measured"), "{out}");
    // The printed resume command is a working command: refused no more, it tries the lane again.
    let resume = printed_command(&out, "resume with:");
    let again = run_printed(tmp.path(), &resume);
    assert_eq!(again.status.code(), Some(4), "{}", text(&again.stderr));
}

/// A step too short for the lane guard (1 s, the guard stops a lane after 3 s of failures):
/// the run completes with every request failed, and says it measured nothing (exit 4).
#[test]
fn a_complete_run_in_which_no_request_completed_exits_4() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let tmp = tempfile::tempdir().unwrap();
    let target = format!("http://127.0.0.1:{port}/v1");
    let o = run_bin(
        tmp.path(),
        &[
            "load",
            "--target",
            &target,
            "--model",
            "m",
            "--concurrency",
            "1",
            "--duration-s",
            "1",
            "--warmup-s",
            "0",
            "--cooldown-s",
            "0",
        ],
        &[],
    );
    assert_eq!(o.status.code(), Some(4), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("report.md"), "the report is written: {out}");
    assert!(
        out.contains("exit code 4 (nothing measured: none of the run's"),
        "{out}"
    );
}

#[test]
fn a_spec_of_providers_and_load_passes_init_and_the_printed_next_command_runs() {
    let (_rt, addr) = serve_simulator();
    let tmp = tempfile::tempdir().unwrap();
    let spec = format!(
        "providers:\n  - {{key: mine, endpoint: 'http://{addr}/v1', model: sim}}\n\
         load:\n  seed: 1\n  phases: {{warmup_s: 0, measure: {{duration_s: 1}}, cooldown_s: 0}}\n\
         \x20 steps: [{{model: closed, concurrency: 1}}]\n\
         \x20 workload: {{kind: synthetic, input_tokens: {{dist: fixed, tokens: 8}}, \
         output_tokens: {{dist: fixed, tokens: 8}}}}\n"
    );
    std::fs::write(tmp.path().join("mine.yaml"), spec).unwrap();
    let o = run_bin(
        tmp.path(),
        &["init", "--workflow", "load", "--spec", "mine.yaml"],
        &[],
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let next = printed_command(&text(&o.stdout), "next:");
    assert!(next.contains("--workflow load"), "{next}");
    let smoke = run_printed(tmp.path(), &next);
    assert!(
        smoke.status.success(),
        "{next}\n{}{}",
        text(&smoke.stdout),
        text(&smoke.stderr)
    );
}

#[test]
fn a_spec_problem_is_printed_once_and_an_unknown_workflow_lists_the_known_ones() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("typo.yaml"),
        "request:\n  top_pp: 1\nproviders: [{key: a, endpoint: 'http://127.0.0.1:9/v1', model: m}]\n",
    )
    .unwrap();
    let o = run_bin(
        tmp.path(),
        &["init", "--workflow", "load", "--spec", "typo.yaml"],
        &[],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(
        err.matches("line 2 column 3: unknown field `top_pp`")
            .count(),
        1,
        "{err}"
    );
    assert_eq!(err.matches("is not valid").count(), 1, "{err}");

    let o = run_bin(tmp.path(), &["demo", "--workflow", "loads"], &[]);
    let err = text(&o.stderr);
    assert_eq!(
        err.trim(),
        "error: unknown workflow \"loads\"; known: micro-single-task, example-echo, load, cache-probe"
    );
}

#[test]
fn providers_filter_requires_only_the_keys_of_the_providers_run() {
    let (_rt, addr) = serve_simulator();
    let tmp = tempfile::tempdir().unwrap();
    let spec = format!(
        "providers:\n  - {{key: mine, endpoint: 'http://{addr}/v1', model: sim}}\n\
         \x20 - {{key: hosted, endpoint: 'https://api.example.com/v1', model: x, \
         auth: {{scheme: bearer, env: OPENBENCH_TEST_UNSET_KEY}}}}\n\
         load:\n  seed: 1\n  phases: {{warmup_s: 0, measure: {{duration_s: 1}}, cooldown_s: 0}}\n\
         \x20 steps: [{{model: closed, concurrency: 1}}]\n\
         \x20 workload: {{kind: synthetic, input_tokens: {{dist: fixed, tokens: 8}}, \
         output_tokens: {{dist: fixed, tokens: 8}}}}\n"
    );
    std::fs::write(tmp.path().join("two.yaml"), spec).unwrap();
    let all = ["init", "--workflow", "load", "--spec", "two.yaml"];
    let o = run_bin(tmp.path(), &all, &[]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("OPENBENCH_TEST_UNSET_KEY"),
        "{}",
        text(&o.stderr)
    );
    let only = [
        "init",
        "--workflow",
        "load",
        "--spec",
        "two.yaml",
        "--providers",
        "mine",
    ];
    let o = run_bin(tmp.path(), &only, &[]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let next = printed_command(&text(&o.stdout), "next:");
    assert!(next.ends_with("--providers mine"), "{next}");
    let smoke = run_printed(tmp.path(), &next);
    assert!(smoke.status.success(), "{next}\n{}", text(&smoke.stderr));
    let o = run_bin(
        tmp.path(),
        &[
            "init",
            "--workflow",
            "load",
            "--spec",
            "two.yaml",
            "--providers",
            "mien",
        ],
        &[],
    );
    assert!(
        text(&o.stderr)
            .contains("--providers: no provider \"mien\" in the spec; its providers: mine, hosted"),
        "{}",
        text(&o.stderr)
    );
}

/// `sim serve --port 0 --dataset …` as a child process; its printed base URL.
fn sim_serve_with_answers(cwd: &Path) -> (std::process::Child, String) {
    use std::io::BufRead;
    let dataset = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/micro-single-task");
    let mut child = std::process::Command::new(coordinator_support::bin())
        .current_dir(cwd)
        .args([
            "sim",
            "serve",
            "--port",
            "0",
            "--time-scale",
            "0.05",
            "--dataset",
        ])
        .arg(&dataset)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = std::io::BufReader::new(stdout).lines();
    let first = lines.next().unwrap().unwrap();
    let base = first.split("base URL ").nth(1).unwrap();
    let base = base.split_whitespace().next().unwrap().to_string();
    std::thread::spawn(move || for _ in lines {});
    (child, base)
}

#[test]
fn compare_endpoints_pairs_two_targets_with_exact_task_success_in_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut sim, base) = sim_serve_with_answers(tmp.path());
    // The same server twice: its default profile and the `together` profile's route.
    let other = base.replace("/v1", "/profiles/together/v1");
    let args = [
        "compare-endpoints",
        "--target",
        &base,
        "--target",
        &other,
        "--model",
        "sim",
        "--items-per-family",
        "2",
    ];
    let o = run_bin(tmp.path(), &args, &[]);
    let _ = sim.kill();
    let out = text(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", text(&o.stderr));
    let dir = tmp.path().join(printed_run_dir(&o.stdout));
    let spec = std::fs::read_to_string(dir.join("spec.yaml")).unwrap();
    assert!(spec.contains(&format!("endpoint: \"{other}\"")), "{spec}");
    assert!(spec.contains("full_items_per_family: 2"), "{spec}");
    // 2 items × 3 families = 6 rounds, each endpoint answering every question.
    assert!(
        out.contains("session: 6 rounds, 12 records, 0 harness failures"),
        "{out}"
    );
    assert!(out.contains("Task success"), "{out}");
    assert!(dir.join("artifacts/paired-comparisons.json").is_file());
    let again = printed_command(&out, "again, from the same spec:");
    assert!(again.contains("--workflow micro-single-task"), "{again}");
}
