#!/usr/bin/env bash
# Gateway comparison, in ONE run, interleaved:
#
#   direct   loadgen → fake upstream
#   bare     loadgen → net/http/httputil.ReverseProxy → fake upstream (the floor: the hop alone)
#   sluice   loadgen → sluice (openai connector, one key, small catalog, SQLite request log) → fake upstream
#   portkey  loadgen → Portkey's open-source gateway 1.15.2 (npm, Node) → fake upstream
#
# Three kinds of run:
#
#   bash bench/compare.sh                 # shared cores (issue 9): every process on both cores
#   bash bench/compare.sh --pinned        # pinned cores: throughput and CPU per request at c=32
#   bash bench/compare.sh --streams 1000,4000,8000 [--token-rate]   # streams held open
#   bash bench/compare.sh --all           # --pinned --streams 1000,4000,8000 --token-rate: both tables
#
# Shared cores (the default, when no option is given): non-streaming and
# streaming, at each concurrency of CONCURRENCIES, REPEATS times, the targets
# rotated within each round; then sluice with its request log off vs on SQLite
# vs on ClickHouse (a throwaway clickhouse-server, that column skipped when the
# binary is missing). Medians per cell go to stdout as markdown and, unless
# WRITE_DOC=0, are appended under "## Side by side" in docs/perf/runs.md (the run journal; docs/perf.md keeps the current figures).
#
# Pinned cores (--pinned): every gateway runs pinned to core PIN_GATEWAY_CPU
# (taskset; a Go gateway's GOMAXPROCS follows, so it is 1), the load generator
# and the fake upstream to PIN_LOAD_CPU, so each gateway has a core of its own
# and the load side cannot take from it. Non-streaming and streaming at each
# of PINNED_CONCURRENCIES (default 32), REPEATS times, rotated; CPU per request
# beside throughput, and each core's busy share, so a saturated load core shows.
#
# Open streams (--streams N,N,…): the fake upstream answers like a model —
# first token after FIRST_TOKEN (300ms), then STREAM_CHUNKS (20) chunks
# STREAM_INTERVAL (250ms) apart, ~5.3 s a stream — and loadgen -open holds N
# streams through each target at once: workers ramped in over STREAM_RAMP
# seconds, each streaming back to back for STREAM_HOLD seconds more. Every
# target is started afresh for each step (pinned as above), warmed with
# STREAM_WARMUP streams, and its idle RSS and goroutines read before the ramp.
# --token-rate adds the variant that measures CPU per chunk: RATE_STREAMS
# (1000) streams of RATE_CHUNKS (100) chunks RATE_INTERVAL (25ms) apart.
# PROFILE=1 saves each sluice and bare-proxy step's heap profile (after a
# forced collection, so it perturbs that step's RSS a little), MemStats and
# goroutine stacks in the middle of the hold to the run's output directory.
#
# Two topologies (TOPOLOGIES, default "tls plain"), each run in full, one
# after the other, and reported apart:
#
#   tls     the fake upstream serves TLS with a throwaway CA made at its start
#           (its certificate given to every gateway to trust) and HTTP/2 and
#           HTTP/1.1 by ALPN, as the public upstreams do; every gateway
#           negotiates HTTP/2 to it. The bare proxy gets what a careful
#           operator would give it: HTTP/2 to the upstream and a pooled 4 KiB
#           copy buffer. sluice is configured with ca_file only. The
#           direct target (and the upstream's /stats) use a plain listener
#           of the same fake upstream.
#   plain   HTTP/1.1 in the clear to the upstream, as before (the bare proxy
#           with httputil's own 32 KiB buffers).
#
# The load generator speaks plain HTTP/1.1 to every gateway in both.
#
# The pinned and open-streams tables go to stdout and bench/out/<time>/table.md;
# with WRITE_DOC=1 they are appended under "## Pinned cores and open streams"
# in docs/perf/runs.md.
#
#   REPEATS=1 CONCURRENCIES="1 32" STEP_SECONDS=2 WRITE_DOC=0 bash bench/compare.sh   # a quick look
#   INITIAL_WAIT=0 REPEATS=1 STEP_SECONDS=2 STREAM_HOLD=5 bash bench/compare.sh --pinned --streams 200   # a smoke run
#
# Everything listens on 127.0.0.1 only and every loop is bounded in count and
# time. Every process started here is stopped on exit (trap). The open-file
# soft limit is raised to the hard one for every process started here (a
# proxied stream holds two connections); an open-streams level that would not
# fit is skipped with a note. Before the run it waits (bounded, INITIAL_WAIT)
# for the 1-minute load average to drop below LOAD_QUIET; before each step it
# waits (bounded, STEP_WAIT) until the CPU busy share measured over one second
# — while every process of ours is idle, so it is other people's work — is
# below BUSY_QUIET %. Both are recorded with each step.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }

