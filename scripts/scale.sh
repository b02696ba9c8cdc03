#!/usr/bin/env bash
# scale.sh: reproduce issue 18's scaling table over HTTP. For each size it
# starts berthd on a fresh database, and measures with berth-load:
#
#   seed        N compute nodes of the usual bench shape through the API with
#               --seed-workers clients: time, write requests/s, berthd's and
#               PostgreSQL's CPU per write request
#   list        GET /resource_providers (every provider), --iterations times:
#               latency, and berthd's RSS growth over the run (VmHWM reset first)
#   candidates  GET /allocation_candidates, no limit and limit=1000
#   vacuum      VACUUM (ANALYZE) of the seeded database, timed: the state a
#               cloud's database is in once autovacuum has caught up with
#               its creation (--no-vacuum leaves that work to autovacuum,
#               which then runs during the claims and is counted in
#               PostgreSQL's CPU per claim)
#   cold start  berthd restarted on the seeded database: time from exec to the
#               first answer of a candidates query, and the duration of the
#               snapshot's first load and of a periodic full reload, read from
#               berthd's debug log ("ledger snapshot loaded ... duration=")
#   claims      once every size is set up: POST /claims of
#               VCPU:4,MEMORY_MB:16384,DISK_GB:100 at each --clients count for
#               --claims (a duration) of timed claiming per size, in --slices
#               slices that alternate between the sizes (1,000, 100,000,
#               then 100,000, 1,000, ...: a change in the shared machine's
#               speed weighs on every size alike), each size on one berthd
#               for all its slices, warmed up by 3 s of untimed claims (a
#               server that has been up has made its first reloads) and
#               stopped (SIGSTOP) while other sizes claim, in rounds of at
#               most a quarter of the cloud's capacity (a node
#               takes 15 such claims): a round that reaches it before the
#               duration is over is released (DELETE /allocations, untimed)
#               and followed by another ("berth-load claims --rounds"), so every
#               size claims for the same time on a cloud at most a quarter
#               full; each run releases its last round too (--release), so
#               the next starts on an empty cloud: claims/s over the timed
#               claiming, p50/p99, CPU per claim of berthd and of PostgreSQL
#               over the timed claiming only, berthd's peak RSS
#   verify      in each claims run, before its last release, the overcommit
#               check over every provider of what the last round left, untimed
#               (berth-load claims --verify), at sizes up to 10,000
#               (SCALE_VERIFY=all: every size, minutes at 100,000; 0: none)
#
# then prints the table ("berth-load scale DIR"), with "target met / not met"
# per row against issue 18's targets (printed, never asserted). The claim-rate
# target compares 100,000 providers with 1,000: run both sizes in one call, so
# that they are measured back to back.
#
# Usage:
#   scripts/scale.sh --berth BIN [options]
# Options:
#   --sizes "1000 10000 100000"  provider counts (SCALE_SIZES), one fresh database each
#   --claims DURATION    timed claiming of each claims run, its rounds added up (SCALE_CLAIMS, default 30s;
#                        whole seconds: "30s" or "30")
#   --slices K           slices each claims run is cut into, the sizes alternating (SCALE_SLICES, default 3)
#   --clients "16 64"    claim clients, one run each (SCALE_CLIENTS)
#   --seed-workers W     concurrent seeding clients (SCALE_SEED_WORKERS, default 32)
#   --iterations K       timed runs of each GET (SCALE_ITERATIONS, default 5)
#   --memlimit SIZE      GOMEMLIMIT of berthd (SCALE_GOMEMLIMIT, default 450MiB: a 500 MiB
#                        budget, as docs/performance.md advises; "" for none, which
#                        leaves the heap to GOGC alone)
#   --reload-every D     berthd's --snapshot-refresh in the cold-start phase, so
#                        that a periodic full reload happens (default 10s)
#   --no-vacuum          skip the VACUUM (ANALYZE) after seeding (SCALE_VACUUM=0)
#   --out DIR            where reports, logs and table.txt go (default a new temp dir)
# Environment:
#   BENCH_PG    admin URL of a PostgreSQL server. Unset (the default), a throwaway
#               cluster is started with "BIN devdb" (fsync off, unix socket), and
#               PostgreSQL's CPU is that cluster's; with BENCH_PG it is the whole
#               server's (its postmaster's process tree), other databases' too.
#   BENCH_PORT  port berthd listens on (default: the first free one from 28778); in
#               the claims phase each size's berthd takes the next one (BENCH_PORT,
#               BENCH_PORT+1, ...)
#   BENCH_LOAD  a berth-load binary (default: built from this repository)
#
# The machine's load average is recorded before and after each size
# (start.txt, and under the table): on a shared machine the figures measure the
# neighbours' work too.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
sizes=${SCALE_SIZES:-"1000 10000 100000"}
claims=${SCALE_CLAIMS:-30s}
slices=${SCALE_SLICES:-3}
clients=${SCALE_CLIENTS:-"16 64"}
seed_workers=${SCALE_SEED_WORKERS:-32}
iterations=${SCALE_ITERATIONS:-5}
reload_every=10s
memlimit=${SCALE_GOMEMLIMIT-450MiB}
verify=${SCALE_VERIFY:-10000}
vacuum=${SCALE_VACUUM:-1}
berthd=""
out=""

