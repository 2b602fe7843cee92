//! The tonic `Probe` service: `Describe` says who this probe is, `OpenSession` takes the
//! coordinator's session, `Execute` routes a planned request of that session to its provider's
//! actor.
//!
//! Guards on `Execute`, before a provider is ever called (the token, TLS and the size limit sit
//! in front, in [`crate::server`]): the request names the open session, its run, this probe's
//! region and a provider the session opened; its deadline is within the session's `timeout_ms`
//! ([`bounded_deadline`]); and no more requests run at once per provider lane than the session's
//! `max_in_flight` (one unless the coordinator asks for more), and no more than
//! [`MAX_PROBE_IN_FLIGHT`] on the whole probe (a session whose lanes could ask for more is
//! refused at `OpenSession`).
//!
//! Requests nobody waits for are cancelled: every request of a session is cancelled when a newer
//! session replaces it, and each one when its own call is dropped (the coordinator gave up on
//! it, or its connection was lost), so a killed coordinator's requests never count against the
//! next sitting's lanes.
//!
//! Trace context: the caller's context, read from the gRPC metadata by [`crate::trace_context`],
//! is the remote parent of the request's GenAI span ([`crate::genai_span`]), created by hand
//! (never inside an `#[instrument]` function, where `set_parent` fails).

use crate::actor::{Busy, Lane, ProviderActor, ProviderMsg};
use crate::error::ProbeError;
use crate::genai_metrics::RequestMetrics;
use crate::genai_span::{SpanPolicy, SpanTemplate, record_execution, request_span};
use crate::limits::{RECORD_WITHIN_BYTES, encode_within};
use crate::server::ProbeConfig;
use crate::session_open::{CredentialSource, EndpointRules, executors};
use openbench_common::hash::sha256_hex;
use openbench_common::probe_session::{SESSION_NOT_OPEN, SessionOpen};
use openbench_common::record::Execution;
use openbench_common::request::PlannedRequest;
use openbench_common::spec::MAX_TIMEOUT_MS;
use openbench_proto::link::{InMemoryExecution, InProcessCall};
use openbench_proto::v1::probe_server::Probe;
use openbench_proto::v1::{
    DescribeRequest, DescribeResponse, ExecuteRequest, ExecuteResponse, HealthRequest,
    HealthResponse, OpenSessionRequest, OpenSessionResponse, ProbeIdentity,
};
use ractor::{Actor, ActorRef, rpc::CallResult};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;
use tonic::{Request, Response, Status};

pub use openbench_common::probe_session::MAX_PROBE_IN_FLIGHT;

/// Provider key → its actor, kept for the server's life: a new session hands each actor its new
/// executor and bound, so a lane's in-flight bound holds across sessions. Shared with the
/// server handle, which stops the actors at shutdown. The lock is never held across an await.
#[derive(Clone, Default)]
pub(crate) struct Actors(Arc<Mutex<HashMap<String, ActorRef<ProviderMsg>>>>);

impl std::fmt::Debug for Actors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys: Vec<String> = self
            .0
            .lock()
            .map(|map| map.keys().cloned().collect())
            .unwrap_or_default();
        f.debug_tuple("Actors").field(&keys).finish()
    }
}

impl Actors {
    fn get(&self, key: &str) -> Option<ActorRef<ProviderMsg>> {
        self.0.lock().ok().and_then(|map| map.get(key).cloned())
    }

    /// Keeps `actor` for `key` unless another session open got there first; returns the one kept.
    fn keep(&self, key: &str, actor: ActorRef<ProviderMsg>) -> ActorRef<ProviderMsg> {
        let Ok(mut map) = self.0.lock() else {
            return actor;
        };
        match map.get(key) {
            Some(existing) => {
                actor.stop(None);
                existing.clone()
            }
            None => {
                map.insert(key.to_string(), actor.clone());
                actor
            }
        }
    }

    /// Stops every actor.
    pub(crate) fn stop_all(&self) {
        if let Ok(map) = self.0.lock() {
            for actor in map.values() {
                actor.stop(None);
            }
        }
    }
}

/// The session a coordinator opened: what `Execute` is checked against.
struct OpenSession {
    id: String,
    run_id: String,
    /// The session contract's `timeout_ms`: no request may ask for a longer deadline.
    timeout_ms: u64,
    /// Provider key → its actor and the template of its request spans.
    providers: BTreeMap<String, (ActorRef<ProviderMsg>, SpanTemplate)>,
    /// Cancelled when a newer session replaces this one: its requests still in flight end.
    cancel: CancellationToken,
    /// The stall canaries of this session's life (the work runtime and the gRPC thread).
    canaries: crate::health::SessionCanaries,
}

