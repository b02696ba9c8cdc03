#!/usr/bin/env bash
# perfload.sh: OpenStack Placement's nested-perfload gate job against Berth
# and the reference Placement 8.0.0, in one run, and the ratio of their
# throughputs.
#
# The gate job (Placement's gate/perfload-nested-runner.sh) seeds 1,000
# trees of 7 providers (gate/gabbits/nested-perfload.yaml), times its
# allocation candidates query around 10 allocations written, then runs
# `ab -c 10 -n 500` of the query: its figure is ab's requests per second.
# `berth-load perfload` does the same (docs/benchmarks.md). This script
# starts a throwaway PostgreSQL cluster (as the postgres user), then each
# target in turn on a fresh database of it (berthd, then the reference
# unless --no-reference), runs `berth-load perfload` against it with the
# server's memory sampled, stops it and drops its database. It prints the
# reports side by side and Berth's requests/s over the reference's.
# Nothing is asserted: it exits 0 when every target gave figures.
#
# Usage:
#   scripts/perfload.sh [options]
# Options:
#   --bin DIR          berthd and berth-load from DIR (default: build the working tree)
#   --reference SCRIPT the reference server (default /work/shared/reference/placement-server)
#   --no-reference     Berth only
#   --trees T          trees (default 1000, the job's)
#   --requests N       requests of the throughput phase (default 500, the job's)
#   --concurrency C    its concurrent clients (default 10, the job's)
#   --out DIR          builds, logs and reports (default a new temp dir)
# Environment: BENCH_PORT, the targets' port (default the first free one from 28840).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
die() { echo "perfload.sh: $*" >&2; exit 2; }

bindir="" reference=/work/shared/reference/placement-server trees=1000 requests=500 concurrency=10 out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bindir=$2; shift 2 ;;
    --reference) reference=$2; shift 2 ;;
    --no-reference) reference=""; shift ;;
    --trees) trees=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --concurrency) concurrency=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
for v in "$trees" "$requests" "$concurrency"; do
  case "$v" in ''|*[!0-9]*) die "counts must be whole numbers, not '$v'" ;; esac
done
[ -z "$reference" ] || [ -x "$reference" ] || die "reference script $reference not executable"
command -v psql >/dev/null || die "psql is needed"
command -v jq >/dev/null || die "jq is needed"
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/perfload.XXXXXX")
mkdir -p "$out" && out=$(realpath "$out")

if [ -z "$bindir" ]; then
  bindir="$out/bin"
  echo "perfload.sh: building the working tree"
  (cd "$repo" && go build -o "$bindir/berthd" ./cmd/berthd && go build -o "$bindir/berth-load" ./cmd/berth-load) || die "build failed"
fi
bindir=$(realpath "$bindir")
load=$bindir/berth-load
[ -x "$bindir/berthd" ] && [ -x "$load" ] || die "$bindir has no berthd or berth-load"

# shellcheck source=lib/target.sh
. "$here/lib/target.sh"
# shellcheck source=lib/pgcluster.sh
. "$here/lib/pgcluster.sh"
pid="" db=""
trap 'stop_target; drop_db; pgc_stop' EXIT
trap 'exit 130' INT TERM
pgc_start "$(mktemp -d /tmp/perfload-pg.XXXXXX)" || exit 2
BENCH_PORT=${BENCH_PORT:-28840}
while listening "$BENCH_PORT"; do BENCH_PORT=$((BENCH_PORT + 1)); done
url="http://127.0.0.1:$BENCH_PORT"

names=(berth) cmds=("exec $bindir/berthd")
[ -z "$reference" ] || { names+=(reference); cmds+=("exec $(realpath "$reference")"); }
failed=0
for i in "${!names[@]}"; do
  name=${names[$i]}
  mkdir -p "$out/$name"
  if ! start_target "$name" "${cmds[$i]}" perfload "$out/$name/server.log"; then
    failed=1; continue
  fi
  echo "== $name: berth-load perfload --trees $trees --requests $requests --concurrency $concurrency"
  "$load" perfload --url "$url" --label "$name" --trees "$trees" --requests "$requests" --concurrency "$concurrency" \
    --pid "$pid" --reset-peak --json "$out/$name/perfload.json" 2>&1 | tee "$out/$name/perfload.txt"
  [ "${PIPESTATUS[0]}" = 0 ] || failed=1
  stop_target; drop_db
done

echo
echo "== side by side (reports in $out; load average $(cut -d' ' -f1-3 /proc/loadavg))"
cols=()
for name in "${names[@]}"; do [ -f "$out/$name/perfload.json" ] && cols+=("$name=$out/$name"); done
[ ${#cols[@]} -eq 0 ] || "$load" compare "${cols[@]}" || failed=1
if [ -f "$out/berth/perfload.json" ] && [ -f "$out/reference/perfload.json" ]; then
  b=$(jq '.perfload.requests_per_second // 0' "$out/berth/perfload.json")
  r=$(jq '.perfload.requests_per_second // 0' "$out/reference/perfload.json")
  awk -v b="$b" -v r="$r" 'BEGIN { if (r > 0) printf "perfload requests/s: Berth %.2f, Placement %.2f: %.0fx\n", b, r, b / r }'
fi
exit "$failed"
