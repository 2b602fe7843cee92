//! Chart primitives shared by the charts: palette, colours, the SVG wrapper, tick and label
//! helpers, and a linear axis with fixed ticks.

use super::escape;
use crate::format::grouped;
use plotters::chart::MeshStyle;
use plotters::coord::Shift;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::prelude::*;

/// An sRGB colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rgb(pub u8, pub u8, pub u8);

impl Rgb {
    /// `#rrggbb`.
    pub fn hex(self) -> String {
        format!("#{:02x}{:02x}{:02x}", self.0, self.1, self.2)
    }
    /// As a plotters colour.
    pub fn plot(self) -> RGBColor {
        RGBColor(self.0, self.1, self.2)
    }
}

/// Ten well-separated colours (the "category10" palette), cycled.
const PALETTE: [Rgb; 10] = [
    Rgb(31, 119, 180),
    Rgb(255, 127, 14),
    Rgb(44, 160, 44),
    Rgb(214, 39, 40),
    Rgb(148, 103, 189),
    Rgb(140, 86, 75),
    Rgb(227, 119, 194),
    Rgb(127, 127, 127),
    Rgb(188, 189, 34),
    Rgb(23, 190, 207),
];

/// Colour of the `i`-th provider (alphabetical order).
pub fn color(i: usize) -> Rgb {
    PALETTE[i % PALETTE.len()]
}

/// The one font family of every chart.
pub const FONT: &str = "sans-serif";
/// Grid lines.
pub const GRID: RGBColor = RGBColor(228, 231, 235);
/// Axis lines.
pub const AXIS: RGBColor = RGBColor(90, 96, 104);
/// Text and marks.
pub const INK: RGBColor = RGBColor(27, 31, 36);
/// Success bars.
pub const SUCCESS: RGBColor = RGBColor(46, 125, 50);
/// Failure bars and marks.
pub const FAILURE: RGBColor = RGBColor(198, 40, 40);

/// The SVG drawing area a chart draws on.
pub type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// The page's one mesh style: light bold grid, no minor lines, grey axes, `size`-point labels.
pub fn house_style<'m, 'a, 'b, X, Y, DB>(
    mesh: &'m mut MeshStyle<'a, 'b, X, Y, DB>,
    size: u32,
) -> &'m mut MeshStyle<'a, 'b, X, Y, DB>
where
    X: Ranged<ValueType: std::fmt::Debug>,
    Y: Ranged<ValueType: std::fmt::Debug>,
    DB: DrawingBackend,
{
    mesh.bold_line_style(GRID)
        .max_light_lines(0)
        .axis_style(AXIS)
        .label_style((FONT, size).into_font().color(&INK))
        .axis_desc_style((FONT, size).into_font().color(&INK))
}