/// What the service knows and does; shared with the requests' tasks on the work runtime.
struct Service {
    region: String,
    identity: ProbeIdentity,
    credentials: CredentialSource,
    endpoints: EndpointRules,
    actors: Actors,
    /// The open session (a newer `OpenSession` replaces it); the lock is never held across an
    /// await.
    session: Mutex<Option<Arc<OpenSession>>>,
    /// Sessions opened so far (feeds session ids).
    opened: AtomicU64,
    /// Names and content capture of the request spans, from the environment.
    span_policy: SpanPolicy,
    /// The request metrics (no-ops without a meter provider).
    metrics: RequestMetrics,
    /// Where the requests' work runs (the provider actors, their requests, encoding the
    /// records): not the server's own thread, which must stay free for pings.
    work: tokio::runtime::Handle,
}

impl Service {
    /// The service of `config`, whose requests run on `work`; hashes the tokenizer ranks once
    /// for `Describe`.
    pub(crate) async fn new(
        config: ProbeConfig,
        actors: Actors,
        work: tokio::runtime::Handle,
    ) -> Result<Self, ProbeError> {
        let tokenizer = tokio::task::spawn_blocking(openbench_common::tokenizer::ranks_sha256)
            .await
            .map_err(|e| ProbeError::Server {
                message: format!("cannot hash the tokenizer ranks: {e}"),
            })?;
        Ok(Service {
            identity: crate::identity::describe(&config.region, &config.code_digest, &tokenizer),
            region: config.region,
            credentials: config.credentials,
            endpoints: config.endpoints,
            actors,
            session: Mutex::new(None),
            opened: AtomicU64::new(0),
            span_policy: SpanPolicy::from_env(),
            metrics: RequestMetrics::global(),
            work,
        })
    }

    fn open_session_now(&self) -> Option<Arc<OpenSession>> {
        self.session.lock().ok().and_then(|s| s.clone())
    }

    /// The actor of `lane`'s provider, now using `lane`.
    async fn actor_for(&self, lane: Lane) -> Result<ActorRef<ProviderMsg>, Status> {
        let key = lane.executor.adapter().key.clone();
        if let Some(actor) = self.actors.get(&key) {
            actor
                .cast(ProviderMsg::Use(lane))
                .map_err(|e| Status::internal(format!("provider {key}: its actor stopped: {e}")))?;
            return Ok(actor);
        }
        // Spawned from the work runtime, so the actor and the requests it spawns run there.
        let spawned = self
            .work
            .spawn(Actor::spawn(None, ProviderActor, lane.clone()))
            .await
            .map_err(|e| {
                Status::internal(format!("provider {key}: cannot start its actor: {e}"))
            })?;
        let (actor, _join) = spawned.map_err(|e| {
            Status::internal(format!("provider {key}: cannot start its actor: {e}"))
        })?;
        let kept = self.actors.keep(&key, actor.clone());
        if kept.get_id() != actor.get_id() {
            kept.cast(ProviderMsg::Use(lane))
                .map_err(|e| Status::internal(format!("provider {key}: its actor stopped: {e}")))?;
        }
        Ok(kept)
    }

    /// The open session `request` names, or the refusal saying why it may not run.
    fn admit(
        &self,
        session_id: &str,
        planned: &PlannedRequest,
    ) -> Result<Arc<OpenSession>, Status> {
        let id = &planned.identity;
        let rid = &id.request_id;
        if session_id.is_empty() {
            return Err(Status::failed_precondition(format!(
                "request {rid}: no session: the coordinator opens one (OpenSession) before it \
                 executes"
            )));
        }
        let session = self
            .open_session_now()
            .filter(|s| s.id == session_id)
            .ok_or_else(|| {
                Status::failed_precondition(format!(
                    "request {rid}: session {session_id} {SESSION_NOT_OPEN} {}",
                    self.region
                ))
            })?;
        if id.run_id != session.run_id {
            return Err(Status::permission_denied(format!(
                "request {rid}: run {:?} is not the run of session {session_id}",
                id.run_id
            )));
        }
        if id.region != self.region {
            return Err(Status::permission_denied(format!(
                "request {rid}: region {:?} is not this probe's ({})",
                id.region, self.region
            )));
        }
        if !session.providers.contains_key(&id.provider) {
            let opened: Vec<&str> = session.providers.keys().map(String::as_str).collect();
            return Err(Status::permission_denied(format!(
                "request {rid}: provider {:?} was not opened by session {session_id} in region {} \
                 (it opened: {})",
                id.provider,
                self.region,
                opened.join(", ")
            )));
        }
        bounded_deadline(planned, session.timeout_ms)?;
        Ok(session)
    }
}

