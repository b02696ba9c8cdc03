package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// contractServer answers the CLI's Berth endpoints (claims with dry runs,
// capacity with aggregates, policy units, scheduling policies, scriptlets
// and config) with fixed, hand-written answers in berthd's shapes, so
// that these tests can check the CLI's rendering to the character and the
// exact requests it sends. The e2e tests run the same commands against a
// real berthd and PostgreSQL. Stores are in memory so that CRUD round
// trips are real; claim and capacity answers are built from the request.
// Every request is checked for berth's headers.
type contractServer struct {
	t          *testing.T
	mu         sync.Mutex
	scriptlets map[string]string
	policies   map[string]json.RawMessage
	config     map[string]any
	keys       json.RawMessage // placement keys of every provider
	lastBody   map[string]any  // the last JSON body received
	lastQuery  string
}

func newContractServer(t *testing.T) (*contractServer, string) {
	s := &contractServer{t: t, scriptlets: map[string]string{}, policies: map[string]json.RawMessage{}, config: map[string]any{}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv.URL
}

func placementError(w http.ResponseWriter, status int, code, detail string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"errors": []map[string]any{{
		"status": status, "title": http.StatusText(status), "code": code, "request_id": "req-test",
		"detail": "There was a conflict when trying to complete your request.\n\n " + detail,
	}}})
}

