#!/usr/bin/env bash
# claims-ab.sh: compare two berthd builds, or one build at two cloud sizes, by
# their CPU per claim measured at the same time. Each side is a berthd on its
# own copy of a seeded, vacuumed database; both are warmed up (3 s of untimed
# claims, released), then claimed at once by two berth-load runs (POST /claims
# of VCPU:4,MEMORY_MB:16384,DISK_GB:100, in rounds as scripts/scale.sh claims).
# Both sides run on the same machine at the same moment, so a drift of the
# shared machine's speed (which moves one size's figure by 20% between runs a
# minute apart) weighs on both alike; the two sides swap places (start order,
# port) every other run. Prints each run's claims/s and berthd CPU per claim,
# then the medians and the median ratio B/A of the CPU per claim. With
# --reads K, each run first times the read suite of "berth-load candidates"
# (K iterations of each query) on each side, one side after the other, and
# the end prints each query's median latency per side (the median over the
# runs of each run's median). Nothing is asserted.
#
# Usage:
#   scripts/claims-ab.sh --a BIN [--b BIN] [--sizes "N" | --sizes "NA NB"] [options]
# Options:
#   --a BIN, --b BIN  the two berthd builds (--b defaults to --a: then give two
#                     sizes, or a setup command to one side)
#   --a-setup CMD, --b-setup CMD
#                     a shell command run against that side once its berthd
#                     answers, before the warm-up, with $URL its endpoint: to
#                     compare one build with a feature configured and without
#                     (e.g. a limit for the load's project: docs/quotas.md);
#                     BERTH_URL is set too
#   --setup-b CMD     the same as --b-setup (e.g. to start a shadow:
#                     scripts/lib/shadow-setup.sh)
#   --after-b CMD     run CMD the same way after each run's timed claims, its
#                     output kept in after-R-B.log (e.g. the shadow's report)
#   --sizes "NA NB"   providers of side A and of side B (one N: both; default 100000)
#   --clients C       claim clients per side (default 32)
#   --duration D      timed claiming per run (default 20s; 0: no claims)
#   --reads K         time the read suite, K iterations of each query, per run
#                     and side (default 0: none)
#   --runs K          runs (default 4)
#   --memlimit SIZE   GOMEMLIMIT of both berthds (default 450MiB)
#   --out DIR         reports and logs (default a new temp dir)
#   --scriptlet FILE  the default scriptlet (instances.placement.scriptlet) of
#                     both sides' databases; --scriptlet-a, --scriptlet-b: of
#                     one side (then one build at one size may be compared
#                     with itself under two scriptlets)
# Environment: BENCH_PG, BENCH_PORT, BENCH_LOAD as for scripts/scale.sh (the
# claims servers take BENCH_PORT and BENCH_PORT+1).
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
die() { echo "claims-ab.sh: $*" >&2; exit 1; }

binA="" binB="" sizes=100000 clients=32 duration=20s runs=4 memlimit=450MiB out="" reads=0 setupA="" setupB="" afterB="" scriptA="" scriptB=""
while [ $# -gt 0 ]; do
  case "$1" in
    --a) binA=$2; shift 2 ;;
    --b) binB=$2; shift 2 ;;
    --a-setup) setupA=$2; shift 2 ;;
    --b-setup) setupB=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --reads) reads=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --memlimit) memlimit=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --setup-b) setupB=$2; shift 2 ;;
    --after-b) afterB=$2; shift 2 ;;
    --scriptlet) scriptA=$2; scriptB=$2; shift 2 ;;
    --scriptlet-a) scriptA=$2; shift 2 ;;
    --scriptlet-b) scriptB=$2; shift 2 ;;
    *) die "unknown option $1 (see the header of $0)" ;;
  esac
done
[ -n "$binA" ] || die "--a BIN is required"
binA=$(realpath "$binA"); binB=$(realpath "${binB:-$binA}")
read -r nA nB <<<"$sizes"; nB=${nB:-$nA}
[ "$binA" != "$binB" ] || [ "$nA" != "$nB" ] || [ "$setupA" != "$setupB" ] || [ "$scriptA" != "$scriptB" ] ||
  die "the two sides are the same: give --b, two sizes, a setup command or two scriptlets"
for f in "$scriptA" "$scriptB"; do [ -z "$f" ] || [ -r "$f" ] || die "cannot read scriptlet $f"; done
[ -n "$out" ] || out=$(mktemp -d /tmp/berth-ab.XXXXXX)
mkdir -p "$out"; out=$(realpath "$out")

