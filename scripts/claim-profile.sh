#!/usr/bin/env bash
# claim-profile.sh: where a claim's CPU goes, in berthd and in PostgreSQL.
#
# One berthd build (the working tree's, or --bin DIR) on a throwaway
# PostgreSQL cluster (as the postgres user) with pg_stat_statements and
# auto_explain loaded, seeded with --providers compute nodes by its own
# berth-load, then VACUUM (ANALYZE). berthd runs with --pprof. After
# --warmup untimed claims:
#
#   1. the profile: --claims POST /claims from --clients clients; around it
#      berthd's CPU and the cluster's (per PostgreSQL process kind: the
#      backends, the WAL writer, the checkpointer, autovacuum, ...) from
#      /proc, Go's allocs profile before and after (what a claim allocates:
#      go tool pprof -base), a CPU profile of --seconds taken from the
#      claims' first second on, pg_stat_statements and pg_stat_user_functions
#      reset before and read after (track = all: the trigger functions'
#      statements too), and berthd's peak RSS over the claims (VmHWM reset
#      first);
#   2. with --explain N: N more claims with auto_explain logging every
#      statement's plan with ANALYZE and BUFFERS (nested statements
#      included) into explain.log;
#   3. with --perf: N more claims (--claims) under "perf record" of every
#      PostgreSQL process, its flat report in perf-pg.txt;
#   4. with --list K: K timed GET /resource_providers (berth-load candidates
#      --only e-providers) at 1.39 under a CPU profile and the allocs
#      profile, and berthd's peak RSS over them; then K more at 1.0 (a
#      client that sends no microversion); each with berthd's CPU per list
#      (the warm-up's included).
#
# Everything goes to --out (default a new temp dir): summary.txt (the
# figures per claim), cpu.pprof, allocs-0.pprof and allocs-1.pprof,
# heap.pprof (in use after the claims), pgss.txt, functions.txt,
# pg-procs.txt, and the top lists of go tool pprof. Nothing is asserted.
#
# Usage:
#   scripts/claim-profile.sh [options]
# Options:
#   --bin DIR          berthd and berth-load from DIR (default: build the working tree)
#   --providers N      seeded compute nodes (default 1000)
#   --claims N         claims of the profile (default 8000)
#   --clients C        concurrent claim clients (default 16)
#   --warmup N         untimed claims first (default 300)
#   --seconds S        length of the CPU profile (default 5)
#   --explain N        claims under auto_explain (default 0: none)
#   --perf             a perf profile of PostgreSQL during --claims more claims
#   --list K           K timed GET /resource_providers (default 0: none)
#   --memlimit SIZE    berthd's GOMEMLIMIT (default: none)
#   --env "K=V ..."    more environment for berthd (e.g. GODEBUG=gctrace=1: its log is server.log)
#   --berthd-args ARGS extra berthd flags
#   --hold             at the end, keep the cluster and berthd running (their URLs
#                      printed) until interrupted (Ctrl-C, or SIGTERM to the script): for
#                      experiments of one's own
#   --nosync           PostgreSQL with fsync, synchronous_commit and full_page_writes off
#   --out DIR          results (default a new temp dir)
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
die() { echo "claim-profile.sh: $*" >&2; exit 2; }

hold=0 bindir="" providers=1000 claims=8000 clients=16 warmup=300 seconds=5 explain=0 perf=0 list=0
memlimit="" berthd_args="" nosync=0 out="" env=""
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bindir=$2; shift 2 ;;
    --providers) providers=$2; shift 2 ;;
    --claims) claims=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --explain) explain=$2; shift 2 ;;
    --perf) perf=1; shift ;;
    --list) list=$2; shift 2 ;;
    --memlimit) memlimit=$2; shift 2 ;;
    --env) env=$2; shift 2 ;;
    --berthd-args) berthd_args=$2; shift 2 ;;
    --nosync) nosync=1; shift ;;
    --hold) hold=1; shift ;;
    --out) out=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown option $1 (see --help)" ;;
  esac
done
for v in "$providers" "$claims" "$clients" "$warmup" "$seconds" "$explain" "$list"; do
  case "$v" in ''|*[!0-9]*) die "counts must be whole numbers, not '$v'" ;; esac