func (s *contractServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Header.Get("OpenStack-API-Version") != "placement latest" || r.Header.Get("X-Auth-Token") != "tok" {
		s.t.Errorf("%s %s: headers %v", r.Method, r.URL, r.Header)
	}
	body, _ := io.ReadAll(r.Body)
	s.lastBody = nil
	s.lastQuery = r.URL.RawQuery
	if r.Header.Get("Content-Type") == "application/json" {
		if err := json.Unmarshal(body, &s.lastBody); err != nil {
			s.t.Errorf("%s %s: body %q: %v", r.Method, r.URL, body, err)
		}
	}
	js := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	path := r.URL.Path
	name := func(prefix string) string { return strings.TrimPrefix(path, prefix) }
	switch {
	case r.Method == "GET" && path == "/capacity":
		js(map[string]any{"total": 7, "capped": false, "truncated": false,
			"roots": []any{
				map[string]any{"root_provider_uuid": "r1", "name": "cn1", "fits": 5, "capped": false, "limiting": []string{"MEMORY_MB"}},
				map[string]any{"root_provider_uuid": "r2", "name": "cn2", "fits": 2, "capped": false, "limiting": []string{"VCPU", "MEMORY_MB"}},
			},
			"aggregates": []any{map[string]any{"uuid": "agg1", "fits": 7}}})
	case r.Method == "POST" && path == "/claims":
		if s.lastBody["consumer_generation"] == 7.0 {
			placementError(w, 409, "placement.concurrent_update", "consumer generation conflict - expected 7 but got 8")
			return
		}
		res, _ := s.lastBody["resources"].(map[string]any)
		if v, _ := res["VCPU"].(float64); v > 64 {
			placementError(w, 409, "berth.no_valid_host", "3 providers; 2 lacked VCPU 128; 1 removed by anti_affinity")
			return
		}
		dry, _ := s.lastBody["dry_run"].(bool)
		ans := map[string]any{
			"consumer_uuid": s.lastBody["consumer_uuid"], "consumer_generation": 1,
			"allocations":        map[string]any{"r1": map[string]any{"resources": res}},
			"root_provider_uuid": "r1", "root_provider_name": "cn1", "score": 0.9,
			"alternates": []any{map[string]any{"root_provider_uuid": "r2", "root_provider_name": "cn2", "score": 0.4}},
			"attempts":   1, "dry_run": dry,
			"steps": []any{map[string]any{"unit": "capacity", "kind": "filter", "removed": 1, "remaining": 2,
				"reasons": map[string]int{"lacked MEMORY_MB 16384": 1}}},
		}
		if dry {
			ans["consumer_generation"] = nil
			ans["ranking"] = []any{
				map[string]any{"rank": 1, "root_provider_uuid": "r1", "root_provider_name": "cn1", "score": 0.9,
					"weights": map[string]float64{"free_ram": 0.6, "scriptlet": 0.3}},
				map[string]any{"rank": 2, "root_provider_uuid": "r2", "root_provider_name": "cn2", "score": 0.4,
					"weights": map[string]float64{"free_ram": 0.4}},
			}
			ans["scriptlet_log"] = []any{map[string]any{"level": "info", "message": fmt.Sprintf("placing %v", s.lastBody["name"])}}
		}
		js(ans)
	case r.Method == "POST" && strings.HasSuffix(path, "/reschedule"):
		js(map[string]any{"consumer_uuid": strings.Split(path, "/")[2], "consumer_generation": 3,
			"allocations":        map[string]any{"r2": map[string]any{"resources": map[string]int{"VCPU": 1}}},
			"root_provider_uuid": "r2", "root_provider_name": "cn2", "score": 0.4, "attempts": 2, "dry_run": false})
	case r.Method == "GET" && path == "/policy_units":
		js(map[string]any{"policy_units": []any{
			map[string]any{"name": "capacity", "kind": "filter", "description": "enough free resources", "parameters": []any{}},
			map[string]any{"name": "free_ram", "kind": "weigher", "description": "prefer free RAM",
				"parameters": []any{map[string]any{"name": "mode", "type": "string", "default": "spread", "required": false}}},
		}})
	case path == "/scheduling_policies" && r.Method == "GET":
		var list []json.RawMessage
		for _, k := range sortedKeys(s.policies) {
			list = append(list, s.policies[k])
		}
		js(map[string]any{"scheduling_policies": list})
	case path == "/scheduling_policies" && r.Method == "POST":
		n, _ := s.lastBody["name"].(string)
		s.policies[n] = body
		w.WriteHeader(201)
	case r.Method == "GET" && strings.HasSuffix(path, "/state"):
		if path != "/resource_providers/r1/state" {
			placementError(w, 404, "placement.undefined_code", "No state reported for this provider.")
			return
		}
		js(map[string]any{"load_1": 0.5, "load_5": 0.75, "load_15": 1, "memory_free_mb": 2048,
			"cpu_utilization": 0.42, "reported_at": "2026-11-22T19:00:00Z"})
	case strings.HasSuffix(path, "/placement_keys"):
		if r.Method == "PUT" {
			s.keys = body
		}
		if s.keys == nil {
			js(map[string]any{"placement_keys": []any{}})
			return
		}
		w.Write(s.keys)
	case r.Method == "GET" && strings.HasSuffix(path, "/balance"):
		if r.URL.Query().Get("aggregate") == "empty" {
			js(map[string]any{"suggestion": nil, "reason": "no provider above 80%"})
			return
		}
		js(map[string]any{"mode": "even", "consumer_uuid": "c1",
			"source":       map[string]any{"uuid": "r1", "name": "cn1", "utilisation": 0.92},
			"destinations": []any{map[string]any{"uuid": "r2", "name": "cn2", "utilisation": 0.31}},
			"reason":       "cn1 is above 80%"})
	case strings.HasPrefix(path, "/scheduling_policies/"):
		n := name("/scheduling_policies/")
		switch r.Method {
		case "GET":
			if p, ok := s.policies[n]; ok {
				w.Write(p)
				return
			}
		case "PUT":
			if _, ok := s.policies[n]; ok {
				s.policies[n] = body
				js(json.RawMessage(body))
				return
			}
		case "DELETE":
			if _, ok := s.policies[n]; ok {
				delete(s.policies, n)
				w.WriteHeader(204)
				return
			}
		}
		placementError(w, 404, "placement.undefined_code", "No scheduling policy "+n)
	case path == "/scriptlets" && r.Method == "GET":
		var list []any
		for _, k := range sortedKeys(s.scriptlets) {
			list = append(list, map[string]any{"name": k, "size": len(s.scriptlets[k])})
		}
		js(map[string]any{"scriptlets": list})
	case strings.HasSuffix(path, "/test") && strings.HasPrefix(path, "/scriptlets/"):
		refused, target, ranking := any(nil), any(nil), []any{}
		switch s.lastBody["name"] {
		case "foo":
			refused = "Failed instance placement scriptlet: Invalid name"
		case "pin":
			target = "r2"
			ranking = []any{map[string]any{"rank": 1, "root_provider_uuid": "r2", "root_provider_name": "cn2", "score": 1,
				"weights": map[string]float64{"spread": 1}}}
		}
		js(map[string]any{"decision": map[string]any{"target": target, "refused": refused},
			"ranking": ranking, "log": []any{map[string]any{"level": "warn", "message": "checked " + fmt.Sprint(s.lastBody["name"])}}})
	case strings.HasPrefix(path, "/scriptlets/"):
		n := name("/scriptlets/")
		switch r.Method {
		case "PUT":
			if r.Header.Get("Content-Type") != "text/plain" {
				s.t.Errorf("PUT %s: content type %q", path, r.Header.Get("Content-Type"))
			}
			if strings.Contains(string(body), "def (") {
				placementError(w, 400, "berth.scriptlet_invalid", "scriptlet "+n+":1:5: got '(', want name")
				return
			}
			s.scriptlets[n] = string(body)
			w.WriteHeader(204)
			return
		case "GET":
			if src, ok := s.scriptlets[n]; ok {
				w.Header().Set("Content-Type", "text/plain")
				io.WriteString(w, src)
				return
			}
		case "DELETE":
			if _, ok := s.scriptlets[n]; ok {
				delete(s.scriptlets, n)
				w.WriteHeader(204)
				return
			}
		}
		placementError(w, 404, "placement.undefined_code", "No scriptlet "+n)
	case path == "/config" && r.Method == "GET":
		js(s.config)
	case path == "/config" && r.Method == "PATCH":
		for k, v := range s.lastBody {
			if v == nil {
				delete(s.config, k)
			} else {
				s.config[k] = v
			}
		}
		js(s.config)
	default:
		placementError(w, 404, "placement.undefined_code", "")
	}
}

