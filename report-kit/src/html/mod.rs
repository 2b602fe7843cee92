//! The HTML side of a report any workflow can share: a self-contained page (inline CSS, charts as
//! inline SVG, no script, no network reference) opened by [`page_start`] and closed by
//! [`page_end`], text escaping, the chart primitives ([`plot`]) and the charts themselves
//! ([`charts`]). A workflow composes its sections from these; everything is deterministic (same
//! input, byte-identical output).

pub mod charts;
pub mod curves;
pub mod plot;

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            other => out.push(other),
        }
    }
    out
}

/// Opens a self-contained page in the report's style: doctype, head with the shared stylesheet
/// (plus `extra_css`), and the header with title and subtitle. Close it with [`page_end`].
pub fn page_start(out: &mut String, title: &str, subtitle: &str, extra_css: &str) {
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    out.push_str(&format!("<title>{}</title>\n", escape(title)));
    out.push_str("<style>\n");
    out.push_str(include_str!("style.css"));
    out.push_str(extra_css);
    out.push_str("</style>\n</head>\n<body>\n<main>\n");
    out.push_str(&format!(
        "<header><h1>{}</h1>\n<p class=\"sub\">{}</p></header>\n",
        escape(title),
        escape(subtitle)
    ));
}

/// A colour legend: a swatch and an escaped name per entry, in order.
pub fn legend<'a>(entries: impl IntoIterator<Item = (&'a str, plot::Rgb)>) -> String {
    let mut out = String::from("<ul class=\"legend\">");
    for (name, color) in entries {
        out.push_str(&format!(
            "<li><span class=\"swatch\" style=\"background:{}\"></span>{}</li>",
            color.hex(),
            escape(name)
        ));
    }
    out.push_str("</ul>\n");
    out
}

/// Closes a page opened by [`page_start`].
pub fn page_end(out: &mut String) {
    out.push_str("</main>\n</body>\n</html>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_the_five_html_specials() {
        assert_eq!(
            escape("<a href=\"x\">Tom & Jerry's</a>"),
            "&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#39;s&lt;/a&gt;"
        );
    }

    #[test]
    fn a_page_is_opened_and_closed_around_its_body() {
        let mut out = String::new();
        page_start(&mut out, "A <b>", "sub & title", ".x{}");
        out.push_str("BODY");
        page_end(&mut out);
        assert!(out.starts_with("<!DOCTYPE html>\n<html lang=\"en\">\n"));
        assert!(out.contains("<title>A &lt;b&gt;</title>\n"));
        assert!(out.contains(".x{}</style>\n</head>\n<body>\n<main>\n"));
        assert!(out.contains(
            "<header><h1>A &lt;b&gt;</h1>\n<p class=\"sub\">sub &amp; title</p></header>\nBODY"
        ));
        assert!(out.ends_with("BODY</main>\n</body>\n</html>\n"));
    }
}
