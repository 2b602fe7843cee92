//! An opt-in capacity model, so latency rises with load in a known way: S concurrent slots
//! served first come first served, a bounded queue past which requests get a 429 with
//! `Retry-After`, and a token rate shared by every stream of the provider.
//!
//! It is selected per route by query parameters (`…/v1/chat/completions?slots=2&queue=8`, or in
//! a spec `sim://plain?slots=2&queue=8`); without them nothing here runs and the simulator
//! behaves exactly as before. Each distinct (profile, parameters) pair has its own capacity.
//!
//! - `slots` = S ≥ 1: at most S responses are played at once; a request waits (FIFO) for a slot,
//!   and its drafted timeline starts when it gets one, so the wait adds to every latency.
//! - `queue` = Q: at most Q requests wait; one arriving when S are in service and Q wait gets an
//!   immediate 429 with `Retry-After: retry_after_s` (default 1). Absent: unbounded.
//! - `tokens_per_s` = R: the provider emits at most R output tokens per (simulated) second in
//!   total; each reasoning or answer chunk is one token, and a chunk is written no earlier than
//!   its drafted time and its turn at the shared rate (first come first served, no burst).
//!
//! Closed forms (simulator/README.md, "Capacity"): with service time T, N requests sent at once
//! finish in ceil(N/S) waves, the k-th (0-based, in arrival order) waiting ⌊k/S⌋·T; a closed loop
//! of N > S users sees a latency of N·T/S (Little's law), a wait of (N/S − 1)·T; the most the
//! provider completes is S/T requests per second.

use crate::SimError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Most slots a route may ask for.
pub const MAX_SLOTS: u32 = 100_000;

/// The parameters of one capacity, as given in a route's query.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CapacitySpec {
    /// Concurrent responses (S).
    pub slots: u32,
    /// Most waiting requests before a 429 (Q); `None`: unbounded.
    pub queue: Option<u32>,
    /// Shared output tokens per simulated second (R); `None`: unlimited.
    pub tokens_per_s: Option<f64>,
    /// The `Retry-After` of a rejected request, seconds.
    pub retry_after_s: u32,
}

impl CapacitySpec {
    /// Parses `slots=2&queue=8&tokens_per_s=400&retry_after_s=1`; `Ok(None)` for a query with
    /// no capacity parameter (empty, or only the prefix cache's `prefix_cache` and
    /// `prefix_cache_tokens`, which [`crate::prefix_cache::requested`] reads). Unknown keys and bad values are refused, naming
    /// them.
    pub fn parse_query(query: &str) -> Result<Option<CapacitySpec>, SimError> {
        let pairs: Vec<&str> = query
            .split('&')
            .filter(|pair| !pair.is_empty())
            .filter(|pair| {
                let key = pair.split('=').next();
                key != Some(crate::prefix_cache::QUERY_KEY)
                    && key != Some(crate::prefix_cache::CAPACITY_KEY)
            })
            .collect();
        if pairs.is_empty() {
            return Ok(None);
        }
        let bad = |key: &str, message: String| SimError::BadRequest {
            field: format!("capacity {key}"),
            message,
        };
        let mut spec = CapacitySpec {
            slots: 0,
            queue: None,
            tokens_per_s: None,
            retry_after_s: 1,
        };
        for pair in pairs {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let int = |max: u32| {
                value
                    .parse::<u32>()
                    .ok()
                    .filter(|v| *v <= max)
                    .ok_or_else(|| bad(key, format!("{value:?} is not an integer in 0..={max}")))
            };
            match key {
                "slots" => spec.slots = int(MAX_SLOTS)?,
                "queue" => spec.queue = Some(int(u32::MAX)?),
                "retry_after_s" => spec.retry_after_s = int(86_400)?,
                "tokens_per_s" => {
                    let rate = value
                        .parse::<f64>()
                        .ok()
                        .filter(|r| *r > 0.0 && r.is_finite());
                    spec.tokens_per_s =
                        Some(rate.ok_or_else(|| {
                            bad(key, format!("{value:?} is not a positive number"))
                        })?);
                }
                _ => {
                    return Err(bad(
                        key,
                        "unknown parameter; known: slots, queue, tokens_per_s, retry_after_s, \
                         prefix_cache, prefix_cache_tokens"
                            .into(),
                    ));
                }
            }
        }
        if spec.slots == 0 {
            return Err(bad("slots", "must be given, at least 1".into()));
        }
        Ok(Some(spec))
    }
}

