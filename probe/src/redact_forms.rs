//! The forbidden pieces of a secret: what the redactor looks for (docs/faults.md "Secrets").
//!
//! A secret may come back whole, cut, split or encoded. The rule is that no
//! [`PIECE_CHARS`]-character piece of it survives, written plainly, reversed, in hexadecimal
//! (either case) or in base64 (either alphabet, at any byte alignment). So the pieces are the
//! fixed-length windows of each of those forms of the whole secret: any longer echo of the secret
//! holds one of them, and the windows overlap, so every character of such an echo is covered.

use base64::Engine;
use base64::engine::general_purpose::{STANDARD_NO_PAD, URL_SAFE_NO_PAD};

/// Length, in characters, of the shortest piece of a secret that is forbidden anywhere.
pub const PIECE_CHARS: usize = 6;

/// Hexadecimal characters of a forbidden piece: the hex of [`PIECE_CHARS`] bytes.
const HEX_PIECE_CHARS: usize = 2 * PIECE_CHARS;

/// Base64 characters of a forbidden piece: the base64 of [`PIECE_CHARS`] bytes.
const BASE64_PIECE_CHARS: usize = PIECE_CHARS / 3 * 4;

/// Every forbidden piece of `secret` (an empty secret has none). A secret shorter than a piece
/// is forbidden whole, as written and reversed (its encodings are too short to tell from
/// innocent text).
pub fn forbidden_pieces(secret: &str) -> Vec<String> {
    if secret.is_empty() {
        return Vec::new();
    }
    let reversed: String = secret.chars().rev().collect();
    let mut pieces = Vec::new();
    for form in [secret, reversed.as_str()] {
        pieces.extend(windows(form, PIECE_CHARS));
    }
    let hex: String = secret.bytes().map(|b| format!("{b:02x}")).collect();
    if hex.len() >= HEX_PIECE_CHARS {
        for form in [hex.clone(), hex.to_uppercase()] {
            pieces.extend(windows(&form, HEX_PIECE_CHARS));
        }
    }
    for core in base64_cores(secret) {
        if core.len() >= BASE64_PIECE_CHARS {
            pieces.extend(windows(&core, BASE64_PIECE_CHARS));
        }
    }
    pieces.sort();
    pieces.dedup();
    pieces
}

/// Every window of `width` characters of `text` (the whole text when it is shorter).
fn windows(text: &str, width: usize) -> Vec<String> {
    let starts: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain([text.len()])
        .collect();
    if starts.len() <= width {
        return vec![text.to_string()];
    }
    starts
        .windows(width + 1)
        .map(|w| text[w[0]..w[width]].to_string())
        .collect()
}

/// The base64 text that always appears when `secret` is encoded inside a longer text, for each
/// byte alignment (0, 1 or 2 bytes before it in its 3-byte group) and both alphabets: the
/// characters that depend only on the secret's bytes.
pub fn base64_cores(secret: &str) -> Vec<String> {
    let mut cores = Vec::new();
    for shift in 0..3usize {
        let mut bytes = vec![0u8; shift];
        bytes.extend_from_slice(secret.as_bytes());
        // Whole 3-byte groups only: a partial last group depends on what follows.
        bytes.truncate(bytes.len() / 3 * 3);
        for engine in [STANDARD_NO_PAD, URL_SAFE_NO_PAD] {
            let encoded = engine.encode(&bytes);
            // The first group mixes in the bytes before the secret.
            let core = if shift == 0 {
                encoded.as_str()
            } else {
                encoded.get(4..).unwrap_or("")
            };
            if !core.is_empty() && !cores.iter().any(|c| c == core) {
                cores.push(core.to_string());
            }
        }
    }
    cores
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pieces_of_a_short_key_are_its_windows_in_every_form() {
        // "abcdefg": two 6-character windows each way, hex windows of 12 characters, and
        // the base64 cores' 8-character windows (`YWJjZGVm` is base64 of "abcdef").
        let pieces = forbidden_pieces("abcdefg");
        for expected in [
            "abcdef",
            "bcdefg",
            "gfedcb",
            "fedcba",
            "616263646566",
            "626364656667",
            "616263646566".to_uppercase().as_str(),
            "YWJjZGVm",
        ] {
            assert!(
                pieces.iter().any(|p| p == expected),
                "{expected}: {pieces:?}"
            );
        }
        assert!(pieces.iter().all(|p| p.chars().count() >= PIECE_CHARS));
        assert_eq!(forbidden_pieces("abc"), ["abc", "cba"]);
        assert!(forbidden_pieces("").is_empty());
    }

    #[test]
    fn windows_count_characters_not_bytes() {
        assert_eq!(windows("éééééééé", 6).len(), 3);
        assert_eq!(windows("éé", 6), ["éé"]);
    }
}
