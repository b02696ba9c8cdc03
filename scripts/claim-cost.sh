#!/usr/bin/env bash
# claim-cost.sh: what a claim costs, a baseline commit (A) against the
# working tree (B), measured in turns on one machine.
#
# It builds berthd and berth-load from a commit (default 0da4e8f, issue 39's
# baseline; "git archive" into a temporary directory) and from the working
# tree, starts a throwaway PostgreSQL cluster (as the postgres user; durable
# settings unless --nosync), and seeds one template database per side with
# that side's own berthd and berth-load (--providers compute nodes of the
# usual bench shape), then VACUUM (ANALYZE). Then, for each round, A and B in
# turn (the order swaps every round: A B, B A, A B, ...), each on a fresh copy
# of its template:
#   berthd started on the copy and waited for (a candidates answer: the
#   snapshot is loaded); --warmup untimed claims, kept; then
#   --claims POST /claims of VCPU:4,MEMORY_MB:16384,DISK_GB:100 from
#   --clients clients (berth-load claims --mode claims, no overcommit check),
#   with berthd's CPU (its utime + stime) and the whole cluster's (the
#   postmaster's utime, stime, cutime and cstime, which hold every backend
#   that exited, plus the same of every live process under it: backends,
#   autovacuum, checkpointer, WAL writer) read from /proc before and after;
#   berthd's peak RSS (VmHWM) after.
# Only one side runs at a time. It prints per round claims/s, berthd CPU per
# claim and PostgreSQL CPU per claim of each side and the ratios B/A within
# the round, then the medians of each and of the ratios. Nothing is asserted:
# it exits 0 when every round gave figures.
#
# Usage:
#   scripts/claim-cost.sh [options]
# Options:
#   --base COMMIT      side A's commit (default 0da4e8f)
#   --a-bin DIR, --b-bin DIR
#                      use DIR/berthd and DIR/berth-load instead of building
#                      that side
#   --providers N      seeded compute nodes (default 1000; 100000 for the
#                      issue's large cloud: the seeding then takes minutes)
#   --claims N         timed claims per side and round (default 5000)
#   --clients C        concurrent claim clients (default 16)
#   --warmup N         untimed claims first, on the same copy (default 300)
#   --rounds K         rounds (default 5)
#   --memlimit SIZE    GOMEMLIMIT of both berthds (default: none)
#   --berthd-args ARGS extra berthd flags, both sides (e.g. "--claim-writers 2")
#   --a-args ARGS, --b-args ARGS
#                      extra berthd flags of one side: with --a-bin and --b-bin
#                      the same build, one build with a setting against itself
#                      without (e.g. --b-args "--claim-candidates 10")
#   --a-sql SQL, --b-sql SQL
#                      SQL run on that side's template after seeding (each
#                      round's copy has it): to measure what a table setting
#                      or a trigger costs, e.g. --b-sql "ALTER TABLE
#                      claim_requests SET (toast_tuple_target = 8160)"
#   --pg-setting K=V   an extra PostgreSQL setting (repeatable), e.g.
#                      shared_preload_libraries=pg_stat_statements
#   --nosync           fsync, synchronous_commit and full_page_writes off
#                      (berthd devdb's settings) instead of durable ones
#   --out DIR          builds, logs and reports (default a new temp dir)
# Environment: BENCH_PORT, berthd's port (default the first free one from 28790).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
die() { echo "claim-cost.sh: $*" >&2; exit 2; }

base=0da4e8f abin="" bbin="" providers=1000 claims=5000 clients=16 warmup=300 rounds=5
memlimit="" berthd_args="" a_args="" b_args="" a_sql="" b_sql="" nosync=0 out=""
pg_settings=()
while [ $# -gt 0 ]; do
  case "$1" in
    --base) base=$2; shift 2 ;;
    --a-bin) abin=$2; shift 2 ;;
    --b-bin) bbin=$2; shift 2 ;;
    --providers) providers=$2; shift 2 ;;
    --claims) claims=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --memlimit) memlimit=$2; shift 2 ;;
    --berthd-args) berthd_args=$2; shift 2 ;;
    --a-args) a_args=$2; shift 2 ;;
    --a-sql) a_sql=$2; shift 2 ;;
    --b-sql) b_sql=$2; shift 2 ;;
    --b-args) b_args=$2; shift 2 ;;
    --pg-setting) pg_settings+=("$2"); shift 2 ;;
    --nosync) nosync=1; shift ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
for v in "$providers" "$claims" "$clients" "$rounds" "$warmup"; do
  case "$v" in ''|*[!0-9]*) die "counts must be whole numbers, not '$v'" ;; esac
done
[ "$rounds" -ge 1 ] && [ "$claims" -ge 1 ] || die "--rounds and --claims must be at least 1"
# A node takes 15 claims of the flavor: leave room for every round's claims.
[ $((warmup + claims)) -le $((providers * 15)) ] || die "--warmup + --claims exceed the cloud's room ($((providers * 15)) claims)"
command -v psql >/dev/null || die "psql is needed"
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/claim-cost.XXXXXX")
mkdir -p "$out" && out=$(realpath "$out")