die() { echo "scale.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --berth) [ -x "${2:-}" ] || die "--berth needs an executable"; berthd=$(realpath "$2"); shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --claims) claims=$2; shift 2 ;;
    --slices) slices=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --seed-workers) seed_workers=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    --reload-every) reload_every=$2; shift 2 ;;
    --memlimit) memlimit=$2; shift 2 ;;
    --no-vacuum) vacuum=0; shift ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
[ -n "$berthd" ] || die "give --berth BIN (see --help)"
claims_s=${claims%s}
case "$claims_s" in ''|*[!0-9]*) die "--claims takes whole seconds (30s or 30), not $claims" ;; esac
case "$slices" in ''|*[!0-9]*|0) die "--slices takes a positive count, not $slices" ;; esac
[ "$claims_s" -ge "$slices" ] || die "--claims $claims is less than a second per slice"
command -v psql >/dev/null || die "psql is needed"
out=${out:-$(mktemp -d "${TMPDIR:-/tmp}/berth-scale.XXXXXX")}
mkdir -p "$out"
out=$(realpath "$out")

load=${BENCH_LOAD:-}
if [ -z "$load" ]; then
  load="$out/berth-load"
  (cd "$repo" && go build -o "$load" ./cmd/berth-load) || die "building berth-load failed"
fi

devdb_pid=""
declare -A size_db  # the database of each size set up, kept for the claims
declare -A size_pid # the claims phase's server of each size (process group)
declare -A size_url # and its URL
# drop_size_dbs: drop the databases kept for the claims.
drop_size_dbs() {
  for n in "${!size_db[@]}"; do
    db=${size_db[$n]}
    drop_db
    unset "size_db[$n]"
  done
}
# stop_claim_servers: resume and stop the claims phase's servers.
stop_claim_servers() {
  for n in "${!size_pid[@]}"; do
    pid=${size_pid[$n]}
    kill -CONT -- "-$pid" 2>/dev/null
    stop_target
    unset "size_pid[$n]"
  done
}
cleanup() {
  stop_claim_servers
  stop_target; drop_db
  drop_size_dbs
  if [ -n "$devdb_pid" ]; then kill -TERM "$devdb_pid" 2>/dev/null; wait "$devdb_pid" 2>/dev/null; fi
}
# shellcheck source=lib/target.sh
. "$here/lib/target.sh"
pid="" db=""
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "${BENCH_PG:-}" ]; then
  start_devdb "$berthd" "$out" || exit 1
