//! Reading a run directory that another process may be writing: the lock and plan once, the
//! manifest on every refresh, and the results and round lines incrementally by offset
//! ([`LineFollower`]). Plain files only, so a directory synced from another machine works; the
//! writer lock (`.writer.lock`) is never opened, so `watch` never blocks a writer nor is blocked.

use crate::state::RunState;
use openbench_common::rundir::{
    self as layout, Followed, Lane, LineFollower, RunDirError, RunFiles, RunLock, RunManifest,
    RunMode, RunStatus, read_json,
};
use std::path::{Path, PathBuf};

/// The run's identity and status, as the header shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Header {
    /// Run id.
    pub run_id: String,
    /// What last ran (`init` when the manifest is missing).
    pub mode: RunMode,
    /// Manifest status (`None` when the manifest is missing or unreadable).
    pub status: Option<RunStatus>,
    /// Smoke attempt shown (0 for a full run).
    pub attempt: u32,
    /// The simulator's time scale, from the lock, when the run targets the embedded simulator.
    pub simulator_time_scale: Option<f64>,
}

/// A followed run directory; see the module docs.
#[derive(Debug)]
pub struct RunSource {
    dir: PathBuf,
    lock: RunLock,
    header: Header,
    /// The plan feeding `state`, once it exists.
    has_plan: bool,
    /// Units (rounds or phases) of that plan, phase files beside it included: a phase file
    /// past them means the schedule grew.
    plan_units: usize,
    results: LineFollower,
    rounds: LineFollower,
    /// The stream events, followed only for a plan of phases (the live load row's ITL).
    events: Option<LineFollower>,
    state: RunState,
}

/// What one refresh changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Refresh {
    /// New results or round lines, a reset, a new plan or a new status.
    pub changed: bool,
}

impl RunSource {
    /// Opens `dir` (it must hold `run-lock.json`) and reads everything written so far.
    pub fn open(dir: &Path) -> Result<RunSource, RunDirError> {
        let lock: RunLock = read_json(&layout::path(dir, layout::RUN_LOCK))?;
        let header = read_header(dir, &lock);
        let mut source = RunSource::fresh(dir, lock, header);
        source.refresh()?;
        Ok(source)
    }

    fn fresh(dir: &Path, lock: RunLock, header: Header) -> RunSource {
        let files = RunFiles::new(dir, header.attempt);
        let lanes = lock_lanes(&lock);
        RunSource {
            dir: dir.to_path_buf(),
            state: RunState::new(None, &lanes, &lock.families),
            lock,
            header,
            has_plan: false,
            plan_units: 0,
            results: LineFollower::new(files.results),
            rounds: LineFollower::new(files.rounds),
            events: None,
        }
    }

    /// The header as of the last refresh.
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The accumulated state as of the last refresh.
    pub fn state(&self) -> &RunState {
        &self.state
    }

    /// Reads what changed since the last refresh: the manifest, the plan if it appeared, and the
    /// lines appended to the results and rounds files. A new smoke attempt or a switch from smoke
    /// to the full run starts over on that plan's files.
    pub fn refresh(&mut self) -> Result<Refresh, RunDirError> {
        let header = read_header(&self.dir, &self.lock);
        let mut changed = header != self.header;
        if header.attempt != self.header.attempt {
            *self = RunSource::fresh(&self.dir, self.lock.clone(), header.clone());
            changed = true;
        }
        self.header = header;
        let files = RunFiles::new(&self.dir, self.header.attempt);
        // The plan once it exists; again (every line re-read) when the schedule grew a phase,
        // so its requests count in the totals and its records under it.
        let grew = self.has_plan
            && self.state.by_phase
            && crate::plan_file::phase_file_path(&files.plan, self.plan_units).exists();
        if (!self.has_plan && files.plan.exists()) || grew {
            let plan = crate::plan_file::read(&files.plan)?;
            let lanes = lock_lanes(&self.lock);
            self.state = RunState::new(Some(&plan), &lanes, &self.lock.families);
            self.results = LineFollower::new(files.results);
            self.rounds = LineFollower::new(files.rounds);
            self.events = plan.by_phase.then(|| LineFollower::new(files.events));
            self.has_plan = true;
            self.plan_units = plan.units.len();
            changed = true;
        }
        let state = &mut self.state;
        // Events before results: a record's events are written before it, so every record read
        // here has its chunks (a torn read only delays them to the next refresh).
        let events = match &mut self.events {
            Some(follower) => follower.poll(|item| match item {
                Followed::Reset => state.reset_events(),
                Followed::Line(line) => state.events_line(line),
            })?,
            None => Default::default(),
        };
        let results = self.results.poll(|item| match item {
            Followed::Reset => state.reset_records(),
            Followed::Line(line) => state.results_line(line),
        })?;
        let rounds = self.rounds.poll(|item| match item {
            Followed::Reset => state.reset_rounds(),
            Followed::Line(line) => state.rounds_line(line),
        })?;
        changed |= results.lines > 0 || results.reset || rounds.lines > 0 || rounds.reset;
        changed |= events.lines > 0 || events.reset;
        if results.lines > 0 || results.reset {
            state.settle();
        }
        Ok(Refresh { changed })
    }
}

/// Mode, status and attempt from the manifest (missing or unreadable: `init`, unknown).
fn read_header(dir: &Path, lock: &RunLock) -> Header {
    let manifest = RunManifest::load(dir).ok();
    let mode = manifest.as_ref().map_or(RunMode::Init, |m| m.mode);
    let attempt = match mode {
        RunMode::Smoke => layout::smoke_attempts(dir).last().copied().unwrap_or(1),
        _ => 0,
    };
    Header {
        run_id: lock.run_id.clone(),
        mode,
        status: manifest.map(|m| m.status),
        attempt,
        simulator_time_scale: lock.simulator_time_scale,
    }
}

/// The lanes a lock implies before a plan exists: one per provider (and region, when several).
fn lock_lanes(lock: &RunLock) -> Vec<Lane> {
    let regions: Vec<&str> = if lock.regions.is_empty() {
        vec![""]
    } else {
        lock.regions.iter().map(String::as_str).collect()
    };
    let several = regions.len() > 1;
    lock.providers
        .iter()
        .flat_map(|p| {
            regions.iter().map(move |region| Lane {
                label: if several {
                    format!("{}@{region}", p.key)
                } else {
                    p.key.clone()
                },
                provider: p.key.clone(),
                region: region.to_string(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
