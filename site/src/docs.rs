//! The pages made from the repository's own text: the methodology (docs/methodology.md rendered
//! by pulldown-cmark, every heading given an id so figure labels can link to it), the dataset
//! card of the public sample (its manifest), and `llms.txt`.

use crate::SiteError;
use crate::leaderboard::{COLUMNS, alphabetical};
use crate::model::SnapshotResults;
use crate::page::{Page, escape, shown};
use crate::pages;
use pulldown_cmark::{CowStr, Event, Options, Parser, Tag, TagEnd, html};

/// docs/methodology.md, compiled in so the page matches the code that built it.
pub const METHODOLOGY_MD: &str = include_str!("../../docs/methodology.md");

/// The public sample's manifest, compiled in for the dataset card.
pub const SAMPLE_MANIFEST: &str =
    include_str!("../../data/micro-single-task-public-sample/manifest.json");

/// A heading's id: lower-case letters and digits, other runs as one `-` (`3. Streams and
/// timings` → `3-streams-and-timings`).
pub fn heading_id(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_string()
}

/// Markdown to HTML, headings with ids (repeated ids get `-2`, `-3`, …).
pub fn markdown_html(md: &str) -> String {
    let mut events: Vec<Event> = Parser::new_ext(md, Options::ENABLE_TABLES).collect();
    let mut seen: Vec<String> = Vec::new();
    for i in 0..events.len() {
        if !matches!(events[i], Event::Start(Tag::Heading { .. })) {
            continue;
        }
        let mut text = String::new();
        for e in &events[i + 1..] {
            match e {
                Event::End(TagEnd::Heading(_)) => break,
                Event::Text(t) | Event::Code(t) => text.push_str(t),
                _ => {}
            }
        }
        let base = heading_id(&text);
        let n = seen.iter().filter(|s| **s == base).count();
        let id = if n == 0 {
            base.clone()
        } else {
            format!("{base}-{}", n + 1)
        };
        seen.push(base);
        if let Event::Start(Tag::Heading { id: slot, .. }) = &mut events[i] {
            *slot = Some(CowStr::from(id));
        }
    }
    let mut out = String::new();
    html::push_html(&mut out, events.into_iter());
    // Wide tables scroll inside their box instead of widening the page on a phone.
    out.replace("<table>", "<div class=\"table-wrap\"><table>")
        .replace("</table>", "</table></div>")
}

/// The methodology page.
pub fn methodology_page() -> String {
    let mut p = Page::new(
        "Methodology",
        "How every figure is defined and measured",
        false,
    );
    p.para(
        "The exact definition of every figure on this site, from the benchmark's own \
         documentation (docs/methodology.md of the build that made this site).",
    );
    p.push(&format!(
        "<div class=\"prose\">{}</div>\n",
        markdown_html(METHODOLOGY_MD)
    ));
    p.finish(false)
}

/// The dataset card of the public sample, from its manifest.
pub fn dataset_page() -> Result<String, SiteError> {
    let manifest: serde_json::Value =
        serde_json::from_str(SAMPLE_MANIFEST).map_err(|e| SiteError::Input {
            what: "data/micro-single-task-public-sample/manifest.json".into(),
            detail: e.to_string(),
        })?;
    let field = |k: &str| manifest.get(k).and_then(|v| v.as_str()).unwrap_or("—");
    let mut p = Page::new(
        "Dataset card: micro-single-task public sample",
        "The public sample of the micro-single-task corpus",
        false,
    );
    p.para(&escape(field("description")));
    p.push(&format!(
        "<dl><dt>Dataset id</dt><dd><code>{}</code></dd><dt>Version</dt><dd>{}</dd>\
         <dt>Status</dt><dd>{} (usable for a full run: {})</dd><dt>Release hash</dt>\
         <dd><code>{}</code></dd><dt>Tokenizer</dt><dd>{}</dd></dl>\n",
        escape(field("dataset_id")),
        escape(field("version")),
        escape(field("status")),
        if manifest.get("freeze_ready").and_then(|v| v.as_bool()) == Some(true) {
            "yes"
        } else {
            "no"
        },
        escape(field("release_hash")),
        escape(field("tokenizer")),
    ));
    p.push(
        "<div class=\"table-wrap\"><table><thead><tr><th scope=\"col\">Family</th>\
         <th scope=\"col\">Rows</th><th scope=\"col\">Prompt tokens (o200k)</th>\
         <th scope=\"col\">File sha256</th></tr></thead><tbody>\n",
    );
    if let Some(families) = manifest.get("families").and_then(|f| f.as_object()) {
        for (name, f) in families {
            let band = f.get("token_band");
            let bound = |k: &str| {
                band.and_then(|b| b.get(k))
                    .and_then(|v| v.as_u64())
                    .map_or("—".to_string(), |v| v.to_string())
            };
            p.push(&format!(
                "<tr><th scope=\"row\">{}</th><td>{}</td><td>{}–{}</td><td><code>{}</code></td></tr>\n",
                escape(name),
                f.get("rows").and_then(|v| v.as_u64()).unwrap_or(0),
                bound("min"),
                bound("max"),
                escape(f.get("sha256").and_then(|v| v.as_str()).unwrap_or("—"))
            ));
        }
    }
    p.push("</tbody></table></div>\n");
    p.para(
        "The texts are synthetic (invented people, companies and products), made by the \
         project's deterministic generator; the sample shows the task format and cannot back a \
         full run, and it does not reproduce leaderboard scores. Regenerate it with \
         <code>openbench-inference dataset generate --out data/micro-single-task-public-sample \
         --seed 20260902 --public-sample</code>.",
    );
    Ok(p.finish(false))
}

/// `llms.txt`: what the site is, where the data is, and each leaderboard in plain text.
pub fn llms_txt(latest: &[&SnapshotResults]) -> String {
    let mut out = String::from(
        "# Inference provider benchmarks\n\n> Open, reproducible benchmark of LLM inference \
         providers serving the same model: E2E latency, time to first answer token, visible \
         answer tokens per second and exact task success, from paired rounds. No single metric \
         picks a winner.\n\n## Pages\n\n- [Leaderboards](index.html)\n- \
         [Methodology](methodology.html): the definition of every figure\n- \
         [Dataset card](dataset.html)\n- [Results JSON index](results/index.json), schema \
         [results/schema-v1.json](results/schema-v1.json)\n",
    );
    for s in latest {
        out.push_str(&format!(
            "\n## {} — {}{}\n\nRun {} (started {}, published {} under approval {}); file: {}.\n\n",
            s.model_title(),
            s.workflow,
            if s.simulated { " (simulated)" } else { "" },
            s.run_id,
            crate::page::date(s.started_at.as_deref()),
            crate::page::date(Some(&s.published_at)),
            s.approval_id,
            pages::results_file(s)
        ));
        let headers: Vec<&str> = COLUMNS.iter().map(|c| c.header).collect();
        out.push_str(&format!("Provider | {}\n", headers.join(" | ")));
        for lane in alphabetical(s) {
            let cells: Vec<String> = COLUMNS
                .iter()
                .map(|c| shown(lane.pooled.get(c.metric).copied().flatten(), c.unit))
                .collect();
            out.push_str(&format!("{} | {}\n", lane.display_name, cells.join(" | ")));
        }
    }
    out
}