func TestContractCapacity(t *testing.T) {
	s, url := newContractServer(t)
	env := map[string]string{"BERTH_URL": url, "OS_TOKEN": "tok"}
	out, stderr, code := run(t, env, "", "capacity", "--resources", "VCPU:4,MEMORY_MB:16384", "--required", "HW_CPU_X86_AVX2", "--member-of", "in:a,b")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if s.lastQuery != "member_of=in%3Aa%2Cb&required=HW_CPU_X86_AVX2&resources=MEMORY_MB%3A16384%2CVCPU%3A4" {
		t.Errorf("query %q", s.lastQuery)
	}
	want := "" +
		"PROVIDER  UUID  FITS  LIMITING\n" +
		"cn1       r1       5  MEMORY_MB\n" +
		"cn2       r2       2  VCPU,MEMORY_MB\n" +
		"\n" +
		"AGGREGATE  FITS\n" +
		"agg1          7\n" +
		"\n" +
		"Total: 7 more of MEMORY_MB:16384,VCPU:4 fit.\n"
	if out != want {
		t.Errorf("got\n%s\nwant\n%s", out, want)
	}
	out, _, _ = run(t, env, "", "capacity", "--resources", "VCPU:1", "-o", "json")
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil || doc["total"] != 7.0 {
		t.Errorf("-o json: %v %v", doc, err)
	}
}

