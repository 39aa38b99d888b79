#!/usr/bin/env bash
# Set up and run the whole test suite: `bash scripts/test.sh` (what .ci/run calls).
#   1. pip-installs pdnotes (editable) with its test extras,
#   2. npm-installs the real clients used by the interop tests into .interop/ (pinned versions),
#   3. runs ruff check, ruff format --check, mypy and pytest.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install --quiet --disable-pip-version-check -e '.[test]'

CODEX_VERSION=0.171.0
CLAUDE_VERSION=2.1.197  # the newest release that supports Node 20
if [ ! -x .interop/node_modules/.bin/codex ] || [ ! -x .interop/node_modules/.bin/claude ]; then
  timeout 600 npm install --silent --no-audit --no-fund --prefix .interop \
    "@openai/codex@${CODEX_VERSION}" "@anthropic-ai/claude-code@${CLAUDE_VERSION}"
fi
export PDNOTES_INTEROP_BIN="$PWD/.interop/node_modules/.bin"

python3 -m ruff check .
python3 -m ruff format --check .
python3 -m mypy
python3 -m pytest "$@"
