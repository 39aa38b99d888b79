#!/usr/bin/env bash
# Set up and run the whole test suite: `bash scripts/test.sh` (what .ci/run calls).
#   1. pip-installs pdnotes (editable) with its test extras,
#   2. npm-installs the real clients used by the interop tests into .interop/ (pinned versions),
#   3. runs ruff check, ruff format --check, mypy and pytest.
# PDNOTES_INTEROP_MATRIX=pinned (default) | newest | both picks the client versions the interop
# tests run on: `newest` installs npm's latest Codex and Claude Code into .interop-newest/ and
# reruns the interop-marked tests there (`both` runs the pinned suite, then that).
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install --quiet --disable-pip-version-check -e '.[test]'

CODEX_VERSION=0.171.0
CLAUDE_VERSION=2.1.197  # newer releases declare node >=22 but run on Node 20 (npm only warns)
if [ ! -x .interop/node_modules/.bin/codex ] || [ ! -x .interop/node_modules/.bin/claude ]; then
  timeout 600 npm install --silent --no-audit --no-fund --prefix .interop \
    "@openai/codex@${CODEX_VERSION}" "@anthropic-ai/claude-code@${CLAUDE_VERSION}"
fi
export PDNOTES_INTEROP_BIN="$PWD/.interop/node_modules/.bin"

python3 -m ruff check .
python3 -m ruff format --check .
python3 -m mypy
MATRIX="${PDNOTES_INTEROP_MATRIX:-pinned}"
case "$MATRIX" in
  pinned|newest|both) ;;
  *) echo "PDNOTES_INTEROP_MATRIX must be pinned, newest or both (got $MATRIX)" >&2; exit 2 ;;
esac

if [ "$MATRIX" != newest ]; then
  python3 -m pytest "$@"
fi

if [ "$MATRIX" != pinned ]; then
  # The newest releases, looked up with npm view; a version already installed is reused.
  NEWEST_CODEX=$(timeout 60 npm view @openai/codex version)
  NEWEST_CLAUDE=$(timeout 60 npm view @anthropic-ai/claude-code version)
  stamp=".interop-newest/versions"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$NEWEST_CODEX $NEWEST_CLAUDE" ]; then
    # --engine-strict=false: Claude Code's engines field asks for a newer Node than it needs.
    timeout 600 npm install --silent --no-audit --no-fund --engine-strict=false \
      --prefix .interop-newest \
      "@openai/codex@${NEWEST_CODEX}" "@anthropic-ai/claude-code@${NEWEST_CLAUDE}"
    echo "$NEWEST_CODEX $NEWEST_CLAUDE" > "$stamp"
  fi
  echo "interop on the newest clients: Codex $NEWEST_CODEX, Claude Code $NEWEST_CLAUDE" >&2
  PDNOTES_INTEROP_BIN="$PWD/.interop-newest/node_modules/.bin" python3 -m pytest -m interop "$@"
fi
