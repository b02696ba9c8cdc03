#!/usr/bin/env python3
"""pg-stages.py: PostgreSQL's CPU under POST /claims, by kind of work.

Usage: perf script -i PERF.data | scripts/lib/pg-stages.py [--ms-per-claim X]

Reads the call stacks of "perf script" (a "perf record -g" of every process
of the cluster: scripts/claim-profile.sh --perf) and puts each sample in the
first kind of KINDS one of whose function names occurs in its stack. The
order does the work: what a trigger runs (the foreign keys' checks, the
change log's PL/pgSQL) counts as the trigger, whatever it executes; the
executor's start and end before what runs the plan. With --ms-per-claim X
(PostgreSQL's CPU per claim measured alongside), each share is also given in
ms per claim. A pattern that is a tuple matches a stack that has all of its
names (transition tables: a tuple stored while a trigger event is saved).
Functions PostgreSQL keeps static have no name in perf's view; their samples
count by their named callers.
"""
import re
import sys

KINDS = [
    ("change-log triggers (PL/pgSQL, transition tables)", ["plpgsql_", "MakeTransitionCaptureState",
                                                            ("AfterTriggerSaveEvent", "tuplestore_")]),
    ("foreign-key checks (RI triggers)", ["RI_FKey_", "ri_PerformCheck", "SPI_execute_snapshot", "AfterTriggerEndQuery",
                                          "AfterTriggerSaveEvent"]),
    ("JSON input (jsonb of requests, results, properties)", ["jsonb_recv", "jsonb_in", "pg_parse_json", "json_lex",
                                                             "jsonb_", "JsonbValue", "pushJsonbValue"]),
    ("TOAST compression (rows over 2 kB)", ["toast_", "pglz_"]),
    ("executor start (plan set-up)", ["standard_ExecutorStart", "ExecInitNode", "InitPlan", "ExecInit"]),
    ("executor end (plan tear-down)", ["standard_ExecutorEnd", "ExecEndNode", "FreeExecutorState", "ExecEnd"]),
    ("commit and WAL flush", ["CommitTransaction", "RecordTransactionCommit", "XLogFlush", "issue_xlog_fsync",
                              "XLogWrite", "AtEOXact", "PreCommit_", "AtCommit_"]),
    ("notifications (pg_notify)", ["Async_Notify", "pg_notify", "asyncQueue", "ProcessCompletedNotifies"]),
    ("index inserts", ["ExecInsertIndexTuples", "btinsert", "_bt_doinsert", "index_insert"]),
    ("row writes (heap insert, update, lock)", ["heap_insert", "heap_update", "heap_lock_tuple", "heapam_tuple_",
                                                "ExecInsert", "ExecUpdate", "ExecLockRows", "RelationGetBufferForTuple"]),
    ("index lookups and row fetches", ["index_getnext", "index_fetch_heap", "_bt_search", "_bt_first", "_bt_next",
                                       "ExecIndexScan", "ExecIndexOnlyScan", "heap_hot_search", "index_beginscan",
                                       "index_rescan"]),
    ("executor: expressions, joins, sorts, aggregates, CTEs", ["standard_ExecutorRun", "ExecutorRun", "ExecScan",
                                                               "ExecAgg", "ExecSort", "tuplesort", "ExecEvalExpr",
                                                               "ExecInterpExpr"]),
    ("protocol: parse, bind, messages", ["exec_bind_message", "exec_parse_message", "exec_execute_message",
                                         "exec_describe", "exec_simple_query", "pq_", "secure_read", "secure_write",
                                         "ReadCommand", "SocketBackend", "printtup", "SendRowDescription",
                                         "BeginCommand", "EndCommand", "ReadyForQuery"]),
    ("transaction start, snapshots, locks", ["StartTransaction", "GetSnapshotData", "GetTransactionSnapshot",
                                             "LockAcquire", "LockRelease", "LockRelationOid", "AcquireExecutorLocks",
                                             "RevalidateCachedQuery", "GetCachedPlan"]),
    ("backend: other", ["PostgresMain"]),
    ("autovacuum", ["AutoVacWorkerMain", "do_autovacuum"]),
    ("WAL writer, checkpointer, background writer", ["WalWriterMain", "CheckpointerMain", "BackgroundWriterMain"]),
    ("kernel (scheduling, interrupts) and unnamed", [""]),
]


def stacks(lines):
    frames = []
    for line in lines:
        if not line.strip():
            if frames:
                yield frames
            frames = []
            continue
        if line[0] not in " \t":
            frames = []
            continue
        m = re.match(r"^\s+[0-9a-f]+\s+(\S+)", line)
        if m:
            sym = m.group(1)
            sym = sym.split("+0x")[0]
            frames.append(sym)
    if frames:
        yield frames


def main():
    per_claim = None
    if len(sys.argv) == 3 and sys.argv[1] == "--ms-per-claim":
        per_claim = float(sys.argv[2])
    counts, total = {}, 0
    for frames in stacks(sys.stdin):
        kind = None
        for name, pats in KINDS:
            if any(all(any(q in f for f in frames) for q in (p if isinstance(p, tuple) else (p,))) for p in pats):
                kind = name
                break
        counts[kind] = counts.get(kind, 0) + 1
        total += 1
    if total == 0:
        print("no samples")
        return 1
    print(f"{total} samples")
    print("| kind of work | share of PostgreSQL CPU |" + (" ms per claim |" if per_claim else ""))
    print("|---|---|" + ("---|" if per_claim else ""))
    for k, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        row = f"| {k} | {100 * n / total:.1f}% |"
        if per_claim:
            row += f" {per_claim * n / total:.3f} |"
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
