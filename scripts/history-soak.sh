#!/usr/bin/env bash
# history-soak.sh: the history checker of issue 33 for longer than the
# suite runs it. integration's TestHistoryKillAndPartition (three berthd
# processes on one database; kill -9 of one, then a partition of another
# from PostgreSQL) and TestHistoryFailover (three berthd processes on a
# Patroni cluster; kill -9 of one, then the primary's postmaster killed
# and the standby promoted), with ROUNDS rounds of their faults and
# SECONDS of clients after them, each run RUNS times. Every run checks the
# recorded history with Porcupine (each provider a linearizable register)
# and the database's invariants (no overcommit, every acknowledged claim
# held exactly once), and prints its figures; the exit status is 1 if
# any run failed. Figures of a soak are in docs/reliability.md.
#
#   scripts/history-soak.sh [--rounds N] [--seconds S] [--runs K] [--only kill|failover]
set -u
cd "$(dirname "$0")/.."
rounds=5 seconds=30 runs=1 only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "history-soak.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
tests='TestHistoryKillAndPartition|TestHistoryFailover'
case "$only" in
  kill) tests=TestHistoryKillAndPartition ;;
  failover) tests=TestHistoryFailover ;;
esac
log=$(mktemp)
trap 'rm -f "$log"' EXIT
for run in $(seq "$runs"); do
  echo "== run $run: $rounds rounds of faults, ${seconds}s after"
  start=$(date +%s)
  BERTH_HISTORY_ROUNDS=$rounds BERTH_HISTORY_SECONDS=$seconds \
    go test -count=1 -timeout 2h -run "^($tests)\$" -v ./integration/ >"$log" 2>&1
  grep -E '^(--- |ok|FAIL)|history: |claims by final state|not linearizable|first answer not explained|timeline' "$log" |
    sed 's/^ *//'
  echo "   ($(($(date +%s) - start)) s)"
  grep -q -- '--- FAIL' "$log" && status=1
done
exit ${status:-0}
