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
	"github.com/berthd/berth/ledger/resources"
)

// TestAllocationsAnswerAsMap: a claim's allocations, appended, are the
// bytes their map (AllocationsMap) marshals to, with HTML escaping on
// and off, for random allocations: several providers and classes, in any
// order, a provider or a class given twice, none.
func TestAllocationsAnswerAsMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 2))
	uuids := []string{"b1c0ffee-0000-4000-8000-000000000001", "a1c0ffee-0000-4000-8000-000000000002",
		"c1c0ffee-0000-4000-8000-000000000003", "<&>", "é"}
	classes := []string{"VCPU", "MEMORY_MB", "DISK_GB", "CUSTOM_Z", "SRIOV_NET_VF", "A<B"}
	cases := [][]engine.Allocation{nil, {}}
	for range 500 {
		allocs := make([]engine.Allocation, rng.IntN(4))
		for i := range allocs {
			allocs[i].ProviderUUID = uuids[rng.IntN(len(uuids))]
			allocs[i].Resources = make([]engine.ResourceAmount, rng.IntN(4))
			for j := range allocs[i].Resources {
				allocs[i].Resources[j] = engine.ResourceAmount{Class: classes[rng.IntN(len(classes))], Amount: rng.Int64N(1 << 40)}
			}
		}
		cases = append(cases, allocs)
	}
	for i, allocs := range cases {
		for _, html := range []bool{false, true} {
			got, want := encode(t, allocationsAnswer(allocs), html), encode(t, AllocationsMap(allocs), html)
			if !bytes.Equal(got, want) {
				t.Fatalf("case %d (html %v): %s\nwant %s", i, html, got, want)
			}
		}
	}
}

func encode(t *testing.T, v any, html bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(html)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// answerResult is a written claim's result with every field its answer
// and record carry.
func answerResult() *Result {
	alloc := func(i int) []engine.Allocation {
		return []engine.Allocation{{ProviderUUID: fmt.Sprintf("c0ffee00-0000-4000-8000-%012d", i), Resources: []engine.ResourceAmount{
			{Class: "DISK_GB", Amount: 100}, {Class: "MEMORY_MB", Amount: 16384}, {Class: "VCPU", Amount: 4}}}}
	}
	return &Result{ConsumerUUID: "c0a8e4e6-1d7b-4b0e-9c39-5f4b4fd1c1aa", ConsumerGeneration: 1, Allocations: alloc(1),
		Mappings: map[string][]string{"": {"c0ffee00-0000-4000-8000-000000000001"}}, Root: "c0ffee00-0000-4000-8000-000000000001",
		RootName: "cn1", Score: 0.5, Attempts: 1,
		Alternates: []Option{{Root: "r2", RootName: "cn2", Score: 0.4, Allocations: alloc(2)},
			{Root: "r3", RootName: "cn<3>", Score: 0.3, Allocations: alloc(3)}},
		Steps: []Step{{Unit: "candidates", Kind: "filter", Remaining: 100, Reasons: map[string]int{}},
			{Unit: "capacity", Kind: "filter", Remaining: 100, Removed: 2, Reasons: map[string]int{"full": 2}},
			{Unit: "spread", Kind: "weigher", Remaining: 100, Reasons: map[string]int{}}},
		Preempted: []Victim{{ConsumerUUID: "v1", Root: "r1", Priority: -5, ProjectID: "p", UserID: "u", Allocations: alloc(1)}},
		Reused:    &Reused{From: ReusedFromClaim, Fields: []string{"resources"}},
		Migration: &resources.ConsumerAllocations{ConsumerUUID: "m1", Allocations: alloc(4)}}
}

// TestClaimAnswerRecorded: a written claim's answer is encoded once, the
// record holds those bytes, and a retry answered from the record gets
// the same result and the same bytes; a record of a version that
// recorded claims.Result's own fields reads as the same result.
func TestClaimAnswerRecorded(t *testing.T) {
	res := answerResult()
	o := &retryKey{op: OpClaim, fingerprint: []byte{1}, request: []byte(`{}`)}
	rec := o.record(&Params{ConsumerUUID: res.ConsumerUUID}, res)
	answer, err := res.Answer()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rec.Result, answer) {
		t.Fatalf("recorded %s\nanswered %s", rec.Result, answer)
	}
	fresh, err := encodeAnswer(answerResult())
	if err != nil || !bytes.Equal(fresh, answer) || bytes.HasSuffix(answer, []byte("\n")) || !bytes.Contains(answer, []byte("cn<3>")) {
		t.Fatalf("answer %s\nencoded anew %s (%v)", answer, fresh, err)
	}
	replayed, err := resultOfRecord(rec.Result)
	if err != nil {
		t.Fatal(err)
	}
	again, err := replayed.Answer()
	if err != nil || !bytes.Equal(again, answer) {
		t.Fatalf("replayed answer %s (%v)\nwant %s", again, err, answer)
	}
	want := answerResult()
	replayed.answer = nil
	if !reflect.DeepEqual(replayed, want) {
		t.Fatalf("replayed %+v\nwant %+v", replayed, want)
	}
	if again, _ := encodeAnswer(replayed); !bytes.Equal(again, answer) {
		t.Fatalf("replayed result encodes as %s\nwant %s", again, answer)
	}

	old, err := json.Marshal(answerResult())
	if err != nil {
		t.Fatal(err)
	}
	fromOld, err := resultOfRecord(old)
	if err != nil {
		t.Fatal(err)
	}
	if fromOld.answer != nil || !reflect.DeepEqual(fromOld, answerResult()) {
		t.Fatalf("old record read as %+v", fromOld)
	}
}