load=${BENCH_LOAD:-}
if [ -z "$load" ]; then
  load="$out/berth-load"
  (cd "$repo" && go build -o "$load" ./cmd/berth-load) || die "building berth-load failed"
fi

# shellcheck source=lib/target.sh
. "$here/lib/target.sh"
devdb_pid="" pid="" db=""
side_pid=() side_db=() seeds=()
cleanup() {
  for p in "${side_pid[@]}"; do pid=$p; stop_target; done
  for d in "${side_db[@]}" "${seeds[@]}"; do db=$d; drop_db; done
  stop_target; drop_db
  if [ -n "$devdb_pid" ]; then kill -TERM "$devdb_pid" 2>/dev/null; wait "$devdb_pid" 2>/dev/null; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -z "${BENCH_PG:-}" ]; then
  start_devdb "$binA" "$out" || exit 1
fi
target_init
port0=$BENCH_PORT
first_path="/allocation_candidates?resources=VCPU:4,MEMORY_MB:16384,DISK_GB:100&limit=1"
vacuum() { psql "$pg_prefix/$1$pg_params" -qX -c "VACUUM (ANALYZE)" >/dev/null; }
# set_scriptlet DB FILE: FILE's source as DB's default scriptlet (what
# PATCH /config with instances.placement.scriptlet stores), before the
# side's berthd starts and loads it.
set_scriptlet() {
  [ -n "$2" ] || return 0
  psql "$pg_prefix/$1$pg_params" -qX -v ON_ERROR_STOP=1 -v src="$(cat "$2")" >/dev/null <<'SQL'
INSERT INTO config (key, value) VALUES ('instances.placement.scriptlet', to_jsonb(:'src'::text))
  ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value;
SQL
}

# One seeded, vacuumed database per size, copied for every run.
for n in $(printf '%s\n' "$nA" "$nB" | sort -un); do
  echo "claims-ab.sh: seeding $n providers"
  create_db "ab_seed_${n}_$$" || die "cannot create a database on $BENCH_PG"
  seeds+=("$db")
  launch "exec $binA" "$out/seed-$n.log" || die "cannot start $binA"
  "$load" wait --url "$url" --timeout 180s >/dev/null || die "berthd did not start; see $out/seed-$n.log"
  "$load" seed --url "$url" --nodes "$n" --workers 32 --keepalive on -q >"$out/seed-$n.txt" 2>&1 ||
    die "seeding failed; see $out/seed-$n.txt"
  stop_target
  vacuum "$db"
  db=""
done

# field FILE: "claims/s CPU-per-claim" of a berth-load claims report.
field() {
  local rate cpu
  rate=$(grep -o '[0-9.]* claims/s' "$1" | head -n1 | cut -d' ' -f1)
  cpu=$(grep -o 'server CPU per claim.*: [0-9.]* ms in pid' "$1" | grep -o '[0-9.]* ms in pid' | cut -d' ' -f1)
  echo "${rate:-?} ${cpu:-?}"
}

echo "claims-ab.sh: A = $binA at $nA providers${setupA:+ (setup: $setupA)}${scriptA:+ with $scriptA}, B = $binB at $nB${setupB:+ (setup: $setupB)}${scriptB:+ with $scriptB};" \
  "$clients clients each, $duration, $runs runs; reports in $out"
