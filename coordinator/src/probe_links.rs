//! What a session talks to: one gRPC client per region's probe. What serves those probes (an
//! in-process probe for a `local` region, the embedded simulator behind `sim://` endpoints) is
//! decided by the binary through a [`TargetHost`]; the coordinator only ever speaks gRPC, to a
//! URL or to a probe served in this process ([`ProbeAt`]), so it knows nothing of the simulator.
//! Every probe is checked and gets the run's session ([`crate::session_open`]) before the
//! session's first round.

use crate::error::CoordinatorError;
use crate::run_dir::{RunDir, RunInputs};
use crate::session_open::{ProbeSession, SessionOpener};
use openbench_common::spec::{ProbeLocation, region_of_probe};
use openbench_proto::link::{self, ClientSecurity, InProcessProbe, LinkRuntime, ProbeChannel};
use openbench_proto::v1::link_client::LinkClient;
use openbench_proto::v1::probe_client::ProbeClient;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

/// A boxed, sendable future (object-safe async in [`TargetHost`]).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where a region's probe is reached.
#[derive(Clone, Debug)]
pub enum ProbeAt {
    /// The probe's URL (`http://…`, or `https://…` for a probe serving TLS).
    Url(String),
    /// A probe served in this process, called without a socket.
    InProcess(InProcessProbe),
}

/// What was started for one session: where each region's probe is reached, and how to stop it.
pub struct Targets {
    /// Probe key (the region's label, `REGION#k` for a replica) → where that probe is reached.
    pub probes: BTreeMap<String, ProbeAt>,
    /// Stops whatever was started for the session (in-process probes, a simulator).
    pub stop: Box<dyn FnOnce() -> BoxFuture<'static, ()> + Send>,
}

/// Starts what serves one plan attempt's requests and says where each region's probe listens.
/// The binary's host starts the simulator and in-process probes; without one, only regions whose
/// probe is a URL can run.
pub trait TargetHost: Send + Sync {
    /// Starts the targets of `attempt` (0 = full run, N = smoke attempt N) of the run `inputs`
    /// describe.
    fn start<'a>(
        &'a self,
        inputs: &'a RunInputs,
        attempt: u32,
    ) -> BoxFuture<'a, Result<Targets, CoordinatorError>>;
}

/// The host of a run whose every region names a remote probe URL: nothing to start.
pub struct RemoteProbes;

impl TargetHost for RemoteProbes {
    fn start<'a>(
        &'a self,
        inputs: &'a RunInputs,
        _attempt: u32,
    ) -> BoxFuture<'a, Result<Targets, CoordinatorError>> {
        let mut probes = BTreeMap::new();
        for (region, probe) in inputs.spec.spec.region_probes() {
            if ProbeLocation::parse(&probe) == ProbeLocation::InProcess {
                return Box::pin(std::future::ready(Err(CoordinatorError::Setup {
                    what: format!("region {region}: probe local"),
                    source: "no host to start an in-process probe was given".into(),
                })));
            }
            probes.insert(region, ProbeAt::Url(probe));
        }
        Box::pin(std::future::ready(Ok(Targets {
            probes,
            stop: Box::new(|| Box::pin(async {})),
        })))
    }
}

/// The clients of one session and what to stop when it ends.
pub struct Infra {
    /// Probe key (the region's label, `REGION#k` for replica `k`) → gRPC client of that probe.
    /// Every map below is keyed the same way: a replica is watched like a region.
    pub clients: BTreeMap<String, ProbeClient<ProbeChannel>>,
    /// Region label → the session open on that region's probe.
    pub sessions: BTreeMap<String, ProbeSession>,
    /// Region label → `Link` client (health pings) on a connection of its own to the same
    /// probe, whose connection task runs on [`Infra::link_runtime`]: streams in flight on the
    /// `Execute` connection never queue a ping behind them.
    pub links: BTreeMap<String, LinkClient<ProbeChannel>>,
    /// The runtime thread of the pings, their connections and the session re-opens.
    pub link_runtime: LinkRuntime,
    /// Region label → how to open the session again (after the probe restarted).
    pub openers: BTreeMap<String, SessionOpener>,
    stop: Box<dyn FnOnce() -> BoxFuture<'static, ()> + Send>,
}

