//! Helpers of the tests that drive real external programs (llama-server, the OTLP collector, the
//! PostgreSQL test server): child processes that report readiness or why they died, skips that
//! count as skips, and a database of a test's own.
#![allow(dead_code)]

pub mod child;
pub mod llama;
pub mod ours;
pub mod postgres;
pub mod skip;
