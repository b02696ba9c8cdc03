package berthapi_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/internal/fault"
)

// TestScriptletSandboxAPI replays the probes of issue 14 over HTTP: a
// scriptlet that would take gigabytes is refused when stored (400, not a
// dead server), and dry runs of the others end with a bounded answer.
func TestScriptletSandboxAPI(t *testing.T) {
	s, store := newSchedulingServer(t)
	seedComputes(t, store, 2)
	// A long deadline: these probes test the budgets, which a loaded
	// machine (or -race) must not turn into deadline failures.
	wantStatus(t, s, apiCall{method: "PATCH", path: "/config", body: `{"scheduler.scriptlet.timeout": "30s"}`}, 200, "")
	put := func(name, body string) apiCall {
		return apiCall{method: "PUT", path: "/scriptlets/" + name, body: body, contentType: "text/plain"}
	}
	place := func(body string) string {
		return "def instance_placement(request, candidate_members):\n    " + strings.ReplaceAll(body, "\n", "\n    ") + "\n"
	}
	// Stored: checked by a trial run, refused with the limit it hit.
	for _, body := range []string{`x = [None] * ((1<<30) - 1)`, `x = "x" * ((1<<30) - 1)`, `x = [None] * 100000000`, `x = sorted(list(range(30000000)))`} {
		got := wantStatus(t, s, put("oom", place(body)), 400, "exceeded its memory budget")
		if code := errorCode(got); code != fault.CodeScriptletInvalid {
			t.Errorf("%s: code %q", body, code)
		}
	}
	wantStatus(t, s, apiCall{method: "PATCH", path: "/config", body: `{"instances.placement.scriptlet": "x = [None] * ((1<<30) - 1)\ndef instance_placement(request, candidate_members):\n    pass\n"}`},
		400, "memory budget")

	// A scriptlet that only blows up on real data: stored, and the dry
	// run refuses (on_error "refuse", the default), naming the limit, in
	// bounded time.
	wantStatus(t, s, put("late", place("if len(candidate_members) == 2:\n    x = sorted(list(range(30000000)))")), 201, "")
	start := time.Now()
	got := wantStatus(t, s, apiCall{method: "POST", path: "/scriptlets/late/test", body: `{"resources": {"VCPU": 1}}`}, 200, "")
	if d := got["decision"].(map[string]any); d["refused"] == nil || !strings.Contains(d["refused"].(string), "over the memory budget of 67108864 bytes") {
		t.Errorf("refuse: %v", d)
	}
	if took := time.Since(start); took > 8*time.Second { // loose: a shared machine; before, 9.7 s
		t.Errorf("took %s", took)
	}

	// on_error "ignore": the same dry run ends with the scriptlet
	// ignored, under the memory budget set.
	wantStatus(t, s, apiCall{method: "PATCH", path: "/config", body: `{"scheduler.scriptlet.on_error": "ignore", "scheduler.scriptlet.max_memory": 8388608}`}, 200,
		`"scheduler.scriptlet.on_error":"ignore"`)
	got = wantStatus(t, s, apiCall{method: "POST", path: "/scriptlets/late/test", body: `{"resources": {"VCPU": 1}}`}, 200,
		`late\" failed and was ignored (the ranking stands as the policy made it)`)
	if d := got["decision"].(map[string]any); d["refused"] != nil || d["target"] == nil {
		t.Errorf("decision %v", d)
	}
	if !strings.Contains(fmt.Sprint(got["log"]), "over the memory budget of 8388608 bytes") {
		t.Errorf("log %v", got["log"])
	}
	for _, bad := range []string{`{"scheduler.scriptlet.on_error": "maybe"}`, `{"scheduler.scriptlet.max_memory": 10}`, `{"scheduler.scriptlet.max_memory": "lots"}`} {
		wantStatus(t, s, apiCall{method: "PATCH", path: "/config", body: bad}, 400, "scheduler.scriptlet.")
	}
	wantStatus(t, s, apiCall{method: "PATCH", path: "/config", body: `{"scheduler.scriptlet.on_error": null, "scheduler.scriptlet.max_memory": null}`}, 200, "")

	// A log_info loop: the answer is bounded.
	wantStatus(t, s, put("chatty", place("for i in range(50000):\n    log_info(\"x\" * 100)")), 201, "")
	code, raw, _ := do(t, s, apiCall{method: "POST", path: "/scriptlets/chatty/test", body: `{"resources": {"VCPU": 1}}`})
	if code != 200 || len(raw) > 256<<10 || !strings.Contains(raw, "scriptlet log full") {
		t.Errorf("%d, %d bytes", code, len(raw))
	}
	t.Logf("log_info loop: %d bytes", len(raw))
}
