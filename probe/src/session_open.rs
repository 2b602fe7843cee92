//! Opening a session (`OpenSession`): the coordinator sends the run, the request contract and the
//! adapters; the probe adds only what it keeps itself — credentials — and refuses, naming the
//! provider and the variable (never its value), a session it cannot serve.
//!
//! What a probe owner controls: which credential variables the probe may read at all
//! ([`CredentialSource`]; a session naming any other is refused, so a token holder cannot make
//! the probe send an arbitrary variable), and which endpoints each of them may go to
//! ([`EndpointPolicy`]; nothing unless the owner allows it). A refused session sends nothing.

use crate::credentials::Credentials;
use crate::endpoint_policy::{Denied, EndpointPolicy};
use crate::executor::Executor;
use openbench_common::credentials::CredentialsError;
use openbench_common::probe_session::SessionOpen;
use openbench_common::spec::{Endpoint, ProviderAdapter};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

/// Where a probe's credentials come from.
#[derive(Debug, Clone)]
pub enum CredentialSource {
    /// Values handed in by the process that starts the probe (an in-process probe gets the
    /// coordinator's own).
    Given(Credentials),
    /// Read at every session open from the process environment, then the `.env` file at
    /// `dotenv`, but only for the `declared` variable names.
    Environment {
        /// The only variables a session may name.
        declared: BTreeSet<String>,
        /// The `.env` file read for names the environment lacks.
        dotenv: PathBuf,
    },
}

impl CredentialSource {
    /// The values of `names`; refuses names outside the declared set and names without a value.
    fn collect(&self, names: &[String]) -> Result<Credentials, Lacking> {
        match self {
            CredentialSource::Given(credentials) => {
                let missing: Vec<String> = names
                    .iter()
                    .filter(|n| credentials.get(n).is_none())
                    .cloned()
                    .collect();
                if missing.is_empty() {
                    Ok(credentials.clone())
                } else {
                    Err(Lacking::Missing(missing))
                }
            }
            CredentialSource::Environment { declared, dotenv } => {
                let undeclared: Vec<String> = names
                    .iter()
                    .filter(|n| !declared.contains(n.as_str()))
                    .cloned()
                    .collect();
                if !undeclared.is_empty() {
                    return Err(Lacking::Undeclared(undeclared));
                }
                Credentials::from_env_and_file(names, dotenv).map_err(|e| match e {
                    CredentialsError::Missing { names } => Lacking::Missing(names),
                    other => Lacking::Unreadable(other.to_string()),
                })
            }
        }
    }
}

/// Why credentials could not be collected.
enum Lacking {
    Undeclared(Vec<String>),
    Missing(Vec<String>),
    Unreadable(String),
}

/// What decides the endpoints of a session's adapters.
#[derive(Debug, Clone, Default)]
pub struct EndpointRules {
    /// Endpoints this process serves itself, as the spec writes them → the URL to call
    /// (`sim://zai` → the embedded simulator's route). Empty for a remote probe.
    pub local: BTreeMap<String, String>,
    /// Where each credential may go (deny by default); endpoints in `local` are exempt.
    pub policy: EndpointPolicy,
}

/// A session open the probe refuses; each names the provider and variable concerned.
#[derive(Debug, thiserror::Error)]
pub enum SessionRefusal {
    /// The session breaks the spec's rules.
    #[error("the session is not valid: {}", problems.join("; "))]
    Invalid {
        /// One line per problem, each naming its field.
        problems: Vec<String>,
    },
    /// The session is for another region.
    #[error("this probe serves region {probe}, the session is for region {session}")]
    WrongRegion {
        /// The probe's region.
        probe: String,
        /// The region the session names.
        session: String,
    },
    /// Credential variables this probe does not hold.
    #[error(
        "probe in region {region} lacks credentials: {}",
        join_pairs(missing, "is not set on this probe (its environment or .env)")
    )]
    MissingCredentials {
        /// The probe's region.
        region: String,
        /// (provider, variable name) pairs.
        missing: Vec<(String, String)>,
    },
    /// Credential variables the probe owner did not declare.
    #[error(
        "probe in region {region} does not hand out these credentials: {} (the probe owner declares them with --credential)",
        join_pairs(undeclared, "is not one of its credential variables")
    )]
    Undeclared {
        /// The probe's region.
        region: String,
        /// (provider, variable name) pairs.
        undeclared: Vec<(String, String)>,
    },
    /// An endpoint this probe cannot or may not call.
    #[error("provider {provider}: endpoint {endpoint}: {why}")]
    Endpoint {
        /// Provider key.
        provider: String,
        /// The endpoint (an `env://` one's URL is never shown: it may be a secret).
        endpoint: String,
        /// Why.
        why: String,
    },
    /// The adapter could not be turned into an executor (a bad header, for instance).
    #[error("{0}")]
    Adapter(#[from] crate::error::ProbeError),
    /// The credentials could not be read (an unreadable `.env`).
    #[error("probe in region {region}: {message}")]
    Unreadable {
        /// The probe's region.
        region: String,
        /// What went wrong (names the file).
        message: String,
    },
}

