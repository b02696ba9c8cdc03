package load

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakePlacement is a small in-memory Placement, enough for the tool's
// requests: providers with generations, inventories, aggregates, traits,
// usages, single-group allocation candidates and allocation PUTs.
type fakePlacement struct {
	t  *testing.T
	mu sync.Mutex

	providers map[string]*fakeRP // by uuid
	order     []string
	traits    map[string]bool
	classes   map[string]bool
	consumers map[string]map[string]map[string]int // consumer -> rp -> class -> used

	conflictPuts int // answer this many PUT /allocations or POST /claims with 409 first
	failClaims   int // answer this many POST /claims with 500 first
	noHostClaims int // answer this many POST /claims with 409 berth.no_valid_host first
	requests     int
	badHeaders   int
	deletes      int // DELETE /allocations answered 204
	failDeletes  int // answer this many DELETE /allocations with 500 first
	// deleteDelay (ns) delays every DELETE before it takes the lock, so
	// that slow releases run concurrently.
	deleteDelay atomic.Int64
}

type fakeRP struct {
	ProviderBody
	inv    map[string]InventoryBody
	aggs   []string
	traits []string
}

func newFake(t *testing.T) (*fakePlacement, *httptest.Server) {
	f := &fakePlacement{t: t, providers: map[string]*fakeRP{}, traits: map[string]bool{},
		classes: map[string]bool{}, consumers: map[string]map[string]map[string]int{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakePlacement) usage(rp string) map[string]int {
	u := map[string]int{}
	for _, allocs := range f.consumers {
		for class, n := range allocs[rp] {
			u[class] += n
		}
	}
	return u
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakePlacement) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if d := f.deleteDelay.Load(); d > 0 && r.Method == http.MethodDelete {
		time.Sleep(time.Duration(d))
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.requests++
	if r.Header.Get("X-Auth-Token") != "admin" || r.Header.Get("OpenStack-API-Version") != "placement 1.39" {
		f.badHeaders++
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	decode := func(v any) bool {
		if err := json.NewDecoder(r.Body).Decode(v); err != nil {
			writeJSON(w, 400, map[string]string{"error": err.Error()})
			return false
		}
		return true
	}
	route := r.Method + " " + parts[0]
	if len(parts) > 2 {
		route += "/*/" + parts[2]
	} else if len(parts) == 2 {
		route += "/*"
	}
	rp := func() *fakeRP {
		p := f.providers[parts[1]]
		if p == nil {
			writeJSON(w, 404, nil)
		}
		return p
	}
	bump := func(p *fakeRP, gen int) bool {
		if gen != p.Generation {
			writeJSON(w, 409, map[string]string{"code": "placement.concurrent_update"})
			return false
		}
		p.Generation++
		return true
	}
	switch route {
	case "GET ":
		writeJSON(w, 200, map[string]any{"versions": []any{}})
	case "POST resource_providers":
		var b ProviderBody
		if !decode(&b) {
			return
		}
		for _, p := range f.providers {
			if p.UUID == b.UUID || p.Name == b.Name {
				writeJSON(w, 409, nil)
				return
			}
		}
		f.providers[b.UUID] = &fakeRP{ProviderBody: b}
		f.order = append(f.order, b.UUID)
		writeJSON(w, 200, b)
	case "GET resource_providers":
		var list []ProviderBody
		for _, u := range f.order {
			list = append(list, f.providers[u].ProviderBody)
		}
		writeJSON(w, 200, map[string]any{"resource_providers": list})
	case "GET resource_providers/*":
		if p := rp(); p != nil {
			writeJSON(w, 200, p.ProviderBody)
		}
	case "PUT resource_providers/*/inventories":
		var b InventoriesBody
		if p := rp(); p != nil && decode(&b) && bump(p, b.ResourceProviderGeneration) {
			p.inv = b.Inventories
			writeJSON(w, 200, InventoriesBody{p.Generation, p.inv})
		}
	case "GET resource_providers/*/inventories":
		if p := rp(); p != nil {
			writeJSON(w, 200, InventoriesBody{p.Generation, p.inv})
		}
	case "PUT resource_providers/*/aggregates":
		var b AggregatesBody
		if p := rp(); p != nil && decode(&b) && bump(p, b.ResourceProviderGeneration) {
			p.aggs = b.Aggregates
			writeJSON(w, 200, AggregatesBody{p.aggs, p.Generation})
		}
	case "PUT resource_providers/*/traits":
		var b TraitsBody
		if p := rp(); p != nil && decode(&b) && bump(p, b.ResourceProviderGeneration) {
			for _, tr := range b.Traits {
				if !f.traits[tr] && strings.HasPrefix(tr, "CUSTOM_") {
					writeJSON(w, 400, nil)
					return
				}
			}
			p.traits = b.Traits
			writeJSON(w, 200, TraitsBody{p.traits, p.Generation})
		}
	case "GET resource_providers/*/usages":
		if p := rp(); p != nil {
			writeJSON(w, 200, UsagesBody{f.usage(p.UUID), p.Generation})
		}
	case "PUT traits/*", "PUT resource_classes/*":
		m := f.traits
		if parts[0] == "resource_classes" {
			m = f.classes
		}
		code := 204
		if !m[parts[1]] {
			m[parts[1]], code = true, 201
		}
		w.WriteHeader(code)
	case "GET allocation_candidates":
		want, err := ParseResources(r.URL.Query().Get("resources"))
		if err != nil {
			writeJSON(w, 400, nil)
			return
		}
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		var ars []map[string]any
		for _, u := range f.order {
			p, use, fits := f.providers[u], f.usage(u), true
			res := map[string]int{}
			for _, a := range want {
				inv, ok := p.inv[a.Class]
				fits = fits && ok && float64(use[a.Class]+a.Units) <= inv.Capacity()
				res[a.Class] = a.Units
			}
			if fits && (limit == 0 || len(ars) < limit) {
				ars = append(ars, map[string]any{"allocations": map[string]any{u: map[string]any{"resources": res}}})
			}
		}
		writeJSON(w, 200, map[string]any{"allocation_requests": ars, "provider_summaries": map[string]any{}})
	case "PUT allocations/*":
		var b ClaimBody
		if !decode(&b) {
			return
		}
		if f.conflictPuts > 0 {
			f.conflictPuts--
			writeJSON(w, 409, map[string]string{"code": "placement.concurrent_update"})
			return
		}
		if b.ConsumerType != "INSTANCE" || b.ProjectID == "" || b.UserID == "" {
			writeJSON(w, 400, nil)
			return
		}
		allocs := map[string]map[string]int{}
		for u, a := range b.Allocations {
			p := f.providers[u]
			if p == nil {
				writeJSON(w, 400, nil)
				return
			}
			use := f.usage(u)
			for class, n := range a.Resources {
				if float64(use[class]+n) > p.inv[class].Capacity() {
					writeJSON(w, 409, map[string]string{"code": "placement.inventory.inuse"})
					return
				}
			}
			allocs[u] = a.Resources
		}
		f.consumers[parts[1]] = allocs
		w.WriteHeader(204)
	case "DELETE allocations/*":
		if f.failDeletes > 0 {
			f.failDeletes--
			writeJSON(w, 500, nil)
			return
		}
		// Placement answers 404 for a consumer with no allocations.
		if f.consumers[parts[1]] == nil {
			writeJSON(w, 404, nil)
			return
		}
		delete(f.consumers, parts[1])
		f.deletes++
		w.WriteHeader(204)
	case "GET allocations/*":
		out := map[string]any{}
		for rp, res := range f.consumers[parts[1]] {
			out[rp] = map[string]any{"resources": res}
		}
		writeJSON(w, 200, map[string]any{"allocations": out})
	case "POST claims":
		var b ClaimRequest
		if !decode(&b) {
			return
		}
		if b.ConsumerGeneration != nil || b.ProjectID == "" || b.UserID == "" || len(b.Resources) == 0 || f.consumers[b.ConsumerUUID] != nil {
			writeJSON(w, 400, nil)
			return
		}
		if f.failClaims > 0 {
			f.failClaims--
			writeJSON(w, 500, nil)
			return
		}
		if f.conflictPuts > 0 {
			f.conflictPuts--
			writeJSON(w, 409, map[string]any{"errors": []any{map[string]string{"code": "placement.concurrent_update"}}})
			return
		}
		if f.noHostClaims > 0 {
			f.noHostClaims--
			writeJSON(w, 409, map[string]any{"errors": []any{map[string]string{"code": "berth.no_valid_host"}}})
			return
		}
		// The emptiest provider that fits, as a spreading scheduler would.
		best, bestFree := "", -1.0
		for _, u := range f.order {
			p, use, fits := f.providers[u], f.usage(u), true
			for class, n := range b.Resources {
				inv, ok := p.inv[class]
				fits = fits && ok && float64(use[class]+n) <= inv.Capacity()
			}
			if free := p.inv["VCPU"].Capacity() - float64(use["VCPU"]); fits && free > bestFree {
				best, bestFree = u, free
			}
		}
		if best == "" {
			writeJSON(w, 409, map[string]any{"errors": []any{map[string]string{"code": "berth.no_valid_host"}}})
			return
		}
		f.consumers[b.ConsumerUUID] = map[string]map[string]int{best: b.Resources}
		writeJSON(w, 200, map[string]any{"consumer_uuid": b.ConsumerUUID, "consumer_generation": 1, "attempts": 1,
			"allocations": map[string]any{best: map[string]any{"resources": b.Resources}}})
	default:
		f.t.Errorf("fake placement: unexpected %s %s", r.Method, r.URL.Path)
		writeJSON(w, 404, nil)
	}
}

func (f *fakePlacement) withTrait(trait string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, u := range f.order {
		if slices.Contains(f.providers[u].traits, trait) {
			out = append(out, f.providers[u].Name)
		}
	}
	// Seeding creates providers from several workers at once, so their
	// creation order varies; the names are compared as a sorted set.
	slices.Sort(out)
	return out
}
