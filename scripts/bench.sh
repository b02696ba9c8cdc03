#!/usr/bin/env bash
# bench.sh: run the same Placement workload against Berth and, optionally, the
# reference OpenStack Placement, each on a fresh PostgreSQL database, and print
# the results side by side.
#
# Usage:
#   scripts/bench.sh --berth BIN [--reference [SCRIPT]] [--target NAME=CMD]... [options]
#
# Targets (at least one):
#   --berth BIN          a berthd binary (started with DATABASE_URL and PORT)
#   --reference [SCRIPT] OpenStack Placement via SCRIPT
#                        (default /work/shared/reference/placement-server)
#   --target NAME=CMD    any command that serves Placement on 127.0.0.1:$PORT; it
#                        gets PORT, DATABASE_URL and PGHOST/PGPORT/PGUSER/PGDATABASE
#                        (PGPASSWORD) in its environment, like ../conformance/run
# Options:
#   --sizes "1000 10000"  flat node counts (BENCH_SIZES); one fresh database each
#   --iterations K        timed runs of each query (BENCH_ITERATIONS, default 10)
#   --trees T             nested perfload trees (BENCH_TREES, default 1000; 0 skips)
#   --wide "C G"          wide tree children and groups (BENCH_WIDE, default "21 8";
#                         "" skips); --wide-timeout (BENCH_WIDE_TIMEOUT, default 60s)
#   --claims DURATION     claims runs (BENCH_CLAIMS, default 60s; 0 skips), each on a
#                         fresh database seeded with the first size's nodes, once per
#                         client count in --clients (BENCH_CLIENTS, default "16 64")
#                         and per mode: two-step (GET candidates, PUT allocations,
#                         --pick first|random, BENCH_PICK, default first) for every
#                         target, and claims (POST /claims) for targets other than
#                         "reference" (BENCH_MODES overrides: "two-step claims")
#   --out DIR             where reports and server logs go (default a new temp dir)
# Environment:
#   BENCH_PG     admin URL of the PostgreSQL server
#                (default postgres://postgres@127.0.0.1:5432/postgres)
#   BENCH_PORT   port the targets listen on, one at a time (default: the first free
#                port from 28778 up)
#   BENCH_LOAD   a berth-load binary (default: built from this repository)
#   BENCH_KEEPALIVE  berth-load --keepalive for the claims runs of targets other
#                than "reference" (default on); the reference always gets auto (a
#                connection per request when concurrent: uwsgi pins kept-alive
#                connections to its 2 processes; see docs/benchmarks.md)
#
# Every target runs alone, one phase at a time, on loopback; each phase starts
# the target on a new database, runs, stops it (SIGTERM to its process group,
# SIGKILL after 15s) and drops the database. A phase that fails is reported and
# the run goes on (the exit status is then 1). Server memory is sampled from
# /proc around each phase. Reports (JSON and text) and server logs stay in --out;
# "berth-load compare NAME=DIR ..." prints them side by side again.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
BENCH_PG=${BENCH_PG:-postgres://postgres@127.0.0.1:5432/postgres}
sizes=${BENCH_SIZES:-"1000 10000"}
iterations=${BENCH_ITERATIONS:-10}
trees=${BENCH_TREES:-1000}
wide=${BENCH_WIDE-"21 8"}
wide_timeout=${BENCH_WIDE_TIMEOUT:-60s}
claims=${BENCH_CLAIMS:-60s}
clients=${BENCH_CLIENTS:-"16 64"}
modes=${BENCH_MODES:-}
keepalive=${BENCH_KEEPALIVE:-on}
pick=${BENCH_PICK:-first}
out=""
names=()
cmds=()

die() { echo "bench.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --berth) [ -x "${2:-}" ] || die "--berth needs an executable"; names+=(berth); cmds+=("exec $(realpath "$2")"); shift 2 ;;
    --reference)
      script=/work/shared/reference/placement-server
      if [ $# -gt 1 ] && [ "${2#--}" = "$2" ]; then script=$2; shift; fi
      [ -x "$script" ] || die "reference script $script not executable"
      names+=(reference); cmds+=("exec $(realpath "$script")"); shift ;;
    --target) [ "${2:-}" != "${2#*=}" ] || die "--target needs NAME=CMD"; names+=("${2%%=*}"); cmds+=("${2#*=}"); shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    --trees) trees=$2; shift 2 ;;
    --wide) wide=$2; shift 2 ;;
    --wide-timeout) wide_timeout=$2; shift 2 ;;
    --claims) claims=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --pick) pick=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
