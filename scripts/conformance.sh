#!/usr/bin/env bash
# Plays the OpenStack Placement conformance suite (shared/conformance) against
# bin/berthd. A throwaway PostgreSQL cluster (`berthd devdb`: fsync off, unix
# socket only) serves the run and is stopped and removed afterwards.
#
# Environment:
#   SHARED             the shared directory (default: ../shared next to the repo)
#   BERTHD             the berthd binary (default: bin/berthd)
#   PYTHON             a python3 with gabbi and PyYAML (default: /usr/bin/python3)
#   CONFORMANCE_JOBS   files run in parallel (default: 2)
#   CONFORMANCE_ARGS   extra runner arguments, shell-quoted, e.g. "--only 'inventory*'"
#
# conformance/skiplist.txt in the repo, when present, is passed as --skiplist
# (lines "file.yaml | test name | reason").
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
shared=${SHARED:-$root/../shared}
berthd=${BERTHD:-$root/bin/berthd}
python=${PYTHON:-/usr/bin/python3}
jobs=${CONFORMANCE_JOBS:-2}
runner=$shared/conformance/run

[[ -x $berthd ]] || { echo "conformance: $berthd is not built; run make build" >&2; exit 2; }
[[ -f $runner ]] || { echo "conformance: no runner at $runner; set SHARED" >&2; exit 2; }
"$python" -c 'import gabbi, yaml' 2>/dev/null ||
	{ echo "conformance: $python lacks gabbi or PyYAML (apt-get install python3-gabbi python3-yaml)" >&2; exit 2; }

# Parse CONFORMANCE_ARGS with shell quoting, so that globs reach the runner.
eval "extra=(${CONFORMANCE_ARGS:-})"
if [[ -f $root/conformance/skiplist.txt ]]; then
	extra+=(--skiplist "$root/conformance/skiplist.txt")
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/berth-conformance.XXXXXX")
devdb_pid=
cleanup() {
	if [[ -n $devdb_pid ]]; then
		kill -TERM "$devdb_pid" 2>/dev/null || true
		wait "$devdb_pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

"$berthd" devdb >"$tmp/url" 2>"$tmp/devdb.log" &
devdb_pid=$!
for _ in $(seq 600); do
	[[ -s $tmp/url ]] && break
	if ! kill -0 "$devdb_pid" 2>/dev/null; then
		echo "conformance: berthd devdb failed:" >&2
		cat "$tmp/devdb.log" >&2
		exit 1
	fi
	sleep 0.1
done
[[ -s $tmp/url ]] || { echo "conformance: PostgreSQL did not start in 60s" >&2; cat "$tmp/devdb.log" >&2; exit 1; }
pg_url=$(head -n1 "$tmp/url")
echo "conformance: PostgreSQL at $pg_url"

"$python" "$runner" --start "$berthd" --pg "$pg_url" -j "$jobs" -v "${extra[@]}"
