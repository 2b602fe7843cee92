//! The sentinel key of the secrets tests and how a leak of it is found: every 6-character piece,
//! reversed, in hex and in base64 (docs/faults.md, "Secrets"), and the echoing providers of the
//! simulator's catalogue that carry it.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use crate::coordinator_support::Prov;
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE};

/// The sentinel: random-looking, so any piece of it found anywhere is a leak, not a coincidence.
pub const KEY: &str = "obk-Q7vXp2LmZ9sR4tYw8NcB3hJ6fD1k";
/// The variable the specs and `probe once` read the key from.
pub const KEY_ENV: &str = "OBT_SENTINEL_KEY";
/// The echoing quirks of the simulator's catalogue.
pub const QUIRKS: [&str; 5] = [
    "echo-key-split",
    "echo-key-base64",
    "echo-key-error",
    "echo-key-pieces",
    "echo-key-encoded-error",
];
/// The providers of [`echoing_providers`], one per quirk.
pub const ECHOING: [&str; 5] = [
    "echo-split",
    "echo-base64",
    "echo-error",
    "echo-pieces",
    "echo-encoded-error",
];

/// Every piece of the key a leak would show (the rule of docs/faults.md "Secrets"): its
/// 6-character windows as written and reversed, their hex in both cases, and the 8-character
/// windows of its base64 forms (both alphabets, the key behind 0, 1 and 2 bytes and behind
/// `Bearer `) that only the key's bytes determine.
pub fn sentinel_pieces() -> Vec<String> {
    let windows = |text: &str, width: usize| -> Vec<String> {
        (0..=text.len() - width)
            .map(|i| text[i..i + width].to_string())
            .collect()
    };
    let reversed: String = KEY.chars().rev().collect();
    let mut pieces = windows(KEY, 6);
    pieces.extend(windows(&reversed, 6));
    for piece in windows(KEY, 6) {
        let hex: String = piece.bytes().map(|b| format!("{b:02x}")).collect();
        pieces.push(hex.to_uppercase());
        pieces.push(hex);
    }
    for engine in [&STANDARD, &URL_SAFE] {
        for prefix in ["", ":", "::", "Bearer "] {
            let encoded = engine.encode(format!("{prefix}{KEY}"));
            // Past the groups the prefix touches, characters depend on the key's bytes only;
            // the last 4 may mix padding.
            let skip = prefix.len().div_ceil(3) * 4;
            pieces.extend(windows(&encoded[skip..encoded.len() - 4], 8));
        }
    }
    pieces
}

/// The pieces of the key found in `text`.
pub fn leaks(text: &str, pieces: &[String]) -> Vec<String> {
    pieces
        .iter()
        .filter(|p| text.contains(p.as_str()))
        .cloned()
        .collect()
}

/// One provider per echoing quirk, all with the sentinel as their bearer key.
pub fn echoing_providers() -> Vec<Prov> {
    QUIRKS
        .iter()
        .map(|q| Prov {
            key: q.replace("echo-key-", "echo-"),
            profile: "plain".into(),
            extra: format!(
                "    auth: {{scheme: bearer, env: {KEY_ENV}}}\n    extra_headers: {{x-sim-quirk: {q}}}\n"
            ),
        })
        .collect()
}

/// The environment of a run holding the key and exporting OTLP to `endpoint`.
pub fn keyed_env(endpoint: &str) -> [(&str, &str); 3] {
    [
        (KEY_ENV, KEY),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
    ]
}

/// Combined stdout and stderr of a finished command.
pub fn output_text(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr)
}
