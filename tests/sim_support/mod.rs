//! One request through the real probe executor against a fresh in-process simulator over
//! loopback: the set-up shared by the catalogue tests (`simulator_catalogue`) and the hostile
//! ones (`simulator_hostile`).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use openbench_common::limits::StreamLimits;
use openbench_common::record::Execution;
use openbench_common::request::{ChatMessage, PlannedRequest, RequestIdentity};
use openbench_common::spec::{Api, Auth, ProviderAdapter, RequestContract};
use openbench_probe::{Credentials, Executor};
use openbench_simulator::{SimConfig, start};
use std::collections::BTreeMap;

/// The variable a bearer key is read from.
const KEY_ENV: &str = "SIM_KEY";

/// What to send.
pub struct SimCall<'a> {
    /// Run id of the request's identity.
    pub run_id: &'a str,
    /// Simulator profile.
    pub profile: &'a str,
    /// Simulator time scale.
    pub time_scale: f64,
    /// Requested model id (a `+quirk` suffix selects quirks too).
    pub model: &'a str,
    /// `x-sim-quirk` header value (none when empty).
    pub quirks: &'a str,
    /// The request's deadline, ms.
    pub deadline_ms: u64,
    /// A bearer key to send (and to redact), if any.
    pub bearer: Option<&'a str>,
    /// Stream limits of the contract.
    pub limits: StreamLimits,
    /// The messages.
    pub messages: Vec<ChatMessage>,
    /// The API dialect spoken (the simulator serves each at its path).
    pub api: Api,
}

/// Starts a simulator (seed 11, default profile `plain`), builds the executor for `call` and runs
/// the one request; returns its execution.
pub async fn execute(call: SimCall<'_>) -> Execution {
    execute_offering(call, None).await
}

/// [`execute`] with the request offering `tool`.
pub async fn execute_offering(
    call: SimCall<'_>,
    tool: Option<openbench_common::tool::ToolOffer>,
) -> Execution {
    let sim = start(
        SimConfig {
            time_scale: call.time_scale,
            seed: 11,
            default_profile: "plain".into(),
            answers: Vec::new(),
        },
        "127.0.0.1:0".parse().unwrap(),
    )
    .await
    .unwrap();
    let mut extra_headers = BTreeMap::new();
    if !call.quirks.is_empty() {
        extra_headers.insert("x-sim-quirk".to_string(), call.quirks.to_string());
    }
    let mut adapter = ProviderAdapter {
        display_name: "Simulator".into(),
        extra_headers,
        api: call.api,
        ..ProviderAdapter::open(
            "sim",
            &call.api.post_url(&sim.profile_base(call.profile)),
            call.model,
        )
    };
    let credentials = match call.bearer {
        Some(key) => {
            // Anthropic takes the key in `x-api-key`; the others as a bearer token.
            adapter.auth = if call.api == Api::AnthropicMessages {
                Auth::Headers {
                    headers: BTreeMap::from([("x-api-key".to_string(), KEY_ENV.to_string())]),
                }
            } else {
                Auth::Bearer {
                    env: KEY_ENV.into(),
                }
            };
            Credentials::from_pairs([(KEY_ENV, key)])
        }
        None => Credentials::empty(),
    };
    let contract = RequestContract {
        limits: call.limits,
        ..RequestContract::reference(20_000)
    };
    let executor = Executor::new(adapter, contract, &credentials).unwrap();
    let request = PlannedRequest {
        identity: RequestIdentity {
            run_id: call.run_id.into(),
            round_id: "round-0".into(),
            request_id: "req-0".into(),
            round_index: 0,
            attempt: 0,
            task_family: "meeting-notes-lookup".into(),
            item_id: "item-0".into(),
            provider: "sim".into(),
            region: "local".into(),
            lane: "sim".into(),
            ..RequestIdentity::default()
        },
        messages: call.messages,
        deadline_ms: call.deadline_ms,
        output: None,
        load: None,
        tool,
        tools: Vec::new(),
    };
    executor.execute(&request).await
}
