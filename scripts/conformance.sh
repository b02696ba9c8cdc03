#!/usr/bin/env bash
# Plays the OpenStack Placement conformance suite (shared/conformance) against
# bin/berthd. A throwaway PostgreSQL cluster (`berthd devdb`: fsync off, unix
# socket only) serves the run and is stopped and removed afterwards.
#
# The suite is played in groups, each against berthd started with the
# configuration its files need (the runner's --assume FIXTURE):
#   default  berthd's defaults: every file but those of the groups below
#   open     --policy open                     *-policy.yaml       OpenPolicyFixture
#   legacy   --policy legacy                   *-legacy-rbac.yaml  LegacyRBACPolicyFixture
#   secure   --policy secure                   *-secure-rbac.yaml  SecureRBACPolicyFixture
#   cors     --cors-allowed-origin http://valid.example.com
#                                              cors.yaml           CORSFixture
# The last line sums them up: "conformance: N passed, N failed, N skipped".
#
# Environment:
#   SHARED             the shared directory (default: ../shared next to the repo)
#   BERTHD             the berthd binary (default: bin/berthd)
#   PYTHON             a python3 with gabbi and PyYAML (default: /usr/bin/python3)
#   CONFORMANCE_JOBS   files run in parallel (default: 2)
#   CONFORMANCE_GROUPS the groups to play (default: "default open legacy secure cors")
#   CONFORMANCE_ARGS   extra runner arguments for the default group, shell-quoted,
#                      e.g. "--only 'inventory*'" (with CONFORMANCE_GROUPS=default)
#
# conformance/skiplist.txt in the repo, when present, is passed as --skiplist
# (lines "file.yaml | test name | reason").
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
shared=${SHARED:-$root/../shared}
berthd=${BERTHD:-$root/bin/berthd}
python=${PYTHON:-/usr/bin/python3}
jobs=${CONFORMANCE_JOBS:-2}
groups=${CONFORMANCE_GROUPS:-default open legacy secure cors}
runner=$shared/conformance/run

[[ -x $berthd ]] || { echo "conformance: $berthd is not built; run make build" >&2; exit 2; }
[[ -f $runner ]] || { echo "conformance: no runner at $runner; set SHARED" >&2; exit 2; }
"$python" -c 'import gabbi, yaml' 2>/dev/null ||
	{ echo "conformance: $python lacks gabbi or PyYAML (apt-get install python3-gabbi python3-yaml)" >&2; exit 2; }

# Parse CONFORMANCE_ARGS with shell quoting, so that globs reach the runner.
eval "extra=(${CONFORMANCE_ARGS:-})"
skiplist=()
if [[ -f $root/conformance/skiplist.txt ]]; then
	skiplist=(--skiplist "$root/conformance/skiplist.txt")
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

# group NAME: berthd flags, runner fixture, file glob.
declare -A group_flags=(
	[open]="--policy open" [legacy]="--policy legacy" [secure]="--policy secure"
	[cors]="--cors-allowed-origin http://valid.example.com")
declare -A group_fixture=(
	[open]=OpenPolicyFixture [legacy]=LegacyRBACPolicyFixture [secure]=SecureRBACPolicyFixture
	[cors]=CORSFixture)
declare -A group_glob=(
	[open]='*-policy.yaml' [legacy]='*-legacy-rbac.yaml' [secure]='*-secure-rbac.yaml' [cors]='cors.yaml')

# The default group leaves out the files another group plays.
default_skip=()
for g in $groups; do
	case $g in
	default) ;;
	open | legacy | secure | cors) default_skip+=(--skip "${group_glob[$g]}") ;;
	*) echo "conformance: unknown group $g in CONFORMANCE_GROUPS" >&2; exit 2 ;;
	esac
done

passed=0 failed=0 skipped=0 status=0
for g in $groups; do
	start=$(printf '%q' "$berthd")
	if [[ $g == default ]]; then
		args=("${default_skip[@]}" "${extra[@]}")
	else
		start+=" ${group_flags[$g]}"
		args=(--assume "${group_fixture[$g]}" --only "${group_glob[$g]}")
	fi
	echo "conformance: group $g: $start"
	"$python" "$runner" --start "$start" --pg "$pg_url" -j "$jobs" -v "${skiplist[@]}" "${args[@]}" |
		tee "$tmp/$g.out" || status=1
	if read -r p f s < <(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed, ([0-9]+) skipped$/\1 \2 \3/p' "$tmp/$g.out" | tail -n1) &&
		[[ -n $p ]]; then
		passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
	else
		status=1
	fi
done
echo "conformance: $passed passed, $failed failed, $skipped skipped"
exit "$status"
