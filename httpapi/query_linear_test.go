package httpapi

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/ledgertest"
)

// Query parameters repeated thousands of times must cost linear work: a
// 45 KB URL of 3,000 required= values re-read every value at each one
// (0.5-1 s of CPU) before parseRequestGroups read each key once.

// longQueries are query strings of n repeated or listed values, one per
// parameter shape that reads many values: the shapes that were quadratic.
func longQueries(n int) map[string]string {
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
	s := newBareServer(t)
	small, big := longQueries(500), longQueries(2000)
	for name := range small {
		allocs := func(raw string) float64 {
			q := parseOrderedQuery(raw)
			return testing.AllocsPerRun(3, func() {
				if _, err := s.candidatesParams(q, MaxVersion); err != nil {
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

// BenchmarkRequiredUnknownTraits serves GET /allocation_candidates with n
// unknown required= traits (the answer: 400, no such trait) through the
// whole server and database: the times for 1,000, 2,000 and 3,000 values
// should grow linearly (3,000 took 0.5-1 s while parsing was quadratic).
func BenchmarkRequiredUnknownTraits(b *testing.B) {
	store := ledgertest.NewStore(b)
	ledgertest.Provider(b, store, "cn1", ledger.DefaultInventory("VCPU", 8))
	s, err := build(Config{}, store, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1000, 2000, 3000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			path := "/allocation_candidates?" + longQueries(n)["required repeated"]
			for b.Loop() {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				req.Header.Set("X-Auth-Token", "admin")
				req.Header.Set("OpenStack-API-Version", "placement latest")
				rec := httptest.NewRecorder()
				s.ServeHTTP(rec, req)
				if rec.Code != http.StatusBadRequest {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
			}
		})
	}
}