SHARED=1 PINNED=0 TOKEN_RATE=0 STREAM_LEVELS=""
while [ $# -gt 0 ]; do
  case $1 in
    --pinned) PINNED=1; SHARED=0 ;;
    --streams) [ $# -ge 2 ] || { usage >&2; exit 2; }; STREAM_LEVELS=$2; SHARED=0; shift ;;
    --streams=*) STREAM_LEVELS=${1#--streams=}; SHARED=0 ;;
    --token-rate) TOKEN_RATE=1; SHARED=0 ;;
    --all) PINNED=1; TOKEN_RATE=1; STREAM_LEVELS=${STREAM_LEVELS:-1000,4000,8000}; SHARED=0 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "compare.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
STREAM_LEVELS=${STREAM_LEVELS//,/ }
for n in $STREAM_LEVELS; do
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 16000 ] || { echo "compare.sh: --streams $n: want 1..16000" >&2; exit 2; }
done

REPEATS=${REPEATS:-3}
CONCURRENCIES=${CONCURRENCIES:-"1 32 64"}
PINNED_CONCURRENCIES=${PINNED_CONCURRENCIES:-"32"}
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
WRITE_DOC=${WRITE_DOC:-$SHARED}       # the shared-cores run appends to docs/perf/runs.md by default, the others do not
PORTKEY=${PORTKEY:-1}                 # 0 skips the Node gateway
CLICKHOUSE=${CLICKHOUSE:-1}           # 0 skips the ClickHouse request-log block
CLICKHOUSE_BIN=${SLUICE_CLICKHOUSE_SERVER:-/usr/sbin/clickhouse-server}
PIN_GATEWAY_CPU=${PIN_GATEWAY_CPU:-0}
PIN_LOAD_CPU=${PIN_LOAD_CPU:-1}
# open streams
STREAM_TARGETS=${STREAM_TARGETS:-"direct bare sluice portkey"}
STREAM_REPEATS=${STREAM_REPEATS:-1}
STREAM_RAMP=${STREAM_RAMP:-5}         # seconds
STREAM_HOLD=${STREAM_HOLD:-20}        # seconds after the ramp
STREAM_WARMUP=${STREAM_WARMUP:-20}    # streams before the idle reading
STREAM_TIMEOUT=${STREAM_TIMEOUT:-60s} # bound of one stream
FIRST_TOKEN=${FIRST_TOKEN:-300ms}
STREAM_CHUNKS=${STREAM_CHUNKS:-20}
STREAM_INTERVAL=${STREAM_INTERVAL:-250ms}
RATE_STREAMS=${RATE_STREAMS:-1000}
RATE_CHUNKS=${RATE_CHUNKS:-100}
RATE_INTERVAL=${RATE_INTERVAL:-25ms}
PROFILE=${PROFILE:-0}
TOPOLOGIES=${TOPOLOGIES:-"tls plain"}
for t in $TOPOLOGIES; do
  case $t in tls|plain) ;; *) echo "compare.sh: TOPOLOGIES: $t: want tls or plain" >&2; exit 2 ;; esac
done
TOPOLOGY=plain
PORTKEY_VERSION=1.15.2
HONO_NODE_SERVER_VERSION=1.14.1

