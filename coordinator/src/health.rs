//! Region health: one monitor task per region pings its probe (`Link.Ping`, on the port that
//! serves `Execute`, over a connection of its own driven by the link's runtime thread, so
//! streams in flight never delay a ping) and says whether the region can be reached. Lane tasks watch the region's
//! state (a `watch` channel) to fail at once, with a `region_unreachable` harness record, instead
//! of waiting deadline + grace; the coordinator actor receives every sample and state change as
//! a [`LinkEvent`] (RTT, clock offset, outages, the down policy).
//!
//! Detection bound ([`LinkSettings::detection_bound`], docs/faults.md): a region that stops
//! answering is declared down at most one ping interval plus one ping timeout after its last
//! answer (1 s + 2 s by default), plus scheduling delay; a killed probe (connection refused or
//! reset) is seen by the next ping or by the in-flight call itself, sooner. While down, the
//! monitor retries with exponential backoff (0.5 s doubling to 4 s); each retry also drives the
//! channel's reconnect. The first answered retry, once the run's session is open again on the
//! probe ([`SessionOpener`]: a restarted probe knows no session), brings the region back.

use crate::session_open::{ProbeSession, SessionOpener};
use openbench_common::clock::{now_rfc3339, unix_micros};
use openbench_common::rundir::RegionLink;
use openbench_proto::link::{LinkRuntime, ProbeChannel};
use openbench_proto::v1::PingRequest;
use openbench_proto::v1::link_client::LinkClient;
use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;

/// How the coordinator watches each region's link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkSettings {
    /// Time between pings while the region is up.
    pub ping_interval: Duration,
    /// A ping not answered within this is a failure; one failure declares the region down.
    pub ping_timeout: Duration,
    /// First retry delay while down; doubles after each failed retry.
    pub backoff_first: Duration,
    /// Largest retry delay while down.
    pub backoff_max: Duration,
}

impl Default for LinkSettings {
    fn default() -> LinkSettings {
        LinkSettings {
            ping_interval: Duration::from_secs(1),
            ping_timeout: Duration::from_secs(2),
            backoff_first: Duration::from_millis(500),
            backoff_max: Duration::from_secs(4),
        }
    }
}

impl LinkSettings {
    /// The longest a region can stop answering before it is declared down, not counting
    /// scheduling delay on a loaded machine: one interval (the ping not yet sent) plus one
    /// timeout (the ping unanswered). 3 s by default.
    pub fn detection_bound(&self) -> Duration {
        self.ping_interval + self.ping_timeout
    }
}

/// What a sitting does when a region stays down.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RegionDownPolicy {
    /// Stop the sitting once a region has been down for [`FaultPolicy::stay_down`]: the run is
    /// resumable (the default: it keeps the rounds paired across regions).
    #[default]
    Stop,
    /// Finish the sitting without that region: its lanes get harness records, re-run at the
    /// end of the sitting when it is back, else on resume.
    Continue,
}

/// Fault handling of a sitting: link watching and the down policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultPolicy {
    /// What to do when a region stays down.
    pub on_region_down: RegionDownPolicy,
    /// How long a region must stay down before [`RegionDownPolicy::Stop`] stops the sitting.
    pub stay_down: Duration,
    /// Ping cadence and timeouts.
    pub link: LinkSettings,
}

impl Default for FaultPolicy {
    fn default() -> FaultPolicy {
        FaultPolicy {
            on_region_down: RegionDownPolicy::Stop,
            stay_down: Duration::from_secs(60),
            link: LinkSettings::default(),
        }
    }
}

/// Whether a region can be reached, as its monitor last saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegionState {
    /// The last ping was answered.
    Up,
    /// The last ping failed; `reason` says how.
    Down {
        /// What failed (timeout, refused connection), never a secret.
        reason: String,
    },
}

/// One answered ping: the coordinator's send and receive times and the probe's clock, all
/// wall-clock microseconds since the UNIX epoch.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PingSample {
    /// Coordinator clock when the ping was sent.
    pub sent_us: i64,
    /// Probe clock when it answered.
    pub probe_us: i64,
    /// Coordinator clock when the answer arrived.
    pub received_us: i64,
    /// Round-trip time, ms (measured on the monotonic clock).
    pub rtt_ms: f64,
}

