//! What serves a run's requests on this machine: the embedded simulator for `sim://` endpoints
//! (answering from canned answers the workflow derived from its gold) and one in-process probe
//! per `local` region, whose gRPC services the coordinator calls without a socket (or, with
//! `OPENBENCH_LOCAL_PROBE=loopback`, behind a loopback gRPC server, as before: for comparing the
//! two in one binary). The coordinator opens its session on these probes as on remote ones, with
//! the same calls and the same encoded requests and records; an in-process probe holds the
//! coordinator's own credentials and calls `sim://` endpoints on the embedded simulator. Its keys
//! go only where the run's spec sends them (plaintext http only to loopback) and where
//! `$OPENBENCH_PROBE_ALLOW_ENDPOINTS` allows, as for `probe serve --spec`.

use openbench_common::spec::{Endpoint, LoadedSpec, ProbeLocation, region_of_probe};
use openbench_common::workflow::CannedAnswer;
use openbench_coordinator::{BoxFuture, CoordinatorError, ProbeAt, RunInputs, TargetHost, Targets};
use openbench_probe::endpoint_policy::EndpointPolicy;
use openbench_probe::server::{
    InProcessServer, ProbeConfig, ProbeServerHandle, serve_in_process, serve_on,
};
use openbench_probe::session_open::{CredentialSource, EndpointRules};
use openbench_simulator::{SimConfig, SimServer};
use std::collections::BTreeMap;

/// Environment variable choosing how the coordinator reaches a `local` region's probe: unset (or
/// `in-process`) calls its services in this process; `loopback` serves it on a loopback port and
/// connects over HTTP/2, as a remote probe is reached (what `bench` compares the cost of).
pub const LOCAL_PROBE_ENV: &str = "OPENBENCH_LOCAL_PROBE";

/// How a `local` region's probe is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalLink {
    /// Its services called in this process, no socket.
    InProcess,
    /// A gRPC server on a loopback port.
    Loopback,
}

impl LocalLink {
    /// Reads [`LOCAL_PROBE_ENV`]; anything but the two names is refused, naming it.
    fn from_env() -> Result<LocalLink, CoordinatorError> {
        match std::env::var(LOCAL_PROBE_ENV).as_deref() {
            Err(_) | Ok("") | Ok("in-process") => Ok(LocalLink::InProcess),
            Ok("loopback") => Ok(LocalLink::Loopback),
            Ok(other) => Err(CoordinatorError::Setup {
                what: format!("${LOCAL_PROBE_ENV}"),
                source: format!("{other:?} is neither in-process nor loopback").into(),
            }),
        }
    }
}

/// A local region's running probe, whichever way it is served.
enum LocalProbe {
    InProcess(InProcessServer),
    Loopback(ProbeServerHandle),
}

/// Open files a run with local probes should be able to hold: both ends of 2,000 streams (an
/// embedded simulator serves in this process) and room for the run's own files.
const LOCAL_OPEN_FILES: u64 = 4_096;

/// The host of runs on this machine: starts the simulator when a provider targets `sim://` and a
/// probe for every `local` region; remote regions pass through as URLs.
pub struct LocalTargets {
    answers: Vec<CannedAnswer>,
    /// How local probes are served; `None` reads [`LOCAL_PROBE_ENV`] at each start.
    link: Option<LocalLink>,
}

impl LocalTargets {
    /// A host whose simulator answers with `answers` (when the spec asks for answers from gold).
    pub fn new(answers: Vec<CannedAnswer>) -> LocalTargets {
        LocalTargets {
            answers,
            link: None,
        }
    }

    /// The same host, serving local probes as `link` says whatever the environment says.
    pub fn with_link(self, link: LocalLink) -> LocalTargets {
        LocalTargets {
            link: Some(link),
            ..self
        }
    }

