//! Tables of report text: a markdown table and the same cells aligned as plain text for the
//! terminal. The first column is a name (left-aligned), the rest figures (right-aligned).

use crate::format::cell;
use openbench_common::untrusted_text::terminal;
use std::fmt::Write;

/// Appends a markdown table (first column left-aligned, the rest right-aligned; `|` escaped),
/// followed by a blank line.
pub fn markdown(out: &mut String, headers: &[&str], rows: &[Vec<String>]) {
    markdown_names(out, headers, rows, 1);
}

/// [`markdown`] with the first `names` columns left-aligned (a step and a lane, say).
pub fn markdown_names(out: &mut String, headers: &[&str], rows: &[Vec<String>], names: usize) {
    let headers: Vec<String> = headers.iter().map(|h| cell(h)).collect();
    let _ = writeln!(out, "| {} |", headers.join(" | "));
    let sep: Vec<&str> = headers
        .iter()
        .enumerate()
        .map(|(i, _)| if i < names { "---" } else { "---:" })
        .collect();
    let _ = writeln!(out, "|{}|", sep.join("|"));
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| cell(c)).collect();
        let _ = writeln!(out, "| {} |", cells.join(" | "));
    }
    out.push('\n');
}

/// The header and rows as plain text, columns two spaces apart and padded to their widest cell
/// (in characters), trailing spaces trimmed, one line each. Every cell is escaped for the
/// terminal first (`openbench_common::untrusted_text::terminal`): a lane's name comes from a spec.
pub fn aligned<R: AsRef<[String]>>(headers: &[&str], rows: &[R]) -> String {
    let headers: Vec<String> = headers.iter().map(|h| terminal(h).into_owned()).collect();
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            r.as_ref()
                .iter()
                .map(|c| terminal(c).into_owned())
                .collect()
        })
        .collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let parts: Vec<String> = cells
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                let pad = " ".repeat(w - c.chars().count());
                if i == 0 {
                    format!("{c}{pad}")
                } else {
                    format!("{pad}{c}")
                }
            })
            .collect();
        parts.join("  ").trim_end().to_string()
    };
    let mut out = line(headers.iter().map(String::as_str).collect());
    out.push('\n');
    for row in &rows {
        out.push_str(&line(row.iter().map(String::as_str).collect()));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_markdown_table_aligns_figures_right_and_escapes_pipes() {
        let mut out = String::new();
        markdown(
            &mut out,
            &["lane", "p50"],
            &[vec!["a|b".into(), "1.0".into()]],
        );
        assert_eq!(out, "| lane | p50 |\n|---|---:|\n| a\\|b | 1.0 |\n\n");
        let mut two = String::new();
        markdown_names(&mut two, &["step", "lane", "p50"], &[], 2);
        assert_eq!(two, "| step | lane | p50 |\n|---|---|---:|\n\n");
    }

    #[test]
    fn a_name_with_a_newline_or_escape_stays_in_its_cell_and_line() {
        let rows = vec![vec![
            "Evil\n| x | 9 |\u{1b}[2J".to_string(),
            "1.0".to_string(),
        ]];
        let mut md = String::new();
        markdown(&mut md, &["lane", "p50"], &rows);
        assert_eq!(
            md,
            "| lane | p50 |\n|---|---:|\n| Evil\\n\\| x \\| 9 \\|\\u{1b}[2J | 1.0 |\n\n"
        );
        assert_eq!(
            aligned(&["lane", "p50"], &rows),
            "lane                      p50\nEvil\\n| x | 9 |\\u{1b}[2J  1.0\n"
        );
    }

    #[test]
    fn plain_text_pads_names_left_and_figures_right() {
        let rows = vec![vec!["acme".to_string(), "12.5".to_string()]];
        assert_eq!(
            aligned(&["lane", "TTFA p50"], &rows),
            "lane  TTFA p50\nacme      12.5\n"
        );
    }
}
