package claims

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/scheduler"
)

// mapRetryRequest is the request a retry key recorded before retryDoc:
// a map, which json.Marshal writes with its keys sorted. Requests
// recorded so must keep their fingerprints.
func mapRetryRequest(op string, p *Params, failedProvider, migration string) []byte {
	groups := p.Candidates
	groups.Limit, groups.Max, groups.MaxSteps = 0, 0, 0
	groups.Randomize, groups.Sample, groups.VersionsOnly = false, false, false
	doc := map[string]any{
		"project_id":          p.ProjectID,
		"user_id":             p.UserID,
		"consumer_type":       p.ConsumerType,
		"consumer_generation": p.ConsumerGeneration,
		"resources":           groups,
		"exclude_providers":   p.Exclude,
		"target":              p.Target,
		"name":                p.Name,
		"reason":              p.Reason,
		"properties":          p.Properties,
		"policy":              p.Policy,
		"keys":                p.Keys,
	}
	if p.Instance != nil {
		doc["instance"] = p.Instance
	}
	if op == OpReschedule {
		doc["failed_provider"] = failedProvider
	}
	if op == OpMove {
		doc["migration_uuid"] = canonicalOr(migration)
	}
	if p.LeaseSeconds != nil {
		doc["lease_seconds"] = *p.LeaseSeconds
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return raw
}

// retryKeyParams are requests of every shape a retry key meets.
func retryKeyParams() []Params {
	gen, zero, lease := int64(3), int64(0), int64(600)
	base := Params{ConsumerUUID: "c0ffee00-0000-4000-8000-000000000000", ProjectID: "p", UserID: "u",
		ConsumerType: "INSTANCE", Name: "vm-1", Alternates: 2,
		Candidates: engine.CandidatesParams{NestedAware: true, Limit: 100, Max: 1000, Sample: true, VersionsOnly: true,
			Groups: []engine.RequestGroup{{Resources: []engine.ResourceAmount{
				{Class: "VCPU", Amount: 4}, {Class: "MEMORY_MB", Amount: 16384}, {Class: "DISK_GB", Amount: 100}}}}}}
	full := base
	full.ConsumerGeneration, full.Exclude, full.Target, full.Reason, full.Policy = &gen, []string{"cn1", "cn2"}, "cn3", "evacuate", "spread"
	full.Properties = map[string]any{"b": 1.5, "a": []any{"x", nil, true}, "<html>": "&"}
	full.Instance = map[string]any{"name": "vm-1", "config": map[string]any{"limits.cpu": "4"}}
	full.Keys = []scheduler.KeyRequest{{Name: "rack", Value: 2, Weight: 0.5, System: true}}
	full.LeaseSeconds = &lease
	emptyInstance, zeroLease, emptyExclude := base, base, base
	emptyInstance.Instance = map[string]any{}
	zeroLease.LeaseSeconds = &zero
	emptyExclude.Exclude, emptyExclude.Properties = []string{}, map[string]any{}
	return []Params{base, full, emptyInstance, zeroLease, emptyExclude}
}

func TestRetryKeyKeepsFingerprints(t *testing.T) {
	for i, p := range retryKeyParams() {
		for _, op := range []struct{ op, failed, migration string }{
			{OpClaim, "", ""}, {OpReschedule, "", ""}, {OpReschedule, "cn7", ""},
			{OpMove, "", "6F1E5A2C-0000-4000-8000-00000000000A"}, {OpMove, "", "not-a-uuid"},
		} {
			t.Run(fmt.Sprintf("%d/%s/%s%s", i, op.op, op.failed, op.migration), func(t *testing.T) {
				want := mapRetryRequest(op.op, &p, op.failed, op.migration)
				k := newRetryKey(op.op, &p, op.failed, op.migration)
				if k == nil {
					t.Fatal("no retry key")
				}
				if !bytes.Equal(k.request, want) {
					t.Fatalf("request\n%s\nwant (as recorded before)\n%s", k.request, want)
				}
				if !bytes.Equal(k.fingerprint, fingerprint(op.op, want)) {
					t.Fatal("fingerprint changed")
				}
			})
		}
	}
}

// BenchmarkRetryKey is a claim's fingerprint: "map" as it was made
// before retryDoc, "struct" as newRetryKey makes it.
func BenchmarkRetryKey(b *testing.B) {
	p := retryKeyParams()[0]
	b.Run("map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = fingerprint(OpClaim, mapRetryRequest(OpClaim, &p, "", ""))
		}
	})
	b.Run("struct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = newRetryKey(OpClaim, &p, "", "")
		}
	})
}