[ ${#names[@]} -gt 0 ] || die "no target: give --berth BIN and/or --reference (see --help)"
command -v psql >/dev/null || die "psql is needed"
out=${out:-$(mktemp -d "${TMPDIR:-/tmp}/berth-bench.XXXXXX")}
mkdir -p "$out"
out=$(realpath "$out")

load=${BENCH_LOAD:-}
if [ -z "$load" ]; then
  load="$out/berth-load"
  (cd "$repo" && go build -o "$load" ./cmd/berth-load) || die "building berth-load failed"
fi

# shellcheck source=lib/target.sh
. "$here/lib/target.sh"
target_init

trap 'stop_target; drop_db' EXIT
trap 'exit 130' INT TERM

# start NAME CMD PHASE: a fresh database and the target on it; sets pid.
start() { start_target "$1" "$2" "$3" "$out/$1/$3.server.log"; }

# run NAME PHASE FILE ARGS...: berth-load ARGS with the report to FILE.json,
# its output to FILE.txt (and the terminal).
run() {
  local name=$1 file=$2; shift 2
  echo "== $name: berth-load $*"
  "$load" "$@" --url "$url" --label "$name" --pid "$pid" --reset-peak --json "$out/$name/$file.json" 2>&1 |
    tee "$out/$name/$file.txt"
  local rc=${PIPESTATUS[0]}
  [ "$rc" = 0 ] || failed=1
  return "$rc"
}
failed=0

for i in "${!names[@]}"; do
  name=${names[$i]} cmd=${cmds[$i]}
  mkdir -p "$out/$name"
  for n in $sizes; do
    phase=n$n
    if ! start "$name" "$cmd" "$phase"; then
      failed=1
    else
      if run "$name" "$phase-seed" seed --nodes "$n"; then
        run "$name" "$phase-candidates" candidates --iterations "$iterations"
      fi
      stop_target; drop_db
    fi
  done
  if [ "$claims" != 0 ]; then
    n=${sizes%% *}
    name_modes=${modes:-"two-step claims"}
    ka=$keepalive
    if [ "$name" = reference ]; then name_modes=${modes:-two-step}; ka=auto; fi
    for c in $clients; do
      for mode in $name_modes; do
        phase=claims-$mode-c$c
        if start "$name" "$cmd" "${phase//-/_}"; then
          if run "$name" "$phase-seed" seed --nodes "$n" --keepalive "$ka"; then
            run "$name" "$phase" claims --mode "$mode" --clients "$c" --duration "$claims" --pick "$pick" --keepalive "$ka"
          fi
          stop_target; drop_db
        else
          failed=1
        fi
      done
    done
  fi
  if [ "$trees" != 0 ]; then
    if start "$name" "$cmd" nested; then
      run "$name" nested nested --trees "$trees" --iterations "$iterations"
      stop_target; drop_db
    else
      failed=1
    fi
  fi
  if [ -n "$wide" ]; then
    if start "$name" "$cmd" wide; then
      set -- $wide
      # A timeout here is a result (reported as such), not a failure.
      run "$name" wide wide --children "$1" --groups "$2" --timeout "$wide_timeout"
      stop_target; drop_db
    else
      failed=1
    fi
  fi
done

echo
echo "== side by side (reports in $out)"
cols=()
for name in "${names[@]}"; do cols+=("$name=$out/$name"); done
"$load" compare "${cols[@]}" || failed=1
if [ "$failed" != 0 ]; then
  echo "bench.sh: some phases failed; see the logs in $out" >&2
  exit 1
fi
