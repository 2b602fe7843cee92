//! What a run talks to: the embedded simulator (for `sim://` endpoints), one probe per region
//! (in-process behind a loopback gRPC server for `local`, remote otherwise) and one gRPC client per
//! region. Local and remote probes share one code path: the coordinator only ever speaks gRPC.

use crate::error::CoordinatorError;
use openbench_common::spec::{LoadedSpec, ProviderAdapter};
use openbench_common::workflow::CannedAnswer;
use openbench_probe::Credentials;
use openbench_probe::client::{ClientSecurity, ProbeChannel};
use openbench_probe::server::{ProbeConfig, ProbeServerHandle, serve_on};
use openbench_proto::v1::probe_client::ProbeClient;
use openbench_simulator::{SimConfig, SimServer};
use std::collections::BTreeMap;

/// Running simulator, probe servers and the clients that reach them.
pub struct Infra {
    /// Region label → gRPC client of that region's probe.
    pub clients: BTreeMap<String, ProbeClient<ProbeChannel>>,
    sim: Option<SimServer>,
    servers: Vec<ProbeServerHandle>,
}

/// True when any provider targets the embedded simulator.
pub fn needs_simulator(spec: &LoadedSpec) -> bool {
    spec.spec
        .providers
        .iter()
        .any(|p| p.endpoint.starts_with("sim://"))
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
        let mut p = p.clone();
        if let Some(profile) = p.endpoint.strip_prefix("sim://") {
            let sim = sim.ok_or_else(|| CoordinatorError::Setup {
                what: format!("provider {}: endpoint sim://{profile}", p.key),
                message: "the embedded simulator is not running".into(),
            })?;
            p.endpoint = sim.profile_endpoint(profile);
        } else if let Some(var) = p.endpoint.strip_prefix("env://") {
            let url = credentials
                .get(var)
                .ok_or_else(|| CoordinatorError::Setup {
                    what: format!("provider {}: endpoint env://{var}", p.key),
                    message: format!("environment variable {var} is not set"),
                })?;
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                return Err(CoordinatorError::Setup {
                    what: format!("provider {}: endpoint env://{var}", p.key),
                    message: format!("{var} must hold an http(s) URL"),
                });
            }
            p.endpoint = url.to_string();
        }
        out.push(p);
    }
    Ok(out)
}

impl Infra {
    /// Starts the simulator when needed, one probe server per local region, and connects a client
    /// to every region's probe. The simulator is seeded per attempt (spec seed + attempt), so a
    /// smoke's second attempt draws afresh, as a retry at a real provider would.
    pub async fn start(
        spec: &LoadedSpec,
        attempt: u32,
        answers: Vec<CannedAnswer>,
        credentials: &Credentials,
        code_digest: &str,
    ) -> Result<Infra, CoordinatorError> {
        let sim = match (&spec.spec.simulator, needs_simulator(spec)) {
            (Some(settings), true) => {
                let default_profile = spec
                    .spec
                    .providers
                    .iter()
                    .find_map(|p| p.endpoint.strip_prefix("sim://"))
                    .unwrap_or_default()
                    .to_string();
                let config = SimConfig {
                    time_scale: settings.time_scale,
                    seed: settings.seed.wrapping_add(u64::from(attempt)),
                    default_profile,
                    answers: if settings.answer_from_gold {
                        answers
                    } else {
                        Vec::new()
                    },
                };
                let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
                let server = openbench_simulator::start(config, addr)
                    .await
                    .map_err(|e| CoordinatorError::Setup {
                        what: "embedded simulator".into(),
                        message: e.to_string(),
                    })?;
                Some(server)
            }
            _ => None,
        };
        let providers = resolve_providers(spec, sim.as_ref(), credentials)?;
        let mut infra = Infra {
            clients: BTreeMap::new(),
            sim,
            servers: Vec::new(),
        };
        let regions = if spec.spec.regions.is_empty() {
            vec![(String::from("local"), String::from("local"))]
        } else {
            spec.spec
                .regions
                .iter()
                .map(|r| (r.name.clone(), r.probe.clone()))
                .collect()
        };
        // TLS files and the token for remote probes, from the coordinator's environment.
        let security = ClientSecurity::from_env().map_err(|e| CoordinatorError::Setup {
            what: "probe client settings".into(),
            message: e.to_string(),
        })?;
        for (name, probe) in regions {
            let url = if probe == "local" {
                let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0))
                    .await
                    .map_err(|e| CoordinatorError::Setup {
                        what: format!("region {name}: local probe"),
                        message: e.to_string(),
                    })?;
                let config = ProbeConfig {
                    region: name.clone(),
                    contract: spec.spec.request.clone(),
                    providers: providers.clone(),
                    credentials: credentials.clone(),
                    code_digest: code_digest.to_string(),
                };
                let handle =
                    serve_on(listener, config)
                        .await
                        .map_err(|e| CoordinatorError::Setup {
                            what: format!("region {name}: local probe"),
                            message: e.to_string(),
                        })?;
                let url = format!("http://{}", handle.addr());
                infra.servers.push(handle);
                url
            } else {
                probe.clone()
            };
            let client = openbench_probe::client::connect(&url, &security)
                .await
                .map_err(|e| CoordinatorError::Setup {
                    what: format!("region {name}"),
                    message: e.to_string(),
                })?;
            infra.clients.insert(name, client);
        }
        Ok(infra)
    }

    /// Stops the local probe servers and the simulator.
    pub async fn shutdown(self) {
        for server in self.servers {
            if let Err(e) = server.shutdown().await {
                tracing::warn!("local probe shutdown: {e}");
            }
        }
        if let Some(sim) = self.sim {
            sim.stopped().await;
        }
    }
}
