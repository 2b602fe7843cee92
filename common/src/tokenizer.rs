//! The pinned o200k_base tokenizer, loaded once per process.
//!
//! Building the encoder costs 120–210 ms, so it is built lazily exactly once and shared; token
//! counts are always taken after a stream ends, never inside a timed read loop.

use base64::Engine;
use std::sync::OnceLock;
use tiktoken_rs::CoreBPE;

/// sha256 of the published `o200k_base.tiktoken` ranks file.
pub const O200K_BASE_RANKS_SHA256: &str =
    "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d";

/// Name recorded in locks and reports.
pub const TOKENIZER_NAME: &str = "o200k_base";

/// Number of mergeable ranks in o200k_base.
const O200K_RANKS: u32 = 199_998;

fn encoder() -> &'static CoreBPE {
    static ENCODER: OnceLock<&'static CoreBPE> = OnceLock::new();
    ENCODER.get_or_init(tiktoken_rs::o200k_base_singleton)
}

/// Builds the encoder now, so the first measurement pays nothing for it.
pub fn warm_up() {
    let _ = encoder();
}

/// o200k_base token count of `text`, special-token text counted as ordinary text.
pub fn count_tokens(text: &str) -> u64 {
    if text.is_empty() {
        return 0;
    }
    encoder().encode_ordinary(text).len() as u64
}

/// sha256 of the ranks the loaded encoder really uses, rebuilt in the `.tiktoken` file format
/// (`base64(token) rank\n`), so it equals [`O200K_BASE_RANKS_SHA256`] unless the bundled ranks
/// changed.
pub fn ranks_sha256() -> String {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| {
        let bpe = encoder();
        let mut file = String::with_capacity(2_600_000);
        for rank in 0..O200K_RANKS {
            match bpe.decode_bytes(&[rank]) {
                Ok(bytes) => {
                    file.push_str(&base64::engine::general_purpose::STANDARD.encode(bytes));
                    file.push(' ');
                    file.push_str(&rank.to_string());
                    file.push('\n');
                }
                Err(_) => file.push_str(&format!("missing {rank}\n")),
            }
        }
        crate::hash::sha256_hex(file.as_bytes())
    })
    .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_known_strings() {
        // Python: len(tiktoken.get_encoding("o200k_base").encode("hello world")) == 2
        assert_eq!(count_tokens("hello world"), 2);
        assert_eq!(count_tokens(""), 0);
        // Special-token text is ordinary text, never one special token.
        assert!(count_tokens("<|endoftext|>") > 1);
    }

    #[test]
    fn ranks_match_the_published_file() {
        assert_eq!(ranks_sha256(), O200K_BASE_RANKS_SHA256);
    }
}