# build SIDE: berthd and berth-load of side SIDE into $out/SIDE.
build() {
  local side=$1 src
  mkdir -p "$out/$side"
  if [ "$side" = A ]; then
    local commit
    commit=$(git -C "$repo" rev-parse --verify -q "$base^{commit}") ||
      die "unknown commit $base (a shallow clone? git fetch --unshallow)"
    src="$out/A/src"
    rm -rf "$src" && mkdir -p "$src"
    git -C "$repo" archive "$commit" | tar -x -C "$src" || die "git archive $commit failed"
    echo "$commit" >"$out/A/commit"
  else
    src=$repo
    { git -C "$repo" rev-parse HEAD; git -C "$repo" status --short; } >"$out/B/commit" 2>/dev/null
  fi
  echo "claim-cost.sh: building side $side from $([ "$side" = A ] && echo "$base" || echo "the working tree")"
  (cd "$src" && go build -o "$out/$side/berthd" ./cmd/berthd && go build -o "$out/$side/berth-load" ./cmd/berth-load) ||
    die "building side $side failed"
  [ "$side" = B ] || rm -rf "$src"
}
declare -A bin_of load_of
for side in A B; do
  d=$abin; [ "$side" = B ] && d=$bbin
  if [ -n "$d" ]; then
    d=$(realpath "$d")
    [ -x "$d/berthd" ] && [ -x "$d/berth-load" ] || die "$d has no berthd or berth-load"
  else
    build "$side"; d="$out/$side"
  fi
  bin_of[$side]=$d/berthd load_of[$side]=$d/berth-load
done

# shellcheck source=lib/target.sh
. "$here/lib/target.sh"
# shellcheck source=lib/pgcluster.sh
. "$here/lib/pgcluster.sh"
pid="" db=""
cleanup() { stop_target; drop_db; pgc_stop; }
trap cleanup EXIT
trap 'exit 130' INT TERM

settings=()
if [ "$nosync" = 1 ]; then settings+=(fsync=off synchronous_commit=off full_page_writes=off); fi
settings+=("${pg_settings[@]}")
pgc_start "$(mktemp -d /tmp/cc-pg.XXXXXX)" "${settings[@]}" || exit 2
if [ -z "${BENCH_PORT:-}" ]; then
  BENCH_PORT=28790
  while listening "$BENCH_PORT"; do BENCH_PORT=$((BENCH_PORT + 1)); done
fi
url="http://127.0.0.1:$BENCH_PORT"
tck=$(getconf CLK_TCK)
first_path="/allocation_candidates?resources=VCPU:4,MEMORY_MB:16384,DISK_GB:100&limit=1"
berthd_cmd() {
  local extra=$a_args; [ "$1" = B ] && extra=$b_args
  echo "${memlimit:+GOMEMLIMIT=$memlimit }exec ${bin_of[$1]} $berthd_args $extra"
}
echo "claim-cost.sh: PostgreSQL $("$pgc_bin/postgres" --version | awk '{print $3}') (postmaster $pgc_pid${settings[*]:+, ${settings[*]}}), berthd on $url, reports in $out"

# The templates: each side's schema, seeded by its own berthd and berth-load.
for side in A B; do
  load=${load_of[$side]}
  create_db "cc_seed_$side" || die "cannot create a database"
  launch "$(berthd_cmd "$side")" "$out/seed-$side.log" || die "cannot start side $side's berthd"
  "$load" wait --url "$url" --timeout 180s >/dev/null || die "side $side's berthd did not start; see $out/seed-$side.log"
  seed_flags=(--nodes "$providers" --keepalive on -q)
  # Older berth-loads may lack a flag: pass only what this one knows.
  if "$load" seed -h 2>&1 | grep -q -- '-workers'; then seed_flags+=(--workers 32); fi
  echo "claim-cost.sh: seeding side $side's template, $providers providers"
  "$load" seed --url "$url" "${seed_flags[@]}" >"$out/seed-$side.txt" 2>&1 || die "seeding side $side failed; see $out/seed-$side.txt"
  stop_target
  psql "$pg_prefix/cc_seed_$side$pg_params" -qX -c "VACUUM (ANALYZE)" >/dev/null || die "VACUUM of side $side's template failed"
  sql=$a_sql; [ "$side" = B ] && sql=$b_sql
  if [ -n "$sql" ]; then
    psql "$pg_prefix/cc_seed_$side$pg_params" -qX -v ON_ERROR_STOP=1 -c "$sql" >/dev/null || die "side $side's --${side,,}-sql failed"
  fi
  db=""
done

# field NAME FILE: a figure of a berth-load claims report.
claims_per_s() { grep -o '[0-9.]* claims/s' "$1" | head -n1 | cut -d' ' -f1; }
claimed() { grep -o '[0-9]* claimed' "$1" | head -n1 | cut -d' ' -f1; }

