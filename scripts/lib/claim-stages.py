#!/usr/bin/env python3
"""claim-stages.py: berthd's CPU profile under POST /claims, by stage of a claim.

Usage: go tool pprof -traces CPU.pprof [CPU.pprof...] | scripts/lib/claim-stages.py [--ms-per-claim X]

Reads the stacks of "go tool pprof -traces" and puts each sample in the first
stage of STAGES (in order) one of whose patterns occurs in any frame of its
stack. The order does the work: the garbage collector's own work (background
marking, assists, sweeping) comes first, wherever it ran; then what is
specific (telemetry, shadows, the retry record, ...); then the handler's big
parts; then the request chain, innermost first (a sample in the policy
check's own work also has routeStep.serve, serveAPI and ServeHTTP on its
stack); then the HTTP server.
Allocation (mallocgc) counts in the stage that allocates. With
--ms-per-claim X (berthd's CPU per claim measured alongside), each stage's
share is also given in ms per claim.
"""
import re
import sys

# (stage, substrings of a frame). First match wins.
STAGES = [
    ("GC (marking, assists, sweeping)", ["runtime.gcBgMarkWorker", "runtime.gcAssistAlloc", "runtime.bgsweep",
                                         "runtime.bgscavenge", "runtime.gcStart", "runtime.deductSweepCredit",
                                         "runtime.sweepone", "runtime.gcMarkDone", "runtime.gcMarkTermination",
                                         "runtime.(*mheap).reclaim"]),
    ("telemetry: OTel spans and metrics", ["go.opentelemetry.io/", "berth/internal/telemetry/instrument.Start",
                                           "berth/internal/telemetry/instrument.Stage",
                                           "berth/internal/telemetry/instrument.End",
                                           "berth/internal/telemetry/instrument.ClaimDone",
                                           "berth/internal/telemetry/instrument.Candidates",
                                           "berth/claims.startClaim", "berth/claims.(*claimTrace)",
                                           "berth/claims.candidatesSpan", "httpapi.(*Server).startSpan",
                                           "httpapi.(*Server).endSpan",
                                           "httpapi.(*httpMeters)", "prometheus/client_golang"]),
    ("telemetry: request log (slog)", ["log/slog.", "berth/internal/telemetry/instrument.logHandler",
                                       "httpapi.(*Server).logRequest", "httpapi.logRequestPC"]),
    ("shadows", ["berth/claims/shadow.", "claims.(*Claimer).submitShadows"]),
    ("claim records: retry record (fingerprint, answer JSON)", ["claims.(*retryKey)", "claims.newRetryKey",
                                                                 "claims.fingerprint", "berth/ledger/claimrecords."]),
    ("quota", ["berth/claims/quota.", "claims.(*Claimer).quotaOf", "berth/ledger/quotas.",
               "resources.quotaArgsFor", "resources.usageLocksOf", "resources.(*Allocations).countQuota"]),
    ("snapshot: own writes applied, change notifications", ["snapshot.(*Cache).committed", "snapshot.(*Cache).applyOwnWrites",
                                                             "snapshot.(*Cache).markOwn", "snapshot.(*notifier)",
                                                             "snapshot.(*Cache).sendNotifications", "snapshot.(*Cache).invalidate",
                                                             "snapshot.(*Cache).reload", "snapshot.(*Cache).loadSome",
                                                             "resources.(*Allocations).notifyWrites",
                                                             "resources.(*Allocations).notifyOwnWrite", "core.(*Core).Notify"]),
    # A direct ranking's answer builds the views of the candidates it
    # names (claims.keptViews, from claims.(*Claimer).result).
    ("candidates: scheduler views of the sample (claims.views)", ["berth/claims.keptViews", "claims.(*viewBuilder)"]),
    ("answer: result and alternates", ["claims.(*Claimer).result", "claims.(*selection).option"]),
    ("write pipeline", ["resources.(*Allocations).writeBatch", "resources.(*Allocations).sendBatchWrite",
                        "resources.(*Allocations).sendClaimPipeline", "resources.(*Allocations).sendWrites",
                        "resources.(*Allocations).sendFast", "resources.(*Allocations).claimFast",
                        "resources.(*Allocations).queueClaim", "core.(*GroupWriter", "core.StartGroupWriter",
                        "resources.(*Allocations).ClaimWrite", "resources.(*Allocations).allocationsReplace",
                        "resources.fastClaimOf", "claims.(*writer).run"]),
    # The roots of a direct ranking's kept candidates are set from
    # inside scheduler.(*Policy).RankDirect (its build callback): before rank.
    ("candidates: scheduler views of the sample (claims.views)", ["berth/claims.keptRoots", "claims.(*selection).rankDirect.func",
                                                                 ".keptViews.func", "claims.(*viewBuilder)",
                                                                 "claims.flatRoots"]),
    ("rank (scheduler)", ["berth/scheduler."]),
    ("candidates: scheduler views of the sample (claims.views)", ["claims.views", "claims.schedulerCandidates",
                                                                 "claims.mappings", "berth/claims/cloud."]),
    ("candidates: engine (sample of 100)", ["berth/ledger/engine."]),
    ("candidates: snapshot, names, selection", ["claims.(*Claimer).selectCandidates", "claims.(*Claimer).resolveParams",
                                                "claims.(*Claimer).snapshot", "snapshot.(*Cache).RankingSnapshot",
                                                "snapshot.(*Cache).snapshot", "snapshot.(*Cache).get",
                                                "claims.(*Claimer).resolvePolicy", "berth/claims/catalog.",
                                                "claims.(*Claimer).explainCapacity"]),
    ("claim: rest (trace, refusals ring, Claim)", ["berth/claims."]),
    ("decode: body read", ["wire.(*Bodies).Read", "wire.(*Bodies).readUnsized", "wire.readAll"]),
    ("decode: JSON and schema", ["wire.DecodeJSON", "wire.parseJSON", "wire.(*Bodies).Decode",
                                 "berth/internal/jsonschema.", "berth/internal/jsonerror."]),
    ("decode: selection to candidates params", ["placement.CandidateQuery.FromSelection", "placement.applyGroupPolicy",
                                                "berthapi.(*Claims).paramsOf", "berthapi.(*claimBody).selection"]),
    ("encode: answer JSON and write", ["wire.WriteJSON", "wire.encodeJSON", "wire.WriteAppended",
                                       "berthapi.claimResponse", "berthapi.allocationsJSON", "berthapi.StepsJSON"]),
    ("handler: rest", ["berthapi.(*Claims)."]),
    ("auth and policy", ["httpapi.(*Server).authorize", "berth/authz.", "httpapi.credentialsOf",
                         "httpapi.(*Server).credentials", "httpapi.noAuth2Credentials", "httpapi.callerRules", "httpapi.policyTarget",
                         "berth/internal/keystone."]),
    ("HTTP middleware: admission, routing, version, deadline, request id",
     ["admission.(*Slots)", "admission.(*BodyBudget)", "labstack/echo", "httpapi.(*request)",
      "httpapi.checkContentHeaders", "httpapi.setVersionHeaders", "httpapi.versionGate", "httpapi.requestID",
      "httpapi.requireJSONAccept", "httpapi.(*routeStep).serve", "httpapi.(*Server).serveAPI", "httpapi.(*Server).negotiateVersion",
      "httpapi.(*Server).consoleChain", "httpapi.(*Server).withDeadline", "httpapi.(*Server).ServeHTTP"]),
    ("HTTP server: read request, write response, connection I/O", ["net/http.", "admission.(*contentLengthConn)",
                                                                   "admission.(*contentLengthListener)"]),
    ("database pool and other goroutines", ["jackc/pgx", "berth/ledger."]),
    ("Go scheduler, netpoll, other runtime", ["runtime."]),
]