func TestContractExplainAndClaim(t *testing.T) {
	s, url := newContractServer(t)
	env := map[string]string{"BERTH_URL": url, "BERTH_TOKEN": "tok", "OS_TOKEN": "other"}
	out, stderr, code := run(t, env, "", "explain", "--resources", "VCPU:4,MEMORY_MB:16384", "--name", "web-1",
		"--policy", "spread", "--property", "group=web", "--exclude", "cn7", "--instance", `{"config": {"limits.cpu": "2"}}`)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if s.lastBody["dry_run"] != true || s.lastBody["policy"] != "spread" || s.lastBody["name"] != "web-1" ||
		fmt.Sprint(s.lastBody["exclude_providers"]) != "[cn7]" || fmt.Sprint(s.lastBody["properties"]) != "map[group:web]" ||
		fmt.Sprint(s.lastBody["instance"]) != "map[config:map[limits.cpu:2]]" {
		t.Errorf("body %v", s.lastBody)
	}
	for _, bad := range []string{"[]", "null", "{", `"c1"`} {
		if _, stderr, code := run(t, env, "", "explain", "--resources", "VCPU:1", "--instance", bad); code != 2 ||
			!strings.Contains(stderr, "--instance must be a JSON object") {
			t.Errorf("--instance %s: exit %d %q", bad, code, stderr)
		}
	}
	for _, want := range []string{
		"Dry run, nothing written: would claim on cn1 (r1), score 0.900.",
		"cn1 (r1)  MEMORY_MB   16384\n          VCPU            4\n",
		"Alternates: cn2 (0.400)",
		"UNIT      KIND    REMOVED  REMAINING  REASONS",
		"capacity  filter        1          2  lacked MEMORY_MB 16384: 1",
		"RANK  PROVIDER  SCORE  free_ram  scriptlet",
		"   1  cn1       0.900     0.600      0.300",
		"   2  cn2       0.400     0.400          -",
		"  info  placing web-1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("explain output lacks %q:\n%s", want, out)
		}
	}

	// Nothing fits: one step per line, exit 1.
	out, stderr, code = run(t, env, "", "explain", "--resources", "VCPU:128")
	if code != 1 || out != "" || stderr != "No valid host: nothing fits.\n  3 providers\n  2 lacked VCPU 128\n  1 removed by anti_affinity\n" {
		t.Errorf("no valid host: exit %d, stdout %q, stderr %q", code, out, stderr)
	}
	// With -o json the refusal is the one-line error.
	_, stderr, code = run(t, env, "", "-o", "json", "explain", "--resources", "VCPU:128")
	if code != 1 || !strings.Contains(stderr, "409 Conflict (berth.no_valid_host): 3 providers; 2 lacked VCPU 128") {
		t.Errorf("no valid host -o json: exit %d, stderr %q", code, stderr)
	}

	out, stderr, code = run(t, env, "", "claim", "--resources", "VCPU:2", "--project", "demo", "--user", "alice",
		"--consumer", "5b0d3c52-8f1e-4a8e-9a55-3a2f0c1d9e77")
	if code != 0 || !strings.HasPrefix(out, "Claimed on cn1 (r1) for consumer 5b0d3c52-8f1e-4a8e-9a55-3a2f0c1d9e77 (generation 1), score 0.900, 1 attempt.") {
		t.Errorf("claim: exit %d, %q %q", code, out, stderr)
	}
	if _, dry := s.lastBody["dry_run"]; dry || s.lastBody["project_id"] != "demo" {
		t.Errorf("claim body %v", s.lastBody)
	}

	_, stderr, code = run(t, env, "", "claim", "--resources", "VCPU:2", "--project", "demo", "--user", "alice", "--consumer-generation", "7")
	if code != 3 || !strings.Contains(stderr, "409 Conflict (placement.concurrent_update): consumer generation conflict - expected 7 but got 8\n(the consumer exists") {
		t.Errorf("generation conflict: exit %d, %q", code, stderr)
	}

	out, _, code = run(t, env, "", "reschedule", "5b0d3c52-8f1e-4a8e-9a55-3a2f0c1d9e77", "--failed", "cn1")
	if code != 0 || !strings.Contains(out, "Claimed on cn2 (r2)") || !strings.Contains(out, ", 2 attempts.") {
		t.Errorf("reschedule: exit %d, %q", code, out)
	}
	if s.lastBody["failed_provider"] != "cn1" || s.lastBody["consumer_uuid"] != nil || s.lastBody["project_id"] != nil {
		t.Errorf("reschedule body %v", s.lastBody)
	}
}

