//! The library half of the `openbench-inference` package: the pieces the command line and the
//! end-to-end tests share. [`registry`] names every workflow; [`targets`] decides what serves a
//! run's probes and `sim://` endpoints on this machine, so the coordinator never sees the
//! simulator.

pub mod registry;
pub mod targets;