// TestRetryDocAsMarshal: a retry key's request, appended, is the bytes
// json.Marshal writes for it, for random requests that set every field
// (strings that need escaping or are not UTF-8, nil and empty slices,
// properties of any shape, keys of every float form), and it fails where
// json.Marshal fails. The structs it writes field by field must not
// have grown fields it does not know.
func TestRetryDocAsMarshal(t *testing.T) {
	for _, c := range []struct {
		v      any
		fields int
	}{{retryDoc{}, 18}, {engine.CandidatesParams{}, 14}, {engine.RequestGroup{}, 7}, {engine.ResourceAmount{}, 2},
		{scheduler.KeyRequest{}, 4}} {
		if n := reflect.TypeOf(c.v).NumField(); n != c.fields {
			t.Fatalf("%T has %d fields, not %d: teach retryDoc.appendTo the new ones", c.v, n, c.fields)
		}
	}
	rng := rand.New(rand.NewPCG(39, 4))
	strs := []string{"", "p", "c0ffee00-0000-4000-8000-000000000001", "<&>", "é", "a\u2028b", "\x00\n", `a"b\`, "\xff", "CUSTOM_Z"}
	str := func() string { return strs[rng.IntN(len(strs))] }
	list := func() []string {
		if rng.IntN(4) == 0 {
			return nil
		}
		out := []string{}
		for range rng.IntN(3) {
			out = append(out, str())
		}
		return out
	}
	lists := func() [][]string {
		if rng.IntN(3) == 0 {
			return nil
		}
		out := [][]string{}
		for range rng.IntN(3) {
			out = append(out, list())
		}
		return out
	}
	floats := []float64{0, math.Copysign(0, -1), 0.5, -2, 1e-7, 1e21, 1.0 / 3, 123456.789}
	for trial := range 2000 {
		var d retryDoc
		if rng.IntN(2) == 0 {
			g := rng.Int64() - rng.Int64()
			d.ConsumerGeneration = &g
		}
		d.ConsumerType, d.Exclude, d.Name, d.Policy, d.ProjectID, d.Reason, d.Target, d.UserID =
			str(), list(), str(), str(), str(), str(), str(), str()
		if rng.IntN(2) == 0 {
			f := str()
			d.FailedProvider = &f
		}
		if rng.IntN(2) == 0 {
			m := str()
			d.MigrationUUID = &m
		}
		if rng.IntN(2) == 0 {
			l := rng.Int64N(1 << 40)
			d.LeaseSeconds = &l
		}
		if rng.IntN(2) == 0 {
			pr, pe := rng.Int64()-rng.Int64(), rng.IntN(2) == 0
			d.Priority, d.Preemptible = &pr, &pe
		}
		switch rng.IntN(4) {
		case 0:
			d.Properties = map[string]any{}
		case 1:
			d.Properties = map[string]any{str(): str(), str(): 1.5, "n": nil, "l": []any{str(), true, 1e300}, "m": map[string]any{str(): -0.0}}
		case 2:
			if trial%50 == 0 {
				d.Properties = map[string]any{"bad": math.NaN()}
			}
		}
		if rng.IntN(3) == 0 {
			inst := map[string]any{str(): str(), "config": map[string]any{"limits.cpu": "4"}}
			d.Instance = &inst
		}
		if rng.IntN(4) > 0 {
			d.Keys = []scheduler.KeyRequest{}
			for range rng.IntN(3) {
				d.Keys = append(d.Keys, scheduler.KeyRequest{Name: str(), Value: floats[rng.IntN(len(floats))],
					Weight: rng.NormFloat64() * math.Pow(10, float64(rng.IntN(40)-20)), System: rng.IntN(2) == 0})
			}
			if trial%70 == 0 {
				d.Keys = append(d.Keys, scheduler.KeyRequest{Value: math.Inf(1)})
			}
		}
		r := &d.Resources
		r.Isolate, r.RootRequired, r.RootForbidden, r.SameSubtrees = rng.IntN(2) == 0, list(), list(), lists()
		r.Limit, r.Max, r.MaxSteps = rng.IntN(100)-1, rng.IntN(1000), rng.IntN(1<<30)
		r.NestedAware, r.Randomize, r.Sample, r.VersionsOnly = rng.IntN(2) == 0, rng.IntN(2) == 0, rng.IntN(2) == 0, rng.IntN(2) == 0
		r.AvoidEvacuated, r.DeferRequests = rng.IntN(2) == 0, rng.IntN(2) == 0
		if rng.IntN(5) > 0 {
			r.Groups = []engine.RequestGroup{}
			for range rng.IntN(3) {
				g := engine.RequestGroup{Suffix: str(), RequiredTraits: lists(), ForbiddenTraits: list(), MemberOf: lists(),
					ForbiddenAggregates: list(), InTree: str()}
				if rng.IntN(4) > 0 {
					g.Resources = []engine.ResourceAmount{}
					for range rng.IntN(3) {
						g.Resources = append(g.Resources, engine.ResourceAmount{Class: str(), Amount: rng.Int64() - rng.Int64()})
					}
				}
				r.Groups = append(r.Groups, g)
			}
		}
		want, werr := json.Marshal(&d)
		got, ok := d.appendTo([]byte("x"))
		if werr != nil {
			if ok {
				t.Fatalf("trial %d: appended %s where json.Marshal fails (%v)", trial, got, werr)
			}
			continue
		}
		if !ok || got[0] != 'x' || !bytes.Equal(got[1:], want) {
			t.Fatalf("trial %d (ok %v):\n%s\nwant\n%s", trial, ok, got, want)
		}
	}
}