log() { printf '[compare %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }

# Every process started here inherits the raised open-file limit; Go raises
# its own soft limit anyway, Node does not.
ulimit -n "$(ulimit -Hn)" 2> /dev/null || true
NOFILE=$(ulimit -n)
[ "$NOFILE" = unlimited ] && NOFILE=1048576

PIN_GW=() PIN_LG=()
if [ "$SHARED" = 0 ]; then
  command -v taskset > /dev/null || { echo "compare.sh: taskset not found (util-linux): pinned cores need it" >&2; exit 1; }
  [ "$(nproc)" -ge 2 ] || { echo "compare.sh: pinned cores need 2 CPUs, this machine has $(nproc)" >&2; exit 1; }
  PIN_GW=(taskset -c "$PIN_GATEWAY_CPU")
  PIN_LG=(taskset -c "$PIN_LOAD_CPU")
fi

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
# to $WORK/NAME.log (appended: a target restarted for every step keeps one
# log); sets LAST_PID, the command's own PID (exec; taskset execs the command
# in turn, so the PID is the command's).
start() {
  local name=$1; shift
  ( cd "${START_DIR:-.}" && exec "$@" ) >> "$WORK/$name.log" 2>&1 &
  LAST_PID=$!
  PIDS+=("$LAST_PID")
}

# stop_pid PID: SIGTERM, up to 10 s to exit, then SIGKILL; forgets the PID.
stop_pid() {
  local pid=$1 i keep=()
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  for i in "${PIDS[@]}"; do [ "$i" != "$pid" ] && keep+=("$i"); done
  PIDS=("${keep[@]}")
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

# free_port: a loopback TCP port nobody listens on (bounded tries), below
# the kernel's ephemeral range: thousands of open streams take thousands of
# ephemeral ports as their connections' source ports, and a listener told
# to bind one of those fails with "address already in use".
free_port() {
  local i p low
  low=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
  [ "$low" -gt 12000 ] || { echo "the ephemeral port range starts at $low: no room below it" >&2; return 1; }
  for i in $(seq 1 50); do
    p=$((10000 + RANDOM % (low - 10000)))
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

# quiet_wait: before a step, wait (bounded by STEP_WAIT and the deadline)
# for others' CPU use below BUSY_QUIET; sets BUSY and L (1-minute load).
quiet_wait() {
  local until=$(( $(date +%s) + STEP_WAIT ))
  [ "$until" -gt "$DEADLINE" ] && until=$DEADLINE
  while :; do
    BUSY=$(busy_pct)
    awk -v b="$BUSY" -v q="$BUSY_QUIET" 'BEGIN { exit !(b < q) }' && break
    [ "$(date +%s)" -ge "$until" ] && break
    sleep 1
  done
  L=$(load1)
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
# start_upstream NAME ARGS...: a fake upstream on the load generator's core,
# in the current TOPOLOGY; sets UP (its address), UP_URL (scheme and
# address, what the gateways are pointed at), UP_PLAIN (a plain-HTTP
# address of it: the direct target and /stats), UP_CA (in tls, the
# throwaway CA's certificate) and UP_PID.
start_upstream() {
  local name=$1; shift
  local tls=()
  rm -f "$WORK/$name.addr" "$WORK/$name.plain"
  [ "$TOPOLOGY" = tls ] && tls=(-tls-dir "$WORK/tls-$name" -plain-addr-file "$WORK/$name.plain")
  start "$name" "${PIN_LG[@]}" "$BIN/fakeupstream" -addr 127.0.0.1:0 -addr-file "$WORK/$name.addr" "${tls[@]}" "$@"
  UP_PID=$LAST_PID
  wait_file "$WORK/$name.addr" || { log "fake upstream $name did not start"; cat "$WORK/$name.log" >&2; exit 1; }
  UP=$(cat "$WORK/$name.addr")
  UP_URL="http://$UP" UP_PLAIN=$UP UP_CA=""
  if [ "$TOPOLOGY" = tls ]; then
    wait_file "$WORK/$name.plain" || { log "fake upstream $name: no plain listener"; cat "$WORK/$name.log" >&2; exit 1; }
    UP_URL="https://$UP" UP_PLAIN=$(cat "$WORK/$name.plain") UP_CA="$WORK/tls-$name/ca.pem"
    curl -s -o /dev/null -m 2 --cacert "$UP_CA" "https://$UP/healthz" || { log "fake upstream $name: TLS not answering"; exit 1; }
  fi
  wait_url "http://$UP_PLAIN/healthz" 50 || { log "fake upstream $name not answering"; exit 1; }
}

# start_bare: the bare proxy to $UP on the gateway core, with its debug
# listener; sets BP, BPD and BP_PID.
start_bare() {
  rm -f "$WORK/bp.addr" "$WORK/bpd.addr"
  local tls=()
  # a careful operator's settings over TLS: HTTP/2 (negotiated), 4 KiB copy buffers
  [ "$TOPOLOGY" = tls ] && tls=(-ca-file "$UP_CA" -buffer 4096)
  start bareproxy "${PIN_GW[@]}" "$BIN/bareproxy" -addr 127.0.0.1:0 -target "$UP_URL" -addr-file "$WORK/bp.addr" \
    -debug-addr 127.0.0.1:0 -debug-addr-file "$WORK/bpd.addr" "${tls[@]}"
  BP_PID=$LAST_PID
  wait_file "$WORK/bp.addr" || { log "bare proxy did not start"; cat "$WORK/bareproxy.log" >&2; exit 1; }
  BP=$(cat "$WORK/bp.addr")
  BPD=$(cat "$WORK/bpd.addr")
  wait_url "http://$BP/healthz" 50 || { log "bare proxy not answering"; exit 1; }
}

# sluice: one direct OpenAI-connector upstream at the fake, one key, one catalog model.
SECRET="sk-bench-loadgen-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
SHA=$(printf %s "$SECRET" | sha256sum | cut -d' ' -f1)
UPSTREAM_KEY=sk-bench-upstream
export SLUICE_BENCH_UPSTREAM_KEY=$UPSTREAM_KEY
sluice_config() { # DIR PORT STORE_TOML [SERVER_EXTRA_TOML]; the upstream is $UP_URL
  mkdir -p "$1"
  local CA_LINE=""
  [ -n "$UP_CA" ] && CA_LINE="ca_file = \"$UP_CA\""
  cat > "$1/sluice.toml" <<EOF
# Generated by bench/compare.sh.
[server]
listen = "127.0.0.1:$2"
${4:-}

[store]
$3

[[upstreams]]
name = "fake"
connector = "openai"
base_url = "$UP_URL/v1"
api_key_env = "SLUICE_BENCH_UPSTREAM_KEY"
$CA_LINE

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

# start_sluice NAME STORE_TOML: sluice as shipped (or with the store given)
# on the gateway core; in the pinned and open-streams runs with its debug
# listener on, for profiles (an idle listener, off the request path). Sets
# SL_PORT, SL_DEBUG and SL_PID (NAME=sluice) or SLOFF_PORT and SLOFF_PID
# (NAME=sluice-off).
start_sluice() {
  local name=$1 store=$2 port dport mport extra=""
  port=$(free_port); dport=$(free_port); mport=$(free_port)
  # /metrics is served on metrics_listen only (a port of its own, so that
  # two gateways of one run do not share the default).
  extra="metrics_listen = \"127.0.0.1:$mport\""
  [ "$SHARED" = 0 ] && extra="$extra
debug_listen = \"127.0.0.1:$dport\""
  rm -rf "${WORK:?}/$name"
  sluice_config "$WORK/$name" "$port" "$store" "$extra"
  "$BIN/sluice" check --config "$WORK/$name" >&2
  start "$name" "${PIN_GW[@]}" "$BIN/sluice" serve --config "$WORK/$name"
  wait_url "http://127.0.0.1:$port/healthz" 150 || { log "$name did not start"; tail -20 "$WORK/$name.log" >&2; exit 1; }
  case $name in
    sluice) SL_PORT=$port SL_DEBUG=$dport SL_METRICS=$mport SL_PID=$LAST_PID ;;
    sluice-off) SLOFF_PORT=$port SLOFF_PID=$LAST_PID ;;
  esac
}

# start_portkey: Portkey on the gateway core if it is installed; sets PK_PID
# (empty when it did not start, and then it is not tried again) and PK_PORT.
start_portkey() {
  PK_PID=""
  [ -f "$PK_MAIN" ] || return 0
  PK_PORT=$(free_port)
  # The gateway's own start script listens on every interface; the preload
  # binds its sockets to 127.0.0.1.
  start portkey "${PIN_GW[@]}" env NODE_ENV=production ${UP_CA:+NODE_EXTRA_CA_CERTS="$UP_CA"} node --import "file://$ROOT/bench/portkey/loopback.mjs" "$PK_MAIN" --port="$PK_PORT" --headless
  PK_PID=$LAST_PID
  if ! wait_url "http://127.0.0.1:$PK_PORT/" 150; then
    PK_STATUS="Portkey: not measured — the gateway did not answer on 127.0.0.1:$PK_PORT: $(tail -5 "$WORK/portkey.log" | tr '\n' ' ')"
    stop_pid "$PK_PID"
    PK_PID=""
    PK_MAIN=/nonexistent
  fi
}

# target_args TARGET: sets URL KEY MODEL WATCH HDRS GOROUTINES for loadgen.
target_args() {
  HDRS=() GOROUTINES=""
  case $1 in
    direct)    URL="http://$UP_PLAIN/v1/chat/completions"; KEY=$UPSTREAM_KEY; MODEL=gpt-4o-mini; WATCH=$UP_PID ;;
    bare)      URL="http://$BP/v1/chat/completions"; KEY=$UPSTREAM_KEY; MODEL=gpt-4o-mini; WATCH="$BP_PID,$UP_PID"
               GOROUTINES="http://$BPD/metrics" ;;
    sluice)    URL="http://127.0.0.1:$SL_PORT/v1/chat/completions"; KEY=$SECRET; MODEL=openai/gpt-4o-mini; WATCH="$SL_PID,$UP_PID"
               GOROUTINES="http://127.0.0.1:$SL_METRICS/metrics" ;;
    sluice-ch) URL="http://127.0.0.1:$SLCH_PORT/v1/chat/completions"; KEY=$SECRET; MODEL=openai/gpt-4o-mini; WATCH="$SLCH_PID,$UP_PID,$CH_PID" ;; # the server third: the report shows its CPU
    sluice-off) URL="http://127.0.0.1:$SLOFF_PORT/v1/chat/completions"; KEY=$SECRET; MODEL=openai/gpt-4o-mini; WATCH="$SLOFF_PID,$UP_PID" ;;
    portkey)   URL="http://127.0.0.1:$PK_PORT/v1/chat/completions"; KEY=$UPSTREAM_KEY; MODEL=gpt-4o-mini; WATCH="$PK_PID,$UP_PID"
               HDRS=(-H "x-portkey-provider: openai" -H "x-portkey-custom-host: $UP_URL/v1") ;;
  esac
}

