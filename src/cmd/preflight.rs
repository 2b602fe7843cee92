//! What a run would refuse only once it starts, checked before a run directory is made: `init`
//! (and `run` and `smoke` creating a new run) list every problem at once, each naming its field,
//! so a spec `init` accepts is one `run` accepts.
//!
//! The spec's own rules are checked when it is parsed (`Spec::problems`); these are the rules
//! that need the dataset, the simulator's catalogue or a URL parser.

use anyhow::bail;
use openbench_common::spec::Endpoint;
use openbench_coordinator::RunInputs;

/// Every problem a run of `inputs` would meet before its first request, each naming its field.
pub fn problems(inputs: &RunInputs) -> Vec<String> {
    let s = &inputs.spec.spec;
    let mut problems = Vec::new();
    for (i, provider) in s.providers.iter().enumerate() {
        let at = format!("providers[{i}] ({}).endpoint", provider.key);
        match provider.endpoint_kind() {
            Endpoint::Url(url) => match reqwest::Url::parse(url) {
                Ok(parsed) if parsed.host_str().is_some_and(|h| !h.is_empty()) => {}
                Ok(_) => problems.push(format!("{at}: {url:?} names no host")),
                Err(e) => problems.push(format!("{at}: {url:?} is not a valid URL ({e})")),
            },
            Endpoint::Simulator { profile } => {
                // `sim://plain?slots=2&queue=8&prefix_cache=on`: the profile, then its capacity
                // and prefix cache (simulator README, "Capacity", "Prefix cache").
                let (name, query) = openbench_simulator::capacity::split_profile(profile);
                match openbench_simulator::profile::find(name) {
                    Ok(profile) => {
                        let cache = profile.spec.prefix_cache;
                        if let Err(e) = openbench_simulator::prefix_cache::requested(query, cache) {
                            problems.push(format!("{at}: {e}"));
                        }
                    }
                    Err(e) => problems.push(format!("{at}: {e}")),
                }
                if let Err(e) = openbench_simulator::capacity::CapacitySpec::parse_query(query) {
                    problems.push(format!("{at}: {e}"));
                }
            }
            Endpoint::FromEnv { .. } | Endpoint::Unknown(_) => {}
        }
    }
    problems.extend(inputs.workflow.dataset_problems(s, &inputs.dataset));
    problems
}

/// Refuses `inputs` listing every [`problems`] entry, naming the spec.
pub fn check(inputs: &RunInputs) -> anyhow::Result<()> {
    let problems = problems(inputs);
    if problems.is_empty() {
        return Ok(());
    }
    bail!(
        "spec {} cannot run:\n  - {}",
        inputs.spec.path.display(),
        problems.join("\n  - ")
    )
}