func TestContractScriptlets(t *testing.T) {
	_, url := newContractServer(t)
	env := map[string]string{"BERTH_URL": url, "BERTH_TOKEN": "tok"}
	src := "def instance_placement(request, candidate_members):\n    if request.name == \"foo\":\n        return \"Invalid name\"\n"
	file := filepath.Join(t.TempDir(), "refuse.star")
	os.WriteFile(file, []byte(src), 0o644)

	steps := []struct {
		args         []string
		stdin        string
		code         int
		stdout, errs string
	}{
		{[]string{"scriptlet", "list"}, "", 1, "No scriptlets.\n", ""},
		{[]string{"scriptlet", "set", "refuse-foo", file}, "", 0, fmt.Sprintf("Scriptlet refuse-foo stored (%d bytes).\n", len(src)), ""},
		{[]string{"scriptlet", "set", "bad", "-"}, "def (x):\n", 3, "",
			"berth scriptlet set: 400 Bad Request (berth.scriptlet_invalid): scriptlet bad:1:5: got '(', want name\n"},
		{[]string{"scriptlet", "show", "refuse-foo"}, "", 0, src, ""},
		{[]string{"scriptlet", "list"}, "", 0, fmt.Sprintf("NAME        SIZE\nrefuse-foo  %d\n", len(src)), ""},
		{[]string{"scriptlet", "test", "refuse-foo", "--name", "foo"}, "", 0,
			"Refused: Failed instance placement scriptlet: Invalid name\n\nLog:\n  warn  checked foo\n", ""},
		{[]string{"scriptlet", "test", "refuse-foo", "--name", "bar"}, "", 0,
			"No target set: the ranked order stands.\n\nLog:\n  warn  checked bar\n", ""},
		{[]string{"scriptlet", "test", "refuse-foo", "--name", "pin"}, "", 0,
			"Would place on: cn2 (r2)\n\nRanking:\nRANK  PROVIDER  SCORE  spread\n   1  cn2       1.000   1.000\n\nLog:\n  warn  checked pin\n", ""},
		{[]string{"scriptlet", "delete", "refuse-foo"}, "", 0, "Scriptlet refuse-foo deleted.\n", ""},
		{[]string{"scriptlet", "show", "refuse-foo"}, "", 3, "",
			"berth scriptlet show: 404 Not Found: No scriptlet refuse-foo\n"},
	}
	for _, st := range steps {
		out, errs, code := run(t, env, st.stdin, st.args...)
		if code != st.code || out != st.stdout || errs != st.errs {
			t.Errorf("berth %q: exit %d\nstdout %q\nstderr %q\nwant %d %q %q", st.args, code, out, errs, st.code, st.stdout, st.errs)
		}
	}
}

