package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// A history the checker rejects is written to a file, so that it can be
// replayed (TestHistoryReplay): every operation as the checker had it,
// and the faults with when they happened, on the history's clock. The
// berthd processes' logs go to a sibling file. The directory is
// BERTH_HISTORY_DIR, or the system's temporary directory.

// histFile is a recorded history.
type histFile struct {
	Test    string      `json:"test"`
	Started time.Time   `json:"started"` // the wall clock at the history's 0
	Events  []histEvent `json:"events"`
	Spot    *spotFile   `json:"spot,omitempty"` // before Ops: marshal cuts the head's end
	Ops     []histOp    `json:"operations"`
}

// histEvent is a fault, or the end of one, at a time on the history's
// clock (ns).
type histEvent struct {
	At   int64  `json:"at"`
	What string `json:"what"`
}

// histOp is one operation: histIn and histOut with exported fields.
// Return is math.MaxInt64 for a write whose answer never came.
type histOp struct {
	Call   int64  `json:"call"`
	Return int64  `json:"return"`
	RP     int    `json:"rp"`
	Kind   string `json:"kind"`
	Via    string `json:"via"`
	Proc   int    `json:"proc"`
	Gen    int64  `json:"gen,omitempty"`
	Total  int64  `json:"total,omitempty"`
	Set    string `json:"set,omitempty"`
	Agg    string `json:"agg,omitempty"`

	Outcome  string `json:"outcome,omitempty"`
	Status   int    `json:"status"`
	OutGen   int64  `json:"out_gen,omitempty"`
	Used     int64  `json:"used,omitempty"`
	OutTotal int64  `json:"out_total,omitempty"`
	OutSet   string `json:"out_set,omitempty"`
	Member   bool   `json:"member,omitempty"`
}

func toHistOp(op porcupine.Operation) histOp {
	in, out := op.Input.(histIn), op.Output.(histOut)
	return histOp{Call: op.Call, Return: op.Return, RP: in.rp, Kind: in.kind, Via: in.via, Proc: in.proc,
		Gen: in.gen, Total: in.total, Set: in.set, Agg: in.agg,
		Outcome: out.outcome, Status: out.status, OutGen: out.gen, Used: out.used, OutTotal: out.total,
		OutSet: out.set, Member: out.member}
}

func (o histOp) operation() porcupine.Operation {
	return porcupine.Operation{Call: o.Call, Return: o.Return,
		Input: histIn{rp: o.RP, kind: o.Kind, via: o.Via, proc: o.Proc, gen: o.Gen, total: o.Total, set: o.Set, agg: o.Agg},
		Output: histOut{outcome: o.Outcome, status: o.Status, gen: o.OutGen, used: o.Used, total: o.OutTotal,
			set: o.OutSet, member: o.Member}}
}

// event records a fault on the history's clock.
func (r *histRig) event(format string, args ...any) {
	r.mu.Lock()
	r.events = append(r.events, histEvent{At: r.now(), What: fmt.Sprintf(format, args...)})
	r.mu.Unlock()
}

// save writes the history and the berthd logs, and returns the
// history's path.
func (r *histRig) save() (string, error) {
	dir := os.Getenv("BERTH_HISTORY_DIR")
	if dir == "" {
		dir = os.TempDir()
	}
	name := fmt.Sprintf("history-%s-%s", strings.ReplaceAll(r.t.Name(), "/", "_"), time.Now().Format("20060102-150405.000"))
	f := histFile{Test: r.t.Name(), Started: r.start, Events: r.events, Spot: r.spot.record()}
	for _, op := range r.ops {
		f.Ops = append(f.Ops, toHistOp(op))
	}
	raw, err := f.marshal()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+".json")
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		return "", err
	}
	var logs strings.Builder
	for i, b := range r.started {
		fmt.Fprintf(&logs, "=== berthd started %d (%s)\n%s\n", i, b.url, b.stderr.String())
	}
	return path, os.WriteFile(filepath.Join(dir, name+".log"), []byte(logs.String()), 0o644)
}