# warm TARGET: unmeasured traffic in both modes (connection pools, JIT, files).
warm() {
  target_args "$1"
  local s
  for s in "" -stream; do
    "${PIN_LG[@]}" "$BIN/loadgen" -url "$URL" -key "$KEY" -model "$MODEL" $s -c 16 -n 2000 -d 10s "${HDRS[@]}" > /dev/null ||
      log "warm-up of $1 failed"
  done
}

# wait_quiet_machine: bounded wait for the 1-minute load to drop below
# LOAD_QUIET; then the measuring deadline starts.
wait_quiet_machine() {
  local l waited=0
  l=$(load1)
  while awk -v l="$l" -v q="$LOAD_QUIET" 'BEGIN { exit !(l >= q) }' && [ "$waited" -lt "$INITIAL_WAIT" ]; do
    [ $((waited % 60)) = 0 ] && log "waiting for a quiet machine: 1-minute load $l (want < $LOAD_QUIET; waited ${waited}s of ${INITIAL_WAIT}s)"
    sleep 10; waited=$((waited + 10)); l=$(load1)
  done
  log "measuring from 1-minute load $l (waited ${waited}s); budget ${BUDGET_SECONDS}s"
  NOTES+=("Run started at 1-minute load $l after waiting ${waited}s (bound ${INITIAL_WAIT}s for load < $LOAD_QUIET); each step then waited up to ${STEP_WAIT}s for others' CPU use below ${BUSY_QUIET} %.")
  DEADLINE=$(( $(date +%s) + BUDGET_SECONDS ))
}

