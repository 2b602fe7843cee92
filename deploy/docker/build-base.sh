#!/usr/bin/env bash
# Builds the local base image the Dockerfile's BASE_IMAGE defaults to, without any image
# registry: a minimal Debian bookworm tree (debootstrap --variant=minbase, plus ca-certificates so
# the probe can verify providers' TLS) imported with `docker import`.
#
# Usage: deploy/docker/build-base.sh [IMAGE]   (default openbench-base:bookworm)
# Skips the work when IMAGE already exists; FORCE=1 rebuilds. Needs root (debootstrap) and
# installs debootstrap with apt-get when it is missing. MIRROR overrides the Debian mirror.
set -euo pipefail

image="${1:-openbench-base:bookworm}"
mirror="${MIRROR:-http://deb.debian.org/debian}"

if [[ "${FORCE:-0}" != 1 ]] && docker image inspect "$image" >/dev/null 2>&1; then
  echo "build-base: $image exists (FORCE=1 rebuilds)"
  exit 0
fi
if ! command -v debootstrap >/dev/null 2>&1; then
  echo "build-base: installing debootstrap"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

root="$(mktemp -d /tmp/openbench-base.XXXXXX)"
trap 'rm -rf "$root"' EXIT
started=$(date +%s)
debootstrap --variant=minbase --include=ca-certificates bookworm "$root" "$mirror"
# Nothing in the image needs package lists, caches, docs or locales.
chroot "$root" apt-get clean
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/usr/share/doc/* \
  "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/usr/share/locale/* \
  "$root"/var/log/*.log "$root"/tmp/*
tar --numeric-owner -C "$root" -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["/bin/bash"]' - "$image"
echo "build-base: $image built in $(( $(date +%s) - started )) s ($(docker image inspect -f '{{.Size}}' "$image") bytes)"