impl Service {
    async fn execute(
        &self,
        request: Request<ExecuteRequest>,
    ) -> Result<Response<ExecuteResponse>, Status> {
        let parent = crate::trace_context::extract(request.metadata());
        let in_process = request.extensions().get::<InProcessCall>().is_some();
        let call = request.into_inner();
        let planned: PlannedRequest =
            serde_json::from_str(&call.planned_request_json).map_err(|e| {
                Status::invalid_argument(format!(
                    "planned_request_json is not a PlannedRequest: {e}"
                ))
            })?;
        let session = self.admit(&call.session_id, &planned)?;
        let id = &planned.identity;
        let Some((actor, template)) = session.providers.get(&id.provider) else {
            return Err(Status::internal("the admitted provider has no actor"));
        };
        let span = request_span(template, &planned, parent, self.span_policy);
        let request_id = id.request_id.clone();
        // Cancelled when this call is dropped before it answers (the caller went away) or when
        // the session is replaced.
        let cancel = session.cancel.child_token();
        let _cancel_when_dropped = cancel.clone().drop_guard();
        let release = crate::release::due_instant(call.release_at_unix_us);
        if let Some(due) = release {
            let ahead = due.saturating_duration_since(std::time::Instant::now());
            if ahead > crate::release::MAX_AHEAD {
                return Err(Status::invalid_argument(format!(
                    "request {request_id}: release_at_unix_us is {:.1} s ahead of this probe's \
                     clock; at most {} s",
                    ahead.as_secs_f64(),
                    crate::release::MAX_AHEAD.as_secs()
                )));
            }
        }
        let run = Run {
            actor: actor.clone(),
            span,
            region: self.region.clone(),
            probe_id: self.identity.probe_id.clone(),
            span_policy: self.span_policy,
            metrics: self.metrics.clone(),
        };
        let execution = run.execute(planned, release, cancel.clone()).await?;
        if in_process {
            // Handed back as it is: the JSON below would decode to the same value (the events'
            // request ids, never serialised, are empty here), and no message limit applies in
            // memory. Every session's limits keep a record within it anyway (`limits::tests`).
            let mut response = Response::new(ExecuteResponse::default());
            response
                .extensions_mut()
                .insert(InMemoryExecution::new(execution));
            return Ok(response);
        }
        let mut execution = execution;
        let execution_json = encode_within(&mut execution, RECORD_WITHIN_BYTES).map_err(|e| {
            Status::internal(format!(
                "request {request_id}: cannot encode the record: {e}"
            ))
        })?;
        Ok(Response::new(ExecuteResponse { execution_json }))
    }

