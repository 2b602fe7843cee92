//! The pinned o200k_base tokenizer, loaded once per process.
//!
//! Building the encoder costs 120–210 ms, so it is built lazily exactly once and shared; token
//! counts are always taken after a stream ends, never inside a timed read loop.
//!
//! Counting is linear in the text: BPE on one pre-tokenizer piece costs the square of its length,
//! so a hostile answer of one long run of letters would take minutes. Text is counted in
//! segments of at most [`SEGMENT_BYTES`], cut just before a space that follows a non-space
//! character: no o200k piece spans such a point, so the count is exactly that of the whole text.
//! Only a run of [`SEGMENT_BYTES`] with no such space (no real text has one) is cut elsewhere.

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
    segments(text)
        .map(|segment| encoder().encode_ordinary(segment).len() as u64)
        .sum()
}

/// Longest segment counted at once, in bytes.
pub const SEGMENT_BYTES: usize = 4096;

/// `text` cut into segments of at most [`SEGMENT_BYTES`] (a single character may exceed it only
/// if it is longer, which UTF-8 never is), each cut just before a space that follows a non-space
/// character when the window has one, else at the last character boundary of the window.
fn segments(text: &str) -> impl Iterator<Item = &str> {
    let mut rest = text;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let cut = if rest.len() <= SEGMENT_BYTES {
            rest.len()
        } else {
            let bytes = rest.as_bytes();
            (1..=SEGMENT_BYTES)
                .rev()
                .find(|&i| bytes[i] == b' ' && !bytes[i - 1].is_ascii_whitespace())
                .or_else(|| {
                    (1..=SEGMENT_BYTES)
                        .rev()
                        .find(|&i| rest.is_char_boundary(i))
                })
                .unwrap_or(rest.len())
        };
        let (segment, tail) = rest.split_at(cut);
        rest = tail;
        Some(segment)
    })
}

/// sha256 of the ranks the loaded encoder really uses, rebuilt in the `.tiktoken` file format
/// (`base64(token) rank\n`), so it equals [`O200K_BASE_RANKS_SHA256`] unless the bundled ranks
/// changed.
pub fn ranks_sha256() -> String {
    static HASH: OnceLock<String> = OnceLock::new();
    HASH.get_or_init(|| {
        use sha2::Digest;
        use std::fmt::Write;
        let bpe = encoder();
        // Hashed line by line: the 2.6 MB file is never held (a transient buffer that size
        // stays resident in the allocator for the rest of the process).
        let mut hasher = sha2::Sha256::new();
        let mut line = String::with_capacity(64);
        for rank in 0..O200K_RANKS {
            line.clear();
            match bpe.decode_bytes(&[rank]) {
                Ok(bytes) => {
                    base64::engine::general_purpose::STANDARD.encode_string(bytes, &mut line);
                    let _ = writeln!(line, " {rank}");
                }
                Err(_) => {
                    let _ = writeln!(line, "missing {rank}");
                }
            }
            hasher.update(line.as_bytes());
        }
        crate::hash::hex(&hasher.finalize())
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
    fn segmented_counts_equal_whole_text_counts_on_real_text() {
        // Real prose with spaces, newlines, punctuation, numbers and contractions, long enough
        // to be cut many times; compared with one call to the encoder on the whole text.
        let paragraph = "The customer's invoice #4471 (dated 2027-02-28) wasn't paid; \
                         they'll retry at 09:30.\n\n  Indented line, \"quoted\" text, café, 漢字 — done!\n";
        let text = paragraph.repeat(200);
        assert!(text.len() > 4 * SEGMENT_BYTES);
        let whole = encoder().encode_ordinary(&text).len() as u64;
        assert_eq!(count_tokens(&text), whole);
        assert!(segments(&text).count() > 4);
    }

    #[test]
    fn segments_are_bounded_and_cover_the_text_even_without_spaces() {
        let text = format!("{}é{}", "a".repeat(10_000), "b c ".repeat(3_000));
        let parts: Vec<&str> = segments(&text).collect();
        assert_eq!(parts.concat(), text);
        assert!(
            parts
                .iter()
                .all(|p| !p.is_empty() && p.len() <= SEGMENT_BYTES)
        );
        // Where spaces exist, every cut is just before one that follows a non-space.
        for pair in parts.windows(2).skip(3) {
            assert!(
                pair[1].starts_with(' ') && !pair[0].ends_with(' '),
                "{pair:?}"
            );
        }
    }

    #[test]
    fn ranks_match_the_published_file() {
        assert_eq!(ranks_sha256(), O200K_BASE_RANKS_SHA256);
    }
}
