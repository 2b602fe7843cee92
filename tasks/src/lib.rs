//! The task families (METHODOLOGY §4–§5) as any workflow that sends them shares them: the
//! dataset release (`dataset`: its contract, validating loader, deterministic generator,
//! rule-based checker and the simulator's canned answers) and exact scoring (`scoring`: strict
//! JSON, exact schemas, no partial credit).
//!
//! micro-single-task sends the items in paired rounds and the load workflow sends them under
//! load (its `tasks` workload); both read the release and score answers here, so neither
//! workflow imports the other.

pub mod dataset;
pub mod scoring;
