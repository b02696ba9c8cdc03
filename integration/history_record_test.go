package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
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
	f := histFile{Test: r.t.Name(), Started: r.start, Events: r.events}
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
	head, err := json.Marshal(histFile{Test: f.Test, Started: f.Started, Events: f.Events})
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
