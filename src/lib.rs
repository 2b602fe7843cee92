//! The library half of the `openbench-inference` package: the pieces the command line and the
//! end-to-end tests share. [`registry`] names every workflow; [`targets`] decides what serves a
//! run's probes and `sim://` endpoints on this machine, so the coordinator never sees the
//! simulator; [`relay`] is the delaying TCP relay of the multi-host tests; [`open_files`] raises
//! the open-files limit that many connections at once need; [`error_text`] prints an error's
//! chain once; [`spec_reference`] derives the spec's JSON Schema and docs/spec.md.

pub mod error_text;
pub mod open_files;
pub mod registry;
pub mod relay;
pub mod spec_reference;
pub mod targets;
