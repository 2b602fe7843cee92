#!/usr/bin/env bash
# Makes the certificates of a probe deployment with openssl: one CA for the probes' server
# certificates, one CA for callers (mutual TLS), a server certificate per region and the
# coordinator's client certificate. Keys never leave OUT_DIR; keep it out of version control.
#
# Usage: deploy/certs.sh OUT_DIR REGION=HOSTNAME [REGION=HOSTNAME ...]
#   e.g. deploy/certs.sh ./pki us-east=openbench-probe.openbench.svc.cluster.local \
#          eu-west=probe.eu-west.example.org ap-southeast=probe.ap-southeast.example.org
# Writes OUT_DIR/{probe-ca,client-ca}.{crt,key}, OUT_DIR/REGION/probe.{crt,key} and
# OUT_DIR/coordinator.{crt,key}. Existing CAs are reused, so a region can be added later.
set -euo pipefail
out="${1:?usage: certs.sh OUT_DIR REGION=HOSTNAME ...}"
shift
[[ $# -gt 0 ]] || { echo "certs.sh: name at least one REGION=HOSTNAME" >&2; exit 2; }
days="${DAYS:-365}"
mkdir -p "$out"
umask 077

ca() { # NAME COMMON_NAME
  [[ -f "$out/$1.crt" ]] && return 0
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days "$days" \
    -subj "/CN=$2" -keyout "$out/$1.key" -out "$out/$1.crt" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    2>/dev/null
}

leaf() { # CA DIR NAME COMMON_NAME EXTENDED_USAGE SUBJECT_ALT_NAMES
  local ca="$1" dir="$2" name="$3" cn="$4" usage="$5" san="$6"
  mkdir -p "$dir"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$cn" \
    -keyout "$dir/$name.key" -out "$dir/$name.csr" 2>/dev/null
  openssl x509 -req -in "$dir/$name.csr" -CA "$out/$ca.crt" -CAkey "$out/$ca.key" \
    -CAcreateserial -days "$days" -out "$dir/$name.crt" \
    -extfile <(printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=%s\nsubjectAltName=%s\n' "$usage" "$san") \
    2>/dev/null
  rm -f "$dir/$name.csr"
}

ca probe-ca "openbench probe CA"
ca client-ca "openbench client CA"
for pair in "$@"; do
  region="${pair%%=*}"
  host="${pair#*=}"
  [[ -n "$region" && -n "$host" && "$region" != "$pair" ]] || {
    echo "certs.sh: expected REGION=HOSTNAME, got '$pair'" >&2; exit 2; }
  leaf probe-ca "$out/$region" probe "$host" serverAuth "DNS:$host,DNS:localhost,IP:127.0.0.1"
  echo "certs.sh: $out/$region/probe.crt for $host"
done
leaf client-ca "$out" coordinator "openbench coordinator" clientAuth "DNS:openbench-coordinator"
echo "certs.sh: $out/coordinator.crt (client certificate)"
