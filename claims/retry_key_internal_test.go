package claims

import (
	"bytes"
	"encoding/json"
	"fmt"
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
