//! What serves a run's requests on this machine: the embedded simulator for `sim://` endpoints
//! (answering from canned answers the workflow derived from its gold) and one in-process probe
//! per `local` region, behind a loopback gRPC server. The coordinator only sees probe URLs.

use openbench_common::credentials::Credentials;
use openbench_common::spec::{Endpoint, LoadedSpec, ProbeLocation, ProviderAdapter};
use openbench_common::workflow::CannedAnswer;
use openbench_coordinator::{BoxFuture, CoordinatorError, RunInputs, TargetHost, Targets};
use openbench_probe::server::{ProbeConfig, ProbeServerHandle, serve_on};
use openbench_simulator::{SimConfig, SimServer};
use std::collections::BTreeMap;

/// The host of runs on this machine: starts the simulator when a provider targets `sim://` and a
/// probe for every `local` region; remote regions pass through as URLs.
pub struct LocalTargets {
    answers: Vec<CannedAnswer>,
}

impl LocalTargets {
    /// A host whose simulator answers with `answers` (when the spec asks for answers from gold).
    pub fn new(answers: Vec<CannedAnswer>) -> LocalTargets {
        LocalTargets { answers }
    }

    /// A host for `inputs`: canned answers from the workflow's gold when a provider targets the
    /// simulator, none otherwise.
    pub fn for_inputs(inputs: &RunInputs) -> anyhow::Result<LocalTargets> {
        let answers = if needs_simulator(&inputs.spec) {
            crate::registry::canned_answers(inputs.workflow.name(), &inputs.dataset)?
        } else {
            Vec::new()
        };
        Ok(LocalTargets::new(answers))
    }
}

impl TargetHost for LocalTargets {
    fn start<'a>(
        &'a self,
        inputs: &'a RunInputs,
        attempt: u32,
    ) -> BoxFuture<'a, Result<Targets, CoordinatorError>> {
        Box::pin(self.start_local(inputs, attempt))
    }
}

impl LocalTargets {
    /// Starts the simulator when needed (seeded per attempt: spec seed + attempt, so a smoke's
    /// second attempt draws afresh, as a retry at a real provider would) and one probe server
    /// per local region.
    async fn start_local(
        &self,
        inputs: &RunInputs,
        attempt: u32,
    ) -> Result<Targets, CoordinatorError> {
        let spec = &inputs.spec;
        let sim = match (&spec.spec.simulator, needs_simulator(spec)) {
            (Some(settings), true) => {
                let default_profile = spec
                    .spec
                    .providers
                    .iter()
                    .find_map(|p| match p.endpoint_kind() {
                        Endpoint::Simulator { profile } => Some(profile.to_string()),
                        _ => None,
                    })
                    .unwrap_or_default();
                let config = SimConfig {
                    time_scale: settings.time_scale,
                    seed: settings.seed.wrapping_add(u64::from(attempt)),
                    default_profile,
                    answers: if settings.answer_from_gold {
                        self.answers.clone()
                    } else {
                        Vec::new()
                    },
                };
                let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
                let server = openbench_simulator::start(config, addr)
                    .await
                    .map_err(|e| CoordinatorError::Setup {
                        what: "embedded simulator".into(),
                        source: e.into(),
                    })?;
                Some(server)
            }
            _ => None,
        };
        let providers = resolve_providers(spec, sim.as_ref(), &inputs.credentials)?;
        let mut probes = BTreeMap::new();
        let mut servers: Vec<ProbeServerHandle> = Vec::new();
        for (name, probe) in spec.spec.region_probes() {
            if ProbeLocation::parse(&probe) != ProbeLocation::InProcess {
                probes.insert(name, probe);
                continue;
            }
            let config = ProbeConfig {
                region: name.clone(),
                contract: spec.spec.request.clone(),
                providers: providers.clone(),
                credentials: inputs.credentials.clone(),
                code_digest: inputs.code_sha256.clone(),
            };
            match start_probe(&name, config).await {
                Ok(handle) => {
                    probes.insert(name, format!("http://{}", handle.addr()));
                    servers.push(handle);
                }
                Err(e) => {
                    stop(servers, sim).await;
                    return Err(e);
                }
            }
        }
        Ok(Targets {
            probes,
            stop: Box::new(move || Box::pin(stop(servers, sim))),
        })
    }
}

async fn start_probe(
    region: &str,
    config: ProbeConfig,
) -> Result<ProbeServerHandle, CoordinatorError> {
    let setup = |e: std::io::Error| CoordinatorError::Setup {
        what: format!("region {region}: local probe"),
        source: e.into(),
    };
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(setup)?;
    serve_on(listener, config)
        .await
        .map_err(|e| CoordinatorError::Setup {
            what: format!("region {region}: local probe"),
            source: e.into(),
        })
}

/// Stops the local probe servers, then the simulator.
async fn stop(servers: Vec<ProbeServerHandle>, sim: Option<SimServer>) {
    for server in servers {
        if let Err(e) = server.shutdown().await {
            tracing::warn!("local probe shutdown: {e}");
        }
    }
    if let Some(sim) = sim {
        sim.stopped().await;
    }
}

/// True when any provider targets the embedded simulator.
pub fn needs_simulator(spec: &LoadedSpec) -> bool {
    spec.spec
        .providers
        .iter()
        .any(|p| matches!(p.endpoint_kind(), Endpoint::Simulator { .. }))
}

/// The providers with every endpoint resolved to a real URL: `sim://<profile>` through the running
/// simulator, `env://<VAR>` from the credentials.
pub fn resolve_providers(
    spec: &LoadedSpec,
    sim: Option<&SimServer>,
    credentials: &Credentials,
) -> Result<Vec<ProviderAdapter>, CoordinatorError> {
    let mut out = Vec::new();
    for p in &spec.spec.providers {
        let resolved = match p.endpoint_kind() {
            Endpoint::Simulator { profile } => {
                let sim = sim.ok_or_else(|| CoordinatorError::Setup {
                    what: format!("provider {}: endpoint sim://{profile}", p.key),
                    source: "the embedded simulator is not running".into(),
                })?;
                Some(sim.profile_endpoint(profile))
            }
            Endpoint::FromEnv { var } => {
                let url = credentials
                    .get(var)
                    .ok_or_else(|| CoordinatorError::Setup {
                        what: format!("provider {}: endpoint env://{var}", p.key),
                        source: format!("environment variable {var} is not set").into(),
                    })?;
                if !matches!(Endpoint::parse(url), Endpoint::Url(_)) {
                    return Err(CoordinatorError::Setup {
                        what: format!("provider {}: endpoint env://{var}", p.key),
                        source: format!("{var} must hold an http(s) URL").into(),
                    });
                }
                Some(url.to_string())
            }
            Endpoint::Url(_) | Endpoint::Unknown(_) => None,
        };
        let mut p = p.clone();
        if let Some(url) = resolved {
            p.endpoint = url;
        }
        out.push(p);
    }
    Ok(out)
}
