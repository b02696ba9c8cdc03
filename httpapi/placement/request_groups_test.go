package placement

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/ledger/engine"
)

func TestParseRequestGroups(t *testing.T) {
	v := func(minor int) wire.Version { return wire.Version{Major: 1, Minor: minor} }
	tests := []struct {
		query   string
		v       wire.Version
		subtree [][]string
		want    string // groups rendered, or the error's message
	}{
		{"resources=VCPU:1,MEMORY_MB:2&required=A,!B", v(22), nil, "[:VCPU=1,MEMORY_MB=2 req=[[A]] forbid=[B]]"},
		{"resources1=VCPU:1&resources=DISK_GB:5&member_of1=in:" + aggA + "," + aggB, v(25), nil,
			"[1:VCPU=1 member=[[" + aggA + " " + aggB + "]]] [:DISK_GB=5]"},
		{"resources=VCPU:1&required=in:A,B&required=C", v(39), nil, "[:VCPU=1 req=[[A B] [C]]]"},
		{"resources=VCPU:1&required=A&required=C", v(38), nil, "[:VCPU=1 req=[[C]]]"},
		{"resources=VCPU:1&resources=VCPU:2", v(25), nil, "[:VCPU=2]"},
		{"resources=", v(25), nil, "Got: empty string."},
		{"resources=VCPU", v(25), nil, "Got: VCPU."},
		{"resources=VCPU:x", v(25), nil, "Requested resource VCPU expected positive integer amount. Got: x."},
		{"resources=VCPU:0", v(25), nil, "requires amount >= 1. Got: 0."},
		{"required=FOO&required1=BAR", v(25), nil, "orphaned traits keys: required, required1"},
		{"resources=VCPU:1&in_tree1=" + aggA, v(31), nil, "All request groups must specify resources."},
		{"group_policy=none", v(25), nil, "At least one request group"},
		{"resources=VCPU:1&required=A,!A", v(22), nil, "Conflicting required and forbidden traits found in the following traits keys: required: (A)"},
		{"resources=VCPU:1&member_of=!" + aggA, v(31), nil, "Forbidden member_of parameters are not supported"},
		{"resources=VCPU:1&member_of=" + aggA + "," + aggB, v(32), nil, "must be prefixed with the 'in:' or '!in:'"},
		{"resources=VCPU:1&member_of=x&member_of=y", v(23), nil, "Multiple member_of parameters are not supported"},
		{"resources=VCPU:1&required_A=T", v(36), nil, "Resourceless suffixed group request should be specified in `same_subtree` query param: bad group(s) - ['_A']."},
		{"resources=VCPU:1&required_A=T", v(36), [][]string{{"_A", "_B"}}, "Real suffixes should be specified in `same_subtree`: ['_B'] not found in ['', '_A']."},
		{"required_A=T", v(36), [][]string{{"_A"}}, "There must be at least one resources or resources[$S] parameter."},
		{"resources=VCPU:1&required=in:A", v(38), nil, "only supported since microversion 1.39"},
		{"resources=VCPU:1&in_tree=nope", v(31), nil, "Expected 'in_tree' parameter to be a format of uuid. Got: nope"},
	}
	for _, tt := range tests {
		groups, err := parseRequestGroups(ParseOrderedQuery(tt.query), tt.v, tt.subtree)
		var got string
		if err != nil {
			got = err.Error()
			if !strings.Contains(got, tt.want) {
				t.Errorf("%s: error %q, want it to contain %q", tt.query, got, tt.want)
			}
			continue
		}
		var parts []string
		for _, g := range groups {
			s := "[" + g.Suffix + ":"
			var rs []string
			for _, r := range g.Resources {
				rs = append(rs, r.Class+"="+itoa(r.Amount))
			}
			s += strings.Join(rs, ",")
			if len(g.RequiredTraits) > 0 {
				s += " req=" + sprint(g.RequiredTraits)
			}
			if len(g.ForbiddenTraits) > 0 {
				s += " forbid=" + sprint(g.ForbiddenTraits)
			}
			if len(g.MemberOf) > 0 {
				s += " member=" + sprint(g.MemberOf)
			}
			parts = append(parts, s+"]")
		}
		if got = strings.Join(parts, " "); got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.query, got, tt.want)
		}
	}
}

