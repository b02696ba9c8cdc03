#!/usr/bin/env bash
# stale-reads.sh: the measurement of issue 33 ("Say what a reader may see
# across replicas"), for one berthd build or several, one after the other.
#
# For each build: a throwaway PostgreSQL cluster of that build ("BIN
# devdb"), one database, two berthd processes of the build on it, then
# integration's TestReadsAcrossReplicasNeverStale against them: 600
# times an inventory write through the first, then at once, through the
# second, GET /resource_providers/{uuid}, GET /resource_providers?uuid=
# and GET /allocation_candidates; it prints how many of each were stale
# (and fails, which the script reports, if any was).
#
#   scripts/stale-reads.sh [--runs N] BIN...
#
# e.g. scripts/stale-reads.sh --runs 3 /tmp/x/berthd-before bin/berthd
set -u
cd "$(dirname "$0")/.."
runs=1
bins=()
while [ $# -gt 0 ]; do
  case "$1" in
    --runs) runs=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) bins+=("$1"); shift ;;
  esac
done
[ ${#bins[@]} -gt 0 ] || { sed -n '2,15p' "$0" >&2; exit 2; }
. scripts/lib/target.sh
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null; done
  [ -n "${devdb_pid:-}" ] && kill "$devdb_pid" 2>/dev/null && wait "$devdb_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { local p=$1; while listening "$p"; do p=$((p + 1)); done; echo "$p"; }
for bin in "${bins[@]}"; do
  bin=$(realpath "$bin")
  start_devdb "$bin" "$work" || exit 1
  target_init
  for run in $(seq "$runs"); do
    db="stale_$run"
    create_db "$db" || exit 1
    urls=""
    pids=()
    port=28900
    for i in 1 2; do
      port=$(free_port "$port")
      setsid "$bin" serve --listen "127.0.0.1:$port" --database-url "$pg_prefix/$db$pg_params" \
        --log-level warn >"$work/berthd$i.log" 2>&1 </dev/null &
      pids+=($!)
      for _ in $(seq 300); do listening "$port" && break; sleep 0.1; done
      urls="${urls:+$urls,}http://127.0.0.1:$port"
      port=$((port + 1))
    done
    echo "== $bin, run $run"
    BERTH_STALE_URLS=$urls go test -count=1 -run 'TestReadsAcrossReplicasNeverStale$' -v ./integration/ 2>&1 |
      grep -E 'stale of|^(--- |ok|FAIL)' | sed 's/^ *//'
    for p in "${pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
    pids=()
    drop_db
  done
  kill "$devdb_pid" 2>/dev/null; wait "$devdb_pid" 2>/dev/null; devdb_pid=""
done
