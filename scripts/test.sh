#!/usr/bin/env bash
# Set up and run the whole test suite: `bash scripts/test.sh` (what .ci/run calls).
#   1. creates a fresh virtual environment (.venv-test, made anew every run, never the caller's
#      environment) and pip-installs pdnotes (editable) with its test extras at the NEWEST
#      versions pyproject.toml allows (--upgrade-strategy eager), as a new user's `pip install`
#      gets them: a dependency's new release that breaks pdnotes fails this run (issue 35),
#   2. npm-installs the real clients used by the interop tests (each client folder's npm.toml)
#      into .interop/ (pinned versions), in the background,
#   3. gets the real engine for the real-engine tests (scripts/real_engine.sh: PyPI's prebuilt
#      llama.cpp server, xllamacpp, and a small GGUF model; about a minute the first time, cached
#      in ~/.cache/pdnotes-real-engine) while ruff and mypy run,
#   4. runs ruff check, ruff format --check, mypy and pytest (on every core, pytest-xdist),
#   5. the lowest-versions job: a second fresh environment (.venv-lowest) with the LOWEST
#      versions pyproject.toml allows for pdnotes' direct dependencies (uv pip install
#      --resolution lowest-direct), where `pdnotes demo` must pass and a smoke subset of the
#      suite runs (LOWEST_TESTS below). PDNOTES_LOWEST=skip skips it.
# PDNOTES_INTEROP_MATRIX=pinned (default) | newest | both picks the client versions the interop
# tests run on: `newest` installs npm's latest release of each client into .interop-newest/
# and runs only the interop-marked tests there; `both` runs every interop test twice in the one
# pytest session, as test[pinned] and test[newest] (conftest.py).
# PDNOTES_TEST_WORKERS sets pytest's worker count (default auto: one per core; 0: no xdist).
# PDNOTES_REAL_ENGINE=xllamacpp (default) | source (llama.cpp built from source: about an hour
# on 2 cores the first time) | skip (the real-engine tests then skip, saying so).
set -euo pipefail
cd "$(dirname "$0")/.."

MATRIX="${PDNOTES_INTEROP_MATRIX:-pinned}"
case "$MATRIX" in
  pinned|newest|both) ;;
  *) echo "PDNOTES_INTEROP_MATRIX must be pinned, newest or both (got $MATRIX)" >&2; exit 2 ;;
esac
# pytest caches its rewritten test modules as .pyc; an environment that turns bytecode off makes
# every run (and every xdist worker) rewrite all of them again (~6 s of CPU per process).
unset PYTHONDONTWRITEBYTECODE

# The real clients: each client folder's npm.toml names its npm package, pinned release and
# binary (scripts/npm_clients.py reads them), so a new client is installed without an edit here.
install_pinned() {
  local bin=.interop/node_modules/.bin missing="" name
  for name in $(python3 scripts/npm_clients.py bins); do
    [ -x "$bin/$name" ] || missing=yes
  done
  if [ -n "$missing" ]; then
    # --engine-strict=false: some clients' engines fields ask for a newer Node than they need
    # (each npm.toml says so).
    # shellcheck disable=SC2046  # one package@version a word
    timeout 600 npm install --silent --no-audit --no-fund --engine-strict=false --prefix .interop \
      $(python3 scripts/npm_clients.py pinned)
  fi
}
install_newest() {
  # The newest releases, looked up with npm view; a set already installed is reused.
  local newest stamp=".interop-newest/versions"
  newest=$(python3 scripts/npm_clients.py newest | tr '\n' ' ')
  if [ "$(cat "$stamp" 2>/dev/null)" != "$newest" ]; then
    # shellcheck disable=SC2086  # one package@version a word
    timeout 600 npm install --silent --no-audit --no-fund --engine-strict=false \
      --prefix .interop-newest $newest
    echo "$newest" > "$stamp"
  fi
  echo "interop on the newest clients: $newest" >&2
}

