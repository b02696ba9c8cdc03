package scriptlet

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/scheduler"
)

// placementBody is a scriptlet whose instance_placement runs body.
func placementBody(body string) string {
	return "def instance_placement(request, candidate_members):\n    " + strings.ReplaceAll(body, "\n", "\n    ") + "\n"
}

// runProbe runs src's instance_placement under limits (refusing on
// failure) and returns its error, how long it took and how many bytes
// the process allocated meanwhile.
func runProbe(t *testing.T, src string, limits Limits) (error, time.Duration, uint64) {
	t.Helper()
	limits.OnError = OnErrorRefuse
	if limits.Timeout == 0 {
		// The probes test the budgets; on a loaded machine (or under
		// -race) the default deadline could come first.
		limits.Timeout = time.Minute
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, err := rankWith(t, `{}`, src, limits, &scheduler.Request{Data: fixData()}, threeCands())
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	return err, took, after.TotalAlloc - before.TotalAlloc
}

// anyLimit is a probe that may hit any limit first (the step budget, the
// memory budget, or on a loaded machine the deadline).
const anyLimit = "steps or memory"

// TestSandboxProbes are the attacks of issue 14 and their relatives: each
// used to allocate gigabytes (or crash the process) or run for seconds
// past the deadline in one interpreter step; each must now fail with a
// limit error, allocating a bounded amount. (The bound on time is loose:
// the machine is shared; before, these ran for 10 s or died.)
func TestSandboxProbes(t *testing.T) {
	tests := []struct {
		name, body string
		limit      string
	}{
		{"list repeat 1<<30", `x = [None] * ((1<<30) - 1)`, LimitMemory},
		{"tuple repeat 1<<30", `x = (None,) * ((1<<30) - 1)`, LimitMemory},
		{"string repeat 1 GB", `x = "x" * ((1<<30) - 1)`, LimitMemory},
		{"list repeat 1e8", `x = [None] * 100000000`, LimitMemory},
		{"sorted range", `x = sorted(list(range(30000000)))`, LimitMemory},
		{"list(range) huge", `x = list(range(1 << 30))`, LimitMemory},
		{"sorted range within memory", `x = sorted(range(3000000))`, LimitSteps},
		{"list concat doubling", "l = [None] * 1000\nfor i in range(40):\n    l = l + l", anyLimit},
		{"list += doubling", "l = [None] * 1000\nfor i in range(40):\n    l += l", anyLimit},
		{"list += range", "l = []\nl += range(1 << 30)", LimitMemory},
		{"extend range", "l = []\nl.extend(range(1 << 30))", LimitMemory},
		{"spread range", "def f(*a):\n    return len(a)\nx = f(*range(1 << 30))", LimitMemory},
		{"extend doubling", "l = [None] * 1000\nfor i in range(40):\n    l.extend(l)", anyLimit},
		{"string concat doubling", "s = \"x\" * 1000\nfor i in range(40):\n    s = s + s", anyLimit},
		{"string += doubling", "s = \"x\" * 1000\nfor i in range(40):\n    s += s", anyLimit},
		{"int squaring", "x = 3\nfor i in range(40):\n    x = x * x", LimitMemory},
		{"int shift", "x = 1\nfor i in range(100000):\n    x = x << 500", LimitMemory},
		{"tuple nesting then hash", "t = (1,)\nfor i in range(64):\n    t = (t, t)\nx = {t: 1}", LimitMemory},
		{"struct nesting", "t = struct(a = 1)\nfor i in range(64):\n    t = struct(a = t, b = t)", LimitMemory},
		{"str of shared list", "b = list(range(100000))\nl = [b] * 1000\ns = str(l)", LimitSteps},
		{"format of shared list", "b = list(range(100000))\nl = [b] * 1000\ns = \"%s\" % (l,)", LimitSteps},
		{"join", "s = \"x\" * 100000\nl = [s] * 100000\nx = \",\".join(l)", anyLimit},
		{"replace", "s = \"a\" * 1000000\nx = s.replace(\"a\", \"b\" * 1000)", anyLimit},
		{"compare shared lists", "b = list(range(100000))\nx = [b] * 100\ny = [list(b)] * 100\nz = x == y", LimitSteps},
		{"slice copies", "l = list(range(100000))\nr = []\nfor i in range(10000):\n    r.append(l[::-1])", anyLimit},
		{"log_info of a huge value", "b = list(range(100000))\nlog_info([b] * 1000)", LimitSteps},
		{"int of long string", `x = int("9" * 1000000)`, LimitMemory},
		{"dict of a big range", `d = dict([(i, i) for i in range(10)] * 10000000)`, LimitMemory},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err, took, alloc := runProbe(t, placementBody(tt.body), Limits{})
			var lim *LimitError
			if !errors.As(err, &lim) || (lim.Limit != tt.limit && tt.limit != anyLimit) {
				t.Fatalf("got %v, want a %s limit", err, tt.limit)
			}
			if alloc > 4*DefaultMaxAlloc {
				t.Errorf("allocated %d bytes, budget %d", alloc, DefaultMaxAlloc)
			}
			if took > 10*time.Second { // loose: a shared machine; before, these ran 10 s or died
				t.Errorf("took %s", took)
			}
			t.Logf("%s after %s, %d MB allocated: %v", tt.limit, took.Round(time.Millisecond), alloc>>20, err)
		})
	}
}

