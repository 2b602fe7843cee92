#!/usr/bin/env bash
# Validates the Kubernetes manifests offline, as CI does: renders every overlay with
# `kubectl kustomize` (Secrets filled from the .example files and certificates made by
# deploy/certs.sh, in a scratch copy), validates each rendered object against the Kubernetes
# schemas (PyPI's kubernetes-validate, strict: unknown fields fail) and checks the rules the
# deployment promises: every container non-root with resource limits, gRPC readiness on probes,
# only the coordinator admitted to probes, and every referenced Secret/ConfigMap rendered.
#
# Usage: deploy/k8s/validate.sh   (KUBERNETES_VERSION overrides the schema version)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version="${KUBERNETES_VERSION:-1.32.0}"
venv="${XDG_CACHE_HOME:-$HOME/.cache}/openbench/kubernetes-validate-1.37.0"

command -v kubectl >/dev/null || { echo "validate: kubectl is required (kubectl kustomize)" >&2; exit 1; }
if [[ ! -x "$venv/bin/kubernetes-validate" ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet 'kubernetes-validate==1.37.0'
fi

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
cp -r "$here" "$scratch/k8s"
bash "$here/../certs.sh" "$scratch/pki" \
  us-east=openbench-probe.openbench.svc.cluster.local \
  eu-west=probe.eu-west.example.org ap-southeast=probe.ap-southeast.example.org \
  'us-east-replicas=*.openbench-probe-pods.openbench.svc.cluster.local' >/dev/null
for overlay in "$scratch"/k8s/overlays/*/; do
  region="$(basename "$overlay")"
  secrets="$overlay/secrets"
  for example in "$secrets"/*.example; do
    cp "$example" "${example%.example}"
  done
  # An overlay built on another region's (us-east-scheduled) has no certificates of its own.
  [[ -d "$scratch/pki/$region" ]] || continue
  echo "validate-only-token" > "$secrets/probe-token"
  cp "$scratch/pki/$region/probe.crt" "$scratch/pki/$region/probe.key" "$secrets/"
  cp "$scratch/pki/client-ca.crt" "$secrets/"
  cp "$scratch/pki/coordinator.crt" "$scratch/pki/coordinator.key" "$scratch/pki/probe-ca.crt" "$secrets/"
done

status=0
# The scheduled overlay's spec is the base spec plus the publishing switch, nothing else.
if ! diff -u <(cat "$here/base/spec/three-regions.yaml"; printf '\n# Scheduled runs publish to the results store (OPENBENCH_STORE) when they end.\nresults:\n  publish: true\n') \
    "$here/overlays/us-east-scheduled/spec-publishing.yaml" >&2; then
  echo "validate: overlays/us-east-scheduled/spec-publishing.yaml drifted from base/spec/three-regions.yaml" >&2
  status=1
fi
for overlay in "$scratch"/k8s/overlays/*/; do
  region="$(basename "$overlay")"
  rendered="$scratch/$region.yaml"
  kubectl kustomize "$overlay" > "$rendered"
  if ! "$venv/bin/kubernetes-validate" --strict --quiet -k "$version" "$rendered"; then
    echo "validate: $region: schema validation failed" >&2
    status=1
  fi
  if ! "$venv/bin/python" "$here/check_rules.py" "$region" "$rendered"; then
    status=1
  fi
done
[[ $status == 0 ]] && echo "validate: every overlay renders, matches the Kubernetes $version schemas and keeps the rules"
exit $status
