//! An opt-in prefix cache, so a repeated prompt prefix is served faster in a known way and its
//! usage says how much was cached, as providers' prompt caches do.
//!
//! Selected per route with the query parameter `prefix_cache=on` (`sim://together?prefix_cache=on`
//! in a spec); without it nothing here runs and the simulator's bytes and timings are what they
//! always were. Each distinct (profile, parameters) pair has its own cache; its capacity, TTL,
//! block size and prefill speed come from the profile's `prefix_cache` entry (`profiles.yaml`).
//!
//! **Unit: fixed blocks of prompt tokens.** A token is 4 characters of the messages' texts in order
//! (the simulator's prompt-token count is ⌈characters / 4⌉), and a block is `block_tokens` such
//! tokens. Block k is named by a chained sha256: the previous block's name, then its characters
//! and the role of every message that starts in it, the first block chained from the model. Two
//! prompts share block k exactly when their first k + 1 blocks are the same text under the same
//! roles: a conversation's next turn, which repeats the earlier turns verbatim, shares every full
//! block of them. Only full blocks are cached (a partial last block never is), as paged KV caches
//! do.
//!
//! **A request** looks up its blocks in order; the cached tokens are the leading run of blocks
//! found and alive × `block_tokens`. Then every block of the request is stored or refreshed, so a
//! block lives `ttl_s` (simulated seconds) after its **last use**. Past `capacity_tokens` the
//! least recently used blocks go first, and within one request its last blocks before its first,
//! so what survives is still a prefix. Blocks are stored when the request is served (its slot
//! granted), not when its prefill would end.
//!
//! **Timing**: the drafted TTFA gains `prefill_ms_per_token` × (prompt tokens − cached tokens);
//! see [`crate::draft`].

use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// The route query parameter that turns the cache on (`prefix_cache=on`).
pub const QUERY_KEY: &str = "prefix_cache";

/// The route query parameter that replaces the profile's cache capacity, in tokens
/// (`prefix_cache=on&prefix_cache_tokens=512`): a provider whose cache is too small to keep a
/// long conversation.
pub const CAPACITY_KEY: &str = "prefix_cache_tokens";

/// The cache a route's query (`slots=2&prefix_cache=on`) asks for: `None` unless
/// `prefix_cache=on` (`off` or absent: none); else `profile`'s model, with its capacity replaced
/// by `prefix_cache_tokens` when given (at least one block). Any other value is refused, naming
/// it.
pub fn requested(
    query: &str,
    profile: PrefixCacheSpec,
) -> Result<Option<PrefixCacheSpec>, crate::SimError> {
    let bad = |field: &str, message: String| crate::SimError::BadRequest {
        field: field.to_string(),
        message,
    };
    let mut on = false;
    let mut spec = profile;
    for pair in query.split('&') {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if key == CAPACITY_KEY {
            spec.capacity_tokens = value
                .parse::<u64>()
                .ok()
                .filter(|c| *c >= u64::from(spec.block_tokens))
                .ok_or_else(|| {
                    bad(
                        CAPACITY_KEY,
                        format!(
                            "{value:?} must be a whole number of tokens, at least one block ({})",
                            spec.block_tokens
                        ),
                    )
                })?;
            continue;
        }
        if key != QUERY_KEY {
            continue;
        }
        on = match value {
            "on" => true,
            "off" => false,
            other => return Err(bad(QUERY_KEY, format!("{other:?} must be on or off"))),
        };
    }
    Ok(on.then_some(spec))
}

/// Characters per simulated prompt token (the simulator's usage counts ⌈characters / 4⌉).
pub const CHARS_PER_TOKEN: usize = 4;

/// A profile's prefix-cache model, as written in `profiles.yaml`.
#[derive(Debug, Clone, Copy, PartialEq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrefixCacheSpec {
    /// Most tokens the cache holds (whole blocks); least recently used blocks go first.
    pub capacity_tokens: u64,
    /// Simulated seconds a block lives after its last use.
    pub ttl_s: f64,
    /// Tokens per block: the unit that is cached or not.
    pub block_tokens: u32,
    /// Simulated milliseconds of prefill per uncached prompt token, added to the TTFA.
    pub prefill_ms_per_token: f64,
}

/// The name of one block of a prompt (chained sha256).
pub type BlockName = [u8; 32];

