package berthapi

import (
	"reflect"
	"strings"
	"testing"

	"github.com/berthd/berth/httpapi/placement"
	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/ledger/engine"
)

// claimQuery is how claims' selection fields used to be read: written out
// as the query string of GET /allocation_candidates and parsed by its
// code. The body is now read directly (placement's FromSelection); this
// reference checks that the answer, error messages included, did not
// change.
func claimQuery(b *claimBody) (q placement.OrderedQuery, any bool) {
	add := func(g *placement.SelectionGroup, suffix string) {
		if len(g.Resources.Keys) > 0 {
			parts := make([]string, len(g.Resources.Keys))
			for i, k := range g.Resources.Keys {
				parts[i] = k + ":" + g.Resources.Values[k].String()
			}
			q = append(q, placement.QueryParam{Key: "resources" + suffix, Value: strings.Join(parts, ",")})
		}
		for _, r := range g.Required {
			q = append(q, placement.QueryParam{Key: "required" + suffix, Value: r})
		}
		for _, m := range g.MemberOf {
			q = append(q, placement.QueryParam{Key: "member_of" + suffix, Value: m})
		}
		if g.InTree != "" {
			q = append(q, placement.QueryParam{Key: "in_tree" + suffix, Value: g.InTree})
		}
	}
	add((*placement.SelectionGroup)(&b.groupBody), "")
	for _, suffix := range b.Groups.Keys {
		g := b.Groups.Values[suffix]
		add(&g, suffix)
	}
	if len(b.RootRequired) > 0 {
		q = append(q, placement.QueryParam{Key: "root_required", Value: strings.Join(b.RootRequired, ",")})
	}
	for _, s := range b.SameSubtree {
		q = append(q, placement.QueryParam{Key: "same_subtree", Value: s})
	}
	if b.GroupPolicy != "" {
		q = append(q, placement.QueryParam{Key: "group_policy", Value: b.GroupPolicy})
	}
	return q, len(q) > 0
}

// compareClaimCandidates decodes body as a claim and fails t if reading
// its selection directly differs from reading it as a query string. It
// returns false for a body the claim schema refuses or whose resource
// class names hold the query's separators (read differently on purpose).
func compareClaimCandidates(t *testing.T, body string) bool {
	t.Helper()
	var b claimBody
	if err := wire.DecodeJSON([]byte(body), claimSchema, &b); err != nil {
		return false
	}
	for _, g := range append([]placement.SelectionGroup{placement.SelectionGroup(b.groupBody)}, valuesInOrder(b.Groups)...) {
		for _, class := range g.Resources.Keys {
			if strings.ContainsAny(class, ",:") {
				return false
			}
		}
	}
	cq := placement.CandidateQuery{Max: engine.DefaultMaxCandidates}
	got, gotSelected, gotErr := cq.FromSelection(b.selection(), claimsQueryVersion)
	q, wantSelected := claimQuery(&b)
	want, wantErr := cq.FromQuery(q, claimsQueryVersion)
	if gotSelected != wantSelected {
		t.Fatalf("%s: selected %v, want %v", body, gotSelected, wantSelected)
	}
	if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
		t.Fatalf("%s:\nerror   %v\nwant    %v", body, gotErr, wantErr)
	}
	if gotErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%s:\nparams %+v\nwant   %+v", body, got, want)
	}
	return true
}

func valuesInOrder[V any](m wire.OrderedMap[V]) []V {
	out := make([]V, len(m.Keys))
	for i, k := range m.Keys {
		out[i] = m.Values[k]
	}
	return out
}