a_name=$base; [ -n "$abin" ] && a_name=$abin
b_name="the working tree"; [ -n "$bbin" ] && b_name=$bbin
echo "claim-cost.sh: A = $a_name${a_args:+ ($a_args)}${a_sql:+ [$a_sql]}, B = $b_name${b_args:+ ($b_args)}${b_sql:+ [$b_sql]}; $rounds rounds of $claims claims from $clients clients (after $warmup untimed) on $providers providers"
echo "claim-cost.sh: load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
: >"$out/rounds.txt"; : >"$out/figures.txt"
printf '%-6s %-4s %10s %14s %14s %10s %s\n' round side claims/s "berthd ms/cl" "PG ms/cl" "peak MiB" "load avg" | tee -a "$out/rounds.txt"
for r in $(seq "$rounds"); do
  order=(A B); [ $((r % 2)) = 0 ] && order=(B A)
  for side in "${order[@]}"; do
    load=${load_of[$side]}
    db="cc_${side}_$r"
    psql "$BENCH_PG" -qX -c "CREATE DATABASE \"$db\" TEMPLATE \"cc_seed_$side\"" >/dev/null || die "cannot copy side $side's template"
    launch "$(berthd_cmd "$side")" "$out/server-$r-$side.log" || die "cannot start side $side's berthd"
    "$load" wait --url "$url" --path "$first_path" --timeout 600s >/dev/null || die "side $side did not answer; see $out/server-$r-$side.log"
    if [ "$warmup" -gt 0 ]; then
      "$load" claims --url "$url" --mode claims --clients "$clients" --claims "$warmup" --duration 30m \
        --verify=false --keepalive on -q >"$out/warmup-$r-$side.txt" 2>&1 || die "side $side's warm-up failed; see $out/warmup-$r-$side.txt"
    fi
    b0=$(proc_ticks "$pid") p0=$(cluster_ticks "$pgc_pid")
    "$load" claims --url "$url" --mode claims --clients "$clients" --claims "$claims" --duration 30m \
      --verify=false --keepalive on -q --pid "$pid" >"$out/claims-$r-$side.txt" 2>&1
    rc=$?
    b1=$(proc_ticks "$pid") p1=$(cluster_ticks "$pgc_pid")
    hwm=$(peak_rss_kib "$pid")
    stop_target; drop_db
    rate=$(claims_per_s "$out/claims-$r-$side.txt") n=$(claimed "$out/claims-$r-$side.txt")
    if [ "$rc" != 0 ] || [ -z "$rate" ] || [ -z "$n" ] || [ "$n" = 0 ]; then
      echo "claim-cost.sh: round $r side $side gave no figures; see $out/claims-$r-$side.txt" >&2
      continue
    fi
    # CPU per claim in ms: ticks * 1000 / CLK_TCK / claims.
    bms=$(awk -v d=$((b1 - b0)) -v t="$tck" -v n="$n" 'BEGIN { printf "%.3f", d * 1000 / t / n }')
    pms=$(awk -v d=$((p1 - p0)) -v t="$tck" -v n="$n" 'BEGIN { printf "%.3f", d * 1000 / t / n }')
    printf '%-6s %-4s %10.0f %14s %14s %10.0f %s\n' "$r" "$side" "$rate" "$bms" "$pms" "$((hwm / 1024))" \
      "$(cut -d' ' -f1-3 /proc/loadavg | tr ' ' /)" | tee -a "$out/rounds.txt"
    echo "$r $side $rate $bms $pms $((hwm / 1024))" >>"$out/figures.txt"
  done
done
echo "claim-cost.sh: load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

# figures.txt: "ROUND SIDE RATE BERTHD_MS PG_MS PEAK_MIB"; the ratios B/A are
# within a round, the medians over the rounds.
awk '
  function median(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
  }
  { v[$1, $2, 1] = $3; v[$1, $2, 2] = $4; v[$1, $2, 3] = $5; v[$1, $2, 4] = $6; has[$1, $2] = 1; if ($1 > R) R = $1 }
  END {
    split("claims/s,berthd CPU ms per claim,PostgreSQL CPU ms per claim,berthd peak RSS MiB", name, ",")
    fmt[1] = "%.0f"; fmt[2] = "%.3f"; fmt[3] = "%.3f"; fmt[4] = "%.0f"
    for (k = 1; k <= 4; k++) {
      na = nb = nq = 0; ratios = ""
      for (r = 1; r <= R; r++) {
        if (has[r, "A"]) a[++na] = v[r, "A", k]
        if (has[r, "B"]) b[++nb] = v[r, "B", k]
        if (has[r, "A"] && has[r, "B"] && v[r, "A", k] > 0) { q[++nq] = v[r, "B", k] / v[r, "A", k]; ratios = ratios sprintf(" %.2f", q[nq]) }
      }
      if (na == 0 || nb == 0) continue
      printf "%-28s A " fmt[k] ", B " fmt[k] " (medians of %d, %d rounds); B/A per round:%s; median B/A %.3f\n",
        name[k], median(a, na), median(b, nb), na, nb, ratios, (nq ? median(q, nq) : 0)
    }
  }' "$out/figures.txt" | tee "$out/summary.txt"
[ -s "$out/summary.txt" ] || { echo "claim-cost.sh: no round gave figures" >&2; exit 1; }
exit 0
