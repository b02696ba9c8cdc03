package scriptlet

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/scheduler"
)

// fuzzFragments are the statements FuzzScriptlet builds programs from:
// each grows or combines the variables l (a list), s (a string), t (a
// tuple), d (a dict), n (an int) the way the probes of issue 14 did.
var fuzzFragments = []string{
	"l = l + l", "l += l", "l.extend(l)", "l = l * 7", "l = [l] * 100", "l = list(range(n))", "l = sorted(l)",
	"l = l[::-1]", "l = [x for x in l]", "l.append(l)", "l = [s] * 1000",
	"s = s + s", "s += s", "s = s * 9", "s = str(l)", "s = \"%s%s\" % (l, d)", "s = \",\".join([s] * 100)",
	"s = s.replace(\"x\", s)", "s = \"{}{}{}\".format(s, s, t)", "s = repr(t)", "log_info(s, l)",
	"t = (t, t)", "t = t + t", "t = t * 5", "t = tuple(l)", "t = struct(a = t, b = t)",
	"d[len(d)] = l", "d = dict([(i, s) for i in range(n)])", "d.update(d)", "x = d.items()",
	"n = n * n", "n = n << 500", "n = n + 1", "n = int(s[:100] or \"1\")", "n = len(l) + len(s)",
	"x = l == l", "x = t in d", "x = hash(t)", "x = max(l)", "x = s in s",
	"for i in range(n):\n        l.append(i)",
	"for i in range(1000):\n        s += \"x\"",
	"if len(l) > 3:\n        l = l[1:]",
}

// fuzzProgram builds a scriptlet from data: the first byte chooses raw
// source (odd) or fragments (even: each further byte picks one).
func fuzzProgram(data []byte) string {
	if len(data) > 0 && data[0]%2 == 1 {
		return string(data[1:])
	}
	var b strings.Builder
	b.WriteString("def instance_placement(request, candidate_members):\n")
	b.WriteString("    l = [1, 2, 3]\n    s = \"xyz\"\n    t = (1, \"a\")\n    d = {}\n    n = 7\n    x = None\n")
	if len(data) > 0 {
		data = data[1:]
	}
	for _, c := range data {
		b.WriteString("    " + fuzzFragments[int(c)%len(fuzzFragments)] + "\n")
	}
	return b.String()
}

// FuzzScriptlet runs random scriptlets under small limits: none may crash
// the process, run past its deadline by more than a margin, or allocate
// much more than its memory budget (the process's allocation counter,
// with an allowance for the values built one element per step).
func FuzzScriptlet(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{0, 11, 12, 12, 12, 12, 12, 12, 12})
	f.Add([]byte{0, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 21, 37})
	f.Add([]byte{0, 4, 4, 4, 13, 35, 40})
	f.Add(append([]byte{1}, "def instance_placement(request, candidate_members):\n    x = [None] * ((1<<30) - 1)\n"...))
	f.Add(append([]byte{1}, "x = \"x\" * ((1<<30) - 1)\ndef instance_placement(r, c):\n    pass\n"...))
	const (
		steps   = 200_000
		alloc   = 8 << 20
		timeout = 100 * time.Millisecond
		margin  = 2 * time.Second // a loaded, shared machine; before the sandbox, probes ran 10 s over
	)
	f.Fuzz(func(t *testing.T, data []byte) {
		src := fuzzProgram(data)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		prog, err := Compile("fuzz", []byte(src))
		compiled := time.Since(start)
		if err != nil {
			// The top level ran under the default limits.
			if compiled > DefaultTimeout+margin {
				t.Fatalf("compiling took %s", compiled)
			}
			return
		}
		if !prog.HasPlacement() {
			return
		}
		res := &scripts{named: map[string]*Program{}, def: prog}
		p, err := scheduler.NewPolicy(scheduler.PolicyConfig{}, nil, NewRuntime(res, Limits{MaxSteps: steps, MaxAlloc: alloc, Timeout: timeout, OnError: OnErrorRefuse}))
		if err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		_, _ = p.Rank(t.Context(), &scheduler.Request{Data: fixData()}, threeCands())
		if took := time.Since(start); took > timeout+margin {
			t.Fatalf("ran %s, deadline %s:\n%s", took, timeout, src)
		}
		runtime.ReadMemStats(&after)
		// The top level may use the default budget; the run its own;
		// plus up to ~200 bytes a step for what is built a step at a time.
		bound := uint64(DefaultMaxAlloc + alloc + 200*(DefaultSteps+steps))
		if got := after.TotalAlloc - before.TotalAlloc; got > 2*bound {
			t.Fatalf("allocated %d bytes, bound %d:\n%s", got, bound, src)
		}
	})
}