// claimSelectionBodies are claims whose selection is valid, or invalid in
// each way GET /allocation_candidates words.
var claimSelectionBodies = func() []string {
	own := `"consumer_uuid": "c0a8e4e6-1d7b-4b0e-9c39-5f4b4fd1c1aa", "project_id": "p", "user_id": "u"`
	sel := []string{
		``,
		`"resources": {"VCPU": 1, "MEMORY_MB": 512}`,
		`"resources": {"VCPU": 0}`,
		`"resources": {"VCPU": -3}`,
		`"resources": {"VCPU": 99999999999999999999}`,
		`"resources": {"VCPU": 1, "VCPU": 2}`,
		`"resources": {"": 1}`,
		`"resources": {"VCPU ": 1}`,
		`"resources": {"VCPU": 1}, "required": ["A,!B", "in:C,D"]`,
		`"resources": {"VCPU": 1}, "required": ["A", "!A"]`,
		`"resources": {"VCPU": 1}, "required": ["in:A,!B"]`,
		`"resources": {"VCPU": 1}, "required": ["A,,B"]`,
		`"resources": {"VCPU": 1}, "required": ["!"]`,
		`"resources": {"VCPU": 1}, "member_of": ["in:` + aggA + `,` + aggB + `", "!` + aggA + `"]`,
		`"resources": {"VCPU": 1}, "member_of": ["` + aggA + `,` + aggB + `"]`,
		`"resources": {"VCPU": 1}, "member_of": ["nope"]`,
		`"resources": {"VCPU": 1}, "member_of": ["!in:` + aggA + `,x"]`,
		`"resources": {"VCPU": 1}, "in_tree": "` + aggA + `"`,
		`"resources": {"VCPU": 1}, "in_tree": "nope"`,
		`"required": ["A"]`,
		`"member_of": ["` + aggA + `"]`,
		`"resources": {"VCPU": 1}, "root_required": ["A", "!B"]`,
		`"resources": {"VCPU": 1}, "root_required": ["A", "!A"]`,
		`"resources": {"VCPU": 1}, "root_required": ["in:A"]`,
		`"resources": {"VCPU": 1}, "root_required": ["A,", "B"]`,
		`"groups": {"1": {"resources": {"VCPU": 1}}, "2": {"resources": {"VCPU": 1}}}`,
		`"groups": {"1": {"resources": {"VCPU": 1}}, "2": {"resources": {"VCPU": 1}}}, "group_policy": "isolate"`,
		`"groups": {"1": {"resources": {"VCPU": 1}}, "2": {"resources": {"VCPU": 1}}}, "group_policy": "none"`,
		`"resources": {"DISK_GB": 5}, "groups": {"b": {"resources": {"VCPU": 1}}, "a": {"resources": {"VCPU": 0}}}`,
		`"resources": {"VCPU": 1}, "groups": {"_A": {"required": ["T"]}}`,
		`"resources": {"VCPU": 1}, "groups": {"_A": {"required": ["T"]}}, "same_subtree": ["_A"]`,
		`"resources": {"VCPU": 1}, "groups": {"_A": {"required": ["T"]}}, "same_subtree": ["_A,_B"]`,
		`"resources": {"VCPU": 1}, "groups": {"_A": {"required": ["T"]}}, "same_subtree": ["_A,"]`,
		`"groups": {"_A": {"required": ["T"]}}, "same_subtree": ["_A"]`,
		`"resources": {"VCPU": 1}, "groups": {"x": {}}`,
		`"resources": {"VCPU": 1}, "groups": {"x": {"member_of": ["!` + aggA + `"], "in_tree": "` + aggB + `"}}, "same_subtree": ["x"]`,
		`"resources": {"VCPU": 1}, "groups": {"1": {"required": ["A,!A"], "resources": {"VCPU": 1}}}`,
		`"group_policy": "none"`,
		`"same_subtree": ["x"]`,
	}
	out := make([]string, 0, 2*len(sel))
	for _, s := range sel {
		if s == "" {
			out = append(out, `{`+own+`}`)
			continue
		}
		out = append(out, `{`+own+`, `+s+`}`)
	}
	return out
}()

func TestClaimCandidatesReadTheBodyAsTheQuery(t *testing.T) {
	for _, body := range claimSelectionBodies {
		if !compareClaimCandidates(t, body) {
			t.Errorf("%s: refused by the claim schema", body)
		}
	}
}

// A class name holding the query's separators is refused as badly formed
// (the query string form split it, and could read it as several classes).
func TestClaimCandidatesClassWithSeparators(t *testing.T) {
	cq := placement.CandidateQuery{Max: engine.DefaultMaxCandidates}
	for _, class := range []string{"VCPU:1,MEMORY_MB", "A:B", "A,B"} {
		var b claimBody
		body := `{"consumer_uuid": "c0a8e4e6-1d7b-4b0e-9c39-5f4b4fd1c1aa", "project_id": "p", "user_id": "u", "resources": {"` + class + `": 2}}`
		if err := wire.DecodeJSON([]byte(body), claimSchema, &b); err != nil {
			t.Fatal(err)
		}
		_, _, err := cq.FromSelection(b.selection(), claimsQueryVersion)
		if err == nil || !strings.Contains(err.Error(), "Badly formed resources parameter.") || !strings.Contains(err.Error(), "Got: "+class+":2.") {
			t.Errorf("class %q: err = %v", class, err)
		}
	}
}

// FuzzClaimCandidates checks, for any claim body the schema accepts, that
// its selection reads as it did through the query string.
func FuzzClaimCandidates(f *testing.F) {
	for _, b := range claimSelectionBodies {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body string) {
		compareClaimCandidates(t, body)
	})
}

// BenchmarkClaimCandidates reads a claim's selection directly (direct) and
// as it used to be read, through a query string (query).
func BenchmarkClaimCandidates(b *testing.B) {
	body := `{"consumer_uuid": "c0a8e4e6-1d7b-4b0e-9c39-5f4b4fd1c1aa", "project_id": "p", "user_id": "u",
		"resources": {"VCPU": 4, "MEMORY_MB": 8192, "DISK_GB": 40}, "required": ["HW_CPU_X86_AVX2", "!CUSTOM_SLOW"],
		"member_of": ["in:` + aggA + `,` + aggB + `"],
		"groups": {"nic": {"resources": {"SRIOV_NET_VF": 1}, "required": ["CUSTOM_PHYSNET_A"]}}, "group_policy": "none"}`
	var cb claimBody
	if err := wire.DecodeJSON([]byte(body), claimSchema, &cb); err != nil {
		b.Fatal(err)
	}
	cq := placement.CandidateQuery{Max: engine.DefaultMaxCandidates}
	b.Run("direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, _, err := cq.FromSelection(cb.selection(), claimsQueryVersion); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("query", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			q, _ := claimQuery(&cb)
			doc := make(map[string]any, len(q))
			for _, kv := range q {
				doc[kv.Key] = kv.Value
			}
			if err := placement.CandidatesSchema(claimsQueryVersion).Validate(doc); err != nil {
				b.Fatal(err)
			}
			if _, err := cq.FromQuery(q, claimsQueryVersion); err != nil {
				b.Fatal(err)
			}
		}
	})
}

const (
	aggA = "11111111-2222-3333-4444-555555555555"
	aggB = "66666666-7777-8888-9999-000000000000"
)
