//! The page shell every page shares: inline stylesheet (light and dark by
//! `prefers-color-scheme`, readable from 320 px up), the navigation, the simulated-run banner,
//! and the number cells and inline numbers whose exact stored value rides in a `<data>` element
//! (so a reader — or a test — can check the rounded text against the store).

use openbench_report_kit::format;
pub use openbench_report_kit::html::escape;

const STYLE: &str = r#"
:root{color-scheme:light dark;--bg:#fff;--fg:#1b1f24;--muted:#59636e;--line:#d0d7de;--accent:#0b5cad;--bar:#3b7dd8;--bar2:#b4540c;--warn-bg:#fff4d6;--warn-fg:#5c3c00}
@media (prefers-color-scheme:dark){:root{--bg:#0f1419;--fg:#e6edf3;--muted:#9aa6b2;--line:#30363d;--accent:#6cb6ff;--bar:#5a9cf0;--bar2:#e0823a;--warn-bg:#3d2e00;--warn-fg:#ffe08a}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif}
main{max-width:72rem;margin:0 auto;padding:1rem}
nav{border-bottom:1px solid var(--line);padding:.5rem 1rem}
nav ul{list-style:none;margin:0 auto;padding:0;max-width:72rem;display:flex;flex-wrap:wrap;gap:.25rem 1rem}
a{color:var(--accent)}
a:focus-visible,button:focus-visible{outline:3px solid var(--accent);outline-offset:2px}
h1{font-size:1.6rem;line-height:1.25;overflow-wrap:anywhere}
h2{font-size:1.25rem;margin-top:2rem}
p,li{overflow-wrap:anywhere}
.simulated{background:var(--warn-bg);color:var(--warn-fg);padding:.5rem .75rem;border-radius:4px;font-weight:600}
.meta{color:var(--muted)}
.table-wrap{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-variant-numeric:tabular-nums;font-size:.9rem}
th,td{padding:.35rem .5rem;border-bottom:1px solid var(--line);text-align:right;vertical-align:top}
th:first-child,td:first-child{text-align:left}
th button{font:inherit;font-weight:600;color:inherit;background:none;border:0;padding:0;cursor:pointer;text-align:inherit}
th a{font-size:.8rem;font-weight:400}
.regression{color:var(--bar2);font-weight:600}
figure{margin:1rem 0}
svg.chart{width:100%;max-width:44rem;height:auto;display:block}
svg.chart text{fill:var(--fg);font:12px system-ui,sans-serif}
svg.chart .b1{fill:var(--bar)}
svg.chart .b2{fill:var(--bar2)}
svg.chart line{stroke:var(--line)}
pre,code{overflow-wrap:anywhere;white-space:pre-wrap}
.prose td,.prose th{overflow-wrap:anywhere;text-align:left}
footer{color:var(--muted);font-size:.85rem;margin-top:3rem;border-top:1px solid var(--line);padding-top:.5rem}
"#;

/// Sorts a `table.sortable` by the clicked column (numbers by their stored value, missing
/// values last); the table reads fine without it.
const SORT_SCRIPT: &str = r#"<script>
document.querySelectorAll('table.sortable').forEach(function(t){
  t.querySelectorAll('th button').forEach(function(b,i){
    b.addEventListener('click',function(){
      var th=b.parentNode,asc=th.getAttribute('aria-sort')!=='ascending';
      t.querySelectorAll('th').forEach(function(h){h.removeAttribute('aria-sort')});
      th.setAttribute('aria-sort',asc?'ascending':'descending');
      var body=t.tBodies[0],rows=Array.prototype.slice.call(body.rows);
      function key(r){var c=r.cells[i],d=c.querySelector('data');return d?parseFloat(d.value):(i===0?c.textContent.toLowerCase():null)}
      rows.sort(function(x,y){var a=key(x),z=key(y);if(a===null)return 1;if(z===null)return -1;return (a<z?-1:a>z?1:0)*(asc?1:-1)});
      rows.forEach(function(r){body.appendChild(r)});
    });
  });
});
</script>"#;

/// A page being written.
pub struct Page {
    out: String,
}

impl Page {
    /// Opens a page titled `title`; `simulated` puts the simulated-run banner first.
    pub fn new(title: &str, description: &str, simulated: bool) -> Page {
        let mut out = String::from("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n");
        out.push_str("<meta charset=\"utf-8\">\n");
        out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
        out.push_str(&format!("<title>{}</title>\n", escape(title)));
        out.push_str(&format!(
            "<meta name=\"description\" content=\"{}\">\n",
            escape(description)
        ));
        out.push_str(&format!("<style>{STYLE}</style>\n</head>\n<body>\n"));
        out.push_str(
            "<nav aria-label=\"Site\"><ul><li><a href=\"index.html\">Leaderboards</a></li>\
             <li><a href=\"methodology.html\">Methodology</a></li>\
             <li><a href=\"dataset.html\">Dataset</a></li>\
             <li><a href=\"results/index.json\">Results JSON</a></li>\
             <li><a href=\"llms.txt\">llms.txt</a></li></ul></nav>\n<main>\n",
        );
        if simulated {
            out.push_str(
                "<p class=\"simulated\" role=\"note\">Simulated: figures on this page come from \
                 runs against the embedded simulator, not real providers.</p>\n",
            );
        }
        out.push_str(&format!("<h1>{}</h1>\n", escape(title)));
        Page { out }
    }

    /// Appends raw HTML.
    pub fn push(&mut self, html: &str) {
        self.out.push_str(html);
    }

    /// Appends a `<p>` of raw HTML.
    pub fn para(&mut self, html: &str) {
        self.out.push_str(&format!("<p>{html}</p>\n"));
    }

    /// Closes the page; `sortable` adds the sorting script.
    pub fn finish(mut self, sortable: bool) -> String {
        self.out.push_str(
            "<footer>Built by openbench-inference from its results store; every figure names \
             the run it came from.</footer>\n</main>\n",
        );
        if sortable {
            self.out.push_str(SORT_SCRIPT);
            self.out.push('\n');
        }
        self.out.push_str("</body>\n</html>\n");
        self.out
    }
}

/// How a figure is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Milliseconds, one decimal.
    Ms,
    /// Tokens per second, one decimal.
    Tps,
    /// A rate in [0, 1] as a percentage, two decimals.
    Rate,
    /// A count.
    Count,
}

/// The figure as text (`3,228.8`, `95.83%`, `600`), `—` when missing.
pub fn shown(value: Option<f64>, unit: Unit) -> String {
    match unit {
        Unit::Ms | Unit::Tps => format::one(value),
        Unit::Rate => format::pct(value),
        Unit::Count => value.map_or(format::MISSING.to_string(), |v| format::grouped(v, 0)),
    }
}

/// The figure as a `<data>` element holding its exact stored value, tagged with the lane and
/// metric it is (`data-lane`, `data-metric`), its text rounded; `unit_suffix` follows the text.
pub fn figure(
    value: Option<f64>,
    unit: Unit,
    lane: &str,
    metric: &str,
    unit_suffix: &str,
) -> String {
    match value {
        None => format::MISSING.to_string(),
        Some(v) => format!(
            "<data value=\"{v}\" data-lane=\"{}\" data-metric=\"{}\">{}{unit_suffix}</data>",
            escape(lane),
            escape(metric),
            shown(Some(v), unit)
        ),
    }
}

/// A date (`2026-12-06`) from an RFC 3339 time.
pub fn date(rfc3339: Option<&str>) -> String {
    rfc3339
        .map(|t| t.chars().take(10).collect())
        .unwrap_or_else(|| format::MISSING.to_string())
}
