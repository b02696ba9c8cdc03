package placement_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// cacheLookups installs a meter provider for the test and returns a
// function reading the answer cache's lookups so far: hits and misses.
func cacheLookups(t *testing.T) func() (hits, misses int64) {
	prev := otel.GetMeterProvider()
	reader := sdkmetric.NewManualReader()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	t.Cleanup(func() { otel.SetMeterProvider(prev) })
	return func() (hits, misses int64) {
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				sum, ok := m.Data.(metricdata.Sum[int64])
				if !ok || m.Name != "berth.candidates.cache.lookups" {
					continue
				}
				for _, p := range sum.DataPoints {
					switch r, _ := p.Attributes.Value("result"); r.AsString() {
					case "hit":
						hits += p.Value
					case "miss":
						misses += p.Value
					}
				}
			}
		}
		return hits, misses
	}
}

// answer is one response: status, headers and body.
type answer struct {
	code   int
	header http.Header
	body   []byte
}

// send serves method path as admin at microversion v (empty: latest).
func send(t testing.TB, s http.Handler, method, path, v, body string) answer {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("Content-Type", "application/json")
	if v == "" {
		v = "latest"
	}
	req.Header.Set("OpenStack-API-Version", "placement "+v)
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return answer{rec.Code, rec.Header(), rec.Body.Bytes()}
}

// write sends a write and fails t unless it answers want.
func write(t *testing.T, s http.Handler, method, path, body string, want int) {
	t.Helper()
	if a := send(t, s, method, path, "", body); a.code != want {
		t.Fatalf("%s %s: %d %s", method, path, a.code, a.body)
	}
}

// generation reads provider rp's generation through s.
func generation(t *testing.T, s http.Handler, rp string) int64 {
	t.Helper()
	a := send(t, s, http.MethodGet, "/resource_providers/"+rp, "", "")
	var p struct {
		Generation int64 `json:"generation"`
	}
	if err := json.Unmarshal(a.body, &p); err != nil || a.code != http.StatusOK {
		t.Fatalf("GET provider %s: %d %s", rp, a.code, a.body)
	}
	return p.Generation
}

// sameAnswer fails t unless got, a cached server's answer, is want, an
// uncached one's: status, body byte for byte, and every header but the
// request id (each request's own) and Last-Modified (the time of the
// answer), which both must carry alike.
func sameAnswer(t *testing.T, what string, got, want answer) {
	t.Helper()
	if got.code != want.code || !bytes.Equal(got.body, want.body) {
		t.Fatalf("%s: cached %d %s\nuncached %d %s", what, got.code, got.body, want.code, want.body)
	}
	for _, h := range []http.Header{got.header, want.header} {
		for k := range h {
			switch k {
			case "X-Openstack-Request-Id", "Last-Modified":
				if (got.header.Get(k) == "") != (want.header.Get(k) == "") {
					t.Fatalf("%s: header %s: cached %q, uncached %q", what, k, got.header.Get(k), want.header.Get(k))
				}
			default:
				if fmt.Sprint(got.header[k]) != fmt.Sprint(want.header[k]) {
					t.Fatalf("%s: header %s: cached %q, uncached %q", what, k, got.header[k], want.header[k])
				}
			}
		}
	}
}

// candidateCloud is two trees on one database, with three servers over
// it: cached and plain (without the cache) in one process, over one
// store, and other, another process's, over a store of its own.
type candidateCloud struct {
	cached, plain, other http.Handler
	cn1, numa, cn2       string
}

