//! Number formatting shared by the markdown and terminal tables: fixed decimals, thousands
//! separators, an em dash for a missing value — deterministic for byte-identical reports.

/// Placeholder for a value that does not exist (empty population).
pub const MISSING: &str = "—";

/// `x` with `decimals` decimals and comma thousands separators (`3228.84` → `3,228.8`).
pub fn grouped(x: f64, decimals: usize) -> String {
    let text = format!("{:.*}", decimals, x.abs());
    let (int, frac) = match text.split_once('.') {
        Some((i, f)) => (i.to_string(), Some(f.to_string())),
        None => (text.clone(), None),
    };
    let mut out = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if let Some(f) = frac {
        out.push('.');
        out.push_str(&f);
    }
    let negative = x < 0.0 && out.chars().any(|c| c.is_ascii_digit() && c != '0');
    if negative { format!("-{out}") } else { out }
}

/// Milliseconds or tokens/s: one decimal, grouped.
pub fn one(x: Option<f64>) -> String {
    x.map_or(MISSING.to_string(), |v| grouped(v, 1))
}

/// A rate in [0, 1] as a percentage with two decimals (`0.958333` → `95.83%`).
pub fn pct(x: Option<f64>) -> String {
    x.map_or(MISSING.to_string(), |v| {
        format!("{}%", grouped(v * 100.0, 2))
    })
}

/// A USD amount with four decimals.
pub fn usd(x: Option<f64>) -> String {
    x.map_or(MISSING.to_string(), |v| format!("${}", grouped(v, 4)))
}

/// A markdown table cell: `|`, newlines and terminal escapes escaped, so a name from a spec or
/// an upstream cannot end the cell or the row (`openbench_common::untrusted_text`).
pub fn cell(text: &str) -> String {
    openbench_common::untrusted_text::markdown_cell(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_like_the_seed() {
        assert_eq!(grouped(3228.84, 1), "3,228.8");
        assert_eq!(grouped(17070.66, 1), "17,070.7");
        assert_eq!(grouped(330.8, 1), "330.8");
        assert_eq!(grouped(1234567.0, 1), "1,234,567.0");
        assert_eq!(grouped(-1234.56, 1), "-1,234.6");
        assert_eq!(grouped(-0.01, 1), "0.0");
        assert_eq!(pct(Some(0.958333)), "95.83%");
        assert_eq!(pct(Some(0.0)), "0.00%");
        assert_eq!(pct(Some(1.0)), "100.00%");
        assert_eq!(one(None), "—");
    }
}
