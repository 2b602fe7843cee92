//! A phase's committed records grouped as the slots that sent them, for the sources that read
//! history (conversations, agent runs): their `replay` walks each slot in sequence order, as a
//! resume rebuilds it. Also where an open loop's slot opens (release k is slot k).

use openbench_common::record::TerminalRecord;
use openbench_common::schedule::LoadPosition;
use std::collections::BTreeMap;

/// Each slot's records of phase `phase` in sequence order, each with the position it was sent
/// at. Slots come in (lane, slot) order; a record whose lane `lane_index` does not know is left
/// out (it is not a lane of this phase).
pub fn slots_in_order<'a>(
    phase: u32,
    lane_index: impl Fn(&str) -> Option<usize>,
    records: &[&'a TerminalRecord],
) -> Vec<Vec<(LoadPosition, &'a TerminalRecord)>> {
    let mut slots: BTreeMap<(&str, u32), Vec<&'a TerminalRecord>> = BTreeMap::new();
    for r in records {
        slots
            .entry((r.lane.as_str(), r.slot.unwrap_or(0)))
            .or_default()
            .push(r);
    }
    let mut out = Vec::new();
    for ((lane, slot), mut mine) in slots {
        let Some(index) = lane_index(lane) else {
            continue;
        };
        mine.sort_by_key(|r| r.sequence);
        out.push(
            mine.into_iter()
                .map(|r| {
                    let at = LoadPosition {
                        phase,
                        lane: lane.to_string(),
                        lane_index: index,
                        slot,
                        sequence: r.sequence.unwrap_or(0),
                    };
                    (at, r)
                })
                .collect(),
        );
    }
    out
}

/// The position whose step request opens the open-loop slot at `at`: release k is slot k, and
/// its first request is the step's request k (slot 0, sequence k), so releases ask different
/// prompts as an open loop without history numbers them.
pub fn release_opening(at: &LoadPosition) -> LoadPosition {
    LoadPosition {
        slot: 0,
        sequence: u64::from(at.slot),
        ..at.clone()
    }
}