done
room=$((warmup + claims + explain)); [ "$perf" = 1 ] && room=$((room + claims))
[ "$room" -le $((providers * 15)) ] || die "the claims asked for ($room) exceed the cloud's room ($((providers * 15)))"
command -v psql >/dev/null || die "psql is needed"
command -v curl >/dev/null || die "curl is needed"
[ "$perf" = 0 ] || command -v perf >/dev/null || die "--perf needs perf"
[ -n "$out" ] || out=$(mktemp -d "${TMPDIR:-/tmp}/claim-profile.XXXXXX")
mkdir -p "$out" && out=$(realpath "$out")

if [ -z "$bindir" ]; then
  bindir="$out/bin"
  echo "claim-profile.sh: building the working tree"
  (cd "$repo" && go build -o "$bindir/berthd" ./cmd/berthd && go build -o "$bindir/berth-load" ./cmd/berth-load) || die "build failed"
fi
bindir=$(realpath "$bindir")
berthd=$bindir/berthd load=$bindir/berth-load
[ -x "$berthd" ] && [ -x "$load" ] || die "$bindir has no berthd or berth-load"

# shellcheck source=lib/target.sh
. "$here/lib/target.sh"
# shellcheck source=lib/pgcluster.sh
. "$here/lib/pgcluster.sh"
pid="" db="" perf_pid=""
cleanup() {
  [ -z "$perf_pid" ] || kill -INT "$perf_pid" 2>/dev/null
  stop_target; drop_db
  [ -z "${pgc_dir:-}" ] || cp "$pgc_dir/postgres.log" "$out/postgres.log" 2>/dev/null
  pgc_stop
}
trap cleanup EXIT
trap 'exit 130' INT TERM

settings=(shared_preload_libraries=pg_stat_statements,auto_explain pg_stat_statements.track=all
  pg_stat_statements.max=10000 track_functions=pl)
if [ "$nosync" = 1 ]; then settings+=(fsync=off synchronous_commit=off full_page_writes=off); fi
pgc_start "$(mktemp -d /tmp/cp-pg.XXXXXX)" "${settings[@]}" || exit 2
BENCH_PORT=${BENCH_PORT:-28830}
while listening "$BENCH_PORT"; do BENCH_PORT=$((BENCH_PORT + 1)); done
pprof_port=$((BENCH_PORT + 1))
while listening "$pprof_port"; do pprof_port=$((pprof_port + 1)); done
url="http://127.0.0.1:$BENCH_PORT" purl="http://127.0.0.1:$pprof_port/debug/pprof"
tck=$(getconf CLK_TCK)
first_path="/allocation_candidates?resources=VCPU:4,MEMORY_MB:16384,DISK_GB:100&limit=1"
cmd="${env:+$env }${memlimit:+GOMEMLIMIT=$memlimit }exec $berthd --pprof 127.0.0.1:$pprof_port $berthd_args"
q() { psql "$pg_prefix/$db$pg_params" -qX -v ON_ERROR_STOP=1 "$@"; }

create_db cp || die "cannot create a database"
launch "$cmd" "$out/server.log" || die "cannot start berthd"
"$load" wait --url "$url" --timeout 180s >/dev/null || die "berthd did not start; see $out/server.log"
echo "claim-profile.sh: seeding $providers providers"
"$load" seed --url "$url" --nodes "$providers" --workers 32 --keepalive on -q >"$out/seed.txt" 2>&1 || die "seeding failed; see $out/seed.txt"
stop_target
q -c "VACUUM (ANALYZE)" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" || die "cannot prepare the database"
launch "$cmd" "$out/server.log" || die "cannot restart berthd"
"$load" wait --url "$url" --path "$first_path" --timeout 600s >/dev/null || die "berthd did not answer; see $out/server.log"
[ "$warmup" = 0 ] || "$load" claims --url "$url" --mode claims --clients "$clients" --claims "$warmup" --duration 30m \
  --verify=false --keepalive on -q >"$out/warmup.txt" 2>&1 || die "the warm-up failed; see $out/warmup.txt"

