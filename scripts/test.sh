#!/usr/bin/env bash
# Set up and run the whole test suite: `bash scripts/test.sh` (what .ci/run calls).
#   1. pip-installs pdnotes (editable) with its test extras,
#   2. npm-installs the real clients used by the interop tests (Codex, Claude Code, Gemini CLI)
#      into .interop/ (pinned versions),
#      in the background while pip, ruff and mypy run,
#   3. runs ruff check, ruff format --check, mypy and pytest (on every core, pytest-xdist).
# PDNOTES_INTEROP_MATRIX=pinned (default) | newest | both picks the client versions the interop
# tests run on: `newest` installs npm's latest Codex, Claude Code, Gemini CLI, Qwen Code and
# OpenCode into .interop-newest/ and runs only the interop-marked tests there; `both` runs every
# interop test twice in the one pytest session, as test[pinned] and test[newest] (conftest.py).
# PDNOTES_TEST_WORKERS sets pytest's worker count (default auto: one per core; 0: no xdist).
# The real-engine tests (marker real_engine) need llama.cpp's llama-server and a small model:
# scripts/real_engine.sh builds them into ~/.cache/pdnotes-real-engine (about 25 minutes on 2
# cores the first time, a second after), in the background while pip, ruff and mypy run.
# PDNOTES_REAL_ENGINE=skip leaves them unbuilt (those tests then skip, saying so).
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

CODEX_VERSION=0.171.0
CLAUDE_VERSION=2.1.197  # newer releases declare node >=22 but run on Node 20 (npm only warns)
GEMINI_VERSION=0.61.0  # node >=20; templates/clients/gemini/0.61.0.json was recorded from it
QWEN_VERSION=0.24.4     # declares node >=22 (since 0.21) but runs on Node 20 (npm only warns)
OPENCODE_VERSION=1.18.33  # a native binary (opencode-linux-x64) in an npm package: no Node needed
install_pinned() {
  local bin=.interop/node_modules/.bin
  if [ ! -x $bin/codex ] || [ ! -x $bin/claude ] || [ ! -x $bin/gemini ] || [ ! -x $bin/qwen ] \
    || [ ! -x $bin/opencode ]; then
    timeout 600 npm install --silent --no-audit --no-fund --engine-strict=false --prefix .interop \
      "@openai/codex@${CODEX_VERSION}" "@anthropic-ai/claude-code@${CLAUDE_VERSION}" \
      "@google/gemini-cli@${GEMINI_VERSION}" "@qwen-code/qwen-code@${QWEN_VERSION}" \
      "opencode-ai@${OPENCODE_VERSION}"
  fi
}
install_newest() {
  # The newest releases, looked up with npm view; a version already installed is reused.
  local codex claude gemini qwen opencode stamp=".interop-newest/versions"
  codex=$(timeout 60 npm view @openai/codex version)
  claude=$(timeout 60 npm view @anthropic-ai/claude-code version)
  gemini=$(timeout 60 npm view @google/gemini-cli version)
  qwen=$(timeout 60 npm view @qwen-code/qwen-code version)
  opencode=$(timeout 60 npm view opencode-ai version)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$codex $claude $gemini $qwen $opencode" ]; then
    # --engine-strict=false: Claude Code's and Qwen Code's engines fields ask for a newer Node
    # than they need.
    timeout 600 npm install --silent --no-audit --no-fund --engine-strict=false \
      --prefix .interop-newest \
      "@openai/codex@${codex}" "@anthropic-ai/claude-code@${claude}" \
      "@google/gemini-cli@${gemini}" "@qwen-code/qwen-code@${qwen}" "opencode-ai@${opencode}"
    echo "$codex $claude $gemini $qwen $opencode" > "$stamp"
  fi
  echo "interop on the newest clients: Codex $codex, Claude Code $claude, Gemini CLI $gemini," \
    "Qwen Code $qwen, OpenCode $opencode" >&2
}

# The npm installs take a minute or two on a clean clone; they overlap with pip, ruff and mypy.
engine_job=""
if [ "${PDNOTES_REAL_ENGINE:-build}" != skip ]; then
  bash scripts/real_engine.sh >/dev/null & engine_job=$!
fi
install_pinned & pinned_job=$!
newest_job=""
if [ "$MATRIX" != pinned ]; then
  install_newest & newest_job=$!
fi

python3 -m pip install --quiet --disable-pip-version-check -e '.[test]'
python3 -m ruff check .
python3 -m ruff format --check .
python3 -m mypy  # strict: pyproject.toml's [tool.mypy]

wait "$pinned_job"
[ -z "$engine_job" ] || wait "$engine_job"
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