// TestSandboxTopLevel: the default scriptlet's top level runs on every
// replica at every reload; it is bounded as well and fails to compile.
func TestSandboxTopLevel(t *testing.T) {
	_, err := Compile("default", []byte("x = [None] * ((1<<30) - 1)\ndef instance_placement(request, candidate_members):\n    pass\n"))
	var ce *CompileError
	if !errors.As(err, &ce) || !strings.Contains(ce.Msg, "memory budget") || ce.Line != 1 {
		t.Fatalf("got %v", err)
	}
}

// TestSandboxDeadline: with budgets too large to matter, the deadline
// still stops a scriptlet whose every step is as big as the budgets let
// it be.
func TestSandboxDeadline(t *testing.T) {
	body := "l = list(range(100000))\nfor i in range(1000000000):\n    x = sorted(l)"
	err, took, _ := runProbe(t, placementBody(body), Limits{MaxSteps: 1 << 62, MaxAlloc: 1 << 62, Timeout: 200 * time.Millisecond})
	var lim *LimitError
	if !errors.As(err, &lim) || lim.Limit != LimitDeadline {
		t.Fatalf("got %v", err)
	}
	if took > 5*time.Second {
		t.Errorf("took %s", took)
	}
	t.Logf("deadline after %s", took)
}

// TestSandboxSemantics: the rewrite keeps what the operators mean.
func TestSandboxSemantics(t *testing.T) {
	body := `l = [1, 2]
alias = l
l += [3]
d = {"a": 1}
d["a"] += 2
t = 1, 2
a, b = t
a, b = b, a
s = "hello"
def va(*args, **kw):
    return args, kw
def f(x, y = 2 * 3):
    return x + y
log_info(alias, d, t, a, b, s[1:3], s[::-1], l[::-1], l[-2:], (1, 2, 3)[1:])
log_info(sorted(["b", "a", "c"], key = str), "%s-%d" % ("x", 3), "{}+{}".format(1, 2), va(1, k = 4, *[2, 3]), f(1))
log_info([1] < [2], (1, 2) == (1, 2), 2 in l, "ell" in s, 3 not in {"x": 1}, 7 // 2, 7 % 3, 1 << 3, -7 / 2)
log_info([x * 2 for x in l if x > 1], {k: v for k, v in d.items()}, ",".join(["a", "b"]), "abc".replace("b", "xx"), len(l))
x = [0]
x[0] += 5
log_info(x, 2 * [1], [1] * 2, "ab" * 2, 10**0 if False else 1)`
	body = strings.ReplaceAll(body, "10**0", "10")
	r, err := rankWith(t, `{}`, placementBody(body), Limits{OnError: OnErrorRefuse}, &scheduler.Request{}, threeCands())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`[1, 2, 3] {"a": 3} (1, 2) 2 1 el olleh [3, 2, 1] [2, 3] (2, 3)`,
		`["a", "b", "c"] x-3 1+2 ((1, 2, 3), {"k": 4}) 7`,
		`True True True True True 3 1 8 -3.5`,
		`[4, 6] {"a": 3} a,b axxc 3`,
		`[5] [1, 1] [1, 1] abab 1`,
	}
	if len(r.Log) != len(want) {
		t.Fatalf("log %+v", r.Log)
	}
	for i, w := range want {
		if r.Log[i].Message != w {
			t.Errorf("line %d: %q, want %q", i, r.Log[i].Message, w)
		}
	}
	// A frozen list stays frozen through +=.
	_, err = rankWith(t, `{}`, placementBody("t = candidate_members[0].traits\nt += [1]"), Limits{OnError: OnErrorRefuse}, &scheduler.Request{}, threeCands())
	if err == nil || !strings.Contains(err.Error(), "frozen") {
		t.Errorf("frozen: %v", err)
	}
	// An augmented assignment whose target calls a function would be
	// evaluated twice: refused at compile time.
	_, err = Compile("t", []byte(placementBody("l = [[0]]\nl[len(l) - 1][0] += 1")))
	var ce *CompileError
	if !errors.As(err, &ce) || !strings.Contains(ce.Msg, "augmented assignment") || ce.Line != 3 {
		t.Errorf("aug with call: %v", err)
	}
}

