# pgcluster.sh: a throwaway PostgreSQL cluster for the claim-cost scripts, to
# be sourced, and the CPU counters of a process and of a cluster from /proc.
#
# pgc_start DIR [SETTING=VALUE...] initialises a cluster in DIR/data (as the
# postgres user when run as root: PostgreSQL refuses to run as root), with
# its unix socket in DIR and no TCP listener, starts it with the settings
# given (postgresql.conf names, each passed with -c) and sets:
#   pgc_pid     the postmaster's pid
#   pgc_url     the superuser URL of its postgres database
#   pg_prefix, pg_params, BENCH_PG, PGHOST, PGPORT, PGUSER
#               what scripts/lib/target.sh's create_db, drop_db and launch use
#               (DATABASE_URL of a target is $pg_prefix/DB$pg_params)
# pgc_stop stops it (fast shutdown) and removes DIR.

pgc_bindir() {
  local d
  if command -v pg_config >/dev/null && d=$(pg_config --bindir 2>/dev/null) && [ -x "$d/initdb" ]; then
    echo "$d"; return
  fi
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
  [ -n "$d" ] && [ -x "$d/initdb" ] && { echo "$d"; return; }
  return 1
}

pgc_as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

pgc_start() {
  local dir=$1; shift
  local bin port=5432 opts="" s
  bin=$(pgc_bindir) || { echo "pgcluster.sh: no PostgreSQL server binaries (initdb) found" >&2; return 1; }
  mkdir -p "$dir" && chmod 755 "$dir" || return 1
  [ "$(id -u)" = 0 ] && chown postgres: "$dir"
  pgc_dir=$dir
  pgc_as_pg "$bin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C --no-sync >"$dir/initdb.log" 2>&1 ||
    { echo "pgcluster.sh: initdb failed; see $dir/initdb.log" >&2; return 1; }
  opts="-p $port -c listen_addresses= -c unix_socket_directories=$dir -c timezone=UTC -c log_timezone=UTC"
  for s in "$@"; do opts="$opts -c $s"; done
  pgc_as_pg "$bin/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 120 -o "$opts" start >"$dir/pg_ctl.log" 2>&1 ||
    { echo "pgcluster.sh: PostgreSQL did not start; see $dir/postgres.log" >&2; return 1; }
  pgc_pid=$(head -n1 "$dir/data/postmaster.pid")
  pgc_bin=$bin
  pg_prefix="postgres://postgres@"
  pg_params="?host=$dir&port=$port"
  pgc_url="$pg_prefix/postgres$pg_params"
  BENCH_PG=$pgc_url
  export PGHOST=$dir PGPORT=$port PGUSER=postgres
  export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
}

pgc_stop() {
  [ -n "${pgc_dir:-}" ] || return 0
  if [ -f "$pgc_dir/data/postmaster.pid" ]; then
    pgc_as_pg "$pgc_bin/pg_ctl" -D "$pgc_dir/data" -m fast -w -t 60 stop >/dev/null 2>&1
  fi
  rm -rf "$pgc_dir"
  pgc_dir=""
}

# proc_ticks PID: the process's own CPU time (utime + stime) in clock ticks.
proc_ticks() {
  awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat" 2>/dev/null || echo 0
}

# cluster_ticks PID: the CPU time of the process PID (the postmaster) and of
# every process under it, in clock ticks: its own utime + stime, its
# cutime + cstime (every child it has reaped: backends that exited, with
# their own reaped children), and the same four counters of each live child.
cluster_ticks() {
  local p kids
  kids=$(cat /proc/"$1"/task/*/children 2>/dev/null)
  for p in "$1" $kids; do cat "/proc/$p/stat" 2>/dev/null; done |
    awk '{ sub(/^.*\) /, ""); t += $12 + $13 + $14 + $15 } END { print t + 0 }'
}

# peak_rss_kib PID: VmHWM of the process, in KiB.
peak_rss_kib() {
  awk '/^VmHWM:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0
}