impl Infra {
    /// Starts the session's targets through `host`, connects a client to every region's probe,
    /// presenting the TLS files and token of the coordinator's environment
    /// ([`ClientSecurity::from_env`]), checks each probe and opens `run`'s session on it, each
    /// lane allowed `lane_in_flight` requests at once (the schedule's most).
    pub async fn start(
        inputs: &RunInputs,
        run: &RunDir,
        attempt: u32,
        lane_in_flight: u32,
        host: &dyn TargetHost,
    ) -> Result<Infra, CoordinatorError> {
        let security = ClientSecurity::from_env().map_err(|e| CoordinatorError::Setup {
            what: "probe client settings".into(),
            source: e.into(),
        })?;
        let link_runtime =
            LinkRuntime::start("openbench-link").map_err(|e| CoordinatorError::Setup {
                what: "the link's runtime thread".into(),
                source: e.into(),
            })?;
        let targets = host.start(inputs, attempt).await?;
        let mut clients = BTreeMap::new();
        let mut sessions = BTreeMap::new();
        let mut links = BTreeMap::new();
        let mut openers = BTreeMap::new();
        for (region, at) in &targets.probes {
            let opened = async {
                let (channel, control) = match at {
                    ProbeAt::Url(url) => (
                        connect(region, url, &security).await?,
                        connect_on(&link_runtime, region, url, &security).await?,
                    ),
                    // No connection task to keep off the streams' runtime: the calls themselves
                    // run on their callers' tasks.
                    ProbeAt::InProcess(probe) => (
                        link::in_process_channel(probe.clone()),
                        link::in_process_channel(probe.clone()),
                    ),
                };
                let client = link::probe_client(channel);
                // A replica's session names its region (`eu` for probe key `eu#1`).
                let mut opener = SessionOpener::new(
                    region_of_probe(region),
                    link::probe_client(control.clone()),
                    inputs,
                    run,
                )
                .in_flight(lane_in_flight);
                let session = opener.open().await?;
                Ok::<_, CoordinatorError>((client, link::link_client(control), session, opener))
            };
            match opened.await {
                Ok((client, link_client, session, opener)) => {
                    clients.insert(region.clone(), client);
                    links.insert(region.clone(), link_client);
                    sessions.insert(region.clone(), session);
                    openers.insert(region.clone(), opener);
                }
                Err(e) => {
                    (targets.stop)().await;
                    return Err(e);
                }
            }
        }
        Ok(Infra {
            clients,
            sessions,
            links,
            link_runtime,
            openers,
            stop: targets.stop,
        })
    }

    /// Stops what the host started.
    pub async fn shutdown(self) {
        (self.stop)().await;
    }
}

/// Opens the control channel to a region's probe (pings, session opens) on `runtime`, so that
/// its connection task runs there, away from the streams.
async fn connect_on(
    runtime: &LinkRuntime,
    region: &str,
    url: &str,
    security: &ClientSecurity,
) -> Result<ProbeChannel, CoordinatorError> {
    let (region_owned, url, security) = (region.to_string(), url.to_string(), security.clone());
    runtime
        .run(async move { connect(&region_owned, &url, &security).await })
        .await
        .map_err(|e| CoordinatorError::Setup {
            what: format!("region {region}"),
            source: format!("the link's runtime stopped: {e}").into(),
        })?
}

/// Opens a channel to a region's probe (keepalive, TLS, token).
async fn connect(
    region: &str,
    url: &str,
    security: &ClientSecurity,
) -> Result<ProbeChannel, CoordinatorError> {
    link::channel(url, security)
        .await
        .map_err(|e| CoordinatorError::Setup {
            what: format!("region {region}"),
            source: e.into(),
        })
}
