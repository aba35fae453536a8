#!/usr/bin/env bash
# Side-by-side gateway comparison (issue 9 §1), in ONE run, interleaved:
#
#   direct   loadgen → fake upstream
#   bare     loadgen → net/http/httputil.ReverseProxy → fake upstream (the floor: the hop alone)
#   sluice   loadgen → sluice (openai connector, one key, small catalog, SQLite request log) → fake upstream
#   portkey  loadgen → Portkey's open-source gateway 1.15.2 (npm, Node) → fake upstream
#
# non-streaming and streaming, at each concurrency of CONCURRENCIES, REPEATS
# times, the targets rotated within each round; then sluice with its request
# log off vs on SQLite vs on ClickHouse (a throwaway clickhouse-server, that
# column skipped when the binary is missing). Medians per cell go to stdout as markdown and, unless
# WRITE_DOC=0, are appended under "## Side by side" in docs/perf.md.
#
#   bash bench/compare.sh                      # the full run, bounded to ~25 min of measuring
#   REPEATS=1 CONCURRENCIES="1 32" STEP_SECONDS=2 WRITE_DOC=0 bash bench/compare.sh   # a quick look
#
# Everything listens on 127.0.0.1 only and every loop is bounded in count and
# time. Every process started here is stopped on exit (trap). Before the run it
# waits (bounded, INITIAL_WAIT) for the 1-minute load average to drop below
# LOAD_QUIET; before each step it waits (bounded, STEP_WAIT) until the CPU busy
# share measured over one second — while every process of ours is idle, so it is
# other people's work — is below BUSY_QUIET %. Both are recorded with each step.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

REPEATS=${REPEATS:-3}
CONCURRENCIES=${CONCURRENCIES:-"1 32 64"}
LOG_CONCURRENCIES=${LOG_CONCURRENCIES:-"32"}
STEP_SECONDS=${STEP_SECONDS:-5}       # -d of each measured step
N_SINGLE=${N_SINGLE:-5000}            # -n at c=1
N_MANY=${N_MANY:-40000}               # -n at c>1
WARMUP=${WARMUP:-200}                 # unmeasured requests before each step
CHUNKS=${CHUNKS:-20}                  # chunks per fake stream
BUDGET_SECONDS=${BUDGET_SECONDS:-1500} # measuring bound, after the initial wait; steps past it are skipped
INITIAL_WAIT=${INITIAL_WAIT:-600}
LOAD_QUIET=${LOAD_QUIET:-1.0}
STEP_WAIT=${STEP_WAIT:-10}
BUSY_QUIET=${BUSY_QUIET:-25}
WRITE_DOC=${WRITE_DOC:-1}
PORTKEY=${PORTKEY:-1}                 # 0 skips the Node gateway
CLICKHOUSE=${CLICKHOUSE:-1}           # 0 skips the ClickHouse request-log block
CLICKHOUSE_BIN=${SLUICE_CLICKHOUSE_SERVER:-/usr/sbin/clickhouse-server}
PORTKEY_VERSION=1.15.2
HONO_NODE_SERVER_VERSION=1.14.1