SKIPPED=0
STEPS=0
DEADLINE=$(( $(date +%s) + 86400 )) # replaced by wait_quiet_machine

# record LINE DESCRIPTION: keeps one loadgen result and logs it.
record() {
  echo "$1" >> "$RESULTS"
  STEPS=$((STEPS + 1))
  log "$2: $(printf %s "$1" | grep -o '"throughput_rps":[0-9.]*' | cut -d: -f2 | cut -d. -f1) req/s, errors $(printf %s "$1" | grep -o '"errors":[0-9]*' | head -1 | cut -d: -f2)"
}

# step BLOCK TARGET MODE C REP: one throughput step.
step() {
  local block=$1 target=$2 mode=$3 c=$4 rep=$5
  if [ "$(date +%s)" -ge "$DEADLINE" ]; then SKIPPED=$((SKIPPED + 1)); return 0; fi
  quiet_wait
  target_args "$target"
  local n=$N_MANY s="" pin=()
  [ "$c" = 1 ] && n=$N_SINGLE
  [ "$mode" = stream ] && s=-stream
  [ "$SHARED" = 0 ] && pin=(-meta "gw_cpu=$PIN_GATEWAY_CPU" -meta "lg_cpu=$PIN_LOAD_CPU")
  local line
  if line=$("${PIN_LG[@]}" "$BIN/loadgen" -url "$URL" -key "$KEY" -model "$MODEL" $s -c "$c" -n "$n" -d "${STEP_SECONDS}s" \
      -warmup "$WARMUP" -watch "$WATCH" "${HDRS[@]}" -meta "block=$block" -meta "target=$target" -meta "mode=$mode" \
      -meta "c=$c" -meta "rep=$rep" -meta "topology=$TOPOLOGY" -meta "load1=$L" -meta "busy_pct=$BUSY" "${pin[@]}" 2>> "$WORK/loadgen.log"); then
    record "$line" "$TOPOLOGY $block $target $mode c=$c rep=$rep load1=$L busy=$BUSY%"
  else
    log "$block $target $mode c=$c rep=$rep: loadgen failed (see loadgen.log)"
  fi
}