/// Splits a `sim://` profile part (`plain?slots=2`) into the profile name and its query.
pub fn split_profile(profile: &str) -> (&str, &str) {
    profile.split_once('?').unwrap_or((profile, ""))
}

/// What a capacity has seen, for tests and logs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CapacityStats {
    /// Responses being played now.
    pub in_service: u32,
    /// Requests waiting for a slot now.
    pub waiting: u32,
    /// Most responses ever played at once.
    pub peak_in_service: u32,
    /// Requests refused with a 429.
    pub rejected: u64,
}

/// The live state of one capacity.
#[derive(Debug)]
pub struct Capacity {
    spec: CapacitySpec,
    slots: Arc<Semaphore>,
    counts: Mutex<CapacityStats>,
    /// When the shared token rate next has room (FIFO, no burst).
    next_token_at: Mutex<Option<Instant>>,
    rejected: AtomicU64,
}

/// A held slot: released when dropped (the response ended or the client went away).
#[derive(Debug)]
pub struct Slot {
    capacity: Arc<Capacity>,
    _permit: OwnedSemaphorePermit,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.capacity
            .update(|c| c.in_service = c.in_service.saturating_sub(1));
    }
}

/// The answer of [`Capacity::admit`].
#[derive(Debug)]
pub enum Admission {
    /// Served: play the response while holding the slot.
    Served(Slot),
    /// Over the queue limit: answer 429 with this `Retry-After`.
    Rejected {
        /// Seconds.
        retry_after_s: u32,
    },
    /// The server shut down while the request waited.
    ShutDown,
}

impl Capacity {
    /// A capacity with nothing in service.
    pub fn new(spec: CapacitySpec) -> Capacity {
        Capacity {
            spec,
            slots: Arc::new(Semaphore::new(spec.slots as usize)),
            counts: Mutex::new(CapacityStats::default()),
            next_token_at: Mutex::new(None),
            rejected: AtomicU64::new(0),
        }
    }

    /// Its parameters.
    pub fn spec(&self) -> CapacitySpec {
        self.spec
    }

    /// Counts now.
    pub fn stats(&self) -> CapacityStats {
        let mut stats = self.counts.lock().map(|c| *c).unwrap_or_default();
        stats.rejected = self.rejected.load(Ordering::SeqCst);
        stats
    }

    fn update(&self, f: impl FnOnce(&mut CapacityStats)) {
        if let Ok(mut counts) = self.counts.lock() {
            f(&mut counts);
        }
    }

    /// Waits for a slot (first come first served), or refuses at once when the queue is full.
    pub async fn admit(self: &Arc<Self>, cancel: &CancellationToken) -> Admission {
        let full = self.counts.lock().map(|mut c| {
            let busy = self.slots.available_permits() == 0;
            let full = busy && self.spec.queue.is_some_and(|q| c.waiting >= q);
            if !full {
                c.waiting += 1;
            }
            full
        });
        if full.unwrap_or(false) {
            self.rejected.fetch_add(1, Ordering::SeqCst);
            return Admission::Rejected {
                retry_after_s: self.spec.retry_after_s,
            };
        }
        let acquired = tokio::select! {
            permit = Arc::clone(&self.slots).acquire_owned() => permit.ok(),
            _ = cancel.cancelled() => None,
        };
        self.update(|c| c.waiting = c.waiting.saturating_sub(1));
        let Some(permit) = acquired else {
            return Admission::ShutDown;
        };
        self.update(|c| {
            c.in_service += 1;
            c.peak_in_service = c.peak_in_service.max(c.in_service);
        });
        Admission::Served(Slot {
            capacity: Arc::clone(self),
            _permit: permit,
        })
    }

