package httpapi

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/ledger"
)

// TestAppendClaimMatchesEncodingJSON checks that the claim answer written
// by hand is what encoding/json makes of claimResponse, byte for byte.
func TestAppendClaimMatchesEncodingJSON(t *testing.T) {
	strs := []string{"", "a", "\"q\"\\", "<&>", "\x00\x1f\b\f\n\r\t", "\u2028\u2029", "bad\xffutf8\xc3", "émoji 🙂", "\x7f"}
	floats := []float64{0, 1, -1, 0.1234567891234, 1e-7, -1e-7, 1e21, 1e20, 123456789, 1e-6, 5e-324, -0.5}
	al := func(r *rand.Rand) []ledger.ProviderResources {
		var out []ledger.ProviderResources
		for range r.IntN(4) {
			pr := ledger.ProviderResources{ProviderUUID: strs[r.IntN(len(strs))]}
			for range r.IntN(4) {
				pr.Resources = append(pr.Resources, ledger.Resource{Class: strs[r.IntN(len(strs))], Amount: r.Int64N(100) - 10})
			}
			out = append(out, pr)
		}
		return out
	}
	maps := func(r *rand.Rand) map[string][]string {
		if r.IntN(4) == 0 {
			return nil
		}
		m := map[string][]string{}
		for range r.IntN(3) {
			var v []string
			for range r.IntN(3) {
				v = append(v, strs[r.IntN(len(strs))])
			}
			m[strs[r.IntN(len(strs))]] = v
		}
		return m
	}
	opt := func(r *rand.Rand) claims.Option {
		o := claims.Option{Root: strs[r.IntN(len(strs))], RootName: strs[r.IntN(len(strs))], Score: floats[r.IntN(len(floats))],
			Allocations: al(r), Mappings: maps(r)}
		if r.IntN(3) > 0 {
			o.Weights = map[string]float64{}
			for range r.IntN(3) {
				o.Weights[strs[r.IntN(len(strs))]] = floats[r.IntN(len(floats))]
			}
		}
		return o
	}
	for seed := range uint64(500) {
		r := rand.New(rand.NewPCG(seed, 1))
		res := &claims.Result{ConsumerUUID: strs[r.IntN(len(strs))], ConsumerGeneration: r.Int64N(5), Allocations: al(r),
			Mappings: maps(r), Root: strs[r.IntN(len(strs))], RootName: strs[r.IntN(len(strs))], Score: floats[r.IntN(len(floats))],
			Attempts: r.IntN(3), DryRun: r.IntN(2) == 0}
		for range r.IntN(3) {
			res.Alternates = append(res.Alternates, opt(r))
		}
		for range r.IntN(3) {
			st := claims.Step{Unit: strs[r.IntN(len(strs))], Kind: "filter", Removed: r.IntN(5), Remaining: r.IntN(5)}
			if r.IntN(3) > 0 {
				st.Reasons = map[string]int{strs[r.IntN(len(strs))]: r.IntN(9)}
			}
			res.Steps = append(res.Steps, st)
		}
		if res.DryRun {
			for range r.IntN(3) {
				res.Ranking = append(res.Ranking, opt(r))
			}
			for range r.IntN(3) {
				res.ScriptletLog = append(res.ScriptletLog, claims.LogLine{Level: "info", Message: strs[r.IntN(len(strs))]})
			}
		}
		if r.IntN(4) == 0 {
			res.Migration = &ledger.ConsumerAllocations{ConsumerUUID: strs[r.IntN(len(strs))], Allocations: al(r)}
		}
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(claimResponse(res)); err != nil {
			t.Fatal(err)
		}
		got, ok := appendClaim(nil, res)
		if !ok || !bytes.Equal(got, bytes.TrimRight(want.Bytes(), "\n")) {
			t.Fatalf("seed %d:\n got %s\nwant %s", seed, got, want.Bytes())
		}
	}
}