# ================================================================ shared cores (issue 9)
run_shared() {
  start_upstream fakeupstream -chunks "$CHUNKS"
  start_bare
  start_sluice sluice 'kind = "sqlite"
data_dir = "data"'
  # The same gateway with its request log off ([store] kind = "off"): the
  # baseline of the request-log block.
  start_sluice sluice-off 'kind = "off"'
  [ -z "$PK_STATUS" ] || [ -n "${PK_OK:-}" ] && start_portkey
  if [ -z "$PK_STATUS" ]; then
    PK_OK=1
    PK_STATUS="Portkey: @portkey-ai/gateway $PORTKEY_VERSION on Node $(node --version), @hono/node-server $HONO_NODE_SERVER_VERSION, forwarding with x-portkey-provider: openai and x-portkey-custom-host"
    NOTES+=("$PK_STATUS")
  fi
  log "$PK_STATUS"

  local targets=(direct bare sluice) t rep mode c k i
  [ -n "$PK_PID" ] && targets+=(portkey)
  for t in "${targets[@]}"; do warm "$t"; done
  wait_quiet_machine

  for rep in $(seq 1 "$REPEATS"); do
    for mode in json stream; do
      for c in $CONCURRENCIES; do
        # rotate the order each round so no target always runs first
        k=${#targets[@]}
        for i in $(seq 0 $((k - 1))); do
          step main "${targets[$(( (i + rep + c) % k ))]}" "$mode" "$c" "$rep"
        done
      done
    done
  done

  # ---------------------------------------------------- request log: off vs SQLite vs ClickHouse
  local ch_status="" ch_ready=0 log_targets=(sluice-off sluice)
  warm sluice-off
  if [ "$CLICKHOUSE" != 1 ]; then
    ch_status="ClickHouse request-log block: skipped (CLICKHOUSE=0)"
  elif [ ! -x "$CLICKHOUSE_BIN" ]; then
    ch_status="ClickHouse request-log block: skipped — $CLICKHOUSE_BIN not found (apt-get install clickhouse-server)"
  elif [ "$(date +%s)" -ge "$DEADLINE" ]; then
    ch_status="ClickHouse request-log block: skipped — the time budget ran out"
  else
    CH="$WORK/ch"; mkdir -p "$CH"
    CH_TCP=$(free_port); CH_HTTP=$(free_port)
    # Same shape as store/requestlog/chtest: <yandex> root, loopback only.
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
        log_targets+=(sluice-ch)
        ch_ready=1
      else
        ch_status="ClickHouse request-log block: skipped — sluice with the ClickHouse store did not start: $(tail -3 "$WORK/sluice-ch.log" | tr '\n' ' ')"
      fi
    else
      ch_status="ClickHouse request-log block: skipped — clickhouse-server did not answer /ping: $(tail -3 "$CH/server.err.log" 2>/dev/null | tr '\n' ' ')"
    fi
  fi
  k=${#log_targets[@]}
  for rep in $(seq 1 "$REPEATS"); do
    for mode in json stream; do
      for c in $LOG_CONCURRENCIES; do
        for i in $(seq 0 $((k - 1))); do
          step log "${log_targets[$(( (i + rep + c) % k ))]}" "$mode" "$c" "$rep"
        done
      done
    done
  done
  if [ "$ch_ready" = 1 ]; then
    sleep 2 # one flush interval, so the rows reach the table before the count
    local rows
    rows=$(curl -s -m 5 "http://127.0.0.1:$CH_HTTP/" --data-binary "SELECT count() FROM sluice_bench.requests" 2>/dev/null || echo "?")
    ch_status="ClickHouse request-log block: throwaway clickhouse-server at 127.0.0.1:$CH_TCP; rows in sluice_bench.requests after the block: ${rows:-?}"
  fi
  log "$ch_status"
  NOTES+=("$ch_status")
  NOTES+=("Machine: $(nproc) cores, $(go version | cut -d' ' -f3), everything on one host: loadgen, gateway and fake upstream share the 2 cores, so throughput is the whole system's. CPU ms/req is the gateway process's own utime+stime per measured request (for direct, the fake upstream's); peak RSS is the highest VmRSS sampled every 50 ms during the steps. sluice runs as shipped: request log on SQLite, a log line for each request that did not end 2xx (none here).")
}

# ================================================================ pinned cores
run_pinned() {
  start_upstream fakeupstream -chunks "$CHUNKS"
  start_bare
  start_sluice sluice 'kind = "sqlite"
data_dir = "data"'
  start_portkey
  local targets=(direct bare sluice) t rep mode c k i
  [ -n "$PK_PID" ] && targets+=(portkey)
  for t in "${targets[@]}"; do warm "$t"; done
  for rep in $(seq 1 "$REPEATS"); do
    for mode in json stream; do
      for c in $PINNED_CONCURRENCIES; do
        k=${#targets[@]}
        for i in $(seq 0 $((k - 1))); do
          step pinned "${targets[$(( (i + rep + c) % k ))]}" "$mode" "$c" "$rep"
        done
      done
    done
  done
  # The open-streams block starts its own processes: free the cores and files.
  for t in "$BP_PID" "$SL_PID" "${PK_PID:-}" "$UP_PID"; do [ -n "$t" ] && stop_pid "$t"; done
}

# ================================================================ open streams
# open_step VARIANT STREAMS TARGET REP: start TARGET afresh on the gateway
# core, hold STREAMS streams through it, stop it. With PROFILE=1, sluice's
# and the bare proxy's heap and goroutine profiles are saved in the middle of
# the hold.
open_step() {
  local variant=$1 n=$2 target=$3 rep=$4 gw_pid="" lg
  if [ "$(date +%s)" -ge "$DEADLINE" ]; then SKIPPED=$((SKIPPED + 1)); return 0; fi
  case $target in
    direct) ;;
    bare) start_bare; gw_pid=$BP_PID ;;
    sluice) start_sluice sluice 'kind = "sqlite"
data_dir = "data"'; gw_pid=$SL_PID ;;
    portkey) start_portkey; gw_pid=$PK_PID; [ -n "$gw_pid" ] || { log "open $variant $target: Portkey did not start"; return 0; } ;;
  esac
  target_args "$target"
  quiet_wait
  local shape="$FIRST_TOKEN to the first token, $CHUNKS_NOW chunks $INTERVAL_NOW apart"
  local gor=()
  [ -n "$GOROUTINES" ] && gor=(-goroutines "$GOROUTINES")
  "${PIN_LG[@]}" "$BIN/loadgen" -url "$URL" -key "$KEY" -model "$MODEL" -open "$n" -ramp "${STREAM_RAMP}s" \
    -hold "${STREAM_HOLD}s" -timeout "$STREAM_TIMEOUT" -warmup "$STREAM_WARMUP" -upstream-ttfb "$FIRST_TOKEN" \
    -watch "$WATCH" "${gor[@]}" -upstream-stats "http://$UP_PLAIN/stats" "${HDRS[@]}" \
    -meta "block=open" -meta "variant=$variant" -meta "target=$target" -meta "streams=$n" -meta "rep=$rep" -meta "topology=$TOPOLOGY" \
    -meta "shape=$shape" -meta "gw_cpu=$PIN_GATEWAY_CPU" -meta "lg_cpu=$PIN_LOAD_CPU" -meta "load1=$L" -meta "busy_pct=$BUSY" \
    > "$WORK/open-step.json" 2>> "$WORK/loadgen.log" &
  lg=$!
  PIDS+=("$lg")
  if [ "$PROFILE" = 1 ] && { [ "$target" = sluice ] || [ "$target" = bare ]; }; then
    local dbg="127.0.0.1:${SL_DEBUG:-}" name="profile-$TOPOLOGY-$variant-$target-$n-r$rep"
    [ "$target" = bare ] && dbg=$BPD
    # the warm-up (about one stream's length), the settle, the ramp, half the hold
    sleep $(( STREAM_WARMUP_SECONDS + 1 + STREAM_RAMP + STREAM_HOLD / 2 ))
    # gc=1: the in-use figures are those of a collection made now, not of
    # the last one (which, with streams allocating nothing per chunk, may
    # date from the ramp); debug=1 ends with the runtime's MemStats (heap,
    # stacks), read after that collection.
    curl -s -m 30 -o "$OUT/$name-heap.pb.gz" "http://$dbg/debug/pprof/heap?gc=1" || true
    curl -s -m 30 -o "$OUT/$name-heap.txt" "http://$dbg/debug/pprof/heap?debug=1" || true
    curl -s -m 30 -o "$OUT/$name-goroutines.txt" "http://$dbg/debug/pprof/goroutine?debug=1" || true
    log "open $variant $target streams=$n: profiles saved as ${name}-*"
  fi
  if wait "$lg"; then
    record "$(cat "$WORK/open-step.json")" "$TOPOLOGY open $variant $target streams=$n rep=$rep load1=$L busy=$BUSY%"
    log "  upstream after the step: $(curl -s -m 2 "http://$UP_PLAIN/stats")"
  else
    log "open $variant $target streams=$n rep=$rep: loadgen failed (see loadgen.log)"
  fi
  local keep=() p
  for p in "${PIDS[@]}"; do [ "$p" != "$lg" ] && keep+=("$p"); done
  PIDS=("${keep[@]}")
  [ -n "$gw_pid" ] && stop_pid "$gw_pid"
  return 0
}

