//! Who a probe is, as `Describe` reports it: the build (code digest, tokenizer, version), a
//! hashed fingerprint of the host, the clock it times requests on, and the probe id its records
//! carry. The fingerprint is a hash: neither the machine id nor the host name leaves the host.

use openbench_common::hash::sha256_hex;
use openbench_proto::v1::ProbeIdentity;

/// Characters of the host fingerprint kept in a probe id (48 bits: distinct across any fleet).
const PROBE_ID_FINGERPRINT_CHARS: usize = 12;

/// sha256 over the machine id (`/etc/machine-id`, else `/var/lib/dbus/machine-id`) and the
/// host name, each empty when unreadable. Stable across restarts and ports of one host; a
/// container gets its own host name, so two containers on one machine differ.
pub fn host_fingerprint() -> String {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let mut machine_id = read("/etc/machine-id");
    if machine_id.is_empty() {
        machine_id = read("/var/lib/dbus/machine-id");
    }
    let mut host = read("/proc/sys/kernel/hostname");
    if host.is_empty() {
        host = std::env::var("HOSTNAME").unwrap_or_default();
    }
    sha256_hex(format!("openbench-host-v1\0{machine_id}\0{host}"))
}

/// The clock request timings come from: Rust's monotonic `Instant` (CLOCK_MONOTONIC on Linux)
/// and, where the kernel says, its clock source (`tsc`, `kvm-clock`, …).
pub fn clock_source() -> String {
    let kernel =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
            .map(|s| s.trim().to_string())
            .unwrap_or_default();
    if kernel.is_empty() {
        "monotonic".to_string()
    } else {
        format!("monotonic (kernel clocksource {kernel})")
    }
}

/// The probe id records carry: `<region>@<first 12 hex of the host fingerprint>`.
pub fn probe_id(region: &str, fingerprint: &str) -> String {
    let short = fingerprint
        .get(..PROBE_ID_FINGERPRINT_CHARS)
        .unwrap_or(fingerprint);
    format!("{region}@{short}")
}

/// This probe's identity for `Describe`.
pub fn describe(region: &str, code_digest: &str, tokenizer_sha256: &str) -> ProbeIdentity {
    let host_fingerprint = host_fingerprint();
    ProbeIdentity {
        code_digest: code_digest.to_string(),
        tokenizer_sha256: tokenizer_sha256.to_string(),
        version: openbench_common::VERSION.to_string(),
        probe_id: probe_id(region, &host_fingerprint),
        host_fingerprint,
        clock_source: clock_source(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fingerprint_is_a_stable_hash_and_the_id_names_the_region() {
        let a = host_fingerprint();
        assert_eq!(a.len(), 64);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(a, host_fingerprint());
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
        if !host.trim().is_empty() {
            assert!(!a.contains(host.trim()));
        }
        assert_eq!(
            probe_id("eu-west", "0123456789abcdef"),
            "eu-west@0123456789ab"
        );
        assert_eq!(probe_id("eu", "abc"), "eu@abc");
    }
}