impl PingSample {
    /// Probe clock − coordinator clock, ms: the probe's time minus the midpoint of send and
    /// receive. Exact when both legs take equally long; wrong by at most half the RTT otherwise
    /// (the probe answered somewhere inside the round trip).
    pub fn offset_ms(&self) -> f64 {
        let midpoint = (self.sent_us as f64 + self.received_us as f64) / 2.0;
        (self.probe_us as f64 - midpoint) / 1000.0
    }
}

/// What a monitor tells the coordinator actor.
#[derive(Debug, Clone, PartialEq)]
pub enum LinkEvent {
    /// A ping was answered.
    Sample(PingSample),
    /// The region was just declared down.
    Down {
        /// What failed.
        reason: String,
        /// Wall clock of the detection, RFC 3339.
        detected_at: String,
        /// Wall clock of the last answered ping, RFC 3339.
        last_ok_at: Option<String>,
    },
    /// A retry failed; the region has been down since `since`.
    StillDown {
        /// When it was declared down.
        since: Instant,
    },
    /// A ping was answered again after the region was down.
    Up {
        /// Wall clock, RFC 3339.
        at: String,
    },
}

/// Sends one ping with `timeout`; the error says what failed.
pub async fn ping(
    client: &mut LinkClient<ProbeChannel>,
    timeout: Duration,
) -> Result<PingSample, String> {
    let sent_us = unix_micros(SystemTime::now());
    let started = Instant::now();
    let answer = tokio::time::timeout(timeout, client.ping(PingRequest {})).await;
    let rtt_ms = started.elapsed().as_secs_f64() * 1000.0;
    let received_us = unix_micros(SystemTime::now());
    match answer {
        Err(_) => Err(format!(
            "health ping unanswered after {} ms",
            timeout.as_millis()
        )),
        Ok(Err(status)) => Err(format!(
            "health ping failed: {} {}",
            status.code(),
            status.message()
        )),
        Ok(Ok(response)) => Ok(PingSample {
            sent_us,
            probe_us: response.into_inner().probe_unix_micros,
            received_us,
            rtt_ms,
        }),
    }
}

/// Pings per region before the sitting's first round.
pub const INITIAL_PINGS: usize = 3;

/// How long re-opening the session on a region that came back may take (`Describe` and
/// `OpenSession`; a restarted probe builds its HTTP clients and tokenizer first). Longer, and
/// the region stays down and the next retry tries again.
pub const REOPEN_TIMEOUT: Duration = Duration::from_secs(10);

/// One region's open session and how to open it again: the monitor re-opens it whenever the
/// region comes back and publishes the new session to the lane tasks.
pub struct RegionSession {
    /// The session opened before round 1.
    pub opened: ProbeSession,
    /// Opens it again.
    pub opener: SessionOpener,
}

/// The running monitors of a sitting; dropping it stops them.
pub struct Monitors {
    /// Region → its current state, for lane tasks.
    pub states: BTreeMap<String, watch::Receiver<RegionState>>,
    /// Region → the session open on its probe now (re-opened after the region came back), for
    /// lane tasks: every `Execute` names it.
    pub sessions: BTreeMap<String, watch::Receiver<ProbeSession>>,
    /// Region → where lane tasks report a session the probe refused as not open (it
    /// restarted between two pings): the monitor then declares the region down and re-opens.
    pub sessions_lost: BTreeMap<String, mpsc::UnboundedSender<String>>,
    /// Every region's events, tagged with the region.
    pub events: mpsc::UnboundedReceiver<(String, LinkEvent)>,
    tasks: Vec<JoinHandle<()>>,
    /// The runtime the monitors run on, kept alive while they do.
    _runtime: LinkRuntime,
}