    async fn describe(
        &self,
        _request: Request<DescribeRequest>,
    ) -> Result<Response<DescribeResponse>, Status> {
        let providers = self
            .open_session_now()
            .map(|s| s.providers.keys().cloned().collect())
            .unwrap_or_default();
        let lock_hashes = [
            ("code", &self.identity.code_digest),
            ("tokenizer", &self.identity.tokenizer_sha256),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
        Ok(Response::new(DescribeResponse {
            version: self.identity.version.clone(),
            region: self.region.clone(),
            lock_hashes,
            providers,
            identity: Some(self.identity.clone()),
        }))
    }

    async fn open_session(
        &self,
        request: Request<OpenSessionRequest>,
    ) -> Result<Response<OpenSessionResponse>, Status> {
        let session: SessionOpen = serde_json::from_str(&request.into_inner().session_json)
            .map_err(|e| {
                Status::invalid_argument(format!("session_json is not a SessionOpen: {e}"))
            })?;
        // Reading `.env`, building HTTP clients and warming the tokenizer block: off the runtime.
        let (region, credentials, endpoints) = (
            self.region.clone(),
            self.credentials.clone(),
            self.endpoints.clone(),
        );
        let checked = session.clone();
        let built = tokio::task::spawn_blocking(move || {
            executors(&checked, &region, &credentials, &endpoints)
        })
        .await
        .map_err(|e| Status::internal(format!("session open failed: {e}")))?;
        let built = built.map_err(|refusal| refusal.status())?;
        let mut providers = BTreeMap::new();
        let max_in_flight = session.lane_in_flight();
        probe_bound(built.len(), max_in_flight, &self.region)?;
        for executor in built {
            let template = SpanTemplate::new(executor.adapter(), executor.contract());
            let key = executor.adapter().key.clone();
            let actor = self
                .actor_for(Lane {
                    executor,
                    max_in_flight,
                })
                .await?;
            providers.insert(key, (actor, template));
        }
        let n = self.opened.fetch_add(1, Ordering::Relaxed);
        let id = session_id(&session, n);
        let opened = Arc::new(OpenSession {
            id: id.clone(),
            run_id: session.run_id.clone(),
            timeout_ms: session.contract.timeout_ms,
            providers,
            cancel: CancellationToken::new(),
            canaries: crate::health::SessionCanaries::start(&self.work),
        });
        let replaced = self
            .session
            .lock()
            .ok()
            .and_then(|mut slot| slot.replace(opened));
        // The replaced session's requests still in flight are nobody's any more.
        if let Some(old) = replaced {
            old.cancel.cancel();
        }
        tracing::info!(
            run_id = %session.run_id,
            session_id = %id,
            providers = session.adapters.len(),
            "session opened"
        );
        Ok(Response::new(OpenSessionResponse {
            session_id: id,
            probe_id: self.identity.probe_id.clone(),
        }))
    }
}

/// The service behind the guards. Its calls arrive on the server's own thread; `Execute` is
/// handed whole (decoding, admission, measuring, encoding) to the work runtime, so that thread
/// only frames calls and answers pings, however many requests are in flight.
#[derive(Clone)]
pub(crate) struct ProbeService(Arc<Service>);

impl ProbeService {
    /// The service of `config`, whose requests run on `work`; hashes the tokenizer ranks once
    /// for `Describe`.
    pub(crate) async fn new(
        config: ProbeConfig,
        actors: Actors,
        work: tokio::runtime::Handle,
    ) -> Result<Self, ProbeError> {
        Ok(ProbeService(Arc::new(
            Service::new(config, actors, work).await?,
        )))
    }
}

#[tonic::async_trait]
impl Probe for ProbeService {
    async fn execute(
        &self,
        request: Request<ExecuteRequest>,
    ) -> Result<Response<ExecuteResponse>, Status> {
        let service = self.0.clone();
        // Fires when this call is dropped before it answers (the caller went away): the task
        // then drops the request, whose own guard cancels its measurement.
        let gone = CancellationToken::new();
        let _cancel_when_dropped = gone.clone().drop_guard();
        let task = self.0.work.spawn(async move {
            tokio::select! {
                answer = service.execute(request) => answer,
                () = gone.cancelled() => Err(Status::cancelled("the call was dropped")),
            }
        });
        task.await
            .map_err(|e| Status::internal(format!("the request's task failed: {e}")))?
    }

    async fn describe(
        &self,
        request: Request<DescribeRequest>,
    ) -> Result<Response<DescribeResponse>, Status> {
        self.0.describe(request).await
    }

    async fn open_session(
        &self,
        request: Request<OpenSessionRequest>,
    ) -> Result<Response<OpenSessionResponse>, Status> {
        self.0.open_session(request).await
    }

