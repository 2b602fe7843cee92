//! Small pure pieces: ids and slugs, the methodology anchors the leaderboard links to, and the
//! chart's text alternative.

use crate::chart::{Series, bars};
use crate::docs::{METHODOLOGY_MD, heading_id, markdown_html};
use crate::leaderboard::COLUMNS;
use crate::model::slug;
use crate::page::Unit;

#[test]
fn ids_and_slugs_keep_letters_and_digits() {
    assert_eq!(
        heading_id("3. Streams and timings"),
        "3-streams-and-timings"
    );
    assert_eq!(
        heading_id("5. Scoring (no partial credit)"),
        "5-scoring-no-partial-credit"
    );
    assert_eq!(
        slug("micro-single-task", "GLM 5.3 Flash"),
        "micro-single-task-glm-5-3-flash"
    );
    assert_eq!(slug("load", ""), "load");
}

#[test]
fn every_leaderboard_definition_link_lands_on_a_methodology_heading() {
    let html = markdown_html(METHODOLOGY_MD);
    for c in &COLUMNS {
        assert!(
            html.contains(&format!("id=\"{}\"", c.anchor)),
            "{}: #{}",
            c.header,
            c.anchor
        );
    }
}

#[test]
fn a_chart_describes_every_value_in_text() {
    let svg = bars(
        "t",
        "Title",
        &["A".to_string(), "B".to_string()],
        &[Series {
            name: "E2E p99",
            values: vec![Some(3228.84), None],
        }],
        Unit::Ms,
    );
    assert!(svg.contains("<title id=\"t-t\">Title</title>"));
    assert!(svg.contains("<desc id=\"t-d\">A: E2E p99 3,228.8; B: E2E p99 —.</desc>"));
    // One bar (B has no value; the legend's swatch is 12 high, a bar 12.0), at full width.
    assert_eq!(svg.matches("height=\"12.0\"").count(), 1);
    assert!(svg.contains("width=\"410.0\""));
}
