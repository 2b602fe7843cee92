//! A `probe serve` whose owner's spec names only honest endpoints: a coordinator naming an
//! attacker's endpoint (on 127.0.0.2) is refused at session open and the attacker sees no
//! connection; a redirect to it is not followed; a key straddling the error-message cut, split
//! between reasoning and answer, or between answer and an SSE error event, leaves no piece; a
//! key with a trailing space is refused at load, naming only its variable.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod coordinator_support;
mod real_targets;
mod secrets_support;

use coordinator_support::*;
use real_targets::ours::start_probe;
use secrets_support::*;

/// What the in-test hostile upstream answers on each path (`/<case>/v1/chat/completions`).
fn hostile_answer(path: &str, attacker: &str) -> String {
    let (head_part, tail_part) = KEY.split_at(11);
    let sse = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
    let case = path.trim_start_matches('/').split('/').next().unwrap_or("");
    match case {
        // The key straddles the 512-character cut of the stored error message.
        "straddle" => {
            let body = format!("{{\"error\":\"{}{KEY} is not valid\"}}", "p".repeat(492));
            format!(
                "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            )
        }
        // The key split between reasoning and answer.
        "split-ra" => format!(
            "{sse}data: {{\"choices\":[{{\"delta\":{{\"reasoning_content\":\"key {head_part}\"}}}}]}}\n\n\
             data: {{\"choices\":[{{\"delta\":{{\"content\":\"{tail_part} ok\"}},\"finish_reason\":\"stop\"}}]}}\n\n\
             data: [DONE]\n\n"
        ),
        // The key split between answer and an SSE error event.
        "split-ae" => format!(
            "{sse}data: {{\"choices\":[{{\"delta\":{{\"content\":\"key {head_part}\"}}}}]}}\n\n\
             event: error\ndata: {tail_part} revoked\n\n"
        ),
        // A redirect to the attacker: never followed.
        _ => format!(
            "HTTP/1.1 307 Temporary Redirect\r\nLocation: {attacker}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        ),
    }
}

/// A one-response-per-connection HTTP server on `ip` in a thread: answers with `answer(path)`
/// and counts connections. Returns its address and the count.
fn serve_hostile(
    ip: &str,
    answer: impl Fn(&str) -> String + Send + 'static,
) -> (
    std::net::SocketAddr,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
) {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind((ip, 0)).unwrap();
    let addr = listener.local_addr().unwrap();
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                head.push(byte[0]);
            }
            let head = String::from_utf8_lossy(&head).to_string();
            let length: usize = head
                .lines()
                .find_map(|l| {
                    l.to_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap_or(0))
                })
                .unwrap_or(0);
            let mut body = vec![0u8; length];
            let _ = stream.read_exact(&mut body);
            let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
            let _ = stream.write_all(answer(&path).as_bytes());
        }
    });
    (addr, count)
}