fi
target_init
berthd_cmd="exec $berthd"
if [ -n "$memlimit" ]; then berthd_cmd="GOMEMLIMIT=$memlimit $berthd_cmd"; fi
echo "scale.sh: PostgreSQL at $BENCH_PG, berthd on $url, reports in $out"

# The postmaster: the parent of the checkpointer, a process every server has.
ckpt=$(psql "$BENCH_PG" -AtX -c "SELECT pid FROM pg_stat_activity WHERE backend_type = 'checkpointer'") ||
  die "cannot query $BENCH_PG"
pg_pid=$(awk '{sub(/.*\) /, ""); print $2}' "/proc/$ckpt/stat" 2>/dev/null)
[ -n "$pg_pid" ] || die "cannot find PostgreSQL's postmaster (is the server on this machine?)"

loadavg() { cut -d' ' -f1-3 /proc/loadavg; }
# candidates query of the claims' flavor: what "first answer" waits for.
first_path="/allocation_candidates?resources=VCPU:4,MEMORY_MB:16384,DISK_GB:100&limit=1"
failed=0

# measure FILE ARGS...: berth-load ARGS against berthd, report to FILE.json
# and FILE.txt (and the terminal).
measure() {
  local file=$1; shift
  echo "== n=$n: berth-load $*"
  "$load" "$@" --url "$url" --pid "$pid" --json "$dir/$file.json" 2>&1 | tee "$dir/$file.txt"
  local rc=${PIPESTATUS[0]}
  [ "$rc" = 0 ] || failed=1
  return "$rc"
}

# snapshot_loads LOG: the durations (s) of the "ledger snapshot loaded" lines.
snapshot_loads() {
  grep 'ledger snapshot loaded' "$1" | sed -n 's/.*duration=\([0-9.]*\)\(ms\|s\|µs\).*/\1 \2/p' |
    awk '{v=$1; if ($2=="ms") v/=1000; if ($2=="µs") v/=1e6; print v}'
}

for n in $sizes; do
  dir="$out/n$n"
  mkdir -p "$dir"
  la_before=$(loadavg)
  create_db "scale_n${n}_$$" || { failed=1; continue; }
  launch "$berthd_cmd" "$dir/server.log" && "$load" wait --url "$url" --timeout 180s ||
    { echo "scale.sh: berthd did not start; see $dir/server.log" >&2; failed=1; stop_target; drop_db; continue; }

  if ! measure seed seed --nodes "$n" --workers "$seed_workers" --keepalive on --db-pid "$pg_pid"; then
    stop_target; drop_db; continue
  fi
  # The snapshot's first load is not the list's: load it first.
  "$load" wait --url "$url" --path "$first_path" --timeout 600s || failed=1
  measure list candidates --only e-providers --iterations "$iterations" --reset-peak --timeout 300s
  measure candidates candidates --only a-flavor,b-flavor-limit1000 --iterations "$iterations" --reset-peak --timeout 300s

  # Cold start on the seeded database, with the snapshot's loads logged.
  stop_target
  # A database just filled with N providers holds N providers' worth of
  # tuples that no vacuum has seen: autovacuum (vacuum and analyze of
  # every seeded table, and the hint bits) works through them over the
  # next minutes, at a cost that grows with N. Left alone it runs during
  # the claims and is counted as PostgreSQL's CPU per claim; a cloud that
  # has been up has paid it long before. Do it now, timed.
  vacuum_s=""
  if [ "$vacuum" = 1 ]; then
    t0=$(date +%s.%N)
    if psql "$pg_prefix/$db$pg_params" -qX -c "VACUUM (ANALYZE)" >/dev/null; then
      vacuum_s=$(echo "$(date +%s.%N) - $t0" | bc)
    else
      failed=1
    fi
  fi
  t0=$(date +%s.%N)
  launch "BERTH_LOG_LEVEL=debug BERTH_SNAPSHOT_REFRESH=$reload_every $berthd_cmd" "$dir/restart.log"
  cold=""
  if "$load" wait --url "$url" --path "$first_path" --timeout 600s; then
    cold=$(echo "$(date +%s.%N) - $t0" | bc)
  else
    failed=1
  fi
  # Wait for a periodic full reload (the second load logged).
  for _ in $(seq 600); do
    [ "$(snapshot_loads "$dir/restart.log" | wc -l)" -ge 2 ] && break
    sleep 0.5
  done
  loads=$(snapshot_loads "$dir/restart.log")
  first_load=$(echo "$loads" | sed -n 1p)
  reload=$(echo "$loads" | sed -n 2p)
  stop_target
  size_db[$n]=$db
  db=""
  {
    echo "vacuum_s=$vacuum_s"
    echo "cold_start_s=$cold"
    echo "first_load_s=$first_load"
    echo "reload_s=$reload"
    echo "loadavg=$la_before before, $(loadavg) after"
    echo "gomemlimit=${memlimit:-none}"
  } >"$dir/start.txt"