: >"$out/runs.txt"
for r in $(seq "$runs"); do
  order=(A B); [ $((r % 2)) = 0 ] && order=(B A)
  side_pid=() side_db=()
  declare -A url_of=() pid_of=()
  k=0
  for s in "${order[@]}"; do
    n=$nA bin=$binA; [ "$s" = B ] && n=$nB bin=$binB
    db="ab_${s}_${r}_$$"
    psql "$BENCH_PG" -qX -c "CREATE DATABASE \"$db\" TEMPLATE \"ab_seed_${n}_$$\"" >/dev/null || die "cannot copy the seeded database"
    side_db+=("$db")
    script=$scriptA; [ "$s" = B ] && script=$scriptB
    set_scriptlet "$db" "$script" || die "cannot store the scriptlet $script"
    vacuum "$db"
    BENCH_PORT=$((port0 + k)); url="http://127.0.0.1:$BENCH_PORT"
    launch "GOMEMLIMIT=$memlimit exec $bin" "$out/server-$r-$s.log" || die "cannot start $bin"
    side_pid+=("$pid"); url_of[$s]=$url; pid_of[$s]=$pid
    k=$((k + 1))
  done
  for s in "${order[@]}"; do
    "$load" wait --url "${url_of[$s]}" --path "$first_path" --timeout 600s >/dev/null || die "side $s did not answer; see $out/server-$r-$s.log"
    setup=$setupA; [ "$s" = B ] && setup=$setupB
    if [ -n "$setup" ]; then
      URL=${url_of[$s]} BERTH_URL=${url_of[$s]} bash -c "$setup" >"$out/setup-$r-$s.log" 2>&1 || die "side $s's setup failed; see $out/setup-$r-$s.log"
    fi
  done
  if [ "$reads" -gt 0 ]; then
    for s in "${order[@]}"; do
      "$load" candidates --url "${url_of[$s]}" --iterations "$reads" --warmup 2 --keepalive on -q >"$out/reads-$r-$s.txt" 2>&1
      # "R SIDE QUERY MEDIAN_MS" per query of the report's table.
      awk -v r="$r" -v s="$s" '$1 ~ /^[a-z]-/ && $2 ~ /^[0-9]+$/ { m = $3; sub(/ms$/, "", m); print r, s, $1, m }' \
        "$out/reads-$r-$s.txt" >>"$out/reads.txt"
    done
    echo "reads run $r: $(awk -v r="$r" '$1 == r { printf "%s %s %sms  ", $2, $3, $4 }' "$out/reads.txt")"
  fi
  if [ "$duration" = 0 ]; then
    for p in "${side_pid[@]}"; do pid=$p; stop_target; done
    for d in "${side_db[@]}"; do db=$d; drop_db; done
    side_pid=() side_db=()
    continue
  fi
  waits=()
  for s in "${order[@]}"; do
    n=$nA; [ "$s" = B ] && n=$nB
    "$load" claims --url "${url_of[$s]}" --mode claims --clients "$clients" --duration 3s --claims $((n * 15 / 4)) \
      --release --verify=false --keepalive on -q >/dev/null 2>&1 &
    waits+=($!)
  done
  wait "${waits[@]}"
  waits=()
  for s in "${order[@]}"; do
    n=$nA; [ "$s" = B ] && n=$nB
    "$load" claims --url "${url_of[$s]}" --mode claims --clients "$clients" --duration "$duration" --claims $((n * 15 / 4)) \
      --rounds --release --verify=false --keepalive on --pid "${pid_of[$s]}" >"$out/claims-$r-$s.txt" 2>&1 &
    waits+=($!)
  done
  wait "${waits[@]}"
  if [ -n "$afterB" ]; then
    BERTH_URL=${url_of[B]} bash -c "$afterB" >"$out/after-$r-B.log" 2>&1 || echo "claims-ab.sh: --after-b failed; see $out/after-$r-B.log" >&2
  fi
  line="run $r: A $(field "$out/claims-$r-A.txt") B $(field "$out/claims-$r-B.txt")"
  echo "$line" | tee -a "$out/runs.txt"
  for p in "${side_pid[@]}"; do pid=$p; stop_target; done
  for d in "${side_db[@]}"; do db=$d; drop_db; done
  side_pid=() side_db=()
done

if [ "$reads" -gt 0 ]; then
  # reads.txt: "R SIDE QUERY MEDIAN_MS"; per side and query, the median
  # over the runs.
  awk '
    function median(a, n,   i, j, t) {
      for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
      return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
    }
    { k = $3; q[k] = 1; n[$2, k]++; v[$2, k, n[$2, k]] = $4 }
    END {
      for (k in q) {
        na = n["A", k]; nb = n["B", k]
        for (i = 1; i <= na; i++) a[i] = v["A", k, i]
        for (i = 1; i <= nb; i++) b[i] = v["B", k, i]
        ma = median(a, na); mb = median(b, nb)
        printf "read %s: median of %d runs: A %.2f ms, B %.2f ms, B/A %.2f\n", k, na, ma, mb, (ma > 0 ? mb / ma : 0)
      }
    }' "$out/reads.txt" | sort
fi
[ "$duration" = 0 ] && exit 0

# runs.txt: "run R: A RATE CPU B RATE CPU"
awk '
  function median(a, n,   i, j, t) {
    for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
    return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
  }
  $4 != "?" && $5 != "?" && $7 != "?" && $8 != "?" { n++; ra[n] = $4; ca[n] = $5; rb[n] = $7; cb[n] = $8; q[n] = $8 / $5 }
  END {
    if (n == 0) { print "claims-ab.sh: no run gave figures"; exit 1 }
    printf "medians over %d runs: A %.0f claims/s, %.3f ms berthd CPU per claim; B %.0f claims/s, %.3f ms; CPU per claim B/A %.3f\n",
      n, median(ra, n), median(ca, n), median(rb, n), median(cb, n), median(q, n)
  }' "$out/runs.txt"
