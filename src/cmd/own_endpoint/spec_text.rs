//! The spec the `load` command writes: plain YAML with comments, every value the command line
//! chose spelled out, so the file is a starting point to edit and run again with `run --spec`.

use std::fmt::Write;

/// One endpoint under test.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// Provider key in the spec and the reports (`localhost-8000`).
    pub key: String,
    /// Base URL as given (`http://localhost:8000/v1`); the adapter adds `/chat/completions`.
    pub base_url: String,
    /// Model id to request.
    pub model: String,
    /// Environment variable holding the bearer key, if any.
    pub api_key_env: Option<String>,
}

/// The load to apply.
#[derive(Debug, Clone, PartialEq)]
pub enum Sweep {
    /// Closed-loop steps, users per endpoint.
    Concurrency(Vec<u32>),
    /// Open-loop Poisson steps, requests per second per endpoint.
    Rate(Vec<f64>),
    /// A Poisson saturation search from `start` ×2 up to `max` requests/s, two bisections.
    Saturate {
        /// First rate.
        start: f64,
        /// Highest rate.
        max: f64,
    },
}

/// Everything the generated spec holds.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadPlan {
    /// Endpoints, in lane order.
    pub targets: Vec<Target>,
    /// The load.
    pub sweep: Sweep,
    /// Seconds of warm-up, measured window and cool-down per step.
    pub warmup_s: f64,
    /// Measured window of each step, seconds.
    pub duration_s: f64,
    /// Cool-down, seconds.
    pub cooldown_s: f64,
    /// Prompt length, o200k tokens.
    pub input_tokens: u32,
    /// Answer length, tokens (also the contract's completion ceiling).
    pub output_tokens: u32,
    /// Send `ignore_eos: true`, so answers run to `output_tokens` (vLLM, SGLang, llama.cpp).
    pub ignore_eos: bool,
    /// Client deadline, ms.
    pub timeout_ms: u64,
    /// Seed of every random draw.
    pub seed: u64,
    /// SLO bounds (`ttfa_ms`, `e2e_ms`, `tpot_ms`) for goodput.
    pub slo: Vec<(&'static str, f64)>,
    /// Where the run root is, relative to the spec file (the spec lives in its run directory).
    pub run_root: String,
}

/// A YAML double-quoted scalar: JSON's string syntax, which YAML reads the same way.
pub(crate) fn quoted(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

/// A number as YAML writes it (`2`, `2.5`).
fn number(x: f64) -> String {
    serde_json::Value::from(x).to_string()
}

/// The spec text of `plan`.
pub fn render(plan: &LoadPlan, command_line: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Written by: {command_line}");
    out.push_str(
        "# Edit and run again with: openbench-inference run --workflow load --spec <this file> \
         --full --approve-full --approval-id ID\n\
         # Every field: docs/spec.md. Left out, the request contract is the benchmark's \
         (temperature 0, top_p 1, penalties 0, json_object, 20 s).\n",
    );
    let _ = writeln!(out, "request:\n  max_output_tokens: {}", plan.output_tokens);
    let _ = writeln!(out, "  timeout_ms: {}\n", plan.timeout_ms);
    out.push_str("providers:\n");
    for t in &plan.targets {
        let _ = writeln!(out, "  - key: {}", quoted(&t.key));
        let _ = writeln!(out, "    endpoint: {}", quoted(&t.base_url));
        let _ = writeln!(out, "    model: {}", quoted(&t.model));
        // Usage in the stream (`stream_options.include_usage`, which OpenAI-compatible servers
        // honour): the server's own token counts beside o200k, and what a held length is
        // checked against.
        out.push_str("    include_usage: true\n");
        if let Some(var) = &t.api_key_env {
            let _ = writeln!(out, "    auth: {{scheme: bearer, env: {}}}", quoted(var));
        }
    }
    let _ = writeln!(out, "\nrun_root: {}\n", quoted(&plan.run_root));
    let _ = writeln!(out, "load:\n  seed: {}", plan.seed);
    let _ = writeln!(
        out,
        "  phases: {{warmup_s: {}, measure: {{duration_s: {}}}, cooldown_s: {}}}",
        number(plan.warmup_s),
        number(plan.duration_s),
        number(plan.cooldown_s)
    );
    match &plan.sweep {
        Sweep::Concurrency(users) => {
            out.push_str("  steps:\n");
            for n in users {
                let _ = writeln!(out, "    - {{model: closed, concurrency: {n}}}");
            }
        }
        Sweep::Rate(rates) => {
            out.push_str("  steps:\n");
            for r in rates {
                let _ = writeln!(out, "    - {{model: poisson, rate_per_s: {}}}", number(*r));
            }
        }
        Sweep::Saturate { start, max } => {
            let _ = writeln!(
                out,
                "  saturation: {{arrivals: poisson, start_rate_per_s: {}, growth: 2, \
                 max_rate_per_s: {}, refine_steps: 2}}",
                number(*start),
                number(*max)
            );
        }
    }
    if !plan.slo.is_empty() {
        let bounds: Vec<String> = plan
            .slo
            .iter()
            .map(|(name, bound)| format!("{name}: {}", number(*bound)))
            .collect();
        let _ = writeln!(out, "  slo: {{{}}}", bounds.join(", "));
    }
    out.push_str("  workload:\n    kind: synthetic\n");
    let _ = writeln!(
        out,
        "    input_tokens: {{dist: fixed, tokens: {}}}",
        plan.input_tokens
    );
    let _ = writeln!(
        out,
        "    output_tokens: {{dist: fixed, tokens: {}}}",
        plan.output_tokens
    );
    if plan.ignore_eos {
        let keys: Vec<String> = plan.targets.iter().map(|t| quoted(&t.key)).collect();
        let _ = writeln!(out, "  ignore_eos: [{}]", keys.join(", "));
    }
    out
}

/// A provider key from a base URL: its host and port (`localhost-8000`, `127_0_0_1-8080`: keys
/// are `[A-Za-z0-9_-]`), made unique among
/// `taken` with `-2`, `-3`….
pub fn key_for(base_url: &str, taken: &[String]) -> String {
    let host = reqwest::Url::parse(base_url)
        .ok()
        .and_then(|u| {
            let host = u.host_str()?.trim_matches(['[', ']']).to_string();
            Some(match u.port() {
                Some(port) => format!("{host}-{port}"),
                None => host,
            })
        })
        .unwrap_or_else(|| "endpoint".to_string());
    let base: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut key = base.clone();
    let mut n = 2;
    while taken.contains(&key) {
        key = format!("{base}-{n}");
        n += 1;
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_come_from_host_and_port_and_stay_unique() {
        assert_eq!(key_for("http://localhost:8000/v1", &[]), "localhost-8000");
        assert_eq!(
            key_for("https://api.example.com/v1", &[]),
            "api_example_com"
        );
        let taken = vec!["127_0_0_1-9".to_string()];
        assert_eq!(key_for("http://127.0.0.1:9/v1", &taken), "127_0_0_1-9-2");
        assert_eq!(key_for("not a url", &[]), "endpoint");
    }
}
