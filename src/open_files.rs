//! The open-files soft limit: every connection is a file descriptor, and a process that holds
//! many (a probe server's connection caps, a load run's thousand streams, each one connection to
//! the provider) needs more than the usual soft limit of 1,024. Raised safely through rustix
//! (the workspace forbids unsafe code).

/// The most the soft limit is raised to.
const OPEN_FILES_TARGET: u64 = 65_536;

/// Raises the open-files soft limit towards the hard limit (at most 65,536); child processes
/// started afterwards inherit it. `Some(what is short)` when the result stays below `needed`.
pub fn raise_limit(needed: u64) -> Option<String> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    let hard = limit.maximum.unwrap_or(u64::MAX);
    let target = hard.min(OPEN_FILES_TARGET);
    let mut soft = limit.current.unwrap_or(u64::MAX);
    if soft < target {
        let raised = rustix::process::Rlimit {
            current: Some(target),
            maximum: limit.maximum,
        };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            soft = target;
        }
    }
    (soft < needed).then(|| {
        format!(
            "the open-files limit is {soft} (hard {}), below the {needed} needed",
            limit
                .maximum
                .map_or("unlimited".to_string(), |m| m.to_string())
        )
    })
}
