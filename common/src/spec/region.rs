//! Where a region's probes run: one probe, or several replicas sharing the region's load lanes
//! (docs/load.md, "Probe replicas"). Each probe has a key: the region's label for its one probe,
//! `REGION#k` for replica `k`; sessions, health monitors, clock offsets and canaries are kept
//! per key, records name the region.

use serde::{Deserialize, Serialize};

/// Separates a replicated region's label from its replica number in a probe key (`eu#2`); a
/// region label may not contain it.
pub const REPLICA_SEPARATOR: char = '#';

/// Where a set of probes runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Region {
    /// Region label (`local`, `eu-west`).
    pub name: String,
    /// `local` runs the probe in-process, its gRPC services called in memory
    /// (`OPENBENCH_LOCAL_PROBE=loopback`: behind a loopback gRPC server); otherwise the probe
    /// server's gRPC URL (`http://10.0.0.2:7070`).
    #[serde(default = "default_probe")]
    pub probe: String,
    /// Several probes serving the region together, each `local` or a gRPC URL (a StatefulSet's
    /// per-pod names, deploy/README.md): a load phase's lane in this region is split over them,
    /// each sending its share of the one schedule on its own clock. Paired rounds refuse it
    /// (one probe per region keeps a round's lanes launched together). Give either `probe` or
    /// `replicas`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicas: Vec<String>,
}

impl Region {
    /// (probe key, probe) of every probe of the region: `(name, probe)` without replicas,
    /// `(name#k, replicas[k])` with them.
    pub fn probes(&self) -> Vec<(String, String)> {
        if self.replicas.is_empty() {
            return vec![(self.name.clone(), self.probe.clone())];
        }
        self.replicas
            .iter()
            .enumerate()
            .map(|(k, probe)| (replica_key(&self.name, k), probe.clone()))
            .collect()
    }

    /// Every rule the region breaks, each naming its field (`regions[i].…`).
    pub fn problems(&self, i: usize) -> Vec<String> {
        let mut problems = Vec::new();
        if self.name.contains(REPLICA_SEPARATOR) {
            problems.push(format!(
                "regions[{i}].name: {:?} may not contain {REPLICA_SEPARATOR:?} (it separates a \
                 replica's number)",
                self.name
            ));
        }
        if let ProbeLocation::Unknown(_) = ProbeLocation::parse(&self.probe) {
            problems.push(format!(
                "regions[{i}].probe: {:?} must be `local` or a gRPC URL",
                self.probe
            ));
        }
        if !self.replicas.is_empty() && self.probe != default_probe() {
            problems.push(format!(
                "regions[{i}].replicas: give either `probe` ({:?}) or `replicas`, not both",
                self.probe
            ));
        }
        for (k, probe) in self.replicas.iter().enumerate() {
            if let ProbeLocation::Unknown(_) = ProbeLocation::parse(probe) {
                problems.push(format!(
                    "regions[{i}].replicas[{k}]: {probe:?} must be `local` or a gRPC URL"
                ));
            }
        }
        problems
    }
}

/// The probe key of replica `k` of `region`.
fn replica_key(region: &str, k: usize) -> String {
    format!("{region}{REPLICA_SEPARATOR}{k}")
}

/// The region a probe key belongs to: `eu` for `eu#2` and for `eu`.
pub fn region_of_probe(key: &str) -> &str {
    key.split_once(REPLICA_SEPARATOR)
        .map_or(key, |(region, _)| region)
}

/// Where a region's probe runs (parsed from its `probe` string).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeLocation<'a> {
    /// `local`: in this process (its gRPC services called in memory, or behind a loopback
    /// server with `OPENBENCH_LOCAL_PROBE=loopback`).
    InProcess,
    /// A remote probe server's gRPC URL.
    Remote(&'a str),
    /// Anything else (refused by validation).
    Unknown(&'a str),
}

impl<'a> ProbeLocation<'a> {
    /// Parses a region's `probe` string.
    pub fn parse(probe: &'a str) -> ProbeLocation<'a> {
        if probe == "local" {
            ProbeLocation::InProcess
        } else if probe.starts_with("http://") || probe.starts_with("https://") {
            ProbeLocation::Remote(probe)
        } else {
            ProbeLocation::Unknown(probe)
        }
    }
}

fn default_probe() -> String {
    String::from("local")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn region(probe: &str, replicas: &[&str]) -> Region {
        Region {
            name: "eu".into(),
            probe: probe.into(),
            replicas: replicas.iter().map(|r| r.to_string()).collect(),
        }
    }

    #[test]
    fn a_replicated_region_has_one_key_per_replica() {
        let r = region("local", &["http://a:7070", "http://b:7070"]);
        let keys: Vec<_> = r.probes();
        assert_eq!(
            keys,
            [
                ("eu#0".to_string(), "http://a:7070".to_string()),
                ("eu#1".to_string(), "http://b:7070".to_string())
            ]
        );
        assert_eq!(region_of_probe("eu#1"), "eu");
        assert_eq!(region_of_probe("eu"), "eu");
        assert_eq!(
            region("local", &[]).probes(),
            [("eu".into(), "local".into())]
        );
    }

    #[test]
    fn replicas_with_a_probe_or_a_bad_entry_are_refused_by_field() {
        let r = region("http://x:1", &["http://a:7070", "ftp://b"]);
        assert_eq!(
            r.problems(3),
            [
                "regions[3].replicas: give either `probe` (\"http://x:1\") or `replicas`, not both",
                "regions[3].replicas[1]: \"ftp://b\" must be `local` or a gRPC URL",
            ]
        );
        let mut named = region("local", &[]);
        named.name = "eu#1".into();
        assert_eq!(named.problems(0).len(), 1);
    }
}