const (
	aggA = "11111111-2222-3333-4444-555555555555"
	aggB = "66666666-7777-8888-9999-000000000000"
)

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func sprint(v any) string { return fmt.Sprint(v) }

// TestUniqueStringsKeepsASet checks that uniqueStrings stops scanning its
// list past uniqueScanMax (the appendUnique it replaced scanned the whole
// list at each add), and keeps the first-seen order without repeats.
func TestUniqueStringsKeepsASet(t *testing.T) {
	var u uniqueStrings
	for i := range 1000 {
		u.add(fmt.Sprint(i % 300))
	}
	if len(u.list) != 300 || u.list[0] != "0" || u.list[299] != "299" {
		t.Fatalf("list of %d: %v ... %v", len(u.list), u.list[:3], u.list[len(u.list)-3:])
	}
	if len(u.seen) != len(u.list) {
		t.Errorf("set of %d names for a list of %d", len(u.seen), len(u.list))
	}
	var small uniqueStrings
	for _, s := range []string{"b", "a", "b"} {
		small.add(s)
	}
	if small.seen != nil || strings.Join(small.list, ",") != "b,a" {
		t.Errorf("short list: %v, set %v", small.list, small.seen)
	}
}

// Query parameters repeated thousands of times must cost linear work:
// a URL of thousands of required= values re-read every value at each one
// before parseRequestGroups read each key once.

// LongQueries are query strings of n repeated or listed values, one per
// parameter shape that reads many values: the shapes that were quadratic.
func LongQueries(n int) map[string]string {
	join := func(format string, sep string) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = fmt.Sprintf(format, i)
		}
		return strings.Join(parts, sep)
	}
	agg := func(i int) string { return fmt.Sprintf("%08x-0000-4000-8000-000000000000", i) }
	aggs := make([]string, n)
	for i := range aggs {
		aggs[i] = "member_of=" + agg(i)
	}
	return map[string]string{
		"required repeated":  "resources=VCPU:1&" + join("required=CUSTOM_T%d", "&"),
		"forbidden repeated": "resources=VCPU:1&" + join("required=!CUSTOM_T%d", "&"),
		"required any-of":    "resources=VCPU:1&required=in:" + join("CUSTOM_T%d", ","),
		"required one list":  "resources=VCPU:1&required=" + join("!CUSTOM_T%d", ","),
		"member_of repeated": "resources=VCPU:1&" + strings.Join(aggs, "&"),
		"resources classes":  "resources=" + join("CUSTOM_C%d:1", ","),
		"root_required":      "resources=VCPU:1&root_required=" + join("CUSTOM_T%d", ","),
	}
}

// TestLongQueriesLinear counts the allocations of reading each shape of
// long query at 500 and at 2,000 values: linear work allocates about four
// times as much for four times the values, the quadratic reading
// allocated about sixteen times as much.
func TestLongQueriesLinear(t *testing.T) {
	cq := CandidateQuery{Max: engine.DefaultMaxCandidates}
	small, big := LongQueries(500), LongQueries(2000)
	for name := range small {
		allocs := func(raw string) float64 {
			q := ParseOrderedQuery(raw)
			return testing.AllocsPerRun(3, func() {
				if _, err := cq.FromQuery(q, wire.MaxVersion); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
			})
		}
		a, b := allocs(small[name]), allocs(big[name])
		t.Logf("%s: %.0f allocations at 500 values, %.0f at 2,000", name, a, b)
		if b > 5*a {
			t.Errorf("%s: %.0f allocations at 2,000 values, %.0f at 500: more than linear", name, b, a)
		}
	}
}
