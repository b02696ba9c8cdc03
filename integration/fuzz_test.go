package integration

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/ledger/ledgertest"
)

// fuzzMethods and fuzzRoutes are what FuzzAPI picks from, by index: the
// seed corpus refers to them by position, so only append.
var (
	fuzzMethods = []string{"GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"}
	fuzzRoutes  = []string{
		"/",
		"/resource_providers",
		"/resource_providers/{id}",
		"/resource_providers/{id}/inventories",
		"/resource_providers/{id}/inventories/{name}",
		"/resource_providers/{id}/usages",
		"/resource_providers/{id}/traits",
		"/resource_providers/{id}/aggregates",
		"/resource_providers/{id}/allocations",
		"/resource_classes",
		"/resource_classes/{name}",
		"/traits",
		"/traits/{name}",
		"/allocations",
		"/allocations/{id}",
		"/allocation_candidates",
		"/usages",
		"/reshaper",
		"/claims",
		"/claims/{id}/reschedule",
		"/claims/{id}/move",
		"/claims/{id}/move/revert",
		"{id}", // id is the whole path
		"/capacity",
	}
	// fuzzSymbols name the fixture's entities in the id and name inputs.
	fuzzSymbols = map[string]string{
		"@root": rootUUID, "@child": childUUID, "@root2": root2UUID, "@empty": emptyUUID,
		"@unknown": unknownUUID, "@agg": aggUUID, "@consumer": consumerUUID,
		"@class": customClass, "@trait": customTrait,
	}
)

// fuzzTarget builds the request target of a FuzzAPI input, or ok false
// when no HTTP client could send it (net/http would refuse the request
// line before the API sees it).
func fuzzTarget(route uint8, id, name, query string) (target string, ok bool) {
	param := func(s string) string {
		if v, ok := fuzzSymbols[s]; ok {
			return v
		}
		return url.PathEscape(s)
	}
	tmpl := fuzzRoutes[int(route)%len(fuzzRoutes)]
	if tmpl == "{id}" {
		target = id
		if !strings.HasPrefix(target, "/") {
			target = "/" + target
		}
	} else {
		target = strings.NewReplacer("{id}", param(id), "{name}", param(name)).Replace(tmpl)
	}
	if query != "" {
		target += "?" + query
	}
	if strings.ContainsAny(target, " #") {
		return "", false
	}
	if _, err := url.ParseRequestURI(target); err != nil {
		return "", false
	}
	return target, true
}

// validHeaderValue reports whether net/http would send v as a header value.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if b := v[i]; (b < 0x20 && b != '\t') || b == 0x7f {
			return false
		}
	}
	return true
}

// fuzzState is one fuzz worker's database, holding the fixture. After an
// input that changed it, the fixture's rows are restored and the store
// reopened (its caches would be stale), so every input runs against the
// fixture.
type fuzzState struct {
	dbURL string
	saved *ledgertest.SavedRows
	fp    *ledgertest.Fingerprinter
	cur   *env
	dirty bool
}

func (s *fuzzState) env(t *testing.T) *env {
	t.Helper()
	if s.cur != nil && !s.dirty {
		return s.cur
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s.cur.close()
	if err := s.saved.Restore(ctx); err != nil {
		t.Fatal(err)
	}
	var err error
	if s.cur, err = openEnv(ctx, s.dbURL, s.fp); err != nil {
		t.Fatal(err)
	}
	s.dirty = false
	return s.cur
}

// FuzzAPI drives the whole API (routing, middleware, handlers, ledger,
// PostgreSQL) with fuzzed requests against the fixture and checks what
// every answer must satisfy: never a 5xx; every error in Placement's
// format; a refused request (4xx) and a read change nothing in the
// database. Replay its seeds with `go test ./integration -run FuzzAPI`;
// fuzz with
//
//	go test ./integration -run '^$' -fuzz FuzzAPI -fuzztime 60s -parallel 1
//
// Each fuzz worker starts its own PostgreSQL unless
// BERTH_TEST_DATABASE_URL is set.
func FuzzAPI(f *testing.F) {
	f.Add(uint8(0), uint8(2), "@root", "", "", latest, []byte(nil))
	f.Add(uint8(2), uint8(6), "@root", "", "", latest, []byte(`{"traits": ["HW_CPU_X86_SSE"], "resource_provider_generation": 4}`))

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	st := &fuzzState{dbURL: ledgertest.NewDB(f)}
	st.fp = ledgertest.NewFingerprinter(f, st.dbURL)
	if st.cur, err = openEnv(ctx, st.dbURL, st.fp); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { st.cur.close() })
	if err := st.cur.seed(); err != nil {
		f.Fatal(err)
	}
	if st.saved, err = ledgertest.SaveRows(ctx, st.dbURL); err != nil {
		f.Fatal(err)
	}
	f.Cleanup(st.saved.Close)

	f.Fuzz(func(t *testing.T, method, route uint8, id, name, query, version string, body []byte) {
		m := fuzzMethods[int(method)%len(fuzzMethods)]
		target, ok := fuzzTarget(route, id, name, query)
		if !ok || !validHeaderValue(version) {
			t.Skip("not a request net/http would carry")
		}
		if len(body) == 0 {
			body = nil
		}
		e := st.env(t)
		before := e.fingerprint(t)
		r := e.do(m, target, version, body)
		after := e.fingerprint(t)
		changed := before.Diff(after)
		st.dirty = len(changed) > 0

		desc := m + " " + target
		if r.status >= 500 {
			t.Fatalf("%s (version %q, body %q): %d %s\nserver log: %q", desc, version, body, r.status, r.body, e.log.take())
		}
		if r.status >= 400 {
			if err := checkErrorBody(m, r); err != nil {
				t.Fatalf("%s (version %q, body %q): %v", desc, version, body, err)
			}
			if len(changed) > 0 {
				t.Fatalf("%s (version %q, body %q) was refused with %d but changed %v: %s", desc, version, body, r.status, changed, r.body)
			}
		}
		if (m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions) && len(changed) > 0 {
			t.Fatalf("%s (version %q) changed %v", desc, version, changed)
		}
		e.log.take()
	})
}
