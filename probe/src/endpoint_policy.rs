//! Where a probe owner lets each credential go: deny by default.
//!
//! A session (from whoever holds the probe's token, or controls the coordinator) names the
//! endpoints; only the probe owner decides where their keys may be sent. An adapter that sends
//! credential variables may call an endpoint only when every one of those variables allows it:
//!
//! - `--allow-endpoint URL` allows a URL prefix for every credential of the probe;
//! - `--allow-endpoint VAR=URL` allows it for the variable `VAR` only;
//! - the spec the owner names (`--spec`, usually the bundled reference spec) allows each of its
//!   providers' endpoints for that provider's own credential variables (an `env://VAR` endpoint:
//!   whatever URL `VAR` holds on the probe, when the session names that same `env://VAR`).
//!
//! Plaintext `http://` to a host that is not loopback carries a credential only when an explicit
//! `--allow-endpoint` entry allows it: a spec's default never does. An adapter without
//! credentials sends no key; it is checked only against the entries for every credential, when
//! the owner gave any.

use openbench_common::spec::{Endpoint, ProviderAdapter};
use std::collections::{BTreeMap, BTreeSet};

/// An endpoint as an entry names it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Target {
    /// A URL prefix: same scheme, host and port, path starting with the entry's.
    Prefix(reqwest::Url),
    /// The URL an `env://VAR` endpoint resolves to on the probe.
    FromEnv(String),
}

/// One allowed endpoint and who allowed it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Entry {
    target: Target,
    /// Given by the owner with `--allow-endpoint` (else a spec's default).
    explicit: bool,
}

impl Entry {
    /// True when this entry allows `url` (the resolved endpoint) for a session endpoint written
    /// as `written`.
    fn allows(&self, url: &reqwest::Url, written: &str) -> bool {
        let allowed = match &self.target {
            Target::Prefix(entry) => {
                entry.scheme() == url.scheme()
                    && entry.host_str() == url.host_str()
                    && entry.port_or_known_default() == url.port_or_known_default()
                    && url.path().starts_with(entry.path())
            }
            Target::FromEnv(var) => written.strip_prefix("env://") == Some(var.as_str()),
        };
        allowed && (self.explicit || !plaintext_beyond_loopback(url))
    }

    fn describe(&self) -> String {
        match &self.target {
            Target::Prefix(url) => url.to_string(),
            Target::FromEnv(var) => format!("env://{var}"),
        }
    }
}

/// True for `http://` to a host that is not loopback (`localhost`, 127.0.0.0/8, `::1`).
fn plaintext_beyond_loopback(url: &reqwest::Url) -> bool {
    if url.scheme() != "http" {
        return false;
    }
    let host = url.host_str().unwrap_or_default();
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let loopback = host.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    !loopback
}

/// An `--allow-endpoint` value that is neither `URL` nor `VAR=URL` with an http(s) URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("allowed endpoint {entry:?} is not an http(s) URL (expected URL or VAR=URL)")]
pub struct BadEntry {
    /// The value as given.
    pub entry: String,
}

/// Why an endpoint is refused for an adapter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denied {
    /// Credential variables whose allowed endpoints do not include it.
    Credentials(Vec<String>),
    /// No credential is sent, and the entries for every credential do not include it.
    NotListed,
}

/// The endpoints each credential variable of a probe may reach. The default allows nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointPolicy {
    /// Entries for every credential (`--allow-endpoint URL`).
    every: Vec<Entry>,
    /// Entries for one variable (`--allow-endpoint VAR=URL`, a spec's defaults).
    per_credential: BTreeMap<String, Vec<Entry>>,
}