func TestContractPoliciesAndConfig(t *testing.T) {
	_, url := newContractServer(t)
	env := map[string]string{"BERTH_URL": url, "BERTH_TOKEN": "tok"}
	dir := t.TempDir()
	pol := filepath.Join(dir, "spread.json")
	os.WriteFile(pol, []byte(policyExample), 0o644)
	upd := filepath.Join(dir, "upd.json")
	os.WriteFile(upd, []byte(`{"name": "spread", "default": true, "filters": [], "weighers": [{"name": "free_ram", "factor": 3, "params": {"mode": "pack"}}], "balancer": {"mode": "even", "high": 0.8, "low": 0.2}}`), 0o644)
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"name": `), 0o644)

	steps := []struct {
		args   []string
		code   int
		stdout string // a substring
	}{
		{[]string{"policy", "units"}, 0, "NAME      KIND     PARAMETERS          DESCRIPTION\ncapacity  filter   -                   enough free resources\nfree_ram  weigher  mode:string=spread  prefer free RAM\n"},
		{[]string{"policy", "units", "--kind", "weigher"}, 0, "NAME      KIND     PARAMETERS          DESCRIPTION\nfree_ram"},
		{[]string{"policy", "list"}, 1, "No scheduling policies.\n"},
		{[]string{"policy", "create", pol}, 0, "Policy spread created.\n"},
		{[]string{"policy", "create", bad}, 4, ""}, // a file that is not JSON
		{[]string{"policy", "list"}, 0, "spread  no       state_freshness  free_ram×2, even_consumers×1  -         -          spread by free RAM"},
		{[]string{"policy", "update", "spread", upd}, 0, "Policy spread updated.\n"},
		{[]string{"policy", "show", "spread"}, 0, "Name:         spread\nDescription:\nDefault:      yes\nScriptlet:    -\nBalancer:     even (high 0.8, low 0.2)\n\nFilters:\n  (capacity only)\n\nWeighers:\n  NAME      FACTOR  PARAMS\n  free_ram       3  mode=pack\n"},
		{[]string{"policy", "balance", "spread"}, 0, "Suggestion (even): move consumer c1 off cn1 (utilisation 92%).\n" +
			"Reason: cn1 is above 80%\n\nDestinations:\nPROVIDER  UUID  UTILISATION\ncn2       r2            31%\n\n" +
			"To carry it out: berth move c1 --migration new --target cn2\n"},
		{[]string{"policy", "balance", "spread", "--aggregate", "empty"}, 0, "Nothing to move: no provider above 80%.\n"},
		{[]string{"policy", "delete", "spread"}, 0, "Policy spread deleted.\n"},
		{[]string{"policy", "show", "spread"}, 3, ""},
		{[]string{"config", "get"}, 1, "Nothing set.\n"},
		{[]string{"config", "set", "scheduler.scriptlet.max_steps", "12"}, 0, "scheduler.scriptlet.max_steps set.\n"},
		{[]string{"config", "set", "instances.placement.scriptlet", "@" + pol}, 0, "instances.placement.scriptlet set.\n"},
		{[]string{"config", "get"}, 0, "instances.placement.scriptlet  { … (8 lines; berth config get instances.placement.scriptlet)\nscheduler.scriptlet.max_steps  12\n"},
		{[]string{"config", "get", "instances.placement.scriptlet"}, 0, policyExample + "\n"},
		{[]string{"config", "unset", "scheduler.scriptlet.max_steps"}, 0, "scheduler.scriptlet.max_steps unset.\n"},
		{[]string{"config", "get", "scheduler.scriptlet.max_steps"}, 1, ""}, // known, not set
		{[]string{"config", "get", "nosuch"}, 2, ""},                        // unknown
	}
	for _, st := range steps {
		out, errs, code := run(t, env, "", st.args...)
		if code != st.code || !strings.Contains(out, st.stdout) {
			t.Errorf("berth %q: exit %d\nstdout %q\nstderr %q\nwant %d and %q", st.args, code, out, errs, st.code, st.stdout)
		}
	}
}

func TestContractProviderStateAndKeys(t *testing.T) {
	s, url := newContractServer(t)
	env := map[string]string{"BERTH_URL": url, "BERTH_TOKEN": "tok"}
	steps := []struct {
		args   []string
		code   int
		stdout string
	}{
		{[]string{"providers", "state", "r1"}, 0, "FIELD            VALUE\ncpu_utilization  0.42\nload_1           0.5\n" +
			"load_15          1\nload_5           0.75\nmemory_free_mb   2048\nreported_at      2026-11-22T19:00:00Z\n"},
		{[]string{"providers", "state", "r2"}, 3, ""},
		{[]string{"providers", "keys", "r1"}, 1, "No placement keys.\n"},
		{[]string{"providers", "keys", "r1", "--set", "rack=0.3", "--set", "_tier=1:sticky"}, 0,
			"NAME   VALUE  STICKY\nrack     0.3  no\n_tier      1  yes\n"},
		{[]string{"providers", "keys", "r1", "--set", "rack=x"}, 2, ""},
		{[]string{"providers", "keys", "r1", "--set", "rack=1:glue"}, 2, ""},
		{[]string{"providers", "keys", "r1", "--clear", "--set", "a=1"}, 2, ""},
		{[]string{"providers", "keys", "r1", "--clear"}, 0, "No placement keys.\n"},
	}
	for _, st := range steps {
		out, errs, code := run(t, env, "", st.args...)
		if code != st.code || out != st.stdout {
			t.Errorf("berth %q: exit %d\nstdout %q\nstderr %q\nwant %d and %q", st.args, code, out, errs, st.code, st.stdout)
		}
		if st.args[len(st.args)-1] == "_tier=1:sticky" && string(s.keys) != `{"placement_keys":[{"name":"rack","value":0.3,"sticky":false},{"name":"_tier","value":1,"sticky":true}]}` {
			t.Errorf("PUT body %s", s.keys)
		}
	}
}