impl Drop for Monitors {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Monitors {
    /// Starts one monitor per region (`links`: region → its `Link` client; `sessions`: region →
    /// its open session, re-opened on recovery), after [`INITIAL_PINGS`] back-to-back pings per
    /// region whose samples are queued first, so the clock offsets are known before round 1's
    /// records arrive. The monitors run on `runtime` (the link's own thread), so that streams in
    /// flight on the main runtime never delay a ping past its timeout.
    pub async fn start(
        links: &BTreeMap<String, LinkClient<ProbeChannel>>,
        mut sessions: BTreeMap<String, RegionSession>,
        settings: LinkSettings,
        runtime: &LinkRuntime,
    ) -> Monitors {
        let (events_tx, events) = mpsc::unbounded_channel();
        let mut states = BTreeMap::new();
        let mut session_rxs = BTreeMap::new();
        let mut sessions_lost = BTreeMap::new();
        let mut tasks = Vec::new();
        for (region, client) in links {
            let mut client = client.clone();
            for _ in 0..INITIAL_PINGS {
                if let Ok(sample) = ping(&mut client, settings.ping_timeout).await {
                    let _ = events_tx.send((region.clone(), LinkEvent::Sample(sample)));
                }
            }
        }
        for (region, client) in links {
            let (state_tx, state_rx) = watch::channel(RegionState::Up);
            states.insert(region.clone(), state_rx);
            let reopen = sessions.remove(region).map(|s| {
                let (session_tx, session_rx) = watch::channel(s.opened);
                session_rxs.insert(region.clone(), session_rx);
                let (lost_tx, lost_rx) = mpsc::unbounded_channel();
                sessions_lost.insert(region.clone(), lost_tx);
                Reopen {
                    opener: s.opener,
                    published: session_tx,
                    lost: lost_rx,
                }
            });
            let (region, client, events_tx) = (region.clone(), client.clone(), events_tx.clone());
            tasks.push(runtime.handle().spawn(monitor(
                region, client, reopen, settings, state_tx, events_tx,
            )));
        }
        Monitors {
            states,
            sessions: session_rxs,
            sessions_lost,
            events,
            tasks,
            _runtime: runtime.clone(),
        }
    }
}

/// A monitor's hold on its region's session: how to open it again, where to publish it, and
/// the lane tasks' reports of a session id the probe refused as not open.
struct Reopen {
    opener: SessionOpener,
    published: watch::Sender<ProbeSession>,
    lost: mpsc::UnboundedReceiver<String>,
}

impl Reopen {
    /// Resolves when a lane reports that the probe refused the session published now (reports
    /// of an older session, already replaced, are dropped); never once no lane can report.
    async fn current_lost(&mut self) {
        while let Some(id) = self.lost.recv().await {
            if self.published.borrow().session_id == id {
                return;
            }
        }
        std::future::pending().await
    }
}

/// Waits one ping interval, cut short (with the reason) when a lane reports that the probe no
/// longer has the session.
async fn pause(reopen: &mut Option<Reopen>, interval: Duration) -> Option<String> {
    let Some(reopen) = reopen else {
        tokio::time::sleep(interval).await;
        return None;
    };
    tokio::select! {
        () = tokio::time::sleep(interval) => None,
        () = reopen.current_lost() => {
            Some("the probe no longer has the session (it restarted)".to_string())
        }
    }
}

/// One region's loop: ping every interval while up; once a ping fails, declare the region down
/// and retry with backoff until one is answered and (with `reopen`) the session is open again.
async fn monitor(
    region: String,
    mut client: LinkClient<ProbeChannel>,
    mut reopen: Option<Reopen>,
    settings: LinkSettings,
    state: watch::Sender<RegionState>,
    events: mpsc::UnboundedSender<(String, LinkEvent)>,
) {
    let send = |event: LinkEvent| events.send((region.clone(), event)).is_ok();
    let mut last_ok_at: Option<String> = None;
    loop {
        // Up: sample the link every interval.
        let reason = loop {
            match ping(&mut client, settings.ping_timeout).await {
                Ok(sample) => {
                    last_ok_at = Some(now_rfc3339());
                    if !send(LinkEvent::Sample(sample)) {
                        return;
                    }
                }
                Err(reason) => break reason,
            }
            if let Some(reason) = pause(&mut reopen, settings.ping_interval).await {
                break reason;
            }
        };
        let since = Instant::now();
        state.send_replace(RegionState::Down {
            reason: reason.clone(),
        });
        if !send(LinkEvent::Down {
            reason,
            detected_at: now_rfc3339(),
            last_ok_at: last_ok_at.clone(),
        }) {
            return;
        }
        // Down: retry with backoff; each retry makes the channel reconnect.
        let mut backoff = settings.backoff_first;
        loop {
            tokio::time::sleep(backoff).await;
            let answered = match ping(&mut client, settings.ping_timeout).await {
                Ok(sample) => match &mut reopen {
                    Some(r) => reopened(&mut r.opener, &r.published).await.map(|()| sample),
                    None => Ok(sample),
                },
                Err(reason) => Err(reason),
            };
            match answered {
                Ok(sample) => {
                    last_ok_at = Some(now_rfc3339());
                    state.send_replace(RegionState::Up);
                    if !send(LinkEvent::Up { at: now_rfc3339() })
                        || !send(LinkEvent::Sample(sample))
                    {
                        return;
                    }
                    break;
                }
                Err(_) => {
                    if !send(LinkEvent::StillDown { since }) {
                        return;
                    }
                    backoff = (backoff * 2).min(settings.backoff_max);
                }
            }
        }
        tokio::time::sleep(settings.ping_interval).await;
    }
}

/// Opens the session again on a region that answers again and publishes it; the error says
/// why it could not (the region then stays down).
async fn reopened(
    opener: &mut SessionOpener,
    published: &watch::Sender<ProbeSession>,
) -> Result<(), String> {
    match tokio::time::timeout(REOPEN_TIMEOUT, opener.open()).await {
        Ok(Ok(session)) => {
            published.send_replace(session);
            Ok(())
        }
        Ok(Err(e)) => {
            let reason = format!("cannot re-open the session: {e}");
            tracing::warn!("{reason}");
            Err(reason)
        }
        Err(_) => {
            let reason = format!(
                "the session was not re-opened within {} s",
                REOPEN_TIMEOUT.as_secs()
            );
            tracing::warn!("{reason}");
            Err(reason)
        }
    }
}

/// A sitting's samples of one region reduced to what the manifest keeps; `None` without samples.
pub fn summarize_link(samples: &[PingSample]) -> Option<RegionLink> {
    let best = samples
        .iter()
        .min_by(|a, b| a.rtt_ms.total_cmp(&b.rtt_ms))?;
    let mut rtts: Vec<f64> = samples.iter().map(|s| s.rtt_ms).collect();
    rtts.sort_by(f64::total_cmp);
    let p50 = openbench_common::stats::nearest_rank(&rtts, 0.5).unwrap_or(best.rtt_ms);
    Some(RegionLink {
        samples: samples.len() as u64,
        rtt_ms_min: best.rtt_ms,
        rtt_ms_p50: p50,
        rtt_ms_max: rtts.last().copied().unwrap_or(best.rtt_ms),
        clock_offset_ms: best.offset_ms(),
        clock_offset_error_ms: best.rtt_ms / 2.0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(sent_us: i64, probe_us: i64, received_us: i64) -> PingSample {
        PingSample {
            sent_us,
            probe_us,
            received_us,
            rtt_ms: (received_us - sent_us) as f64 / 1000.0,
        }
    }

    #[test]
    fn the_offset_is_the_probe_time_minus_the_midpoint_from_the_fastest_sample() {
        // Probe 250 ms ahead; sent at 1 000 000 µs, received 4 ms later, the probe answered
        // 1 ms after the send by its own clock + 250 ms: offset = 1 251 000 − 1 002 000 µs.
        let fast = sample(1_000_000, 1_251_000, 1_004_000);
        assert_eq!(fast.offset_ms(), 249.0);
        // A slower sample (40 ms, asymmetric) gives a worse estimate and is not used.
        let slow = sample(2_000_000, 2_285_000, 2_040_000);
        assert_eq!(slow.offset_ms(), 265.0);
        let link = summarize_link(&[slow, fast, sample(3_000_000, 3_252_000, 3_010_000)]).unwrap();
        assert_eq!(link.samples, 3);
        assert_eq!(link.rtt_ms_min, 4.0);
        assert_eq!(link.rtt_ms_p50, 10.0);
        assert_eq!(link.rtt_ms_max, 40.0);
        assert_eq!(link.clock_offset_ms, 249.0);
        assert_eq!(link.clock_offset_error_ms, 2.0);
        assert_eq!(summarize_link(&[]), None);
    }

    #[test]
    fn the_default_detection_bound_is_interval_plus_timeout() {
        assert_eq!(
            LinkSettings::default().detection_bound(),
            Duration::from_secs(3)
        );
        assert_eq!(
            FaultPolicy::default().on_region_down,
            RegionDownPolicy::Stop
        );
    }
}
