#!/usr/bin/env bash
# One-time machine setup for the tests and reports: Debian packages the tests use.
# The demo itself needs nothing beyond a Rust toolchain.
#   deploy/setup.sh        installs chromium (HTML report screenshots), curl, python3-pip
#   deploy/setup.sh --ci   the same, quieter
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v curl >/dev/null 2>&1 || need+=(curl)
command -v python3 >/dev/null 2>&1 || need+=(python3 python3-pip)
if [ ${#need[@]} -eq 0 ]; then
  echo "[setup] everything already installed"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "[setup] need root to install: ${need[*]}" >&2
  exit 1
fi
echo "[setup] installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
