# target.sh: helpers that scripts/bench.sh and scripts/scale.sh share, to be
# sourced. They start a Placement target on a fresh database of the
# PostgreSQL server at $BENCH_PG, and stop it again.
#
# Before the helpers are used, the sourcing script sets BENCH_PG and calls
# target_init, which exports PGUSER/PGPASSWORD/PGHOST/PGPORT for psql and the
# targets, picks BENCH_PORT (the first free port from 28778 unless set) and
# sets url. The helpers keep their state in pid (the target's process group)
# and db (its database).

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# target_init: split BENCH_PG (postgres://user[:pass]@host[:port]/db[?params])
# into libpq variables; DATABASE_URL for a target is BENCH_PG with its
# database replaced ($pg_prefix/DB$pg_params).
target_init() {
  local rest=${BENCH_PG#*://} auth="" hostport
  case "$rest" in *@*) auth=${rest%%@*}; rest=${rest#*@} ;; esac
  hostport=${rest%%/*}
  pg_params=""; case "$rest" in *\?*) pg_params="?${rest#*\?}" ;; esac
  export PGUSER=${auth%%:*}; PGUSER=${PGUSER:-postgres}
  case "$auth" in *:*) export PGPASSWORD=${auth#*:} ;; esac
  export PGHOST=${hostport%%:*}; PGHOST=${PGHOST:-127.0.0.1}
  export PGPORT=5432; case "$hostport" in *:*) PGPORT=${hostport##*:} ;; esac
  pg_prefix=${BENCH_PG%%://*}://${auth:+$auth@}$hostport
  if [ -z "${BENCH_PORT:-}" ]; then
    BENCH_PORT=28778
    while listening "$BENCH_PORT"; do BENCH_PORT=$((BENCH_PORT + 1)); done
  fi
  export PGOPTIONS="${PGOPTIONS:-} -c client_min_messages=warning"
  url="http://127.0.0.1:$BENCH_PORT"
  pid=""
  db=""
}

# start_devdb BIN DIR: a throwaway PostgreSQL cluster ("BIN devdb": fsync
# off, unix socket), its URL written to DIR/devdb.url and its log to
# DIR/devdb.log; sets BENCH_PG and devdb_pid (for the caller to stop).
start_devdb() {
  local bin=$1 dir=$2
  "$bin" devdb >"$dir/devdb.url" 2>"$dir/devdb.log" &
  devdb_pid=$!
  for _ in $(seq 600); do
    [ -s "$dir/devdb.url" ] && break
    if ! kill -0 "$devdb_pid" 2>/dev/null; then
      echo "$(basename "$0"): berthd devdb failed; see $dir/devdb.log" >&2; return 1
    fi
    sleep 0.1
  done
  BENCH_PG=$(head -n1 "$dir/devdb.url")
  [ -n "$BENCH_PG" ] || { echo "$(basename "$0"): PostgreSQL did not start in 60s; see $dir/devdb.log" >&2; return 1; }
}

# stop_target: SIGTERM to the target's process group, SIGKILL after 15s.
stop_target() {
  [ -n "$pid" ] || return 0
  kill -TERM -- "-$pid" 2>/dev/null
  for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
  kill -KILL -- "-$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  pid=""
}

drop_db() {
  [ -n "$db" ] || return 0
  psql "$BENCH_PG" -qX -c "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" >/dev/null 2>&1 ||
    echo "$(basename "$0"): could not drop database $db" >&2
  db=""
}

# create_db NAME: a fresh database NAME; sets db.
create_db() {
  db=$1
  psql "$BENCH_PG" -qX -c "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" -c "CREATE DATABASE \"$db\"" >/dev/null || { db=""; return 1; }
}

# launch CMD LOG: the target on database $db, in its own process group, its
# output to LOG; sets pid. It does not wait for the target to answer.
launch() {
  local cmd=$1 log=$2
  if listening "$BENCH_PORT"; then
    echo "$(basename "$0"): port $BENCH_PORT is taken; set BENCH_PORT" >&2; return 1
  fi
  PORT=$BENCH_PORT PGDATABASE=$db DATABASE_URL="$pg_prefix/$db$pg_params" \
    setsid sh -c "$cmd" >"$log" 2>&1 </dev/null &
  pid=$!
}

# start_target NAME CMD PHASE LOG: a fresh database and the target on it,
# waited for (up to 180s); sets pid and db.
start_target() {
  local name=$1 cmd=$2 phase=$3 log=$4
  create_db "bench_${name//[^a-zA-Z0-9]/_}_${phase}_$$" || return 1
  launch "$cmd" "$log" || { drop_db; return 1; }
  if ! "$load" wait --url "$url" --timeout 180s; then
    echo "$(basename "$0"): $name did not start for $phase; see $log" >&2
    stop_target; drop_db; return 1
  fi
}
