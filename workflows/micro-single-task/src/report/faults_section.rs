//! The report's "Faults and the probe link" section: results not measured in their original
//! round (re-runs of harness-failed lane-rounds, resumed partial rounds), each region's
//! coordinator↔probe round-trip time and clock offset, outages, and the launch skew measured on
//! the probes. Rendered only when there is something to say, so runs without any of it report
//! exactly as before.

use super::markdown::table;
use crate::metrics::{LaneTable, Observation};
use openbench_common::rundir::{RegionLink, RegionOutage, RoundLine};
use openbench_common::stats::nearest_rank;
use std::collections::BTreeMap;
use std::fmt::Write;

/// What the section shows, gathered from the records, the manifest and the round lines.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FaultsView {
    /// (round index, lane, request id) of every result measured out of its round.
    pub out_of_round: Vec<(u64, String, String)>,
    /// Region → its link figures (latest session).
    pub links: BTreeMap<String, RegionLink>,
    /// Every outage.
    pub outages: Vec<RegionOutage>,
    /// Probe-side launch skew of every round that has one, ms.
    pub probe_skews_ms: Vec<f64>,
}

impl FaultsView {
    /// Gathers the view.
    pub fn gather(
        observations: &[Observation],
        lanes: &LaneTable,
        links: BTreeMap<String, RegionLink>,
        outages: Vec<RegionOutage>,
        rounds: &[RoundLine],
    ) -> FaultsView {
        let out_of_round = observations
            .iter()
            .filter(|o| o.out_of_round && !o.is_harness())
            .map(|o| {
                let lane = &lanes.lanes[o.lane as usize].lane;
                (o.round_index, lane.clone(), o.request_id.clone())
            })
            .collect();
        FaultsView {
            out_of_round,
            links,
            outages,
            probe_skews_ms: rounds
                .iter()
                .filter_map(|r| r.probe_launch_skew_ms)
                .collect(),
        }
    }

    fn is_empty(&self) -> bool {
        self.out_of_round.is_empty() && self.links.is_empty() && self.outages.is_empty()
    }
}

/// Appends the section to `out` (nothing when the view is empty).
pub fn render(out: &mut String, view: &FaultsView) {
    if view.is_empty() {
        return;
    }
    out.push_str("## Faults and the probe link\n\n");
    if view.out_of_round.is_empty() {
        out.push_str("Every result was measured in its original round.\n\n");
    } else {
        let _ = writeln!(
            out,
            "{} result(s) were **not measured in their original round**: they re-ran a \
             lane-round that had failed in our harness (a region unreachable, a probe lost), \
             after the round's other lanes had been measured. They count in their lane's \
             tables above, but are left out of the paired comparisons (per-round winners and \
             A − B differences), since they were not launched together with that round's \
             other lanes.\n",
            view.out_of_round.len()
        );
        let rows: Vec<Vec<String>> = view
            .out_of_round
            .iter()
            .map(|(round, lane, id)| vec![round.to_string(), lane.clone(), id.clone()])
            .collect();
        table(out, &["Round", "Lane", "Request"], &rows);
    }
    if !view.links.is_empty() {
        out.push_str(
            "Coordinator↔probe link per region (`Link.Ping` on the channel that carries the \
             requests). The clock offset is the probe's clock minus the coordinator's, from the \
             fastest ping (probe time − midpoint of send and receive); its error is at most half \
             that ping's round trip. The link never enters a metric: every timing is taken on \
             the probe.\n\n",
        );
        let rows: Vec<Vec<String>> = view
            .links
            .iter()
            .map(|(region, l)| {
                vec![
                    region.clone(),
                    l.samples.to_string(),
                    format!("{:.2}", l.rtt_ms_min),
                    format!("{:.2}", l.rtt_ms_p50),
                    format!("{:.2}", l.rtt_ms_max),
                    format!("{:+.2} ± {:.2}", l.clock_offset_ms, l.clock_offset_error_ms),
                ]
            })
            .collect();
        table(
            out,
            &[
                "Region",
                "Pings",
                "RTT min (ms)",
                "RTT p50 (ms)",
                "RTT max (ms)",
                "Clock offset (ms)",
            ],
            &rows,
        );
    }
    if let (Some(p50), Some(max)) = (
        nearest_rank(&view.probe_skews_ms, 0.5),
        nearest_rank(&view.probe_skews_ms, 1.0),
    ) {
        let _ = writeln!(
            out,
            "Launch skew measured on the probes (max − min request start per round, across \
             regions on the coordinator's clock through each region's offset): p50 {p50:.2} ms, \
             max {max:.2} ms over {} rounds.\n",
            view.probe_skews_ms.len()
        );
    }
    if !view.outages.is_empty() {
        let rows: Vec<Vec<String>> = view
            .outages
            .iter()
            .map(|o| {
                vec![
                    o.region.clone(),
                    o.last_ok_at.clone().unwrap_or_else(|| "—".into()),
                    o.detected_at.clone(),
                    o.restored_at.clone().unwrap_or_else(|| "still down".into()),
                    o.reason.clone(),
                ]
            })
            .collect();
        table(
            out,
            &["Region", "Last answer", "Declared down", "Back", "Reason"],
            &rows,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_section_names_each_out_of_round_result_and_each_regions_link() {
        let mut out = String::new();
        render(&mut out, &FaultsView::default());
        assert_eq!(out, "", "nothing to say, no section");
        let view = FaultsView {
            out_of_round: vec![(3, "p@west".into(), "req-abc".into())],
            links: BTreeMap::from([(
                "west".to_string(),
                RegionLink {
                    samples: 12,
                    rtt_ms_min: 0.5,
                    rtt_ms_p50: 1.25,
                    rtt_ms_max: 9.0,
                    clock_offset_ms: -0.125,
                    clock_offset_error_ms: 0.25,
                },
            )]),
            outages: vec![RegionOutage {
                region: "west".into(),
                detected_at: "2026-12-01T21:00:02.300000Z".into(),
                last_ok_at: Some("2026-12-01T21:00:00.000000Z".into()),
                reason: "health ping unanswered after 2000 ms".into(),
                restored_at: None,
            }],
            probe_skews_ms: vec![3.0, 1.0, 2.0],
        };
        render(&mut out, &view);
        assert!(out.starts_with("## Faults and the probe link\n\n1 result(s) were **not measured in their original round**"), "{out}");
        assert!(out.contains("| 3 | p@west | req-abc |\n"), "{out}");
        assert!(
            out.contains("| west | 12 | 0.50 | 1.25 | 9.00 | -0.12 ± 0.25 |\n"),
            "{out}"
        );
        assert!(
            out.contains("p50 2.00 ms, max 3.00 ms over 3 rounds"),
            "{out}"
        );
        assert!(out.contains("| west | 2026-12-01T21:00:00.000000Z | 2026-12-01T21:00:02.300000Z | still down | health ping unanswered after 2000 ms |\n"), "{out}");
    }
}
