//! The OpenTelemetry resource of this process: what the SDK reads from `OTEL_SERVICE_NAME` and
//! `OTEL_RESOURCE_ATTRIBUTES`, with our defaults only for what those leave unset — the service
//! name of the role (coordinator or probe), `service.version`, and a probe's `cloud.region`.

use opentelemetry::{Key, KeyValue, Value};
use opentelemetry_sdk::Resource;

/// What this process is, for its resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceIdentity {
    /// Service name used when neither `OTEL_SERVICE_NAME` nor `OTEL_RESOURCE_ATTRIBUTES` names one.
    pub default_name: &'static str,
    /// Region a probe serves, exported as `cloud.region` unless the variables set one.
    pub region: Option<String>,
}

/// Service name of the coordinator and the other commands.
pub const COORDINATOR_SERVICE: &str = "openbench-inference";
/// Service name of a `probe serve` process.
pub const PROBE_SERVICE: &str = "openbench-probe";

/// The resource: the SDK's detectors (environment variables first), then our defaults for the
/// keys they left unset.
pub fn resource(identity: &ServiceIdentity) -> Resource {
    let detected = Resource::builder().build();
    let unset = |key: &'static str| detected.get(&Key::from_static_str(key)).is_none();
    let named = detected
        .get(&Key::from_static_str("service.name"))
        .is_some_and(|name| !is_unknown_service(&name));
    let mut defaults = Vec::new();
    if unset("service.version") {
        defaults.push(KeyValue::new("service.version", openbench_common::VERSION));
    }
    if let Some(region) = identity.region.clone().filter(|_| unset("cloud.region")) {
        defaults.push(KeyValue::new("cloud.region", region));
    }
    let mut builder = Resource::builder().with_attributes(defaults);
    if !named {
        builder = builder.with_service_name(identity.default_name);
    }
    builder.build()
}

/// The SDK's fallback name (`unknown_service` or `unknown_service:<exe>`), i.e. nobody named it.
fn is_unknown_service(name: &Value) -> bool {
    name.as_str().starts_with("unknown_service")
}