log() { printf '[compare %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

WORK=$(mktemp -d /tmp/sluice-bench.XXXXXX)
OUT="$ROOT/bench/out/$(date -u +%Y%m%dT%H%M%SZ)"
mkdir -p "$OUT"
RESULTS="$OUT/results.jsonl"
: > "$RESULTS"
PIDS=()
NOTES=()

cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 1 30); do
    local alive=0
    for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.1
  done
  for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  cp "$WORK"/*.log "$OUT"/ 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start NAME CMD... runs CMD in the background (in START_DIR if set), logging
# to $WORK/NAME.log; sets LAST_PID, the command's own PID (exec).
start() {
  local name=$1; shift
  ( cd "${START_DIR:-.}" && exec "$@" ) > "$WORK/$name.log" 2>&1 &
  LAST_PID=$!
  PIDS+=("$LAST_PID")
}

# wait_url URL TRIES: bounded readiness poll (TRIES × 0.2 s).
wait_url() {
  local i
  for i in $(seq 1 "$2"); do
    curl -s -o /dev/null -m 1 "$1" && return 0
    sleep 0.2
  done
  return 1
}

wait_file() {
  local i
  for i in $(seq 1 100); do [ -s "$1" ] && return 0; sleep 0.1; done
  return 1
}

# free_port: a loopback TCP port nobody listens on (bounded tries).
free_port() {
  local i p
  for i in $(seq 1 50); do
    p=$((20000 + RANDOM % 30000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return 0; fi
  done
  echo "no free port found" >&2; return 1
}

load1() { cut -d' ' -f1 /proc/loadavg; }

# busy_pct: share of all CPUs busy over one second, from /proc/stat.
busy_pct() {
  local a b
  a=$(head -1 /proc/stat); sleep 1; b=$(head -1 /proc/stat)
  awk -v a="$a" -v b="$b" 'BEGIN {
    n = split(a, x, " "); split(b, y, " "); tot = 0
    for (i = 2; i <= n; i++) tot += y[i] - x[i]
    idle = (y[5] - x[5]) + (y[6] - x[6])
    if (tot <= 0) { print 0; exit }
    printf "%.1f\n", 100 * (tot - idle) / tot }'
}

# ---------------------------------------------------------------- build
log "building the bench tools and sluice into $WORK/bin"
mkdir -p "$WORK/bin"
go build -o "$WORK/bin/" ./bench/fakeupstream ./bench/bareproxy ./bench/loadgen ./bench/report
go build -o "$WORK/bin/sluice" ./cmd/sluice
BIN="$WORK/bin"

# ---------------------------------------------------------------- Portkey install
PK_DIR="$ROOT/bench/.cache/portkey"
PK_MAIN="$PK_DIR/node_modules/@portkey-ai/gateway/build/start-server.js"
PK_STATUS=""
if [ "$PORTKEY" != 1 ]; then
  PK_STATUS="Portkey: skipped (PORTKEY=0)"
elif ! command -v node > /dev/null || ! command -v npm > /dev/null; then
  PK_STATUS="Portkey: not measured — node/npm not found"
else
  if ! grep -q "\"version\": \"$PORTKEY_VERSION\"" "$PK_DIR/node_modules/@portkey-ai/gateway/package.json" 2>/dev/null ||
     ! grep -q "\"version\": \"$HONO_NODE_SERVER_VERSION\"" "$PK_DIR/node_modules/@hono/node-server/package.json" 2>/dev/null; then
    log "installing @portkey-ai/gateway@$PORTKEY_VERSION with @hono/node-server@$HONO_NODE_SERVER_VERSION into bench/.cache/portkey"
    mkdir -p "$PK_DIR"
    # The override makes the gateway itself (and @hono/node-ws) use the pinned
    # node-server instead of a nested newer copy.
    cat > "$PK_DIR/package.json" <<EOF
{
  "name": "sluice-bench-portkey",
  "private": true,
  "dependencies": {
    "@hono/node-server": "$HONO_NODE_SERVER_VERSION",
    "@portkey-ai/gateway": "$PORTKEY_VERSION"
  },
  "overrides": {
    "@hono/node-server": "$HONO_NODE_SERVER_VERSION"
  }
}
EOF
    if ! (cd "$PK_DIR" && timeout 300 npm install --no-audit --no-fund > "$WORK/npm-install.log" 2>&1); then
      PK_STATUS="Portkey: not measured — npm install failed: $(tail -3 "$WORK/npm-install.log" | tr '\n' ' ')"
    fi
  fi
  [ -z "$PK_STATUS" ] && [ ! -f "$PK_MAIN" ] && PK_STATUS="Portkey: not measured — $PK_MAIN missing after install"
fi

# ---------------------------------------------------------------- servers
start fakeupstream "$BIN/fakeupstream" -addr 127.0.0.1:0 -addr-file "$WORK/up.addr" -chunks "$CHUNKS"
UP_PID=$LAST_PID
wait_file "$WORK/up.addr" || { log "fake upstream did not start"; cat "$WORK/fakeupstream.log" >&2; exit 1; }
UP=$(cat "$WORK/up.addr")
wait_url "http://$UP/healthz" 50 || { log "fake upstream not answering"; exit 1; }

start bareproxy "$BIN/bareproxy" -addr 127.0.0.1:0 -target "http://$UP" -addr-file "$WORK/bp.addr"
BP_PID=$LAST_PID
wait_file "$WORK/bp.addr" || { log "bare proxy did not start"; cat "$WORK/bareproxy.log" >&2; exit 1; }
BP=$(cat "$WORK/bp.addr")
wait_url "http://$BP/healthz" 50 || { log "bare proxy not answering"; exit 1; }

# sluice: one direct OpenAI-connector upstream at the fake, one key, one catalog model.
SECRET="sk-bench-loadgen-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
SHA=$(printf %s "$SECRET" | sha256sum | cut -d' ' -f1)
UPSTREAM_KEY=sk-bench-upstream
export SLUICE_BENCH_UPSTREAM_KEY=$UPSTREAM_KEY
sluice_config() { # DIR PORT STORE_TOML
  mkdir -p "$1"
  cat > "$1/sluice.toml" <<EOF
# Generated by bench/compare.sh.
[server]
listen = "127.0.0.1:$2"

[store]
$3

[[upstreams]]
name = "fake"
connector = "openai"
base_url = "http://$UP/v1"
api_key_env = "SLUICE_BENCH_UPSTREAM_KEY"

[[keys]]
id = "k-bench"
sha256 = "$SHA"
org = "bench"
team = "bench"
project = "bench"
EOF
  cat > "$1/catalog.json" <<'EOF'
{"models": [
  {"slug": "openai/gpt-4o-mini", "context_window": 128000,
   "native": {"openai": "gpt-4o-mini"},
   "endpoints": [{"provider": "openai", "price_in": 0.15, "price_out": 0.6}]}
]}
EOF
}
SL_PORT=$(free_port)
sluice_config "$WORK/sluice" "$SL_PORT" 'kind = "sqlite"
data_dir = "data"'
"$BIN/sluice" check --config "$WORK/sluice" >&2
start sluice "$BIN/sluice" serve --config "$WORK/sluice"
SL_PID=$LAST_PID
wait_url "http://127.0.0.1:$SL_PORT/healthz" 150 || { log "sluice did not start"; tail -20 "$WORK/sluice.log" >&2; exit 1; }

# The same gateway with its request log off ([store] kind = "off"): the
# baseline of the request-log block.
SLOFF_PORT=$(free_port)
sluice_config "$WORK/sluice-off" "$SLOFF_PORT" 'kind = "off"'
start sluice-off "$BIN/sluice" serve --config "$WORK/sluice-off"
SLOFF_PID=$LAST_PID
wait_url "http://127.0.0.1:$SLOFF_PORT/healthz" 150 || { log "sluice (log off) did not start"; tail -20 "$WORK/sluice-off.log" >&2; exit 1; }

PK_PID=""
if [ -z "$PK_STATUS" ]; then
  PK_PORT=$(free_port)
  # The gateway's own start script listens on every interface; the preload
  # binds its sockets to 127.0.0.1.
  start portkey env NODE_ENV=production node --import "file://$ROOT/bench/portkey/loopback.mjs" "$PK_MAIN" --port="$PK_PORT" --headless
  PK_PID=$LAST_PID
  if wait_url "http://127.0.0.1:$PK_PORT/" 150; then
    PK_STATUS="Portkey: @portkey-ai/gateway $PORTKEY_VERSION on Node $(node --version), @hono/node-server $HONO_NODE_SERVER_VERSION, forwarding with x-portkey-provider: openai and x-portkey-custom-host"
  else
    PK_STATUS="Portkey: not measured — the gateway did not answer on 127.0.0.1:$PK_PORT: $(tail -5 "$WORK/portkey.log" | tr '\n' ' ')"
    PK_PID=""
  fi
fi
log "$PK_STATUS"
NOTES+=("$PK_STATUS")

# ---------------------------------------------------------------- steps
# target_args TARGET: sets URL KEY MODEL WATCH HDRS for loadgen.
target_args() {
  HDRS=()
  case $1 in
    direct)    URL="http://$UP/v1/chat/completions"; KEY=$UPSTREAM_KEY; MODEL=gpt-4o-mini; WATCH=$UP_PID ;;
    bare)      URL="http://$BP/v1/chat/completions"; KEY=$UPSTREAM_KEY; MODEL=gpt-4o-mini; WATCH="$BP_PID,$UP_PID" ;;
    sluice)    URL="http://127.0.0.1:$SL_PORT/v1/chat/completions"; KEY=$SECRET; MODEL=openai/gpt-4o-mini; WATCH="$SL_PID,$UP_PID" ;;
    sluice-ch) URL="http://127.0.0.1:$SLCH_PORT/v1/chat/completions"; KEY=$SECRET; MODEL=openai/gpt-4o-mini; WATCH="$SLCH_PID,$UP_PID,$CH_PID" ;; # the server third: the report shows its CPU
    sluice-off) URL="http://127.0.0.1:$SLOFF_PORT/v1/chat/completions"; KEY=$SECRET; MODEL=openai/gpt-4o-mini; WATCH="$SLOFF_PID,$UP_PID" ;;
    portkey)   URL="http://127.0.0.1:$PK_PORT/v1/chat/completions"; KEY=$UPSTREAM_KEY; MODEL=gpt-4o-mini; WATCH="$PK_PID,$UP_PID"
               HDRS=(-H "x-portkey-provider: openai" -H "x-portkey-custom-host: http://$UP/v1") ;;
  esac
}

# warm TARGET: unmeasured traffic in both modes (connection pools, JIT, files).
warm() {
  target_args "$1"
  local s
  for s in "" -stream; do
    "$BIN/loadgen" -url "$URL" -key "$KEY" -model "$MODEL" $s -c 16 -n 2000 -d 10s "${HDRS[@]}" > /dev/null ||
      log "warm-up of $1 failed"
  done
}

SKIPPED=0
STEPS=0
# step BLOCK TARGET MODE C REP
step() {
  local block=$1 target=$2 mode=$3 c=$4 rep=$5
  local now; now=$(date +%s)
  if [ "$now" -ge "$DEADLINE" ]; then SKIPPED=$((SKIPPED + 1)); return 0; fi
  local until=$((now + STEP_WAIT)) busy
  [ "$until" -gt "$DEADLINE" ] && until=$DEADLINE
  while :; do
    busy=$(busy_pct)
    awk -v b="$busy" -v q="$BUSY_QUIET" 'BEGIN { exit !(b < q) }' && break
    [ "$(date +%s)" -ge "$until" ] && break
    sleep 1
  done
  local l; l=$(load1)
  target_args "$target"
  local n=$N_MANY s=""
  [ "$c" = 1 ] && n=$N_SINGLE
  [ "$mode" = stream ] && s=-stream
  local line
  if line=$("$BIN/loadgen" -url "$URL" -key "$KEY" -model "$MODEL" $s -c "$c" -n "$n" -d "${STEP_SECONDS}s" \
      -warmup "$WARMUP" -watch "$WATCH" "${HDRS[@]}" -meta "block=$block" -meta "target=$target" -meta "mode=$mode" \
      -meta "c=$c" -meta "rep=$rep" -meta "load1=$l" -meta "busy_pct=$busy" 2>> "$WORK/loadgen.log"); then
    echo "$line" >> "$RESULTS"
    STEPS=$((STEPS + 1))
    log "$block $target $mode c=$c rep=$rep load1=$l busy=$busy%: $(printf %s "$line" | grep -o '"throughput_rps":[0-9.]*' | cut -d: -f2 | cut -d. -f1) req/s, errors $(printf %s "$line" | grep -o '"errors":[0-9]*' | cut -d: -f2)"
  else
    log "$block $target $mode c=$c rep=$rep: loadgen failed (see loadgen.log)"
  fi
}

TARGETS=(direct bare sluice)
[ -n "$PK_PID" ] && TARGETS+=(portkey)
for t in "${TARGETS[@]}"; do warm "$t"; done

# ---------------------------------------------------------------- quiet machine
l=$(load1)
waited=0
while awk -v l="$l" -v q="$LOAD_QUIET" 'BEGIN { exit !(l >= q) }' && [ "$waited" -lt "$INITIAL_WAIT" ]; do
  [ $((waited % 60)) = 0 ] && log "waiting for a quiet machine: 1-minute load $l (want < $LOAD_QUIET; waited ${waited}s of ${INITIAL_WAIT}s)"
  sleep 10; waited=$((waited + 10)); l=$(load1)
done
START_LOAD=$l
log "measuring from 1-minute load $START_LOAD (waited ${waited}s); budget ${BUDGET_SECONDS}s"
NOTES+=("Run started at 1-minute load $START_LOAD after waiting ${waited}s (bound ${INITIAL_WAIT}s for load < $LOAD_QUIET); each step then waited up to ${STEP_WAIT}s for others' CPU use below ${BUSY_QUIET} %.")
DEADLINE=$(( $(date +%s) + BUDGET_SECONDS ))

# ---------------------------------------------------------------- main matrix
for rep in $(seq 1 "$REPEATS"); do
  for mode in json stream; do
    for c in $CONCURRENCIES; do
      # rotate the order each round so no target always runs first
      k=${#TARGETS[@]}
      for i in $(seq 0 $((k - 1))); do
        step main "${TARGETS[$(( (i + rep + c) % k ))]}" "$mode" "$c" "$rep"
      done
    done
  done
done

# ---------------------------------------------------------------- request log: off vs SQLite vs ClickHouse
CH_STATUS=""
CH_READY=0
warm sluice-off
LOG_TARGETS=(sluice-off sluice)
if [ "$CLICKHOUSE" != 1 ]; then
  CH_STATUS="ClickHouse request-log block: skipped (CLICKHOUSE=0)"
elif [ ! -x "$CLICKHOUSE_BIN" ]; then
  CH_STATUS="ClickHouse request-log block: skipped — $CLICKHOUSE_BIN not found (apt-get install clickhouse-server)"
elif [ "$(date +%s)" -ge "$DEADLINE" ]; then
  CH_STATUS="ClickHouse request-log block: skipped — the time budget ran out"
else
  CH="$WORK/ch"; mkdir -p "$CH"
  CH_TCP=$(free_port); CH_HTTP=$(free_port)
  # Same shape as gateway/requestlog/chtest: <yandex> root, loopback only.
  cat > "$CH/config.xml" <<EOF
<?xml version="1.0"?>
<yandex>
    <logger><level>warning</level><log>$CH/server.log</log><errorlog>$CH/server.err.log</errorlog><size>10M</size><count>1</count></logger>
    <listen_host>127.0.0.1</listen_host>
    <tcp_port>$CH_TCP</tcp_port>
    <http_port>$CH_HTTP</http_port>
    <path>$CH/data/</path>
    <tmp_path>$CH/tmp/</tmp_path>
    <user_files_path>$CH/user_files/</user_files_path>
    <format_schema_path>$CH/format_schemas/</format_schema_path>
    <users_config>$CH/users.xml</users_config>
    <default_profile>default</default_profile>
    <default_database>default</default_database>
    <timezone>UTC</timezone>
    <mark_cache_size>268435456</mark_cache_size>
    <max_concurrent_queries>100</max_concurrent_queries>
</yandex>
EOF
  cat > "$CH/users.xml" <<'EOF'
<?xml version="1.0"?>
<yandex>
    <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
    <users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>default</profile><quota>default</quota></default></users>
    <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>
EOF
  START_DIR=$CH start clickhouse "$CLICKHOUSE_BIN" --config-file="$CH/config.xml"
  CH_PID=$LAST_PID
  if wait_url "http://127.0.0.1:$CH_HTTP/ping" 150; then
    SLCH_PORT=$(free_port)
    sluice_config "$WORK/sluice-ch" "$SLCH_PORT" "kind = \"clickhouse\"
data_dir = \"data\"
clickhouse_addr = \"127.0.0.1:$CH_TCP\"
clickhouse_database = \"sluice_bench\""
    start sluice-ch "$BIN/sluice" serve --config "$WORK/sluice-ch"
    SLCH_PID=$LAST_PID
    if wait_url "http://127.0.0.1:$SLCH_PORT/healthz" 150; then
      warm sluice-ch
      LOG_TARGETS+=(sluice-ch)
      CH_READY=1
    else
      CH_STATUS="ClickHouse request-log block: skipped — sluice with the ClickHouse store did not start: $(tail -3 "$WORK/sluice-ch.log" | tr '\n' ' ')"
    fi
  else
    CH_STATUS="ClickHouse request-log block: skipped — clickhouse-server did not answer /ping: $(tail -3 "$CH/server.err.log" 2>/dev/null | tr '\n' ' ')"
  fi
fi
k=${#LOG_TARGETS[@]}
for rep in $(seq 1 "$REPEATS"); do
  for mode in json stream; do
    for c in $LOG_CONCURRENCIES; do
      for i in $(seq 0 $((k - 1))); do
        step log "${LOG_TARGETS[$(( (i + rep + c) % k ))]}" "$mode" "$c" "$rep"
      done
    done
  done
done
if [ "$CH_READY" = 1 ]; then
  sleep 2 # one flush interval, so the rows reach the table before the count
  rows=$(curl -s -m 5 "http://127.0.0.1:$CH_HTTP/" --data-binary "SELECT count() FROM sluice_bench.requests" 2>/dev/null || echo "?")
  CH_STATUS="ClickHouse request-log block: throwaway clickhouse-server at 127.0.0.1:$CH_TCP; rows in sluice_bench.requests after the block: ${rows:-?}"
fi
log "$CH_STATUS"
NOTES+=("$CH_STATUS")
[ "$SKIPPED" -gt 0 ] && NOTES+=("$SKIPPED steps were skipped: the ${BUDGET_SECONDS}s measuring budget ran out (their cells have fewer repeats).")
NOTES+=("Machine: $(nproc) cores, $(go version | cut -d' ' -f3), everything on one host: loadgen, gateway and fake upstream share the 2 cores, so throughput is the whole system's. CPU ms/req is the gateway process's own utime+stime per measured request (for direct, the fake upstream's); peak RSS is the highest VmRSS sampled every 50 ms during the steps. sluice runs as shipped: request log on SQLite, a log line for each request that did not end 2xx (none here).")

# ---------------------------------------------------------------- report
report_args=(-in "$RESULTS")
for n in "${NOTES[@]}"; do report_args+=(-note "$n"); done
TABLE=$("$BIN/report" "${report_args[@]}")
printf '%s\n' "$TABLE" | tee "$OUT/table.md"
log "$STEPS steps measured; results in ${OUT#"$ROOT"/}"

if [ "$WRITE_DOC" = 1 ]; then
  DOC="$ROOT/docs/perf.md"
  last_h2=$(grep '^## ' "$DOC" | tail -1 || true)
  {
    if [ "$last_h2" != "## Side by side" ]; then
      printf '\n## Side by side\n\n'
      printf 'Produced by `bash bench/compare.sh` (issue 9): every target measured in one run, interleaved; see `bench/` for the tools.\n'
    fi
    printf '\n### Run of %s\n' "$(date -u +'%Y-%m-%d %H:%M UTC')"
    printf '%s\n' "$TABLE"
  } >> "$DOC"
  log "appended to docs/perf.md"
fi