    /// A host for `inputs`: canned answers from the workflow's gold when a provider targets the
    /// simulator, none otherwise.
    pub fn for_inputs(inputs: &RunInputs) -> anyhow::Result<LocalTargets> {
        let answers = if needs_simulator(&inputs.spec) {
            inputs.workflow.simulator_answers(&inputs.dataset)?
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
    /// per local region, after raising the open-files limit: each request in flight holds a
    /// connection to its provider, and the embedded simulator the other end of it.
    async fn start_local(
        &self,
        inputs: &RunInputs,
        attempt: u32,
    ) -> Result<Targets, CoordinatorError> {
        if let Some(short) = crate::open_files::raise_limit(LOCAL_OPEN_FILES) {
            tracing::warn!("{short}: fewer streams can be in flight at once");
        }
        let spec = &inputs.spec;
        let sim = match (&spec.spec.simulator, needs_simulator(spec)) {
            (Some(settings), true) => {
                let default_profile = spec
                    .spec
                    .providers
                    .iter()
                    .find_map(|p| match p.endpoint_kind() {
                        // The profile's name, without a capacity query (`plain?slots=2`).
                        Endpoint::Simulator { profile } => Some(
                            openbench_simulator::capacity::split_profile(profile)
                                .0
                                .to_string(),
                        ),
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
        let local = simulator_endpoints(spec, sim.as_ref())?;
        let policy = match in_process_policy(spec) {
            Ok(policy) => policy,
            Err(e) => {
                stop(Vec::new(), sim).await;
                return Err(e);
            }
        };
        let link = match self.link.map_or_else(LocalLink::from_env, Ok) {
            Ok(link) => link,
            Err(e) => {
                stop(Vec::new(), sim).await;
                return Err(e);
            }
        };
        let mut probes = BTreeMap::new();
        let mut servers: Vec<LocalProbe> = Vec::new();
        for (name, probe) in spec.spec.region_probes() {
            if ProbeLocation::parse(&probe) != ProbeLocation::InProcess {
                probes.insert(name, ProbeAt::Url(probe));
                continue;
            }
            let config = ProbeConfig {
                region: region_of_probe(&name).to_string(),
                credentials: CredentialSource::Given(inputs.credentials.clone()),
                endpoints: EndpointRules {
                    local: local.clone(),
                    policy: policy.clone(),
                },
                code_digest: inputs.code_sha256.clone(),
            };
            match start_probe(&name, config, link).await {
                Ok((at, server)) => {
                    probes.insert(name, at);
                    servers.push(server);
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

/// Where an in-process probe's keys may go: the spec's endpoints, each for its provider's own
/// credentials, plus what `$OPENBENCH_PROBE_ALLOW_ENDPOINTS` allows (as `probe serve` reads it).
fn in_process_policy(spec: &LoadedSpec) -> Result<EndpointPolicy, CoordinatorError> {
    let entries: Vec<String> = std::env::var("OPENBENCH_PROBE_ALLOW_ENDPOINTS")
        .unwrap_or_default()
        .split(',')
        .map(str::to_string)
        .collect();
    let policy = EndpointPolicy::parse(&entries).map_err(|e| CoordinatorError::Setup {
        what: "$OPENBENCH_PROBE_ALLOW_ENDPOINTS".into(),
        source: e.into(),
    })?;
    Ok(policy.with_spec_defaults(&spec.spec.providers))
}

/// Starts a local region's probe as `link` says; where the coordinator reaches it, and the probe.
async fn start_probe(
    region: &str,
    config: ProbeConfig,
    link: LocalLink,
) -> Result<(ProbeAt, LocalProbe), CoordinatorError> {
    let setup = |e: Box<dyn std::error::Error + Send + Sync>| CoordinatorError::Setup {
        what: format!("region {region}: local probe"),
        source: e,
    };
    match link {
        LocalLink::InProcess => {
            let server = serve_in_process(config)
                .await
                .map_err(|e| setup(e.into()))?;
            Ok((
                ProbeAt::InProcess(server.probe()),
                LocalProbe::InProcess(server),
            ))
        }
        LocalLink::Loopback => {
            let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
                .await
                .map_err(|e| setup(e.into()))?;
            let handle = serve_on(listener, config)
                .await
                .map_err(|e| setup(e.into()))?;
            Ok((
                ProbeAt::Url(format!("http://{}", handle.addr())),
                LocalProbe::Loopback(handle),
            ))
        }
    }
}

/// Stops the local probes, then the simulator.
async fn stop(servers: Vec<LocalProbe>, sim: Option<SimServer>) {
    for server in servers {
        match server {
            LocalProbe::InProcess(server) => server.shutdown(),
            LocalProbe::Loopback(server) => {
                if let Err(e) = server.shutdown().await {
                    tracing::warn!("local probe shutdown: {e}");
                }
            }
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

/// The embedded simulator's route for every `sim://<profile>` endpoint of the spec, keyed by the
/// endpoint as the spec writes it (what an in-process probe calls instead).
pub fn simulator_endpoints(
    spec: &LoadedSpec,
    sim: Option<&SimServer>,
) -> Result<BTreeMap<String, String>, CoordinatorError> {
    let mut out = BTreeMap::new();
    for p in &spec.spec.providers {
        if let Endpoint::Simulator { profile } = p.endpoint_kind() {
            let sim = sim.ok_or_else(|| CoordinatorError::Setup {
                what: format!("provider {}: endpoint sim://{profile}", p.key),
                source: "the embedded simulator is not running".into(),
            })?;
            out.insert(p.endpoint.clone(), sim.profile_base(profile));
        }
    }
    Ok(out)
}