impl EndpointPolicy {
    /// A policy from `--allow-endpoint` values (`URL` or `VAR=URL`); refuses one that is not,
    /// naming it.
    pub fn parse(entries: &[String]) -> Result<EndpointPolicy, BadEntry> {
        let mut policy = EndpointPolicy::default();
        for raw in entries.iter().map(|e| e.trim()).filter(|e| !e.is_empty()) {
            let bad = || BadEntry {
                entry: raw.to_string(),
            };
            let (var, url) = match raw.split_once('=') {
                Some((var, url)) if is_variable_name(var) => (Some(var), url),
                _ => (None, raw),
            };
            let url = reqwest::Url::parse(url)
                .ok()
                .filter(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
                .ok_or_else(bad)?;
            let entry = Entry {
                target: Target::Prefix(url),
                explicit: true,
            };
            match var {
                Some(var) => policy.per_credential_mut(var).push(entry),
                None => policy.every.push(entry),
            }
        }
        Ok(policy)
    }

    /// Adds the endpoints of a spec's providers, each for that provider's own credential
    /// variables, as defaults (plaintext beyond loopback stays refused). `sim://` endpoints
    /// carry no default: a probe serving them resolves them itself.
    pub fn with_spec_defaults(mut self, providers: &[ProviderAdapter]) -> EndpointPolicy {
        for provider in providers {
            let target = match provider.endpoint_kind() {
                Endpoint::Url(url) => match reqwest::Url::parse(url) {
                    Ok(url) => Target::Prefix(url),
                    Err(_) => continue,
                },
                Endpoint::FromEnv { var } => Target::FromEnv(var.to_string()),
                Endpoint::Simulator { .. } | Endpoint::Unknown(_) => continue,
            };
            for var in provider.auth.env_names() {
                let entry = Entry {
                    target: target.clone(),
                    explicit: false,
                };
                let list = self.per_credential_mut(&var);
                if !list.contains(&entry) {
                    list.push(entry);
                }
            }
        }
        self
    }

    fn per_credential_mut(&mut self, var: &str) -> &mut Vec<Entry> {
        self.per_credential.entry(var.to_string()).or_default()
    }

    /// Whether an adapter sending `credentials` may call `url`, its endpoint resolved from
    /// `written` (the endpoint as the session wrote it).
    pub fn check(
        &self,
        credentials: &[String],
        url: &reqwest::Url,
        written: &str,
    ) -> Result<(), Denied> {
        let allows = |entries: &[Entry]| entries.iter().any(|e| e.allows(url, written));
        if credentials.is_empty() {
            return if self.every.is_empty() || allows(&self.every) {
                Ok(())
            } else {
                Err(Denied::NotListed)
            };
        }
        let denied: Vec<String> = credentials
            .iter()
            .filter(|var| {
                !allows(&self.every)
                    && !self
                        .per_credential
                        .get(var.as_str())
                        .is_some_and(|list| allows(list))
            })
            .cloned()
            .collect();
        if denied.is_empty() {
            Ok(())
        } else {
            Err(Denied::Credentials(denied))
        }
    }

    /// Variables that entries name but `credentials` lacks (a misspelt `VAR=URL` allows nothing).
    pub fn unknown_variables(&self, credentials: &BTreeSet<String>) -> Vec<String> {
        self.per_credential
            .keys()
            .filter(|var| !credentials.contains(var.as_str()))
            .cloned()
            .collect()
    }

    /// What each of `credentials` may reach, one `VAR → url, url` per variable joined with
    /// `; ` (`nothing` for a variable no entry allows), for the probe's ready line.
    pub fn describe(&self, credentials: &BTreeSet<String>) -> String {
        credentials
            .iter()
            .map(|var| {
                let reach: Vec<String> = self
                    .every
                    .iter()
                    .chain(self.per_credential.get(var).into_iter().flatten())
                    .map(Entry::describe)
                    .collect();
                let reach = if reach.is_empty() {
                    "nothing".to_string()
                } else {
                    reach.join(", ")
                };
                format!("{var} → {reach}")
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// `[A-Za-z0-9_]+`: an environment variable name as `--credential` takes it.
pub fn is_variable_name(name: &str) -> bool {
    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn url(text: &str) -> reqwest::Url {
        reqwest::Url::parse(text).unwrap()
    }

    fn check(policy: &EndpointPolicy, vars: &[&str], endpoint: &str) -> Result<(), Denied> {
        let vars: Vec<String> = vars.iter().map(|v| v.to_string()).collect();
        policy.check(&vars, &url(endpoint), endpoint)
    }

    #[test]
    fn nothing_is_allowed_for_a_credential_by_default() {
        let policy = EndpointPolicy::default();
        assert_eq!(
            check(&policy, &["K"], "http://127.0.0.2:9000/v1/chat/completions"),
            Err(Denied::Credentials(vec!["K".into()]))
        );
        // No key goes out: nothing to protect.
        assert_eq!(check(&policy, &[], "http://127.0.0.2:9000/v1"), Ok(()));
    }

    #[test]
    fn entries_match_origin_and_path_prefix_for_their_variable() {
        let policy = EndpointPolicy::parse(&[
            "https://api.together.xyz/v1/".to_string(),
            "K=http://127.0.0.1:8080".to_string(),
            "L=http://10.0.0.5:8000/v1/".to_string(),
        ])
        .unwrap();
        assert_eq!(
            check(&policy, &["X"], "https://api.together.xyz:443/v1/chat"),
            Ok(())
        );
        assert_eq!(
            check(&policy, &["X"], "https://api.together.xyz/v2/chat"),
            Err(Denied::Credentials(vec!["X".into()]))
        );
        assert!(check(&policy, &["X"], "https://api.together.xyz.evil.test/v1/").is_err());
        assert!(
            check(
                &policy,
                &["X"],
                "https://evil.test/v1/?https://api.together.xyz/v1/"
            )
            .is_err()
        );
        assert_eq!(check(&policy, &["K"], "http://127.0.0.1:8080/any"), Ok(()));
        assert!(check(&policy, &["K"], "http://127.0.0.1:8081/any").is_err());
        // One adapter, two variables: each must allow the endpoint.
        assert_eq!(
            check(&policy, &["K", "L"], "http://127.0.0.1:8080/any"),
            Err(Denied::Credentials(vec!["L".into()]))
        );
        // Explicit plaintext beyond loopback is the owner's call.
        assert_eq!(check(&policy, &["L"], "http://10.0.0.5:8000/v1/x"), Ok(()));
        // Keyless adapters: only the entries for every credential apply.
        assert_eq!(
            check(&policy, &[], "http://127.0.0.1:8080/any"),
            Err(Denied::NotListed)
        );
        assert_eq!(
            EndpointPolicy::parse(&["ftp://x".into()])
                .unwrap_err()
                .to_string(),
            "allowed endpoint \"ftp://x\" is not an http(s) URL (expected URL or VAR=URL)"
        );
        assert!(EndpointPolicy::parse(&["K=not a url".into()]).is_err());
    }

    #[test]
    fn a_spec_allows_each_provider_endpoint_for_its_own_variables_never_plaintext_beyond_loopback()
    {
        let keyed = |key: &str, endpoint: &str, env: &str| ProviderAdapter {
            auth: openbench_common::spec::Auth::Bearer { env: env.into() },
            ..ProviderAdapter::open(key, endpoint, "m")
        };
        let providers = [
            keyed("a", "https://a.test/v1/chat/completions", "A_KEY"),
            keyed("b", "http://10.1.1.1:80/v1/chat/completions", "B_KEY"),
            keyed("c", "http://127.0.0.1:9/v1/chat/completions", "C_KEY"),
            keyed("d", "env://D_URL", "D_KEY"),
            keyed("e", "sim://zai", "E_KEY"),
        ];
        let policy = EndpointPolicy::default().with_spec_defaults(&providers);
        assert_eq!(
            check(&policy, &["A_KEY"], "https://a.test/v1/chat/completions"),
            Ok(())
        );
        assert!(check(&policy, &["B_KEY"], "https://a.test/v1/chat/completions").is_err());
        assert!(check(&policy, &["B_KEY"], "http://10.1.1.1/v1/chat/completions").is_err());
        assert_eq!(
            check(
                &policy,
                &["C_KEY"],
                "http://127.0.0.1:9/v1/chat/completions"
            ),
            Ok(())
        );
        let resolved = url("https://modal.test/v1/chat/completions");
        assert_eq!(
            policy.check(&["D_KEY".into()], &resolved, "env://D_URL"),
            Ok(())
        );
        assert!(
            policy
                .check(&["D_KEY".into()], &resolved, resolved.as_str())
                .is_err()
        );
        assert!(
            policy
                .check(&["A_KEY".into()], &resolved, "env://D_URL")
                .is_err()
        );
        assert_eq!(
            policy.describe(&["A_KEY".to_string(), "D_KEY".into(), "Z".into()].into()),
            "A_KEY → https://a.test/v1/chat/completions; D_KEY → env://D_URL; Z → nothing"
        );
        assert_eq!(
            policy.describe(&["E_KEY".to_string()].into()),
            "E_KEY → nothing"
        );
    }
}