# Within the write pipeline: what of it is pgx encoding the arguments, the
# network, reading the answers.
WRITE_PARTS = [
    ("pgx: encode arguments", ["pgx/v5.(*ExtendedQueryBuilder)", "pgtype.(*Map).Encode", "pgtype.(*encodePlan",
                               "pgx/v5.(*Batch).Queue", "resources.queueFastWrite", "resources.queueBatchWrite",
                               "resources.batchArgs", "resources.planAndLock", "core.(*pipe).encode",
                               "core.(*pipe).appendParam"]),
    ("network (system calls)", ["syscall.", "internal/poll."]),
    ("pgx: read answers", ["pgx/v5.(*batchResults)", "pgx/v5.(*baseRows)", "pgx/v5.(*connRow)", "pgtype.",
                           "core.(*pipeRows)", "core.pipeRow", "resources.(*writeAnswer)",
                           "pgproto3.", "resources.readFastWrite", "resources.readBatchWrite"]),
    ("pgx: protocol, rest", ["jackc/pgx"]),
    ("ledger: batching and its own work", [""]),
]

UNIT = {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3, "min": 6e4, "h": 3.6e6}


def parse(lines):
    """Yields (value in ms, [frames leaf first])."""
    value, frames = None, []
    for line in lines:
        if line.startswith("-----------+"):
            if value is not None:
                yield value, frames
            value, frames = None, []
            continue
        m = re.match(r"^\s*([0-9.]+)(ns|us|µs|ms|s|min|h)\s+(\S.*)$", line)
        if m and value is None:
            value = float(m.group(1)) * UNIT[m.group(2)]
            frames = [m.group(3).strip()]
        elif value is not None and line.strip():
            frames.append(line.strip())
    if value is not None:
        yield value, frames


def classify(frames, rules):
    for name, pats in rules:
        for f in frames:
            for p in pats:
                if p in f:
                    return name
    return "unclassified"


def main():
    per_claim = None
    if len(sys.argv) == 3 and sys.argv[1] == "--ms-per-claim":
        per_claim = float(sys.argv[2])
    totals, parts, total = {}, {}, 0.0
    for v, frames in parse(sys.stdin):
        st = classify(frames, STAGES)
        totals[st] = totals.get(st, 0.0) + v
        if st == "write pipeline":
            pt = classify(frames, WRITE_PARTS)
            parts[pt] = parts.get(pt, 0.0) + v
        total += v
    if total == 0:
        print("no samples")
        return 1
    print(f"{total / 1000:.2f} s of samples")
    head = "| stage | share of berthd CPU |" + (" ms per claim |" if per_claim else "")
    print(head)
    print("|---|---|" + ("---|" if per_claim else ""))
    for st, v in sorted(totals.items(), key=lambda kv: -kv[1]):
        row = f"| {st} | {100 * v / total:.1f}% |"
        if per_claim:
            row += f" {per_claim * v / total:.3f} |"
        print(row)
        if st == "write pipeline":
            for pt, pv in sorted(parts.items(), key=lambda kv: -kv[1]):
                row = f"| &nbsp;&nbsp;of which {pt} | {100 * pv / total:.1f}% |"
                if per_claim:
                    row += f" {per_claim * pv / total:.3f} |"
                print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
