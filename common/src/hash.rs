//! sha256 digests and canonical JSON, the two primitives behind locks and item hashes.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Lower-case hex of some bytes: the one hex encoder of the workspace.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(char::from(DIGITS[usize::from(byte >> 4)]));
        out.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    out
}

/// Lower-case hex sha256 of some bytes.
pub fn sha256_hex(bytes: impl AsRef<[u8]>) -> String {
    hex(&Sha256::digest(bytes.as_ref()))
}

/// Lower-case hex sha256 and size of everything `reader` yields, streamed.
pub fn sha256_reader(mut file: impl std::io::Read) -> std::io::Result<(String, u64)> {
    let mut hasher = Sha256::new();
    // 64 KiB: under glibc's mmap threshold, so the buffer is reused rather than mapped and
    // unmapped for every file.
    let mut buf = vec![0u8; 64 << 10];
    let mut total = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        total += n as u64;
        hasher.update(&buf[..n]);
    }
    Ok((hex(&hasher.finalize()), total))
}

/// Canonical JSON: object keys sorted (by UTF-16-free byte order of the key), no spaces,
/// non-ASCII kept as is. Equals Python's `json.dumps(v, sort_keys=True, separators=(",", ":"),
/// ensure_ascii=False)` for the values our datasets hold.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                if let Some(inner) = map.get(key) {
                    write_canonical(inner, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The first 24 hex characters of sha256 over NUL-joined parts (METHODOLOGY §7 ids).
pub fn short_id(prefix: &str, parts: &[&str]) -> String {
    let joined = parts.join("\0");
    format!("{prefix}{}", &sha256_hex(joined.as_bytes())[..24])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_abc() {
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn canonical_sorts_nested_keys_and_keeps_non_ascii() {
        let v: Value = serde_json::from_str(r#"{"b": 1, "a": {"z": [1, 2.5, null], "é": "ü"}}"#)
            .unwrap_or(Value::Null);
        // Python: json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert_eq!(
            canonical_json(&v),
            r#"{"a":{"z":[1,2.5,null],"é":"ü"},"b":1}"#
        );
    }

    #[test]
    fn short_id_joins_with_nul() {
        // Python: "round-" + hashlib.sha256("a\0b".encode()).hexdigest()[:24]
        assert_eq!(
            short_id("round-", &["a", "b"]),
            format!("round-{}", &sha256_hex("a\0b")[..24])
        );
        assert_eq!(short_id("req-", &["a", "b"]).len(), 4 + 24);
    }
}