done

# The claims. Each size gets one berthd for all its slices, started on
# its database (claims start on a loaded snapshot) and warmed up by 3 s of
# untimed claims, released: a server that has been up, as in a cloud. Then, for each slice, each clients count,
# each size in turn: that size's server is resumed (SIGCONT) for the
# slice's timed claiming and stopped (SIGSTOP) again after it, so that
# nothing of the other sizes' servers runs (a periodic snapshot reload,
# a collection) while one size is measured. A slice claims in rounds of
# at most a quarter of the capacity, released between and after, so every
# size claims for the same time on a cloud at most a quarter full, and
# every slice starts on an empty cloud. The sizes' order turns around
# every slice (1,000 then 100,000, then 100,000 then 1,000, ...), so that
# a drift in the machine's speed over the run favours no size.
port0=$BENCH_PORT
i=0
for n in $sizes; do
  [ -n "${size_db[$n]:-}" ] || continue
  BENCH_PORT=$((port0 + i)) url="http://127.0.0.1:$((port0 + i))"
  i=$((i + 1))
  db=${size_db[$n]} dir="$out/n$n"
  if launch "$berthd_cmd" "$dir/server.log.claims" && "$load" wait --url "$url" --path "$first_path" --timeout 600s; then
    "$load" claims --url "$url" --mode claims --clients 16 --duration 3s --claims $((n * 15 / 4)) --release --verify=false \
      --keepalive on -q >"$dir/warmup.txt" 2>&1 || failed=1
    kill -STOP -- "-$pid"
    size_pid[$n]=$pid size_url[$n]=$url
  else
    echo "scale.sh: berthd did not restart; see $dir/server.log.claims" >&2
    failed=1
    stop_target
  fi
  pid="" db=""
done
BENCH_PORT=$port0
slice_s=$((claims_s / slices))
reversed=$(echo "$sizes" | tr ' ' '\n' | grep . | tac | tr '\n' ' ')
for k in $(seq "$slices"); do
  order=$sizes
  if [ $((k % 2)) = 0 ]; then order=$reversed; fi
  for c in $clients; do
    for n in $order; do
      [ -n "${size_pid[$n]:-}" ] || continue
      pid=${size_pid[$n]} url=${size_url[$n]} dir="$out/n$n"
      cap=$((n * 15 / 4))
      check=false
      if [ "$verify" = all ] || [ "$n" -le "$verify" ]; then check=true; fi
      kill -CONT -- "-$pid"
      measure "claims-c$c-s$k" claims --mode claims --clients "$c" --duration "${slice_s}s" --claims "$cap" \
        --rounds --release --verify="$check" --keepalive on --reset-peak --db-pid "$pg_pid"
      kill -STOP -- "-$pid"
    done
  done
done
stop_claim_servers
drop_size_dbs

echo
echo "== scaling table (reports in $out)"
"$load" scale "$out" | tee "$out/table.txt"
if [ "$failed" != 0 ]; then
  echo "scale.sh: some phases failed; see the logs in $out" >&2
  exit 1
fi
