//! Helpers of the tests that drive real external programs (llama-server, the OTLP collector):
//! child processes that report readiness or why they died, and skips that count as skips.
#![allow(dead_code)]

pub mod child;
pub mod llama;
pub mod ours;
pub mod skip;