# pg_procs: "PID KIND TICKS" for the postmaster ("postmaster": its own
# time; "exited": what its children that exited used, its cutime +
# cstime) and each live process under it (kind from its title).
pg_procs() {
  local p kids
  awk -v pm="$pgc_pid" '{ sub(/^.*\) /, ""); print pm, "postmaster", $12 + $13; print "0", "exited", $14 + $15 }' "/proc/$pgc_pid/stat"
  kids=$(cat /proc/"$pgc_pid"/task/*/children 2>/dev/null)
  for p in $kids; do
    local kind
    kind=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | sed 's/^postgres: //')
    case "$kind" in
      *"[local]"*|*"127.0.0.1"*) kind=backend ;;
      autovacuum\ worker*) kind=autovacuum-worker ;;
      *) kind=$(echo "$kind" | awk '{print $1 "-" $2}' | sed 's/-$//') ;;
    esac
    awk -v p="$p" -v k="$kind" '{ sub(/^.*\) /, ""); print p, k, $12 + $13 + $14 + $15 }' "/proc/$p/stat" 2>/dev/null
  done
}
# pg_breakdown BEFORE AFTER N: PostgreSQL CPU per claim by process kind.
pg_breakdown() {
  awk -v t="$tck" -v n="$3" '
    FNR == NR { b[$1 " " $2] = $3; next }
    { a[$1 " " $2] = $3 }
    END {
      for (k in a) { split(k, f, " "); d[f[2]] += a[k] - (k in b ? b[k] : 0) }
      for (k in b) if (!(k in a)) { split(k, f, " "); d[f[2]] -= b[k] }
      for (k in d) tot += d[k]
      printf "%-22s %8.3f ms/claim\n", "all", tot * 1000 / t / n
      for (k in d) if (d[k] != 0) printf "%-22s %8.3f ms/claim %5.1f%%\n", k, d[k] * 1000 / t / n, tot ? 100 * d[k] / tot : 0 | "sort -k2 -nr"
    }' "$1" "$2"
}

# 1. The profile.
q -c "SELECT pg_stat_statements_reset()" -c "SELECT pg_stat_reset()" >/dev/null || die "cannot reset the statistics"
curl -sf -o "$out/allocs-0.pprof" "$purl/allocs" || die "no allocs profile from berthd (--pprof)"
pg_procs >"$out/pg-0.txt"; b0=$(proc_ticks "$pid")
"$load" claims --url "$url" --mode claims --clients "$clients" --claims "$claims" --duration 30m \
  --verify=false --keepalive on --pid "$pid" --reset-peak >"$out/claims.txt" 2>&1 &
lp=$!
sleep 1
curl -sf -o "$out/cpu.pprof" "$purl/profile?seconds=$seconds" &
cp_pid=$!
wait "$lp" || echo "claim-profile.sh: the claims run failed; see $out/claims.txt" >&2
b1=$(proc_ticks "$pid"); pg_procs >"$out/pg-1.txt"
wait "$cp_pid" || echo "claim-profile.sh: no CPU profile (the claims ended before $seconds s?)" >&2
curl -sf -o "$out/allocs-1.pprof" "$purl/allocs"
curl -sf -o "$out/heap.pprof" "$purl/heap?gc=1"
hwm=$(peak_rss_kib "$pid")
n=$(grep -o '[0-9]* claimed' "$out/claims.txt" | head -n1 | cut -d' ' -f1)
rate=$(grep -o '[0-9.]* claims/s' "$out/claims.txt" | head -n1 | cut -d' ' -f1)
[ -n "$n" ] && [ "$n" -gt 0 ] || die "no claims made; see $out/claims.txt"
# The statements of the claims (and of the snapshot's catch-ups and
# reloads, the notifier, the lease reaper: everything berthd ran), per
# claim; nested ones (toplevel f: inside the trigger functions) are part of
# their top-level statement's time too.
q -v n="$n" >"$out/pgss.txt" <<'SQL'
\pset footer off
SELECT calls, round((calls::numeric / :n), 3) AS per_claim,
       round(total_exec_time::numeric, 1) AS total_ms,
       round((total_exec_time / :n * 1000)::numeric, 1) AS us_per_claim,
       round((total_exec_time / calls * 1000)::numeric, 1) AS us_per_call,
       rows, round(((shared_blks_hit + shared_blks_read)::numeric / :n), 1) AS blks_per_claim,
       round((wal_bytes / :n)::numeric, 0) AS wal_b_per_claim, toplevel AS top,
       regexp_replace(left(query, 110), '\s+', ' ', 'g') AS query
FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
ORDER BY toplevel DESC, total_exec_time DESC LIMIT 80;
SELECT round((sum(total_exec_time) / :n * 1000)::numeric, 1) AS top_level_us_per_claim, sum(calls) AS calls
FROM pg_stat_statements WHERE toplevel AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database());
SQL
q -v n="$n" >"$out/functions.txt" <<'SQL'
\pset footer off
SELECT funcname, calls, round((calls::numeric / :n), 3) AS per_claim, round(total_time::numeric, 1) AS total_ms,
       round(self_time::numeric, 1) AS self_ms, round((total_time / :n * 1000)::numeric, 1) AS us_per_claim
FROM pg_stat_user_functions ORDER BY total_time DESC;
SQL
q -At >"$out/pgss-queries.sql" <<'SQL'
SELECT '-- calls ' || calls || ', ' || round(total_exec_time::numeric, 1) || ' ms' || chr(10) || query || ';' || chr(10)
FROM pg_stat_statements WHERE toplevel AND dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
ORDER BY total_exec_time DESC LIMIT 25;
SQL

{
  echo "claims: $n at $rate claims/s, $clients clients, $providers providers; load average $(cut -d' ' -f1-3 /proc/loadavg)"
  awk -v d=$((b1 - b0)) -v t="$tck" -v n="$n" 'BEGIN { printf "berthd CPU per claim: %.3f ms\n", d * 1000 / t / n }'
  echo "berthd peak RSS over the claims: $((hwm / 1024)) MiB"
  echo "PostgreSQL CPU per claim, by process kind:"
  pg_breakdown "$out/pg-0.txt" "$out/pg-1.txt" "$n" | sed 's/^/  /'
  for idx in alloc_space alloc_objects; do
    go tool pprof -sample_index=$idx -base "$out/allocs-0.pprof" -top -nodecount=1 "$out/allocs-1.pprof" 2>/dev/null |
      awk -v n="$n" -v idx=$idx '/^Showing nodes accounting/ { for (i = 1; i <= NF; i++) if ($i == "total") v = $(i-1) }
        END {
          if (v == "") exit
          m = 1; u = v; sub(/^[0-9.]+/, "", u); x = substr(v, 1, length(v) - length(u)) + 0
          if (u == "kB") m = 1e3; else if (u == "MB") m = 1e6; else if (u == "GB") m = 1e9; else if (u == "k") m = 1e3; else if (u == "M") m = 1e6
          if (idx == "alloc_space") printf "allocated per claim: %.1f KB\n", x * m / n / 1e3
          else printf "objects allocated per claim: %.0f\n", x * m / n
        }'
  done
} | tee "$out/summary.txt"
go tool pprof -top -nodecount=60 "$out/cpu.pprof" >"$out/cpu-flat.txt" 2>/dev/null
go tool pprof -top -cum -nodecount=200 "$out/cpu.pprof" >"$out/cpu-cum.txt" 2>/dev/null
go tool pprof -sample_index=alloc_space -base "$out/allocs-0.pprof" -top -cum -nodecount=120 "$out/allocs-1.pprof" >"$out/allocs-cum.txt" 2>/dev/null
go tool pprof -sample_index=alloc_space -base "$out/allocs-0.pprof" -top -nodecount=60 "$out/allocs-1.pprof" >"$out/allocs-flat.txt" 2>/dev/null
go tool pprof -sample_index=inuse_space -top -nodecount=40 "$out/heap.pprof" >"$out/heap-inuse.txt" 2>/dev/null

# 2. auto_explain.
if [ "$explain" -gt 0 ]; then
  off=$(stat -c %s "$pgc_dir/postgres.log")
  q -c "ALTER SYSTEM SET auto_explain.log_min_duration = 0" -c "ALTER SYSTEM SET auto_explain.log_analyze = on" \
    -c "ALTER SYSTEM SET auto_explain.log_buffers = on" -c "ALTER SYSTEM SET auto_explain.log_nested_statements = on" -c "ALTER SYSTEM SET auto_explain.log_triggers = on" \
    -c "SELECT pg_reload_conf()" >/dev/null
  sleep 1
  "$load" claims --url "$url" --mode claims --clients "$clients" --claims "$explain" --duration 30m \
    --verify=false --keepalive on -q >"$out/explain-claims.txt" 2>&1
  q -c "ALTER SYSTEM RESET ALL" -c "SELECT pg_reload_conf()" >/dev/null
  tail -c +$((off + 1)) "$pgc_dir/postgres.log" >"$out/explain.log"
  echo "claim-profile.sh: plans of $explain claims in $out/explain.log"
fi

# 3. perf of PostgreSQL.
if [ "$perf" = 1 ]; then
  pids=$( (echo "$pgc_pid"; cat /proc/"$pgc_pid"/task/*/children) | tr -s ' \n' ',' | sed 's/^,//; s/,$//')
  perf record -F 1999 -g -o "$out/perf-pg.data" -p "$pids" >"$out/perf-record.log" 2>&1 &
  perf_pid=$!
  sleep 1
  "$load" claims --url "$url" --mode claims --clients "$clients" --claims "$claims" --duration 30m \
    --verify=false --keepalive on -q >"$out/perf-claims.txt" 2>&1
  kill -INT "$perf_pid"; wait "$perf_pid"; perf_pid=""
  perf report -i "$out/perf-pg.data" --no-children --sort symbol --stdio 2>/dev/null | grep -v '^$' | head -400 >"$out/perf-pg.txt"
  perf report -i "$out/perf-pg.data" --children --sort symbol --stdio -g none 2>/dev/null | grep -v '^$' | head -300 >"$out/perf-pg-children.txt"
  echo "claim-profile.sh: PostgreSQL's perf profile in $out/perf-pg.txt"
