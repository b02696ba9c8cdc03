#!/usr/bin/env bash
# console-times.sh: time each console page of a running berthd (as seeded
# by berth-load seed, e.g. at 100,000 providers) with curl, RUNS times
# each, and print the page, its status, its size and the median and
# largest time to the last byte. The numbers go in docs/performance.md
# ("The console at 100,000 providers").
#
#   scripts/console-times.sh [URL] [RUNS]     (default http://127.0.0.1:8778, 5)
set -euo pipefail
url=${1:-http://127.0.0.1:8778}
runs=${2:-5}
# A provider page: the first host of the heat map.
root=$(curl -fsS "$url/ui/hosts?limit=1" | sed -n 's|.*href="/ui/providers/\([0-9a-f-]*\)".*|\1|p' | head -1)
pages=(
	/ui
	"/ui?by=trait"
	/ui/hosts
	"/ui/hosts?offset=99000"
	"/ui/providers/$root"
	"/ui/fit?resources=VCPU:4,MEMORY_MB:16384,DISK_GB:100"
	/ui/fragmentation
	/ui/refusals
	/ui/policies
	/ui/projects
	/ui/audit
)
printf '%-60s %6s %9s %10s %10s\n' page status bytes median_s max_s
for p in "${pages[@]}"; do
	times=()
	for _ in $(seq "$runs"); do
		out=$(curl -s -o /dev/null -w '%{http_code} %{size_download} %{time_total}' "$url$p")
		read -r status size t <<<"$out"
		times+=("$t")
	done
	sorted=$(printf '%s\n' "${times[@]}" | sort -g)
	median=$(sed -n "$(((runs + 1) / 2))p" <<<"$sorted")
	most=$(tail -1 <<<"$sorted")
	printf '%-60s %6s %9s %10s %10s\n' "$p" "$status" "$size" "$median" "$most"
done