// TestAppendAnswerAsEncoder: the answer of a written claim, appended,
// is the bytes the answer's encoder (encoding/json, HTML characters not
// escaped) writes, for random answers: strings that need escaping or
// are not UTF-8, scores of every form, maps and slices nil, empty or
// not; an answer with any other field, or a score that is not finite,
// is left to the encoder.
func TestAppendAnswerAsEncoder(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 3))
	strs := []string{"", "cn1", "c0ffee00-0000-4000-8000-000000000001", "<&>", "é", "a\u2028b", "\x00\n", `a"b\`, "\xff", "CUSTOM_Z"}
	str := func() string { return strs[rng.IntN(len(strs))] }
	scores := []float64{0, math.Copysign(0, -1), 0.5, 1, -1, 1e-7, 1e-6, 1e21, 1e20, 123456789.125, -3.5e-10, 1.0 / 3}
	score := func() float64 {
		if rng.IntN(3) == 0 {
			return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(50)-25))
		}
		return scores[rng.IntN(len(scores))]
	}
	allocs := func() allocationsAnswer {
		if rng.IntN(5) == 0 {
			return nil
		}
		out := make(allocationsAnswer, rng.IntN(3))
		for i := range out {
			out[i] = engine.Allocation{ProviderUUID: str(), Resources: []engine.ResourceAmount{{Class: str(), Amount: rng.Int64N(1 << 40)}}}
		}
		return out
	}
	mappings := func() map[string][]string {
		switch rng.IntN(4) {
		case 0:
			return nil
		case 1:
			return map[string][]string{}
		}
		m := map[string][]string{}
		for range 1 + rng.IntN(3) {
			var v []string
			if rng.IntN(4) > 0 {
				v = []string{}
				for range rng.IntN(3) {
					v = append(v, str())
				}
			}
			m[str()] = v
		}
		return m
	}
	for trial := range 2000 {
		a := &claimAnswer{Allocations: allocs(), Attempts: rng.IntN(100) - 1, ConsumerGeneration: rng.Int64() - rng.Int64(),
			ConsumerUUID: str(), DryRun: rng.IntN(2) == 0, Mappings: mappings(), RootProviderName: str(),
			RootProviderUUID: str(), Score: score()}
		if rng.IntN(5) > 0 {
			a.Alternates = []alternateJSON{}
			for range rng.IntN(3) {
				a.Alternates = append(a.Alternates, alternateJSON{Allocations: allocs(), Mappings: mappings(),
					RootProviderName: str(), RootProviderUUID: str(), Score: score()})
			}
		}
		if rng.IntN(5) > 0 {
			a.Steps = []stepJSON{}
			for range rng.IntN(4) {
				st := stepJSON{Kind: str(), Remaining: rng.IntN(1000), Removed: rng.IntN(1000), Unit: str()}
				if rng.IntN(4) > 0 {
					st.Reasons = map[string]int{}
					for range rng.IntN(3) {
						st.Reasons[str()] = rng.IntN(100)
					}
				}
				a.Steps = append(a.Steps, st)
			}
		}
		got, ok := appendAnswer([]byte("x"), a)
		want := encode(t, a, false)
		if !ok || !bytes.Equal(got[1:], bytes.TrimSuffix(want, []byte("\n"))) || got[0] != 'x' {
			t.Fatalf("trial %d (ok %v): %s\nwant %s", trial, ok, got, want)
		}
	}
	written := &claimAnswer{Score: 0.5, Steps: []stepJSON{}}
	for i, a := range []*claimAnswer{{Score: math.NaN()}, {Score: math.Inf(-1)},
		{Alternates: []alternateJSON{{Score: math.Inf(1)}}}, {Migration: &migrationJSON{}}, {Preempted: []victimJSON{}},
		{Quota: &QuotaJSON{}}, {Ranking: []rankedJSON{}}, {Reused: &reusedJSON{}}, {ScriptletLog: []logLineJSON{}}} {
		if _, ok := appendAnswer(nil, a); ok {
			t.Errorf("case %d appended: %+v", i, a)
		}
	}
	if _, ok := appendAnswer(nil, written); !ok {
		t.Error("a written claim's answer not appended")
	}
}

// BenchmarkClaimAnswer is a claim's answer encoded: one provider of
// three classes, two alternates, the steps of the default policy.
func BenchmarkClaimAnswer(b *testing.B) {
	r := benchResult()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encodeAnswer(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkClaimRecordAndAnswer is what a written claim's result costs to
// record for its retries and to answer.
func BenchmarkClaimRecordAndAnswer(b *testing.B) {
	o := &retryKey{op: OpClaim, fingerprint: []byte{1}, request: []byte(`{}`)}
	p := &Params{ConsumerUUID: "c0a8e4e6-1d7b-4b0e-9c39-5f4b4fd1c1aa"}
	b.ReportAllocs()
	for b.Loop() {
		r := benchResult()
		if o.record(p, r) == nil {
			b.Fatal("not recorded")
		}
		if _, err := r.Answer(); err != nil {
			b.Fatal(err)
		}
	}
}

func benchResult() *Result {
	alloc := func(i int) []engine.Allocation {
		return []engine.Allocation{{ProviderUUID: fmt.Sprintf("c0ffee00-0000-4000-8000-%012d", i), Resources: []engine.ResourceAmount{
			{Class: "VCPU", Amount: 4}, {Class: "MEMORY_MB", Amount: 16384}, {Class: "DISK_GB", Amount: 100}}}}
	}
	return &Result{ConsumerUUID: "c0a8e4e6-1d7b-4b0e-9c39-5f4b4fd1c1aa", ConsumerGeneration: 1, Allocations: alloc(1),
		Mappings: map[string][]string{"": {"c0ffee00-0000-4000-8000-000000000001"}}, Root: "c0ffee00-0000-4000-8000-000000000001",
		RootName: "cn1", Score: 0.5, Attempts: 1,
		Alternates: []Option{{Root: "r2", RootName: "cn2", Score: 0.4, Allocations: alloc(2)},
			{Root: "r3", RootName: "cn3", Score: 0.3, Allocations: alloc(3)}},
		Steps: []Step{{Unit: "candidates", Kind: "filter", Remaining: 100}, {Unit: "capacity", Kind: "filter", Remaining: 100},
			{Unit: "spread", Kind: "weigher", Remaining: 100}}}
}