# The npm installs take a minute or two on a clean clone; they overlap with pip, ruff and mypy.
install_pinned & pinned_job=$!
newest_job=""
if [ "$MATRIX" != pinned ]; then
  install_newest & newest_job=$!
fi

# A fresh environment every run: what a new user's `pip install` gets today, nothing left over.
VENV="$PWD/.venv-test"
rm -rf "$VENV"
python3 -m venv "$VENV"
export PATH="$VENV/bin:$PATH" VIRTUAL_ENV="$VENV"  # python3 is now the fresh environment's
python3 -m pip install --quiet --disable-pip-version-check --upgrade pip
python3 -m pip install --quiet --disable-pip-version-check --upgrade --upgrade-strategy eager \
  -e '.[test]'

# The real engine installs into this environment (xllamacpp is a test extra), so after pip.
engine_env="$(mktemp)"
engine_job=""
if [ "${PDNOTES_REAL_ENGINE:-xllamacpp}" != skip ]; then
  bash scripts/real_engine.sh --env >"$engine_env" & engine_job=$!
fi
python3 -m ruff check .
python3 -m ruff format --check .
python3 -m mypy  # strict: pyproject.toml's [tool.mypy]

wait "$pinned_job"
if [ -n "$engine_job" ]; then
  wait "$engine_job"
  . "$engine_env"  # exports PDNOTES_REAL_ENGINE_SERVER and PDNOTES_REAL_ENGINE_MODEL
fi
rm -f "$engine_env"
[ -z "$newest_job" ] || wait "$newest_job"
export PDNOTES_INTEROP_BIN="$PWD/.interop/node_modules/.bin"
NEWEST_BIN="$PWD/.interop-newest/node_modules/.bin"

WORKERS="${PDNOTES_TEST_WORKERS:-auto}"
PARALLEL=()
if [ "$WORKERS" != 0 ]; then
  # loadfile: a module's tests share one worker, so its module-scoped servers start once.
  PARALLEL=(-n "$WORKERS" --dist loadfile)
fi

case "$MATRIX" in
  pinned) python3 -m pytest "${PARALLEL[@]}" "$@" ;;
  newest) PDNOTES_INTEROP_BIN="$NEWEST_BIN" python3 -m pytest "${PARALLEL[@]}" -m interop "$@" ;;
  both) PDNOTES_INTEROP_NEWEST_BIN="$NEWEST_BIN" python3 -m pytest "${PARALLEL[@]}" "$@" ;;
esac

# The lowest versions pyproject.toml allows (issue 35: its floors were not true). The demo must
# pass there, and a smoke subset of the suite. Old floors of some dependencies call APIs that
# today's transitive releases (click) mark deprecated: those warnings, which the main run turns
# into errors, are let through here — the main run holds pdnotes' own code to them.
if [ "${PDNOTES_LOWEST:-run}" != skip ]; then
  LOWEST="$PWD/.venv-lowest"
  LOWEST_TESTS=(tests/test_demo.py tests/test_help.py tests/test_config_codex.py
    tests/test_doctor_live.py tests/test_bridge_sdks.py tests/test_engine_gemini.py)
  rm -rf "$LOWEST"
  uv venv --quiet --python "$(command -v python3)" "$LOWEST"
  VIRTUAL_ENV="$LOWEST" uv pip install --quiet --resolution lowest-direct -e '.[test]'
  echo "lowest versions: $(VIRTUAL_ENV="$LOWEST" uv pip list 2>/dev/null \
    | grep -E -i '^(typer|click|rich|tomlkit|httpx|starlette|uvicorn|msgspec) ' \
    | awk '{printf "%s %s, ", $1, $2}')" >&2
  (cd "$(mktemp -d)" && "$LOWEST/bin/python" -m notes_cli demo >/dev/null) \
    || { echo "pdnotes demo failed with the lowest versions pyproject.toml allows" >&2; exit 1; }
  "$LOWEST/bin/python" -m pytest "${PARALLEL[@]}" -W "ignore::DeprecationWarning" \
    "${LOWEST_TESTS[@]}"
fi