func newCandidateCloud(t *testing.T, cached httpapi.Config) *candidateCloud {
	ctx := context.Background()
	url := ledgertest.NewDB(t)
	open := func() *ledger.Store {
		store, err := ledger.Open(ctx, ledger.Config{DatabaseURL: url, MaxConns: 4, AcquireTimeout: ledgertest.AcquireTimeout,
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(store.Close)
		return store
	}
	mine, theirs := open(), open()
	server := func(cfg httpapi.Config, store *ledger.Store) http.Handler {
		s, err := build(cfg, store, nil, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	c := &candidateCloud{
		cached: server(cached, mine),
		plain:  server(httpapi.Config{}, mine),
		other:  server(httpapi.Config{}, theirs),
		cn1:    "c1000000-0000-4000-8000-000000000001", numa: "c1000000-0000-4000-8000-000000000002",
		cn2: "c2000000-0000-4000-8000-000000000001",
	}
	write(t, c.cached, http.MethodPut, "/traits/CUSTOM_FAST", "", http.StatusCreated)
	for _, p := range []struct{ uuid, name, parent, inv string }{
		{c.cn1, "cn1", "", `"VCPU": {"total": 8}, "MEMORY_MB": {"total": 4096}`},
		{c.numa, "cn1-numa0", c.cn1, `"VCPU": {"total": 4}`},
		{c.cn2, "cn2", "", `"VCPU": {"total": 16}, "MEMORY_MB": {"total": 8192}, "DISK_GB": {"total": 100}`},
	} {
		body := `{"uuid": "` + p.uuid + `", "name": "` + p.name + `"`
		if p.parent != "" {
			body += `, "parent_provider_uuid": "` + p.parent + `"`
		}
		write(t, c.cached, http.MethodPost, "/resource_providers", body+"}", http.StatusOK)
		write(t, c.cached, http.MethodPut, "/resource_providers/"+p.uuid+"/inventories", `{"resource_provider_generation": 0, "inventories": {`+p.inv+`}}`, http.StatusOK)
	}
	return c
}

// candidateQueries are queries of every parameter family, each with the
// least microversion that takes it.
var candidateQueries = []struct{ query, since string }{
	{"resources=VCPU:1", "1.10"},
	{"resources=VCPU:1&limit=1", "1.16"},
	{"resources=VCPU:1&limit=2", "1.16"},
	{"resources=VCPU:2,MEMORY_MB:512", "1.10"},
	{"resources=MEMORY_MB:512&resources=VCPU:1", "1.10"},
	{"resources=VCPU:1&required=CUSTOM_FAST", "1.17"},
	{"resources=VCPU:1&required=!CUSTOM_FAST", "1.22"},
	{"resources=VCPU:1&member_of=a0000000-0000-4000-8000-000000000001", "1.21"},
	{"resources=VCPU:1&member_of=!a0000000-0000-4000-8000-000000000001", "1.32"},
	{"resources=VCPU:1&in_tree=c1000000-0000-4000-8000-000000000001", "1.31"},
	{"resources1=VCPU:1&resources2=VCPU:1&group_policy=isolate", "1.25"},
	{"resources1=VCPU:1&resources2=VCPU:1&group_policy=none", "1.25"},
	{"resources=MEMORY_MB:512&resources1=VCPU:1&group_policy=none", "1.25"},
	{"resources_A=VCPU:1&resources_B=MEMORY_MB:512&group_policy=none&same_subtree=_A,_B", "1.36"},
	{"resources=VCPU:1&root_required=CUSTOM_FAST", "1.35"},
	{"resources=VCPU:1&root_required=!CUSTOM_FAST", "1.35"},
	{"resources=DISK_GB:10", "1.10"},
	{"resources=VCPU:1000", "1.10"},
}

// candidateVersions are the microversions that change the answer's
// shape: lists of allocations (1.10), dicts (1.12), traits (1.17),
// every class (1.27), trees (1.29), mappings (1.34), the latest.
var candidateVersions = []string{"1.10", "1.12", "1.17", "1.27", "1.29", "1.34", "1.39"}

// askAll asks every query at every microversion that takes it of the
// cached server, twice, and of the plain one, fails t unless they agree,
// and returns the uncached answers' bodies by query and microversion.
func (c *candidateCloud) askAll(t *testing.T) map[string]string {
	t.Helper()
	bodies := map[string]string{}
	for _, q := range candidateQueries {
		for _, v := range candidateVersions {
			var major, since, minor int
			fmt.Sscanf(q.since, "%d.%d", &major, &since)
			fmt.Sscanf(v, "%d.%d", &major, &minor)
			if minor < since {
				continue
			}
			path := "/allocation_candidates?" + q.query
			want := send(t, c.plain, http.MethodGet, path, v, "")
			if want.code != http.StatusOK {
				t.Fatalf("%s at %s: %d %s", q.query, v, want.code, want.body)
			}
			for i := range 2 {
				sameAnswer(t, fmt.Sprintf("%s at %s, #%d", q.query, v, i+1), send(t, c.cached, http.MethodGet, path, v, ""), want)
			}
			bodies[q.query+" "+v] = string(want.body)
		}
	}
	return bodies
}

// TestCandidatesCacheAnswers: a kept answer is byte for byte, headers
// included, the answer computed without the cache, for every parameter
// family and answer shape; and after every kind of write, through this
// process or another on the database, each query's next answer is
// computed afresh, with the write in it.
func TestCandidatesCacheAnswers(t *testing.T) {
	lookups := cacheLookups(t)
	c := newCandidateCloud(t, httpapi.Config{CandidatesCacheBytes: 16 << 20})
	before := c.askAll(t)
	asks := len(before)
	if hits, misses := lookups(); hits != int64(asks) || misses != int64(asks) {
		t.Fatalf("%d queries asked twice: %d hits, %d misses", asks, hits, misses)
	}
	if before["resources=VCPU:1&limit=1 1.39"] == before["resources=VCPU:1 1.39"] ||
		before["resources=VCPU:1 1.12"] == before["resources=VCPU:1 1.10"] {
		t.Fatal("the cloud does not tell limits or microversions apart")
	}
	agg := `{"resource_provider_generation": %d, "aggregates": ["a0000000-0000-4000-8000-000000000001"]}`
	for _, change := range []struct {
		what string
		do   func()
	}{
		{"an allocation through this process", func() {
			write(t, c.cached, http.MethodPut, "/allocations/d0000000-0000-4000-8000-000000000001",
				`{"allocations": {"`+c.cn1+`": {"resources": {"VCPU": 2}}}, "project_id": "p", "user_id": "u", "consumer_generation": null, "consumer_type": "INSTANCE"}`, http.StatusNoContent)
		}},
		{"an allocation through another process", func() {
			write(t, c.other, http.MethodPut, "/allocations/d0000000-0000-4000-8000-000000000002",
				`{"allocations": {"`+c.cn2+`": {"resources": {"VCPU": 3}}}, "project_id": "p", "user_id": "u", "consumer_generation": null, "consumer_type": "INSTANCE"}`, http.StatusNoContent)
		}},
		{"an inventory through this process", func() {
			write(t, c.cached, http.MethodPut, "/resource_providers/"+c.cn2+"/inventories/VCPU",
				fmt.Sprintf(`{"resource_provider_generation": %d, "total": 32}`, generation(t, c.cached, c.cn2)), http.StatusOK)
		}},
		{"traits through another process", func() {
			write(t, c.other, http.MethodPut, "/resource_providers/"+c.cn2+"/traits",
				fmt.Sprintf(`{"resource_provider_generation": %d, "traits": ["CUSTOM_FAST"]}`, generation(t, c.other, c.cn2)), http.StatusOK)
		}},
		{"an aggregate through another process", func() {
			write(t, c.other, http.MethodPut, "/resource_providers/"+c.cn1+"/aggregates",
				fmt.Sprintf(agg, generation(t, c.other, c.cn1)), http.StatusOK)
		}},
		{"an allocation deleted through another process", func() {
			write(t, c.other, http.MethodDelete, "/allocations/d0000000-0000-4000-8000-000000000001", "", http.StatusNoContent)
		}},
	} {
		hits0, misses0 := lookups()
		change.do()
		after := c.askAll(t)
		changed := 0
		for k, b := range after {
			if before[k] != b {
				changed++
			}
		}
		if changed == 0 {
			t.Fatalf("%s changed no answer", change.what)
		}
		if hits, misses := lookups(); hits-hits0 != int64(asks) || misses-misses0 != int64(asks) {
			t.Fatalf("after %s: %d hits, %d misses, want %d of each", change.what, hits-hits0, misses-misses0, asks)
		}
		before = after
	}
}

// TestCandidatesCacheNotKept: an answer above the budget's share is
// answered whole but not kept, a smaller one is; with randomized
// candidates nothing is looked up or kept.
func TestCandidatesCacheNotKept(t *testing.T) {
	lookups := cacheLookups(t)
	c := newCandidateCloud(t, httpapi.Config{CandidatesCacheBytes: 8 * 100})
	path := "/allocation_candidates?resources=VCPU:1"
	want := send(t, c.plain, http.MethodGet, path, "", "")
	for range 2 {
		sameAnswer(t, "an answer above the budget's share", send(t, c.cached, http.MethodGet, path, "", ""), want)
	}
	if hits, misses := lookups(); hits != 0 || misses != 2 {
		t.Fatalf("an answer too large to keep: %d hits, %d misses", hits, misses)
	}
	small := "/allocation_candidates?resources=VCPU:1000"
	for range 2 {
		sameAnswer(t, "a small answer", send(t, c.cached, http.MethodGet, small, "", ""), send(t, c.plain, http.MethodGet, small, "", ""))
	}
	if hits, misses := lookups(); hits != 1 || misses != 3 {
		t.Fatalf("a small answer asked twice: %d hits, %d misses in all", hits, misses)
	}
	r := newCandidateCloud(t, httpapi.Config{CandidatesCacheBytes: 16 << 20, RandomizeCandidates: true})
	seen := map[string]bool{}
	for range 20 {
		a := send(t, r.cached, http.MethodGet, path, "", "")
		if a.code != http.StatusOK {
			t.Fatalf("randomized: %d %s", a.code, a.body)
		}
		seen[string(a.body)] = true
	}
	if hits, misses := lookups(); hits != 1 || misses != 3 || len(seen) < 2 {
		t.Fatalf("randomized candidates: %d hits, %d misses in all, %d orders in 20 answers", hits, misses, len(seen))
	}
}

// usedVCPU reads provider rp's VCPU usage from an answer's summaries.
func usedVCPU(t *testing.T, a answer, rp string) int64 {
	var body struct {
		Summaries map[string]struct {
			Resources map[string]struct {
				Used int64 `json:"used"`
			} `json:"resources"`
		} `json:"provider_summaries"`
	}
	if a.code != http.StatusOK || json.Unmarshal(a.body, &body) != nil {
		t.Errorf("GET candidates: %d %s", a.code, a.body)
		return -1
	}
	return body.Summaries[rp].Resources["VCPU"].Used
}

// TestCandidatesCacheConcurrent: while readers ask one query again and
// again, a writer's allocations through the same process are each in
// its next answer (read-your-writes), no reader ever sees usage go back,
// and identical concurrent misses agree with the uncached answer.
func TestCandidatesCacheConcurrent(t *testing.T) {
	lookups := cacheLookups(t)
	c := newCandidateCloud(t, httpapi.Config{CandidatesCacheBytes: 16 << 20})
	path := "/allocation_candidates?resources=VCPU:1"
	done := make(chan struct{})
	var wg sync.WaitGroup
	stop := sync.OnceFunc(func() { close(done); wg.Wait() })
	defer stop() // a failed write ends the test: the readers too
	for range 6 {
		wg.Go(func() {
			last := int64(0)
			for {
				select {
				case <-done:
					return
				default:
				}
				used := usedVCPU(t, send(t, c.cached, http.MethodGet, path, "", ""), c.cn2)
				if used < last {
					t.Errorf("a reader saw usage go back from %d to %d", last, used)
					return
				}
				last = used
			}
		})
	}
	const writes = 12
	for i := range writes {
		write(t, c.cached, http.MethodPut, fmt.Sprintf("/allocations/e0000000-0000-4000-8000-%012d", i),
			`{"allocations": {"`+c.cn2+`": {"resources": {"VCPU": 1}}}, "project_id": "p", "user_id": "u", "consumer_generation": null, "consumer_type": "INSTANCE"}`, http.StatusNoContent)
		if used := usedVCPU(t, send(t, c.cached, http.MethodGet, path, "", ""), c.cn2); used != int64(i+1) {
			t.Errorf("after write %d the writer's read says %d used", i+1, used)
		}
	}
	stop()
	hits0, misses0 := lookups()
	want := send(t, c.plain, http.MethodGet, path+"&limit=2", "", "")
	got := make([]answer, 8)
	for i := range got {
		wg.Go(func() { got[i] = send(t, c.cached, http.MethodGet, path+"&limit=2", "", "") })
	}
	wg.Wait()
	for i, a := range got {
		sameAnswer(t, fmt.Sprintf("concurrent request %d", i), a, want)
	}
	if hits, misses := lookups(); hits+misses-hits0-misses0 != int64(len(got)) || misses-misses0 < 1 {
		t.Fatalf("%d concurrent identical requests: %d hits, %d misses", len(got), hits-hits0, misses-misses0)
	}
}

// BenchmarkCandidatesCache: one GET /allocation_candidates of 300
// trees of three providers (900 candidates), computed (cache off) and
// sent from the answer cache (hit).
func BenchmarkCandidatesCache(b *testing.B) {
	ctx := context.Background()
	store := ledgertest.NewStore(b)
	for i := range 300 {
		root, err := store.Providers.ProviderCreate(ctx, resources.ProviderCreateParams{Name: fmt.Sprintf("cn%d", i)})
		if err != nil {
			b.Fatal(err)
		}
		invs := []engine.Inventory{resources.DefaultInventory("MEMORY_MB", 4096)}
		if _, err := store.Providers.InventoriesReplace(ctx, resources.InventoryParams{ProviderUUID: root.UUID, Generation: new(int64)}, invs); err != nil {
			b.Fatal(err)
		}
		for j := range 2 {
			numa, err := store.Providers.ProviderCreate(ctx, resources.ProviderCreateParams{Name: fmt.Sprintf("cn%d-numa%d", i, j), ParentUUID: root.UUID})
			if err != nil {
				b.Fatal(err)
			}
			invs := []engine.Inventory{resources.DefaultInventory("VCPU", 16)}
			if _, err := store.Providers.InventoriesReplace(ctx, resources.InventoryParams{ProviderUUID: numa.UUID, Generation: new(int64)}, invs); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, bc := range []struct {
		name  string
		bytes int
	}{{"computed", 0}, {"hit", 64 << 20}} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := build(httpapi.Config{CandidatesCacheBytes: bc.bytes}, store, nil, slog.New(slog.DiscardHandler))
			if err != nil {
				b.Fatal(err)
			}
			path := "/allocation_candidates?resources=VCPU:1,MEMORY_MB:512"
			if a := send(b, s, http.MethodGet, path, "", ""); a.code != http.StatusOK || len(a.body) < 100<<10 {
				b.Fatalf("GET: %d, %d bytes", a.code, len(a.body))
			}
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				req.Header.Set("X-Auth-Token", "admin")
				req.Header.Set("OpenStack-API-Version", "placement latest")
				s.ServeHTTP(discard{}, req)
			}
		})
	}
}

// discard is a ResponseWriter that keeps nothing.
type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(p []byte) (int, error) { return len(p), nil }
func (discard) WriteHeader(int)             {}