    async fn health(
        &self,
        request: Request<HealthRequest>,
    ) -> Result<Response<HealthResponse>, Status> {
        let asked = request.into_inner().session_id;
        let session = self.0.session.lock().ok().and_then(|slot| slot.clone());
        match session {
            Some(open) if open.id == asked => Ok(Response::new(open.canaries.answer()?)),
            _ => Err(Status::failed_precondition(format!(
                "session {asked} {SESSION_NOT_OPEN} {}",
                self.0.region
            ))),
        }
    }
}

/// One admitted request's work, done on the work runtime: its provider actor measures it, then
/// its record is named, traced, counted and encoded.
struct Run {
    actor: ActorRef<ProviderMsg>,
    span: tracing::Span,
    region: String,
    probe_id: String,
    span_policy: SpanPolicy,
    metrics: RequestMetrics,
}

impl Run {
    /// The execution of `planned`, released at `release`, named, traced and counted, or the
    /// refusal; ends at once (the actor's task drops the request) when `cancel` fires.
    async fn execute(
        self,
        planned: PlannedRequest,
        release: Option<std::time::Instant>,
        cancel: CancellationToken,
    ) -> Result<Execution, Status> {
        let provider = planned.identity.provider.clone();
        let request_id = planned.identity.request_id.clone();
        let load = planned.load.clone();
        let (span, sent_cancel) = (self.span.clone(), cancel.clone());
        let reply = self
            .actor
            .call(
                |port| ProviderMsg::Execute(Box::new(planned), release, span, sent_cancel, port),
                None,
            )
            .await;
        let mut execution = match reply {
            Ok(CallResult::Success(Ok(execution))) => execution,
            Ok(CallResult::Success(Err(busy))) => {
                return Err(Status::failed_precondition(busy_message(
                    &provider,
                    &self.region,
                    busy,
                )));
            }
            Ok(CallResult::SenderError) if cancel.is_cancelled() => {
                return Err(Status::aborted(format!(
                    "request {request_id}: cancelled: its session was replaced by a newer one"
                )));
            }
            Ok(CallResult::Timeout) | Ok(CallResult::SenderError) | Err(_) => {
                return Err(Status::internal(format!(
                    "provider {provider}: its probe actor did not answer request {request_id}"
                )));
            }
        };
        execution.record.probe_id = Some(self.probe_id);
        record_execution(&self.span, &execution, self.span_policy);
        self.metrics.record(&execution, load.as_deref());
        Ok(execution)
    }
}

/// Refuses (`RESOURCE_EXHAUSTED`, naming the figures) a session whose `lanes` × `per_lane`
/// requests in flight could pass [`MAX_PROBE_IN_FLIGHT`].
fn probe_bound(lanes: usize, per_lane: u32, region: &str) -> Result<(), Status> {
    let asked = u64::try_from(lanes)
        .unwrap_or(u64::MAX)
        .saturating_mul(u64::from(per_lane.max(1)));
    if asked > MAX_PROBE_IN_FLIGHT {
        return Err(Status::resource_exhausted(format!(
            "the session asks for {lanes} lanes × {per_lane} requests in flight = {asked} on the \
             probe in region {region}; a probe holds at most {MAX_PROBE_IN_FLIGHT} at once \
             (fewer users or a lower load.max_in_flight, or more regions)"
        )));
    }
    Ok(())
}

/// The refusal of a request on a lane that already has `busy.max_in_flight` requests in flight.
fn busy_message(provider: &str, region: &str, busy: Busy) -> String {
    match busy.max_in_flight {
        0 | 1 => format!(
            "provider {provider} is busy with another request in region {region} (one at a time)"
        ),
        n => format!(
            "provider {provider} is busy with {n} other requests in region {region} ({n} at a \
             time)"
        ),
    }
}

/// `s-` + 24 hex of sha256(run id, lock hash, this server's session count, the wall clock and
/// the process id): distinct for every session a probe opens. Not a secret: the token is.
fn session_id(session: &SessionOpen, n: u64) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let digest = sha256_hex(format!(
        "{}\0{}\0{n}\0{now}\0{}",
        session.run_id,
        session.lock_sha256,
        std::process::id()
    ));
    format!("s-{}", digest.get(..24).unwrap_or(&digest))
}

/// Refuses, with `INVALID_ARGUMENT` naming the field, a planned deadline above the longest any
/// spec allows ([`MAX_TIMEOUT_MS`]) or above the session's `timeout_ms`: a caller cannot hold a
/// lane (and the provider's key) longer than the contract allows. Zero means the contract's
/// timeout (the executor's default).
fn bounded_deadline(planned: &PlannedRequest, timeout_ms: u64) -> Result<(), Status> {
    let (request_id, deadline_ms) = (&planned.identity.request_id, planned.deadline_ms);
    if deadline_ms > MAX_TIMEOUT_MS {
        return Err(Status::invalid_argument(format!(
            "request {request_id}: deadline_ms {deadline_ms} is above {MAX_TIMEOUT_MS}"
        )));
    }
    if deadline_ms > timeout_ms {
        return Err(Status::invalid_argument(format!(
            "request {request_id}: deadline_ms {deadline_ms} exceeds the session's timeout_ms \
             {timeout_ms}"
        )));
    }
    Ok(())
}
