//! The coordinator↔probe gRPC contract, generated from `proto/openbench/probe/v1/probe.proto`,
//! with what travels beside the messages: trace context ([`trace_context`]) and the link's
//! token, TLS files and connector ([`link`]).

/// Version 1 of the probe service: `Execute` one planned request, `Describe` the probe.
#[allow(missing_docs, clippy::all, clippy::unwrap_used, clippy::expect_used)]
pub mod v1 {
    tonic::include_proto!("openbench.probe.v1");
}

pub mod link;
pub mod trace_context;