// marshal is f as JSON with one operation a line.
func (f histFile) marshal() ([]byte, error) {
	head, err := json.Marshal(histFile{Test: f.Test, Started: f.Started, Events: f.Events, Spot: f.Spot})
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Write(head[:len(head)-len(`"operations":null}`)])
	b.WriteString("\n\"operations\": [\n")
	for i, op := range f.Ops {
		line, err := json.Marshal(op)
		if err != nil {
			return nil, err
		}
		b.Write(line)
		if i < len(f.Ops)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("]}\n")
	return b.Bytes(), nil
}

// loadHistory reads a history that save wrote.
func loadHistory(path string) (histFile, []porcupine.Operation, error) {
	var f histFile
	raw, err := os.ReadFile(path)
	if err != nil {
		return f, nil, err
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		return f, nil, fmt.Errorf("%s: %w", path, err)
	}
	ops := make([]porcupine.Operation, len(f.Ops))
	for i, o := range f.Ops {
		ops[i] = o.operation()
	}
	return f, ops, nil
}

// spotFile is the second workload's record (history_spot_test.go): its
// consumers and gangs as their clients knew them, the victims answered
// (when, on the history's clock), and, once checked, the feed and what
// its hosts held.
type spotFile struct {
	Consumers []spotClaimRec           `json:"consumers"`
	Gangs     []spotGangRec            `json:"gangs"`
	Victims   map[string]spotVictimRec `json:"victims"`
	Feed      []spotEntry              `json:"feed"`
	Held      map[string]spotHeldRec   `json:"held"`
}

type spotClaimRec struct {
	Consumer    string `json:"consumer"`
	Priority    int64  `json:"priority"`
	Preemptible bool   `json:"preemptible,omitempty"`
	Slots       int64  `json:"slots"`
	State       string `json:"state"`
	RP          string `json:"rp,omitempty"`
	Gone404     bool   `json:"gone_404,omitempty"`
	Gang        int    `json:"gang"` // -1: a single claim
}

type spotGangRec struct {
	ID      int      `json:"id"`
	Members []string `json:"members"`
	Spread  bool     `json:"spread,omitempty"`
	State   string   `json:"state"`
	Rack    string   `json:"rack,omitempty"`
}

type spotVictimRec struct {
	By       string `json:"by"`
	Answered int64  `json:"answered"`
}

type spotHeldRec struct {
	RP   string `json:"rp"`
	Used int64  `json:"used"`
}

// record is s as a spotFile, nil for no s.
func (s *spotRig) record() *spotFile {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	f := &spotFile{Victims: map[string]spotVictimRec{}, Feed: s.feedAtEnd, Held: map[string]spotHeldRec{}}
	for _, c := range s.consumers {
		rec := spotClaimRec{Consumer: c.consumer, Priority: c.priority, Preemptible: c.preemptible, Slots: c.slots,
			State: c.state, RP: c.rp, Gone404: c.gone404, Gang: -1}
		if c.gang != nil {
			rec.Gang = c.gang.id
		}
		f.Consumers = append(f.Consumers, rec)
	}
	slices.SortFunc(f.Consumers, func(a, b spotClaimRec) int { return strings.Compare(a.Consumer, b.Consumer) })
	for _, g := range s.gangs {
		rec := spotGangRec{ID: g.id, Spread: g.spread, State: g.state, Rack: g.rack}
		for _, m := range g.members {
			rec.Members = append(rec.Members, m.consumer)
		}
		f.Gangs = append(f.Gangs, rec)
	}
	for v, pv := range s.victims {
		f.Victims[v] = spotVictimRec{By: pv.by.consumer, Answered: pv.answered}
	}
	for c, h := range s.heldAtEnd {
		f.Held[c] = spotHeldRec{RP: h.rp, Used: h.used}
	}
	return f
}