/// The names of the full blocks of `messages` (role, text) for `model`, in order.
pub fn block_names(
    model: &str,
    messages: &[(String, String)],
    block_tokens: u32,
) -> Vec<BlockName> {
    let block_chars = block_tokens as usize * CHARS_PER_TOKEN;
    let mut names = Vec::new();
    if block_chars == 0 {
        return names;
    }
    let mut chain: BlockName = Sha256::digest(model.as_bytes()).into();
    let mut hasher = Sha256::new();
    hasher.update(chain);
    let mut filled = 0usize;
    let mut buffer = [0u8; 4];
    for (role, text) in messages {
        hasher.update([0]);
        hasher.update(role.as_bytes());
        hasher.update([0]);
        for c in text.chars() {
            hasher.update(c.encode_utf8(&mut buffer).as_bytes());
            filled += 1;
            if filled == block_chars {
                chain = std::mem::take(&mut hasher).finalize().into();
                names.push(chain);
                hasher.update(chain);
                filled = 0;
            }
        }
    }
    names
}

/// What one request found in the cache, in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheUse {
    /// Prompt tokens served from the cache (the leading blocks found alive).
    pub cached_tokens: u64,
    /// Prompt tokens this request wrote into the cache (its blocks that were not alive).
    pub created_tokens: u64,
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    last_used: Instant,
    /// Position in the recency order (higher: more recent).
    tick: u64,
}

/// The live state of one route's prefix cache.
#[derive(Debug)]
pub struct PrefixCache {
    spec: PrefixCacheSpec,
    /// Real time a block lives after its last use (`ttl_s` × time scale).
    ttl: Duration,
    entries: HashMap<BlockName, Entry>,
    /// tick → block, oldest first: the eviction order.
    order: BTreeMap<u64, BlockName>,
    next_tick: u64,
}

impl PrefixCache {
    /// An empty cache; `scale` is the server's time scale (real seconds per simulated second).
    pub fn new(spec: PrefixCacheSpec, scale: f64) -> PrefixCache {
        PrefixCache {
            spec,
            ttl: Duration::from_secs_f64((spec.ttl_s * scale).max(0.0)),
            entries: HashMap::new(),
            order: BTreeMap::new(),
            next_tick: 0,
        }
    }

    /// Its parameters.
    pub fn spec(&self) -> PrefixCacheSpec {
        self.spec
    }

    fn alive(&self, name: &BlockName, now: Instant) -> bool {
        self.entries
            .get(name)
            .is_some_and(|e| now.saturating_duration_since(e.last_used) <= self.ttl)
    }

    /// Serves one request's blocks at `now`: how many leading tokens were cached, then stores or
    /// refreshes every block and evicts past the capacity.
    pub fn serve(&mut self, blocks: &[BlockName], now: Instant) -> CacheUse {
        let block = u64::from(self.spec.block_tokens);
        let hits = blocks.iter().take_while(|b| self.alive(b, now)).count() as u64;
        let created = blocks.iter().filter(|b| !self.alive(b, now)).count() as u64;
        // The last block gets the oldest tick, so eviction takes a prompt's tail before its head.
        for name in blocks.iter().rev() {
            if let Some(old) = self.entries.get(name) {
                self.order.remove(&old.tick);
            }
            let tick = self.next_tick;
            self.next_tick += 1;
            self.entries.insert(
                *name,
                Entry {
                    last_used: now,
                    tick,
                },
            );
            self.order.insert(tick, *name);
        }
        self.evict(now);
        CacheUse {
            cached_tokens: hits * block,
            created_tokens: created * block,
        }
    }

    /// Drops expired blocks, then least recently used ones while over the capacity.
    fn evict(&mut self, now: Instant) {
        let block = u64::from(self.spec.block_tokens).max(1);
        while let Some((&tick, name)) = self.order.first_key_value() {
            let over = self.entries.len() as u64 * block > self.spec.capacity_tokens;
            if !over && self.alive(name, now) {
                break;
            }
            let name = *name;
            self.order.remove(&tick);
            self.entries.remove(&name);
        }
    }

    /// Tokens held now (alive or not yet evicted).
    pub fn held_tokens(&self) -> u64 {
        self.entries.len() as u64 * u64::from(self.spec.block_tokens)
    }
}

/// Every prefix cache of a server, one per (profile, parameters).
#[derive(Debug, Default)]
pub struct PrefixCaches {
    by_route: Mutex<HashMap<String, Arc<Mutex<PrefixCache>>>>,
}

