package integration

import (
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// replayWindow is the part of a recorded TestHistoryLostCommit run in
// which the old primary held commits its standby lacked: from the stall
// of its WAL senders to the new primary being writable.
func replayWindow(t *testing.T, f histFile) (from, to int64) {
	t.Helper()
	for _, e := range f.Events {
		switch {
		case e.What == "replication stalled":
			from = e.At
		case strings.HasPrefix(e.What, "failover: node"):
			to = e.At
		}
	}
	if from == 0 || to == 0 {
		t.Fatalf("%s: no stall and failover among the events %v", f.Test, f.Events)
	}
	return from, to
}

// withoutWindow is history less every answer given in [from, to]: the
// writes whose answer was lost stay, as may-or-may-not.
func withoutWindow(history []porcupine.Operation, from, to int64) []porcupine.Operation {
	var out []porcupine.Operation
	for _, op := range history {
		if op.Return >= from && op.Return <= to && op.Output.(histOut).outcome != outcomeUnknown {
			continue
		}
		out = append(out, op)
	}
	return out
}

// TestHistoryReplay replays histories the checker rejected, kept in
// testdata/history, and checks that it still rejects them, for the answer
// that was wrong. Both were recorded by TestHistoryLostCommit (the
// primary's commits waited for a standby that got nothing, each wait was
// cancelled, and the standby was promoted), before Berth confirmed its
// reads (ledger/internal/core/replication.go, "Reads that outlive a
// failover"); the fix is tested live by TestHistoryLostCommit and
// TestHistoryFailover.
// Issue 43's failure of TestHistoryFailover was of the first kind: a
// provider list answered a generation (73) that only writes whose answer
// was lost had made, on the old primary alone.
//
//   - lost-commit-read: Berth without confirmation. Provider
//     b3300000-...002 (index 1) was at generation 35 when replication stalled
//     (a PUT of its inventories answered 200 just before); during the
//     stall, reads answered 36, 37, 38, the generations of claims and
//     writes answered 503, committed on the old primary alone; after the
//     failover reads answered 35 again, and a PUT of its traits at 35
//     made another 36. The first answer no order explains is
//     GET /resource_providers?uuid=... answering 36.
//   - lost-commit-refusal: Berth that confirmed its reads, but not its
//     refusals. The first answer not explained is a PUT of traits
//     answered 409 during the stall, for a generation that only lost
//     commits had moved; the same run had DELETEs retried after a 503
//     answered 404 for allocations the failover brought back.
//
// In both, every other answer is explained: the history less the
// answers given while the old primary held commits its standby lacked
// (from the stall to the new primary; the writes whose answer was lost
// stay, as may-or-may-not) is linearizable, so the model is not what
// rejects them.
func TestHistoryReplay(t *testing.T) {
	for _, c := range []struct {
		file string
		rp   int
		// The first answer not explained on provider rp.
		kind, via, outcome string
		gen                int64
	}{
		{file: "lost-commit-read", rp: 1, kind: opReadGen, via: "GET /resource_providers?uuid=b3300000-0000-4000-8000-000000000002", gen: 36},
		{file: "lost-commit-refusal", rp: 0, kind: opTraits, via: "PUT /traits", outcome: outcomeConflict},
	} {
		t.Run(c.file, func(t *testing.T) {
			f, ops, err := loadHistory("testdata/history/" + c.file + ".json")
			if err != nil {
				t.Fatal(err)
			}
			model := histModel.ToModel()
			if res := porcupine.CheckOperationsTimeout(model, ops, time.Minute); res != porcupine.Illegal {
				t.Fatalf("the recorded history: %v, want Illegal", res)
			}
			from, to := replayWindow(t, f)
			bad, ok := firstUnexplained(providerOps(ops, c.rp))
			if !ok {
				t.Fatalf("provider %d: every answer explained", c.rp)
			}
			in, out := bad.Input.(histIn), bad.Output.(histOut)
			if in.kind != c.kind || in.via != c.via || out.outcome != c.outcome || (c.kind == opReadGen && out.gen != c.gen) {
				t.Errorf("provider %d: the first answer not explained is %s, want %s %s answering %q generation %d",
					c.rp, model.DescribeOperation(bad.Input, bad.Output), c.kind, c.via, c.outcome, c.gen)
			}
			if bad.Return < from || bad.Return > to {
				t.Errorf("provider %d: the first answer not explained came at %d ms, outside the stall and failover [%d, %d] ms",
					c.rp, bad.Return/1e6, from/1e6, to/1e6)
			}
			rest := withoutWindow(ops, from, to)
			if len(rest) == len(ops) {
				t.Fatal("no answer came while the old primary held what its standby lacked")
			}
			if res := porcupine.CheckOperationsTimeout(model, rest, time.Minute); res != porcupine.Ok {
				t.Errorf("the history less the %d answers given in [%d, %d] ms: %v, want Ok", len(ops)-len(rest), from/1e6, to/1e6, res)
			}
		})
	}
}
