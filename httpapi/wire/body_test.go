package wire_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/httpapi/apitest"
	"github.com/berthd/berth/httpapi/apitest/apiserver"
	"github.com/berthd/berth/internal/testing/proctest"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/scheduler"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

// build is apiserver.Build with the claimer's MaxCandidates from cfg.
func build(cfg httpapi.Config, store *ledger.Store, sched *scheduler.Policy, log *slog.Logger) (*httpapi.Server, error) {
	s, _, err := apiserver.Build(cfg, claims.Config{MaxCandidates: cfg.MaxCandidates}, store, sched, log)
	return s, err
}

// TestBodyReadBounds: a body past MaxBodyBytes is refused with
// Placement's 413 without being kept, whether its Content-Length says so
// or it comes chunked; a chunked body within the limit is read whole.
func TestBodyReadBounds(t *testing.T) {
	s, err := build(httpapi.Config{MaxBodyBytes: 4 << 20}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	big := append(append([]byte(`{"name": "`), bytes.Repeat([]byte("x"), 40<<20)...), `"}`...)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	rec := apitest.Post(t, s, "/resource_providers", "application/json", big)
	runtime.ReadMemStats(&after)
	if d := apitest.Detail(t, rec); rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(d, "Request body larger than 4194304 bytes") {
		t.Errorf("40 MiB with its length: %d %q", rec.Code, d)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("refusing a 40 MiB body by its length allocated %d KiB", alloc>>10)
	}

	chunked := func(body []byte) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/resource_providers", io.MultiReader(bytes.NewReader(body)))
		req.ContentLength = -1 // no length: read as it comes
		req.Header.Set("X-Auth-Token", "admin")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("OpenStack-API-Version", "placement latest")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec
	}
	if rec := chunked(big); rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("40 MiB chunked: %d %s", rec.Code, rec.Body)
	}
	// Within the limit, past wire.LargeBodyBytes: read whole (and refused here
	// only by the schema, for its extra member).
	within := []byte(`{"nome": [` + strings.Repeat(`"`+strings.Repeat("x", 1000)+`",`, 3000) + `0]}`)
	if rec := chunked(within); rec.Code != http.StatusBadRequest || !strings.Contains(apitest.Detail(t, rec), "JSON does not validate") {
		t.Errorf("3 MiB chunked: %d %.300s", rec.Code, rec.Body)
	}
}

// TestUndecodableBodiesRefused: invalid UTF-8, lone surrogates and
// other charsets used to be decoded with U+FFFD in place, so different
// invalid names were the same name.
func TestUndecodableBodiesRefused(t *testing.T) {
	s := apiserver.Bare(t)
	for _, tc := range []struct {
		ct, body, want string
	}{
		{"application/json", "{\"name\": \"rp\xff\"}", "Malformed JSON: 'utf-8' codec can't decode byte 0xff in position 12: invalid start byte"},
		{"application/json", `{"name": "rp\udfff"}`, `Malformed JSON: invalid \udfff escape at char 12`},
		// The charset is not looked at, as in Placement: these are refused
		// only for the schema.
		{"application/json; charset=latin-1", `{"nome": "rp"}`, "JSON does not validate"},
		{"application/json; charset=UTF-16", `{"nome": "rp"}`, "JSON does not validate"},
	} {
		rec := apitest.Post(t, s, "/resource_providers", tc.ct, []byte(tc.body))
		if d := apitest.Detail(t, rec); rec.Code != http.StatusBadRequest || !strings.Contains(d, tc.want) {
			t.Errorf("%s %q: %d %q, want 400 with %q", tc.ct, tc.body, rec.Code, d, tc.want)
		}
	}
	// UTF-8 declared: accepted (refused here only for the schema).
	rec := apitest.Post(t, s, "/resource_providers", "application/json; charset=utf-8", []byte(`{"nome": "rp"}`))
	if d := apitest.Detail(t, rec); rec.Code != http.StatusBadRequest || !strings.Contains(d, "JSON does not validate") {
		t.Errorf("charset=utf-8: %d %q", rec.Code, d)
	}
}

// TestLargeJSONBodiesBounded: a body of small array items just under the
// body limit is refused (413) before it is decoded, at a small multiple
// of its size, and an answer (and the debug log) repeats only part of a
// refused value.
func TestLargeJSONBodiesBounded(t *testing.T) {
	var logs proctest.Buffer
	s, err := build(httpapi.Config{}, nil, nil, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	body := []byte("{\"name\": [" + strings.Repeat("0,", 31<<19) + "0]}") // 31 MiB
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	rec := apitest.Post(t, s, "/resource_providers", "application/json", body)
	took := time.Since(start)
	runtime.ReadMemStats(&after)
	if d := apitest.Detail(t, rec); rec.Code != http.StatusRequestEntityTooLarge || !strings.Contains(d, "more than 100000 items") {
		t.Errorf("31 MiB of array items: %d %q", rec.Code, d)
	}
	// The body itself is read into memory (about twice its size in all,
	// as the buffer grows; the race detector doubles that); nothing else
	// should come near it.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8*uint64(len(body)) {
		t.Errorf("refusing a %d MiB body allocated %d MiB (in %v)", len(body)>>20, alloc>>20, took)
	}

	// A value the schema refuses is repeated in the answer and the log
	// only in part.
	long := strings.Repeat("x", 1<<20)
	rec = apitest.Post(t, s, "/resource_providers", "application/json", []byte(`{"name": "`+long+`"}`))
	d := apitest.Detail(t, rec)
	if rec.Code != http.StatusBadRequest || !strings.Contains(d, "JSON does not validate: 'xxx") || !strings.Contains(d, "...") {
		t.Errorf("a 1 MiB name: %d %.200q", rec.Code, d)
	}
	if len(d) > 8<<10 {
		t.Errorf("the answer repeats %d bytes of a 1 MiB name", len(d))
	}
	if n := len(logs.String()); n > 16<<10 {
		t.Errorf("the debug log holds %d bytes after refusing a 1 MiB name", n)
	}
}

// TestDecodeErrorsNameNoGoTypes sends bodies that pass the schema but do
// not fit the typed body (an integer past 64 bits) and checks the answer
// words it in the API's terms.
func TestDecodeErrorsNameNoGoTypes(t *testing.T) {
	store := ledgertest.NewStore(t)
	s, err := build(httpapi.Config{}, store, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	rp := ledgertest.Provider(t, store, "cn1")
	for _, tt := range []struct{ method, path, body, detail string }{
		{http.MethodPut, "/resource_providers/" + rp + "/inventories",
			`{"resource_provider_generation": 1e30, "inventories": {}}`,
			"resource_provider_generation: 1e30 is not an integer"},
		{http.MethodPost, "/claims", `{"consumer_uuid": "11111111-2222-3333-4444-555555555555", "project_id": "p",
			"user_id": "u", "consumer_generation": 99999999999999999999999, "resources": {"VCPU": 1}}`,
			"consumer_generation: 99999999999999999999999 is not an integer"},
	} {
		req, _ := http.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
		req.Header.Set("X-Auth-Token", "admin")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("OpenStack-API-Version", "placement latest")
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		resp := rec.Result()
		apitest.CheckPlacementError(t, resp, rec.Body.Bytes(), http.StatusBadRequest, tt.detail)
	}
}