impl PrefixCaches {
    /// The cache of the route `key`, created with `spec` at time scale `scale` on first use.
    pub fn get(
        &self,
        key: &str,
        spec: PrefixCacheSpec,
        scale: f64,
    ) -> Option<Arc<Mutex<PrefixCache>>> {
        let mut all = self.by_route.lock().ok()?;
        let cache = all
            .entry(key.to_string())
            .or_insert_with(|| Arc::new(Mutex::new(PrefixCache::new(spec, scale))));
        Some(Arc::clone(cache))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(capacity_tokens: u64) -> PrefixCacheSpec {
        PrefixCacheSpec {
            capacity_tokens,
            ttl_s: 60.0,
            block_tokens: 2,
            prefill_ms_per_token: 0.1,
        }
    }

    fn user(text: &str) -> Vec<(String, String)> {
        vec![("user".to_string(), text.to_string())]
    }

    #[test]
    fn a_route_asks_for_the_cache_and_may_shrink_its_capacity() {
        let profile = spec(1000);
        assert_eq!(requested("slots=2", profile).unwrap(), None);
        assert_eq!(requested("prefix_cache=off", profile).unwrap(), None);
        assert_eq!(
            requested("prefix_cache=on", profile).unwrap(),
            Some(profile)
        );
        // Alone, the capacity asks for no cache; with it, the profile's model holding 6 tokens.
        assert_eq!(requested("prefix_cache_tokens=6", profile).unwrap(), None);
        assert_eq!(
            requested("slots=1&prefix_cache_tokens=6&prefix_cache=on", profile).unwrap(),
            Some(spec(6))
        );
        // Under one block (2 tokens), or not a number: refused, naming the parameter.
        for bad in ["prefix_cache_tokens=1", "prefix_cache_tokens=many"] {
            let err = requested(&format!("prefix_cache=on&{bad}"), profile)
                .unwrap_err()
                .to_string();
            assert!(err.contains("prefix_cache_tokens"), "{err}");
        }
    }

    #[test]
    fn blocks_are_full_blocks_chained_over_text_and_roles() {
        // 2 tokens = 8 characters per block: 20 characters make two full blocks.
        let a = block_names("m", &user("abcdefghijklmnopqrst"), 2);
        assert_eq!(a.len(), 2);
        // Same first block, a different second one.
        let b = block_names("m", &user("abcdefghXXXXXXXXqrst"), 2);
        assert_eq!((a[0] == b[0], a[1] == b[1]), (true, false));
        // A later turn that repeats the first verbatim shares its full blocks.
        let mut turn2 = user("abcdefghijklmnopqrst");
        turn2.push(("assistant".into(), "ok".into()));
        assert_eq!(block_names("m", &turn2, 2)[..2], a[..]);
        // The same characters under another role, or another model, share nothing.
        let system = vec![("system".to_string(), "abcdefghijklmnopqrst".to_string())];
        assert_ne!(block_names("m", &system, 2)[0], a[0]);
        assert_ne!(
            block_names("other", &user("abcdefghijklmnopqrst"), 2)[0],
            a[0]
        );
        // A change in block 0 changes every later name (the chain).
        let c = block_names("m", &user("Xbcdefghijklmnopqrst"), 2);
        assert_ne!(c[1], a[1]);
    }

    #[test]
    fn a_hit_counts_the_leading_alive_blocks_and_a_block_lives_ttl_after_its_last_use() {
        let mut cache = PrefixCache::new(spec(1000), 0.5); // TTL 60 s × 0.5 = 30 real s
        let t0 = Instant::now();
        let first = block_names("m", &user(&"a".repeat(40)), 2); // 5 blocks
        assert_eq!(
            cache.serve(&first, t0),
            CacheUse {
                cached_tokens: 0,
                created_tokens: 10
            }
        );
        // 29 s later: every block hits; the use refreshes them.
        let t1 = t0 + Duration::from_secs(29);
        assert_eq!(cache.serve(&first, t1).cached_tokens, 10);
        // 30 s after that use (59 s after the first): still alive (at the TTL exactly).
        let t2 = t1 + Duration::from_secs(30);
        assert_eq!(cache.serve(&first, t2).cached_tokens, 10);
        // 31 s after the last use: expired, a miss that writes the blocks again.
        let t3 = t2 + Duration::from_secs(31);
        assert_eq!(
            cache.serve(&first, t3),
            CacheUse {
                cached_tokens: 0,
                created_tokens: 10
            }
        );
        // A prompt sharing the first 2 blocks: 4 tokens cached, its 3 other blocks created.
        let mut other = "a".repeat(16);
        other.push_str(&"b".repeat(24));
        let shared = block_names("m", &user(&other), 2);
        assert_eq!(
            cache.serve(&shared, t3),
            CacheUse {
                cached_tokens: 4,
                created_tokens: 6
            }
        );
    }

    #[test]
    fn past_the_capacity_the_least_recent_blocks_go_tail_first() {
        // Capacity 8 tokens = 4 blocks of 2.
        let mut cache = PrefixCache::new(spec(8), 1.0);
        let t0 = Instant::now();
        let a = block_names("m", &user(&"a".repeat(24)), 2); // 3 blocks
        let b = block_names("m", &user(&"b".repeat(16)), 2); // 2 blocks
        cache.serve(&a, t0);
        cache.serve(&b, t0);
        // 5 blocks > 4: a's last block (its tail, the oldest tick) went.
        assert_eq!(cache.held_tokens(), 8);
        assert_eq!(cache.serve(&a, t0).cached_tokens, 4);
        // That use stored a's tail again and evicted b's tail: b keeps its head only.
        assert_eq!(cache.serve(&b, t0).cached_tokens, 2);
    }
}

#[cfg(test)]
mod timing_tests {
    use super::*;
    use crate::draft::{Outline, Payload, draft};
    use crate::request::SimRequest;
    use crate::rng::Draws;