# run_open VARIANT LEVELS FIRST_TOKEN CHUNKS INTERVAL: one fake upstream of
# that shape, then every level, every target in rotated order.
run_open() {
  local variant=$1 levels=$2 n rep k i targets=() t
  CHUNKS_NOW=$4 INTERVAL_NOW=$5
  # the warm-up streams last about one stream's length
  STREAM_WARMUP_SECONDS=$(awk -v f="$3" -v c="$4" -v i="$5" 'function s(d) { if (d ~ /ms$/) return d / 1000; return d + 0 }
    BEGIN { printf "%d\n", s(f) + c * s(i) + 1 }')
  start_upstream "up-$variant" -first-token "$3" -chunks "$4" -interval "$5"
  local up_pid=$UP_PID
  for t in $STREAM_TARGETS; do
    [ "$t" = portkey ] && [ ! -f "$PK_MAIN" ] && continue
    targets+=("$t")
  done
  for n in $levels; do
    # a proxied stream holds two open files in the gateway
    if [ $((2 * n + 200)) -gt "$NOFILE" ]; then
      NOTES+=("Open streams: $n skipped — a gateway would need $((2 * n + 200)) open files, the limit is $NOFILE.")
      log "open $variant: $n streams skipped (open-file limit $NOFILE)"
      continue
    fi
    for rep in $(seq 1 "$STREAM_REPEATS"); do
      k=${#targets[@]}
      for i in $(seq 0 $((k - 1))); do
        open_step "$variant" "$n" "${targets[$(( (i + rep + n) % k ))]}" "$rep"
      done
    done
  done
  stop_pid "$up_pid"
}

# ---------------------------------------------------------------- run
if [ "$SHARED" = 1 ]; then
  for TOPOLOGY in $TOPOLOGIES; do
    log "topology $TOPOLOGY"
    run_shared
    # the next topology starts its own processes; ClickHouse is measured once
    for t in "${BP_PID:-}" "${SL_PID:-}" "${SLOFF_PID:-}" "${SLCH_PID:-}" "${CH_PID:-}" "${PK_PID:-}" "${UP_PID:-}"; do [ -n "$t" ] && stop_pid "$t"; done
    SLCH_PID="" CH_PID="" CLICKHOUSE=0
  done
else
  log "pinned cores: gateways on CPU $PIN_GATEWAY_CPU, load generator and fake upstream on CPU $PIN_LOAD_CPU; open-file limit $NOFILE"
  # Before waiting for a quiet machine, so the wait is not spent installing.
  if [ -z "$PK_STATUS" ]; then
    PK_STATUS="Portkey: @portkey-ai/gateway $PORTKEY_VERSION on Node $(node --version), @hono/node-server $HONO_NODE_SERVER_VERSION, forwarding with x-portkey-provider: openai and x-portkey-custom-host"
  else
    PK_MAIN=/nonexistent # never started; its rows and budgets say "not measured"
  fi
  wait_quiet_machine
  for TOPOLOGY in $TOPOLOGIES; do
    log "topology $TOPOLOGY"
    [ "$PINNED" = 1 ] && run_pinned
    [ -n "$STREAM_LEVELS" ] && run_open shape "$STREAM_LEVELS" "$FIRST_TOKEN" "$STREAM_CHUNKS" "$STREAM_INTERVAL"
    [ "$TOKEN_RATE" = 1 ] && run_open token-rate "$RATE_STREAMS" "$FIRST_TOKEN" "$RATE_CHUNKS" "$RATE_INTERVAL"
  done
  log "$PK_STATUS"
  NOTES+=("$PK_STATUS")
  NOTES+=("Machine: $(nproc) cores, $(go version | cut -d' ' -f3); each gateway pinned to CPU $PIN_GATEWAY_CPU (taskset; Go's GOMAXPROCS follows the affinity, so 1), loadgen and the fake upstream to CPU $PIN_LOAD_CPU. CPU ms/req and CPU per stream and per event are the gateway process's own utime+stime; core busy is each CPU's busy share over the step from /proc/stat, whoever used it. Open streams: each target started afresh per step, idle RSS and goroutines read after $STREAM_WARMUP warm-up streams, peak RSS sampled every 50 ms; sluice runs as shipped (request log on SQLite); open-file limit $NOFILE.")
fi
[ "$SKIPPED" -gt 0 ] && NOTES+=("$SKIPPED steps were skipped: the ${BUDGET_SECONDS}s measuring budget ran out (their cells have fewer repeats).")

# ---------------------------------------------------------------- report
notes_args=()
for n in "${NOTES[@]}"; do notes_args+=(-note "$n"); done
TABLE="" last=${TOPOLOGIES##* }
for TOPOLOGY in $TOPOLOGIES; do
  report_args=(-in "$RESULTS" -topology "$TOPOLOGY")
  # over TLS the open-streams memory budget is against the bare proxy's own
  # (it shares upstream connections too), not half of it
  [ "$TOPOLOGY" = tls ] && report_args+=(-bare-share 1)
  [ "$TOPOLOGY" = "$last" ] && report_args+=("${notes_args[@]}")
  [ -n "$TABLE" ] && TABLE+=$'\n\n'
  TABLE+="#### Topology: $TOPOLOGY"$'\n'"$("$BIN/report" "${report_args[@]}")"
done
printf '%s\n' "$TABLE" | tee "$OUT/table.md"
log "$STEPS steps measured; results in ${OUT#"$ROOT"/}"

# doc_insert DOC SECTION INTRO BLOCKFILE: puts BLOCKFILE at the end of the
# "## SECTION" part of DOC (before the next "## " heading), or appends the
# section, its intro and the block when DOC has no such section.
doc_insert() {
  local doc=$1 section=$2 intro=$3 block=$4
  if grep -qxF "$section" "$doc"; then
    awk -v sec="$section" -v bf="$block" '
      function dump(  l) { while ((getline l < bf) > 0) print l; close(bf) }
      $0 == sec { insec = 1; print; next }
      insec && /^## / { dump(); insec = 0 }
      { print; last = $0 }
      END { if (insec) { if (last != "") print ""; dump() } }' "$doc" > "$doc.tmp" && mv "$doc.tmp" "$doc"
  else
    { printf '\n%s\n\n%s\n\n' "$section" "$intro"; cat "$block"; } >> "$doc"
  fi
}

if [ "$WRITE_DOC" = 1 ]; then
  section="## Side by side"
  intro='Produced by `bash bench/compare.sh` (issue 9): every target measured in one run, interleaved; see `bench/` for the tools.'
  if [ "$SHARED" = 0 ]; then
    section="## Pinned cores and open streams"
    intro='Produced by `bash bench/compare.sh --all`: see the section above for what it measures.'
  fi
  { printf '### Run of %s\n' "$(date -u +'%Y-%m-%d %H:%M UTC')"; printf '%s\n\n' "$TABLE"; } > "$WORK/doc-block.md"
  doc_insert "$ROOT/docs/perf/runs.md" "$section" "$intro" "$WORK/doc-block.md"
  log "added to docs/perf/runs.md under \"$section\""
fi