    /// The instant at which `tokens` output tokens, due at `now`, may be written under the
    /// shared rate (`scale` real seconds per simulated second); `None` without a rate or
    /// tokens. Reserves them.
    pub fn token_turn(&self, now: Instant, tokens: u32, scale: f64) -> Option<Instant> {
        let rate = self.spec.tokens_per_s?;
        if tokens == 0 {
            return None;
        }
        let mut next = self.next_token_at.lock().ok()?;
        let turn = next.map_or(now, |n| n.max(now));
        *next = Some(turn + Duration::from_secs_f64(f64::from(tokens) * scale / rate));
        Some(turn)
    }
}

/// Every capacity of a server, one per (profile, parameters).
#[derive(Debug, Default)]
pub struct Capacities {
    by_route: Mutex<Vec<(String, Arc<Capacity>)>>,
}

impl Capacities {
    /// The capacity of `profile` with `spec`, created on first use.
    pub fn get(&self, profile: &str, spec: CapacitySpec) -> Option<Arc<Capacity>> {
        let key = format!("{profile}?{spec:?}");
        let mut all = self.by_route.lock().ok()?;
        if let Some((_, c)) = all.iter().find(|(k, _)| *k == key) {
            return Some(Arc::clone(c));
        }
        let capacity = Arc::new(Capacity::new(spec));
        all.push((key, Arc::clone(&capacity)));
        Some(capacity)
    }

    /// The stats of the capacity of `profile` with `query` (as written after `?`), if it served.
    pub fn stats(&self, profile: &str, query: &str) -> Option<CapacityStats> {
        let spec = CapacitySpec::parse_query(query).ok()??;
        let key = format!("{profile}?{spec:?}");
        let all = self.by_route.lock().ok()?;
        all.iter().find(|(k, _)| *k == key).map(|(_, c)| c.stats())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_parse_and_bad_ones_name_the_parameter() {
        assert_eq!(CapacitySpec::parse_query("").unwrap(), None);
        let spec = CapacitySpec::parse_query("slots=2&queue=8&tokens_per_s=400.5")
            .unwrap()
            .unwrap();
        assert_eq!(
            spec,
            CapacitySpec {
                slots: 2,
                queue: Some(8),
                tokens_per_s: Some(400.5),
                retry_after_s: 1
            }
        );
        let err = |q: &str| CapacitySpec::parse_query(q).unwrap_err().to_string();
        assert_eq!(
            err("slots=0"),
            "bad request: capacity slots: must be given, at least 1"
        );
        assert_eq!(
            err("queue=4"),
            "bad request: capacity slots: must be given, at least 1"
        );
        assert!(err("slots=2&burst=3").contains("capacity burst: unknown parameter"));
        assert!(err("slots=-1").contains("capacity slots: \"-1\" is not an integer"));
        assert!(
            err("slots=1&tokens_per_s=0")
                .contains("capacity tokens_per_s: \"0\" is not a positive number")
        );
        assert_eq!(split_profile("plain?slots=2"), ("plain", "slots=2"));
        assert_eq!(split_profile("zai"), ("zai", ""));
    }

    #[test]
    fn the_shared_rate_hands_out_turns_one_token_time_apart() {
        let c = Capacity::new(CapacitySpec {
            slots: 1,
            queue: None,
            tokens_per_s: Some(100.0),
            retry_after_s: 1,
        });
        // 100 tokens/s at scale 0.5: one token every 5 real ms, first come first served.
        let t0 = Instant::now();
        let a = c.token_turn(t0, 1, 0.5).unwrap();
        let b = c.token_turn(t0, 2, 0.5).unwrap();
        let d = c.token_turn(t0, 1, 0.5).unwrap();
        assert_eq!(
            (a - t0, b - t0, d - t0),
            (
                Duration::ZERO,
                Duration::from_millis(5),
                Duration::from_millis(15)
            )
        );
        // Due after the reserved time: no wait.
        let late = t0 + Duration::from_millis(100);
        assert_eq!(c.token_turn(late, 1, 0.5), Some(late));
        assert_eq!(c.token_turn(late, 0, 0.5), None);
    }
}