    /// A system prompt of 14 characters and a user prompt of 4,000: 4,014 characters, so
    /// ⌈4014 / 4⌉ = 1,004 prompt tokens and ⌊4014 / 256⌋ = 15 full blocks of 64 tokens (plain).
    fn turn1() -> serde_json::Value {
        let long: String = (0..4000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        serde_json::json!({"model": "m", "messages": [
            {"role": "system", "content": "You are terse."},
            {"role": "user", "content": long}]})
    }

    /// The first answer piece's time in the plain profile's draft, with `cache` as the server
    /// would set it.
    fn ttfa(body: &serde_json::Value, cache: Option<CacheUse>) -> (f64, u64) {
        let bytes = body.to_string().into_bytes();
        let mut request = SimRequest::parse(&bytes, None, None).unwrap();
        request.cache = cache;
        let profile = crate::profile::find("plain").unwrap();
        let mut draws = Draws::for_request(0, "plain", &request.seed_key);
        let d = draft(profile, &request, &[], &mut draws);
        let Outline::Stream(events) = d.outline else {
            panic!("plain always streams")
        };
        let first = events
            .iter()
            .find(|e| matches!(e.payload, Payload::Answer(_)))
            .unwrap();
        (first.at_ms, request.prompt_tokens)
    }

    #[test]
    fn a_miss_prefills_every_prompt_token_and_a_hit_only_the_uncached_ones() {
        let spec = crate::profile::find("plain").unwrap().spec.prefix_cache;
        assert_eq!((spec.block_tokens, spec.prefill_ms_per_token), (64, 0.1));
        let body = turn1();
        let messages = SimRequest::parse(body.to_string().as_bytes(), None, None)
            .unwrap()
            .messages;
        assert_eq!(block_names("m", &messages, 64).len(), 15);
        // Off (no cache use): plain's TTFA of 40 ms, as always.
        let (off, tokens) = ttfa(&body, None);
        assert_eq!(tokens, 1004);
        assert!((off - 40.0).abs() < 1e-9, "{off}");
        // A miss: 40 + 0.1 × 1,004 = 140.4 ms.
        let miss = CacheUse {
            cached_tokens: 0,
            created_tokens: 960,
        };
        let (at, _) = ttfa(&body, Some(miss));
        assert!((at - 140.4).abs() < 1e-9, "{at}");
        // Turn 2 repeats turn 1 and adds "ok" and "and?": 4,020 characters, 1,005 tokens, the
        // same 15 full blocks cached (960 tokens): 40 + 0.1 × 45 = 44.5 ms.
        let mut turn2 = body.clone();
        let list = turn2["messages"].as_array_mut().unwrap();
        list.push(serde_json::json!({"role": "assistant", "content": "ok"}));
        list.push(serde_json::json!({"role": "user", "content": "and?"}));
        let hit = CacheUse {
            cached_tokens: 960,
            created_tokens: 0,
        };
        let (at, tokens) = ttfa(&turn2, Some(hit));
        assert_eq!(tokens, 1005);
        assert!((at - 44.5).abs() < 1e-9, "{at}");
    }
}
