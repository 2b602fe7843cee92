//! Text that came from outside — an upstream's body or headers, a spec's names — made safe for
//! the two text sinks that would obey it: a terminal (escape sequences set its title, write the
//! clipboard with `ESC]52`, clear it, move the cursor over lines already printed) and a Markdown
//! table (a newline or `|` ends a row or a cell). One function per sink; HTML has its own
//! (`openbench_report_kit::html::escape`).
//!
//! Both write each control character — C0 (newline included), DEL, C1 — and each Unicode
//! bidirectional override or isolate (which reorder what the reader sees) as a visible escape:
//! `\n`, `\r`, `\t`, else `\u{1b}` in Rust's notation. Printable text, other languages included,
//! is kept as is.

use std::borrow::Cow;

/// True for a character a terminal or a Markdown reader would act on rather than show.
fn is_hidden(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn escape_into(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        other => out.push_str(&format!("\\u{{{:x}}}", u32::from(other))),
    }
}

/// `text` for one terminal line: every control character and bidi override as a visible escape
/// (so it can neither move the cursor, start a new line nor send a command to the terminal).
pub fn terminal(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_hidden) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_hidden(c) {
            escape_into(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` for one Markdown table cell: [`terminal`]'s escapes (a newline cannot end the row)
/// and `|` as `\|` (it cannot end the cell).
pub fn markdown_cell(text: &str) -> String {
    terminal(text).replace('|', "\\|")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_escapes_every_sequence_an_attacker_would_send() {
        let attack =
            "ok\u{1b}]0;owned\u{7}\u{1b}]52;c;cGF3bmVk\u{7}\u{1b}[2J\u{1b}[1A\r\nx\u{9b}y\u{7f}";
        assert_eq!(
            terminal(attack),
            "ok\\u{1b}]0;owned\\u{7}\\u{1b}]52;c;cGF3bmVk\\u{7}\\u{1b}[2J\\u{1b}[1A\\r\\nx\\u{9b}y\\u{7f}"
        );
        assert_eq!(
            terminal("a\u{202e}b\u{2066}c\td"),
            "a\\u{202e}b\\u{2066}c\\td"
        );
    }

    #[test]
    fn printable_text_is_kept_and_not_copied() {
        assert!(matches!(
            terminal("Z.AI — 東京 ✓"),
            Cow::Borrowed("Z.AI — 東京 ✓")
        ));
    }

    #[test]
    fn a_markdown_cell_cannot_end_its_row_or_cell() {
        assert_eq!(
            markdown_cell("Evil\n| x | y |\u{1b}[31m"),
            "Evil\\n\\| x \\| y \\|\\u{1b}[31m"
        );
    }
}
