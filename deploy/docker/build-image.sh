#!/usr/bin/env bash
# Builds the openbench-inference image on a machine whose containers cannot reach crates.io:
# the registry-free base (build-base.sh), the release binary on the host, then the Dockerfile's
# `prebuilt` target. Prints the image size and the time each step took.
#
# Usage: deploy/docker/build-image.sh [IMAGE]   (default openbench-inference:local)
set -euo pipefail
cd "$(dirname "$0")/../.."
image="${1:-openbench-inference:local}"
base="${BASE_IMAGE:-openbench-base:bookworm}"

t0=$(date +%s)
bash deploy/docker/build-base.sh "$base"
t1=$(date +%s)
cargo build --release --locked --bin openbench-inference
strip target/release/openbench-inference
t2=$(date +%s)
docker build -f deploy/docker/Dockerfile --target prebuilt --build-arg "BASE_IMAGE=$base" -t "$image" .
t3=$(date +%s)

# The image must run as a non-root user and answer --help.
user=$(docker image inspect -f '{{.Config.User}}' "$image")
if [[ -z "$user" || "$user" == root || "$user" == 0 || "$user" == 0:* ]]; then
  echo "build-image: $image runs as root ('$user')" >&2
  exit 1
fi
docker run --rm "$image" --help >/dev/null
uid=$(docker run --rm --entrypoint /usr/bin/id "$image" -u)
[[ "$uid" != 0 ]] || { echo "build-image: the container runs as uid 0" >&2; exit 1; }
size=$(docker image inspect -f '{{.Size}}' "$image")
echo "build-image: $image: $((size / 1024 / 1024)) MiB, user $user (uid $uid);" \
  "base $((t1 - t0)) s, binary $((t2 - t1)) s, image $((t3 - t2)) s"