fi

# 4. GET /resource_providers, at 1.39 (profiled) and at 1.0 (no header's).
if [ "$list" -gt 0 ]; then
  curl -sf -o "$out/list-allocs-0.pprof" "$purl/allocs"
  l0=$(proc_ticks "$pid")
  "$load" candidates --url "$url" --only e-providers --iterations "$list" --warmup 1 --timeout 300s \
    --pid "$pid" --reset-peak >"$out/list.txt" 2>&1 &
  lp=$!
  sleep 2
  curl -sf -o "$out/list-cpu.pprof" "$purl/profile?seconds=$seconds"
  wait "$lp"
  l1=$(proc_ticks "$pid")
  curl -sf -o "$out/list-allocs-1.pprof" "$purl/allocs"
  "$load" candidates --url "$url" --only e-providers --iterations "$list" --warmup 1 --timeout 300s \
    --microversion 1.0 >"$out/list-1.0.txt" 2>&1
  l2=$(proc_ticks "$pid")
  go tool pprof -top -cum -nodecount=80 "$out/list-cpu.pprof" >"$out/list-cpu-cum.txt" 2>/dev/null
  go tool pprof -sample_index=alloc_space -base "$out/list-allocs-0.pprof" -top -cum -nodecount=60 "$out/list-allocs-1.pprof" >"$out/list-allocs-cum.txt" 2>/dev/null
  {
    for mv in 1.39 1.0; do
      f=$out/list.txt d=$((l1 - l0)); [ "$mv" = 1.0 ] && f=$out/list-1.0.txt d=$((l2 - l1))
      awk -v mv="$mv" -v d="$d" -v t="$tck" -v n=$((list + 1)) '$1 == "e-providers" && NF >= 9 && $2 ~ /^[0-9]+$/ {
        printf "GET /resource_providers at %s: median %s ms, min %s ms (%s %s, %s bytes); berthd CPU per list %.0f ms\n", mv, $3, $6, $8, $9, $10, d * 1000 / t / n }' "$f"
    done
    grep -E 'peak RSS' "$out/list.txt"
  } | tee -a "$out/summary.txt"
fi
if [ "$hold" = 1 ]; then
  echo "claim-profile.sh: holding: berthd $url (pid $pid, pprof $purl), database $pg_prefix/$db$pg_params; Ctrl-C or SIGTERM to stop"
  while kill -0 "$pid" 2>/dev/null; do sleep 5; done
fi
exit 0