/// A plotters error as the text `svg` shows in place of a chart.
pub fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// Draws one chart into an SVG string whose root tag is rewritten to scale with its container
/// (no `width`/`height`, no namespace URL: inline SVG in HTML needs neither).
pub fn svg(
    size: (u32, u32),
    label: &str,
    draw: impl FnOnce(&Area<'_>) -> Result<(), String>,
) -> String {
    let mut buf = String::new();
    let result = {
        let root = SVGBackend::with_string(&mut buf, size).into_drawing_area();
        root.fill(&WHITE)
            .map_err(err)
            .and_then(|()| draw(&root))
            .and_then(|()| root.present().map_err(err))
    };
    if let Err(e) = result {
        return format!("<p class=\"empty\">chart unavailable: {}</p>\n", escape(&e));
    }
    let body = match (buf.find("<svg"), buf.find('>')) {
        (Some(0), Some(end)) => &buf[end + 1..],
        _ => buf.as_str(),
    };
    format!(
        "<svg class=\"chart\" viewBox=\"0 0 {} {}\" role=\"img\" aria-label=\"{}\">{}",
        size.0,
        size.1,
        escape(label),
        body
    )
}

/// Sorted finite positive values.
pub fn sorted(values: impl Iterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = values.filter(|x| x.is_finite() && *x > 0.0).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// Most points one series draws. A chart is 600–1,200 pixels wide, so a strip of 100,000 dots
/// or a CDF of 200,000 steps shows nothing more than 2,000 well-chosen ones, and costs a hundred
/// megabytes of SVG; below the cap every value is drawn.
pub const MAX_SERIES_POINTS: usize = 2_000;

/// Positions of the values a series of `n` sorted values draws: all of them up to
/// [`MAX_SERIES_POINTS`], else that many evenly spaced order statistics, first and last included.
pub fn drawn_indices(n: usize) -> impl Iterator<Item = usize> {
    let (count, thinned) = if n <= MAX_SERIES_POINTS {
        (n, false)
    } else {
        (MAX_SERIES_POINTS, true)
    };
    (0..count).map(move |i| {
        if thinned {
            i * (n - 1) / (MAX_SERIES_POINTS - 1)
        } else {
            i
        }
    })
}

/// 1-2-5 ticks inside [lo, hi].
pub fn log_ticks(lo: f64, hi: f64) -> Vec<f64> {
    let mut out = Vec::new();
    let first = lo.log10().floor() as i32;
    let last = hi.log10().ceil() as i32;
    for exp in first..=last {
        for m in [1.0, 2.0, 5.0] {
            let v = m * 10f64.powi(exp);
            if v >= lo && v <= hi {
                out.push(v);
            }
        }
    }
    out
}

/// A tick label for milliseconds (or any positive quantity on a log axis): grouped integers from
/// 1,000, integers from 1, two decimals below.
pub fn ms_tick(v: f64) -> String {
    if v >= 1000.0 {
        grouped(v, 0)
    } else if v >= 1.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// A name shortened to `max` characters for an axis label.
pub fn short(name: &str, max: usize) -> String {
    if name.chars().count() <= max {
        name.to_string()
    } else {
        let cut: String = name.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    }
}

/// Row `i` of `n` counted from the top, as a y value (row 0 at the top).
pub fn row_y(i: usize, n: usize) -> f64 {
    (n - 1 - i) as f64
}

/// A linear f64 axis with exactly the given ticks (plotters' own `with_key_points` on an f64
/// range loses the default label formatting).
#[derive(Debug, Clone)]
pub struct Ticked {
    /// Lower end.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
    /// Where the ticks are.
    pub ticks: Vec<f64>,
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let t = (v - self.lo) / (self.hi - self.lo);
        limit.0 + (t * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.lo..self.hi
    }
}

/// The y axis of a chart with one row per provider: integer key points labelled with names.
pub fn rows_axis(n: usize) -> Ticked {
    Ticked {
        lo: -0.6,
        hi: n as f64 - 0.4,
        ticks: (0..n).map(|i| i as f64).collect(),
    }
}

/// The label of row value `v` on a [`rows_axis`]: the name of that row, empty between rows.
pub fn row_label(names: &[String], v: f64) -> String {
    let n = names.len();
    let i = v.round();
    if (v - i).abs() > 1e-6 || i < 0.0 || i as usize >= n {
        return String::new();
    }
    names[n - 1 - i as usize].clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_ticks_follow_one_two_five() {
        assert_eq!(log_ticks(150.0, 3000.0), vec![200.0, 500.0, 1000.0, 2000.0]);
        assert_eq!(ms_tick(20000.0), "20,000");
        assert_eq!(ms_tick(50.0), "50");
    }

    #[test]
    fn rows_are_labelled_top_down() {
        let names = vec!["A".to_string(), "B".to_string(), "C".to_string()];
        assert_eq!(row_label(&names, 2.0), "A");
        assert_eq!(row_label(&names, 0.0), "C");
        assert_eq!(row_label(&names, 0.5), "");
        assert_eq!(row_y(0, 3), 2.0);
    }

    #[test]
    fn names_are_shortened_with_an_ellipsis() {
        assert_eq!(short("Fireworks AI", 20), "Fireworks AI");
        assert_eq!(short("abcdefgh", 5), "abcd…");
    }

    #[test]
    fn svg_root_is_rewritten_without_size_or_namespace() {
        let s = svg((100, 50), "a <label>", |_| Ok(()));
        assert!(s.starts_with(
            "<svg class=\"chart\" viewBox=\"0 0 100 50\" role=\"img\" aria-label=\"a &lt;label&gt;\">"
        ));
        assert!(!s.contains("xmlns"));
        assert!(s.trim_end().ends_with("</svg>"));
    }
}