#[test]
fn a_probe_sends_its_key_only_where_its_owner_allows_and_cut_or_split_echoes_leave_no_piece() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path();
    let data = sample_dataset(work, "data", 20260902);
    // Whoever controls the coordinator runs this server; it must never see a connection.
    let (attacker, stolen) = serve_hostile("127.0.0.2", |_| {
        "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string()
    });
    let attacker_url = format!("http://{attacker}/v1/chat/completions");
    let to_attacker = attacker_url.clone();
    let (upstream, _) = serve_hostile("127.0.0.1", move |path| hostile_answer(path, &to_attacker));
    let cases = ["straddle", "split-ra", "split-ae", "redirect"];
    let auth = format!("    auth: {{scheme: bearer, env: {KEY_ENV}}}\n");
    let spec_in = |dir: &str, with_attacker: bool, probe: &str| {
        let dir = work.join(dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut provs: Vec<Prov> = cases
            .iter()
            .map(|c| Prov {
                key: c.replace('-', "_"),
                profile: c.to_string(),
                extra: auth.clone(),
            })
            .collect();
        if with_attacker {
            provs.push(Prov {
                key: "attacker".into(),
                profile: "attacker".into(),
                extra: auth.clone(),
            });
        }
        let path = write_spec(&dir, &data, &provs, 1, 0.01, 5_000);
        let mut text = std::fs::read_to_string(&path).unwrap();
        for c in cases {
            text = text.replace(
                &format!("sim://{c}"),
                &format!("http://{upstream}/{c}/v1/chat/completions"),
            );
        }
        text = text.replace("sim://attacker", &attacker_url);
        std::fs::write(
            &path,
            format!("{text}regions:\n  - name: east\n    probe: {probe}\n"),
        )
        .unwrap();
        path.to_str().unwrap().to_string()
    };
    // The owner's probe: its spec names only the honest provider's endpoints.
    let owner_spec = spec_in("owner", false, "http://127.0.0.1:1");
    let (probe, probe_addr) = start_probe(
        work,
        "probe",
        &owner_spec,
        "east",
        "127.0.0.1:0",
        &[(KEY_ENV, KEY)],
    );
    let probe_url = format!("http://{probe_addr}");
    let mut outputs: Vec<(String, String)> = Vec::new();

    // A coordinator naming the attacker's endpoint: refused at open, nothing sent.
    let hostile_spec = spec_in("hostile", true, &probe_url);
    let o = run_bin(work, &["smoke", "--spec", &hostile_spec], &[]);
    let text = output_text(&o);
    assert!(!o.status.success(), "{text}");
    assert!(
        text.contains(&format!(
            "provider attacker: endpoint {attacker_url}: credential {KEY_ENV} may not be sent there"
        )),
        "{text}"
    );
    outputs.push(("hostile smoke".into(), text));

    // The owner's endpoints: cut, split and redirected echoes.
    let honest_spec = spec_in("honest", false, &probe_url);
    let o = run_bin(work, &["smoke", "--spec", &honest_spec], &[]);
    let run_dir = printed_run_dir(&o.stdout);
    outputs.push(("honest smoke".into(), output_text(&o)));
    let recs = records(&run_dir.join(openbench_common::rundir::smoke_results(1)));
    assert_eq!(recs.len(), 4 * 3, "{}", output_text(&o));
    let message = |p: &str| {
        let r = recs.iter().find(|r| r.provider == p).unwrap();
        (
            r.error_message.clone().unwrap_or_default(),
            r.reasoning_text.clone(),
            r.answer_text.clone(),
        )
    };
    assert!(
        message("straddle").0.ends_with("p[redacted]…"),
        "{:?}",
        message("straddle")
    );
    assert_eq!(message("split_ra").1, "key [redacted]");
    assert_eq!(message("split_ra").2, "[redacted] ok");
    assert_eq!(message("split_ae").2, "key [redacted]");
    assert_eq!(message("split_ae").0, "event: error: [redacted] revoked");
    assert_eq!(
        message("redirect").0,
        "HTTP 307 (redirects are not followed)"
    );
    assert_eq!(
        stolen.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the attacker got a request"
    );

    // A key with a trailing space (a quoted `.env` value) is refused at load, naming only the
    // variable.
    let padded = format!("{KEY} ");
    let o = run_bin(
        work,
        &[
            "probe",
            "once",
            "--base-url",
            &format!("http://{upstream}/split-ra/v1"),
            "--model",
            "m",
            "--user",
            "hi",
            "--api-key-env",
            KEY_ENV,
        ],
        &[(KEY_ENV, padded.as_str())],
    );
    let text = output_text(&o);
    assert!(!o.status.success(), "{text}");
    assert!(
        text.contains(&format!(
            "credential variable {KEY_ENV} begins or ends with whitespace"
        )),
        "{text}"
    );
    outputs.push(("padded probe once".into(), text));

    outputs.push(("probe serve log".into(), probe.log_text()));
    drop(probe);
    let pieces = sentinel_pieces();
    let mut found = Vec::new();
    for file in files_under(work) {
        let leaked = leaks(
            &String::from_utf8_lossy(&std::fs::read(&file).unwrap()),
            &pieces,
        );
        if !leaked.is_empty() {
            found.push(format!("{}: {leaked:?}", file.display()));
        }
    }
    for (what, text) in &outputs {
        let leaked = leaks(text, &pieces);
        if !leaked.is_empty() {
            found.push(format!("{what}: {leaked:?}"));
        }
    }
    assert_eq!(found, Vec::<String>::new(), "the sentinel key leaked");
}