fn join_pairs(pairs: &[(String, String)], what: &str) -> String {
    pairs
        .iter()
        .map(|(provider, var)| format!("provider {provider}: credential variable {var} {what}"))
        .collect::<Vec<_>>()
        .join("; ")
}

impl SessionRefusal {
    /// The gRPC status a refusal travels as.
    pub fn status(&self) -> tonic::Status {
        let message = self.to_string();
        match self {
            SessionRefusal::Invalid { .. } | SessionRefusal::Adapter(_) => {
                tonic::Status::invalid_argument(message)
            }
            SessionRefusal::Undeclared { .. } | SessionRefusal::Endpoint { .. } => {
                tonic::Status::permission_denied(message)
            }
            SessionRefusal::WrongRegion { .. } | SessionRefusal::MissingCredentials { .. } => {
                tonic::Status::failed_precondition(message)
            }
            SessionRefusal::Unreadable { .. } => tonic::Status::internal(message),
        }
    }
}

/// Checks a session against this probe and builds one executor per adapter, endpoints resolved.
/// Every missing or undeclared credential of every provider is named at once.
pub fn executors(
    session: &SessionOpen,
    region: &str,
    credentials: &CredentialSource,
    rules: &EndpointRules,
) -> Result<Vec<Executor>, SessionRefusal> {
    let problems = session.problems();
    if !problems.is_empty() {
        return Err(SessionRefusal::Invalid { problems });
    }
    if session.region != region {
        return Err(SessionRefusal::WrongRegion {
            probe: region.to_string(),
            session: session.region.clone(),
        });
    }
    let (mut missing, mut undeclared) = (Vec::new(), Vec::new());
    let mut found = Vec::new();
    for adapter in &session.adapters {
        let mut names = adapter.auth.env_names();
        if let Endpoint::FromEnv { var } = adapter.endpoint_kind()
            && !rules.local.contains_key(&adapter.endpoint)
        {
            names.push(var.to_string());
        }
        let pair = |name: String| (adapter.key.clone(), name);
        match credentials.collect(&names) {
            Ok(values) => found.push((adapter, values)),
            Err(Lacking::Missing(names)) => missing.extend(names.into_iter().map(pair)),
            Err(Lacking::Undeclared(names)) => undeclared.extend(names.into_iter().map(pair)),
            Err(Lacking::Unreadable(message)) => {
                return Err(SessionRefusal::Unreadable {
                    region: region.to_string(),
                    message,
                });
            }
        }
    }
    if !undeclared.is_empty() {
        return Err(SessionRefusal::Undeclared {
            region: region.to_string(),
            undeclared,
        });
    }
    if !missing.is_empty() {
        return Err(SessionRefusal::MissingCredentials {
            region: region.to_string(),
            missing,
        });
    }
    let mut out = Vec::new();
    for (adapter, values) in found {
        let resolved = resolve(adapter, &values, rules)?;
        out.push(Executor::for_lane(
            resolved,
            session.contract.clone(),
            &values,
            session.lane_in_flight(),
        )?);
    }
    Ok(out)
}

/// The adapter with its endpoint resolved and checked against the allow-list.
fn resolve(
    adapter: &ProviderAdapter,
    credentials: &Credentials,
    rules: &EndpointRules,
) -> Result<ProviderAdapter, SessionRefusal> {
    let refuse = |why: &str| SessionRefusal::Endpoint {
        provider: adapter.key.clone(),
        endpoint: adapter.endpoint.clone(),
        why: why.to_string(),
    };
    // A base URL (`…/v1`, or the simulator's route for a `sim://` endpoint) gets the dialect's
    // path here, the one place it is added.
    let api = adapter.api;
    let url = match (rules.local.get(&adapter.endpoint), adapter.endpoint_kind()) {
        (Some(local), _) => api.post_url(local),
        (None, Endpoint::Url(url)) => api.post_url(url),
        (None, Endpoint::FromEnv { var }) => {
            let url = credentials.get(var).unwrap_or_default();
            if !matches!(Endpoint::parse(url), Endpoint::Url(_)) {
                return Err(refuse(&format!("{var} must hold an http(s) URL")));
            }
            api.post_url(url)
        }
        (None, Endpoint::Simulator { .. }) => {
            return Err(refuse(
                "the embedded simulator runs beside the coordinator; a remote probe cannot serve it",
            ));
        }
        (None, Endpoint::Unknown(_)) => return Err(refuse("not an endpoint this probe knows")),
    };
    if !rules.local.contains_key(&adapter.endpoint) {
        let parsed = reqwest::Url::parse(&url).map_err(|_| refuse("not a valid URL"))?;
        let sent = adapter.auth.env_names();
        match rules.policy.check(&sent, &parsed, &adapter.endpoint) {
            Ok(()) => {}
            Err(Denied::NotListed) => {
                return Err(refuse(
                    "not in this probe's allowed endpoints (--allow-endpoint)",
                ));
            }
            Err(Denied::Credentials(vars)) => {
                return Err(refuse(&format!(
                    "credential {} may not be sent there: the probe owner allows it with \
                     --allow-endpoint VAR=URL (plaintext http beyond loopback only that way)",
                    vars.join(", ")
                )));
            }
        }
    }
    let mut resolved = adapter.clone();
    resolved.endpoint = url;
    Ok(resolved)
}