// TestSandboxLog: a log_info loop is bounded, and says what it dropped.
func TestSandboxLog(t *testing.T) {
	body := "for i in range(100000):\n    log_info(\"line\", i, \"x\" * 1000)"
	// (The loop also runs out of memory; ignored, the log is kept.)
	r, err := rankWith(t, `{}`, placementBody(body), Limits{MaxSteps: 10_000_000, Timeout: time.Minute, OnError: OnErrorIgnore}, &scheduler.Request{}, threeCands())
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, l := range r.Log {
		total += len(l.Message)
	}
	last := r.Log[len(r.Log)-1]
	if len(r.Log) > DefaultMaxLogLines || total > DefaultMaxLogBytes+2048 ||
		!strings.Contains(last.Message, "scriptlet log full") || !strings.Contains(last.Message, "more lines dropped") {
		t.Fatalf("%d lines, %d bytes, last %q", len(r.Log), total, last.Message)
	}
	t.Logf("%d lines, %d bytes, last %q", len(r.Log), total, last.Message)
}

// TestScriptletFailOpen: a scriptlet that fails (an error or a limit)
// refuses the claim by default, as LXD's does; under OnErrorIgnore it
// does not take claims down: the claim is ranked as if it were not
// there, counted and logged; an explicit refusal always refuses.
func TestScriptletFailOpen(t *testing.T) {
	var m Metrics
	var logged []string
	m.OnFailure = func(s RunStats, suppressed uint64) { logged = append(logged, s.Outcome+": "+s.Error) }
	oom := placementBody("set_target(\"node3\")\nx = [None] * ((1<<30) - 1)")
	var refused *scheduler.RefusedError
	if _, err := rankWith(t, `{}`, oom, Limits{}, &scheduler.Request{}, threeCands()); !errors.As(err, &refused) ||
		!strings.Contains(err.Error(), "memory budget") {
		t.Fatalf("default: %v, want a refusal", err)
	}
	for i := range 5 {
		r, err := rankWith(t, `{}`, oom, Limits{Metrics: &m, OnError: OnErrorIgnore}, &scheduler.Request{}, threeCands())
		if err != nil || roots(r) != "uuid-1,node2,node3" || r.Chosen || len(r.Log) != 1 ||
			!strings.Contains(r.Log[0].Message, "scriptlet \"(default)\" failed and was ignored") || !strings.Contains(r.Log[0].Message, "memory budget") {
			t.Fatalf("run %d: %v %+v", i, err, r)
		}
	}
	if m.MemoryLimit.Load() != 5 || m.Ignored.Load() != 5 || len(logged) != 1 || !strings.HasPrefix(logged[0], "limit_memory: ") {
		t.Errorf("memory %d ignored %d logged %q", m.MemoryLimit.Load(), m.Ignored.Load(), logged)
	}
	// A filter that fails on some candidates keeps them.
	res := &scripts{named: map[string]*Program{"f": compile(t, "def filter(request, candidate):\n    return {\"node3\": False}[candidate.name]\n")}}
	pc, err := scheduler.ParsePolicyConfig([]byte(`{"filters": [{"name": "starlark:f"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := scheduler.NewPolicy(pc, nil, NewRuntime(res, Limits{OnError: OnErrorIgnore}))
	if err != nil {
		t.Fatal(err)
	}
	r, err := p.Rank(t.Context(), &scheduler.Request{}, threeCands())
	if err != nil || roots(r) != "uuid-1,node2" || len(r.Log) != 1 ||
		!strings.Contains(r.Log[0].Message, "starlark:f failed on 2 calls and was ignored (the candidates it failed on were kept)") {
		t.Errorf("filter: %v %+v", err, r)
	}
	// Explicit refusals still refuse.
	_, err = rankWith(t, `{}`, placementBody("fail(\"no\")"), Limits{OnError: OnErrorIgnore}, &scheduler.Request{}, threeCands())
	if !errors.As(err, &refused) || refused.Reason != "no" {
		t.Errorf("fail: %v", err)
	}
	// A huge refusal is cut.
	_, err = rankWith(t, `{}`, placementBody("return \"x\" * 1000000"), Limits{}, &scheduler.Request{}, threeCands())
	if !errors.As(err, &refused) || len(refused.Reason) > 2*maxMessageBytes {
		t.Errorf("long refusal: %d bytes", len(err.Error()))
	}
}

// TestCheckScriptlet: storing a scriptlet runs it once on synthetic data.
func TestCheckScriptlet(t *testing.T) {
	ok := []string{
		placementBody("pass"),
		placementBody("if request.name == \"foo\":\n    return \"Invalid name\""),
		placementBody("x = request.properties[\"missing\"]"), // fails on synthetic data only
		"def filter(request, candidate):\n    return candidate.inventories[\"VCPU\"].free > 0\n" +
			"def weigh(request, candidate):\n    return len(get_instances(location = candidate.name))\n",
	}
	for _, src := range ok {
		if err := Check("s", []byte(src), Limits{}); err != nil {
			t.Errorf("%q: %v", src, err)
		}
	}
	bad := map[string]string{
		placementBody("x = [None] * 100000000"):                                    LimitMemory,
		placementBody("for i in range(1 << 40):\n    pass"):                        LimitSteps,
		"def weigh(request, candidate):\n    return len(sorted(range(3000000)))\n": LimitSteps,
	}
	for src, limit := range bad {
		// A long deadline: on a loaded machine (or under -race) the
		// default one could come before the budgets.
		err := Check("s", []byte(src), Limits{Timeout: time.Minute})
		var lim *LimitError
		if !errors.As(err, &lim) || lim.Limit != limit {
			t.Errorf("%q: %v, want a %s limit", src, err, limit)
		}
	}
	// The deadline counts too.
	err := Check("s", []byte(placementBody("for i in range(1 << 40):\n    pass")), Limits{MaxSteps: 1 << 62, Timeout: 50 * time.Millisecond})
	var lim *LimitError
	if !errors.As(err, &lim) || lim.Limit != LimitDeadline {
		t.Errorf("deadline: %v", err)
	}
	var ce *CompileError
	if err := Check("s", []byte("def instance_placement(:"), Limits{}); !errors.As(err, &ce) {
		t.Errorf("syntax: %v", err)
	}
}

// TestSandboxCycles: comparing a list that contains itself is refused
// (Starlark would recurse to its depth limit, exponentially).
func TestSandboxCycles(t *testing.T) {
	err, _, _ := runProbe(t, placementBody("l = [1]\nl.append(l)\nl = [l] * 100\nx = l == l"), Limits{})
	var lim *LimitError
	if !errors.As(err, &lim) || lim.Limit != LimitSteps {
		t.Fatalf("got %v", err)
	}
	// Printing one is fine.
	r, err := rankWith(t, `{}`, placementBody("l = [1]\nl.append(l)\nlog_info(l)"), Limits{OnError: OnErrorRefuse}, &scheduler.Request{}, threeCands())
	if err != nil || r.Log[0].Message != "[1, [...]]" {
		t.Fatalf("%v %v", err, r.Log)
	}
}
