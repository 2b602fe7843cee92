//! Checks of the paired-comparisons page and the contract against the store, read back with
//! plain SQL (`paired_wins`, `paired_pairs`, `run_contracts`).

use super::expected_text;
use openbench_site::model::SnapshotResults;
use openbench_store::{Store, Value};

/// One `<data>` element: value, its attributes and its text.
pub struct DataElement {
    pub value: f64,
    pub lane: String,
    pub versus: Option<String>,
    pub metric: String,
    pub text: String,
}

/// Every `<data …>` of `html`, with `data-versus` when it has one.
pub fn data_elements(html: &str) -> Vec<DataElement> {
    html.split("<data ")
        .skip(1)
        .map(|rest| {
            let tag = &rest[..rest.find('>').unwrap()];
            let attr = |name: &str| {
                tag.split(&format!("{name}=\""))
                    .nth(1)
                    .map(|r| r[..r.find('"').unwrap()].to_string())
            };
            DataElement {
                value: attr("value").unwrap().parse().unwrap(),
                lane: attr("data-lane").unwrap(),
                versus: attr("data-versus"),
                metric: attr("data-metric").unwrap(),
                text: rest[tag.len() + 1..rest.find("</data>").unwrap()].to_string(),
            }
        })
        .collect()
}

/// How the page must show a paired figure (formatted by the test's own rules).
fn paired_text(value: f64, metric: &str) -> String {
    match metric {
        "win_share" | "coverage" => expected_text(value, "x_rate"),
        m if m.starts_with("e2e_diff") => format!("{} ms", expected_text(value, "e2e_latency")),
        _ => expected_text(value, "count"),
    }
}

/// The paired page of `run_id` (`{bench}-paired.html` in `site`): every `<data>` equals the
/// stored `paired_wins` / `paired_pairs` value bit for bit and reads as that value rounded; the
/// analysis text holds no other number; the results JSON's `paired` has one entry per stored row.
/// Returns the figures checked.
pub fn assert_paired_page_is_the_stores(
    site: &std::path::Path,
    bench: &str,
    store: &str,
    results: &SnapshotResults,
) -> usize {
    let html = std::fs::read_to_string(site.join(format!("{bench}-paired.html"))).unwrap();
    let mut db = Store::open(store).unwrap();
    let id = Value::from(results.run_id.as_str());
    let mut checked = 0;
    for d in data_elements(&html) {
        let rows = match &d.versus {
            Some(b) => db
                .query(
                    &format!(
                        "SELECT {} FROM paired_pairs WHERE run_id = $1 AND lane_a = $2 AND \
                         lane_b = $3",
                        d.metric
                    ),
                    &[
                        id.clone(),
                        Value::from(d.lane.as_str()),
                        Value::from(b.as_str()),
                    ],
                )
                .unwrap(),
            None => db
                .query(
                    &format!(
                        "SELECT {} FROM paired_wins WHERE run_id = $1 AND lane = $2",
                        d.metric
                    ),
                    &[id.clone(), Value::from(d.lane.as_str())],
                )
                .unwrap(),
        };
        let want = rows[0][0].real().unwrap();
        assert_eq!(
            d.value.to_bits(),
            want.to_bits(),
            "{} {:?} {}",
            d.lane,
            d.versus,
            d.metric
        );
        assert_eq!(
            d.text,
            paired_text(want, &d.metric),
            "{} {}",
            d.lane,
            d.metric
        );
        checked += 1;
    }
    let text = html.split("<p class=\"analysis\">").nth(1).unwrap();
    let text = &text[..text.find("</p>").unwrap()];
    let mut outside = String::new();
    for (i, part) in text.split("<data ").enumerate() {
        outside.push_str(if i == 0 {
            part
        } else {
            part.split("</data>").nth(1).unwrap()
        });
    }
    assert!(
        !outside
            .replace("p99", "")
            .replace("E2E", "")
            .chars()
            .any(|c| c.is_ascii_digit()),
        "a number not from the store: {outside}"
    );
    let mut count = |table: &str| {
        db.query(
            &format!("SELECT count(*) FROM {table} WHERE run_id = $1"),
            std::slice::from_ref(&id),
        )
        .unwrap()[0][0]
            .int()
            .unwrap() as usize
    };
    let paired = results.paired.as_ref().unwrap();
    assert_eq!(paired.wins.len(), count("paired_wins"));
    assert_eq!(paired.pairs.len(), count("paired_pairs"));
    // Every compared lane has a win share and its rounds; every ordered pair its five figures
    // (minus any empty one).
    let lanes = paired.wins.len();
    assert!(lanes >= 2, "{lanes} compared lanes");
    assert!(
        checked >= 2 * lanes + lanes * (lanes - 1) * 2,
        "{checked} figures"
    );
    checked
}
