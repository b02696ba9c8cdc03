package placement_test

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/ledger/ledgertest"
)

var updateWriteGolden = flag.Bool("update-write-golden", false, "rewrite testdata/writes.golden from this build's answers")

// TestWriteAnswersGolden plays the writes of a seeding (POST
// /resource_providers, PUT inventories, aggregates and traits), with good
// bodies written in unusual ways and with bad ones, at several
// microversions, and compares every answer (status, headers, body) with
// testdata/writes.golden, recorded from the build before the write
// path's fast paths (decoding from one parse, hand-written answers): they
// must change no byte. Only what differs from run to run is masked: the
// request id, Date and Last-Modified.
func TestWriteAnswersGolden(t *testing.T) {
	store := ledgertest.NewStore(t)
	s, err := build(httpapi.Config{}, store, nil, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	const (
		rp1 = "11111111-1111-4111-8111-111111111111"
		rp2 = "22222222-2222-4222-8222-222222222222"
		agg = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"
	)
	type call struct{ method, path, version, body string }
	inv := func(gen int, invs string) string {
		return fmt.Sprintf(`{"resource_provider_generation": %d, "inventories": {%s}}`, gen, invs)
	}
	const vcpu = `"VCPU": {"total": 64, "reserved": 0, "min_unit": 1, "max_unit": 64, "step_size": 1, "allocation_ratio": 4}`
	calls := []call{
		{"PUT", "/traits/CUSTOM_GOLDEN", "1.39", ""},
		// Creation at the microversions whose answers differ.
		{"POST", "/resource_providers", "1.0", `{"name": "old", "uuid": "` + rp2 + `"}`},
		{"POST", "/resource_providers", "1.14", `{"name": "child", "uuid": "66666666-6666-4666-8666-666666666666", "parent_provider_uuid": "` + rp2 + `"}`},
		{"POST", "/resource_providers", "1.20", `{"name": "n\u00e9\"<&>\\u2028", "uuid": "33333333-3333-4333-8333-333333333333", "parent_provider_uuid": null}`},
		{"POST", "/resource_providers", "1.39", `{"uuid":"` + rp1 + `","name":"compute-1"}`},
		{"POST", "/resource_providers", "1.39", `{"uuid":"44444444444444444444444444444444","name":"compute-\ud83d\ude00","name":"dup"}`},
		{"POST", "/resource_providers", "1.39", `{"uuid":"` + rp1 + `","name":"again"}`},
		{"POST", "/resource_providers", "1.39", `{"name": 5}`},
		{"POST", "/resource_providers", "1.39", `{"name": "x", "extra": 1}`},
		{"POST", "/resource_providers", "1.39", `{"name": "x", "uuid": "nope"}`},
		{"POST", "/resource_providers", "1.39", `{"name": "x"`},
		{"POST", "/resource_providers", "1.39", `{"name": NaN}`},
		{"POST", "/resource_providers", "1.39", `[]`},
		{"POST", "/resource_providers", "1.39", `{"name": "` + strings.Repeat("x", 201) + `"}`},
		{"POST", "/resource_providers", "1.39", `{"name": "x", "uuid": "77777777-7777-4777-8777-777777777777", "parent_provider_uuid": "55555555-5555-4555-8555-555555555555"}`},
		// Inventories: as the load tool writes them, and odd numbers.
		{"PUT", "/resource_providers/" + rp1 + "/inventories", "1.39", `{"resource_provider_generation":0,"inventories":{` +
			`"DISK_GB":{"total":4000,"reserved":100,"min_unit":1,"max_unit":4000,"step_size":1,"allocation_ratio":1},` +
			`"MEMORY_MB":{"total":262144,"reserved":4096,"min_unit":1,"max_unit":262144,"step_size":1,"allocation_ratio":1},` +
			`"VCPU":{"total":64,"reserved":0,"min_unit":1,"max_unit":64,"step_size":1,"allocation_ratio":4}}}`},
		{"PUT", "/resource_providers/" + rp1 + "/inventories", "1.39", inv(1, `"VCPU": {"total": 64.0, "max_unit": 1e1, "allocation_ratio": 1.50}, "DISK_GB": {"total": 10, "allocation_ratio": 16.0, "reserved": 0}, "VCPU": {"total": 32}`)},
		{"PUT", "/resource_providers/" + rp1 + "/inventories", "1.39", inv(2, `"MEMORY_MB": {"total": 1024, "resource_provider_generation": 7}, "CUSTOM_GOLDEN": {"total": 1, "allocation_ratio": 3e2}`)},
		{"PUT", "/resource_providers/" + rp1 + "/inventories", "1.39", inv(0, vcpu)},
		{"PUT", "/resource_providers/" + rp1 + "/inventories", "1.39", `{"resource_provider_generation": 1.0, "inventories": {}}`},
		{"PUT", "/resource_providers/" + rp1 + "/inventories", "1.39", `{"resource_provider_generation": 1e30, "inventories": {}}`},
		{"PUT", "/resource_providers/" + rp1 + "/inventories", "1.39", inv(3, `"VCPU": {"total": 1.5}`)},
		{"PUT", "/resource_providers/" + rp1 + "/inventories", "1.39", inv(3, `"VCPU": {"total": 8, "allocation_ratio": Infinity}`)},
		{"PUT", "/resource_providers/" + rp1 + "/inventories", "1.39", inv(3, `"vcpu": {"total": 8}`)},
		{"PUT", "/resource_providers/" + rp1 + "/inventories", "1.39", inv(3, `"VCPU": {"total": 8, "bogus": 1}`)},
		{"PUT", "/resource_providers/" + rp1 + "/inventories", "1.39", inv(3, `"VCPU": {"total": 8, "min_unit": 9}`)},
		{"PUT", "/resource_providers/" + rp1 + "/inventories", "1.39", inv(3, `"NOPE": {"total": 8}`)},
		{"PUT", "/resource_providers/" + rp1 + "/inventories", "1.39", `{"inventories": {}, "resource_provider_generation": 3, "inventories": {"VCPU": {"total": 2}}}`},
		{"PUT", "/resource_providers/" + rp1 + "/inventories", "1.39", inv(4, ``)},
		{"PUT", "/resource_providers/" + rp1 + "/inventories", "1.5", inv(5, vcpu)},
		{"PUT", "/resource_providers/" + rp1 + "/inventories", "1.39", `{"resource_provider_generation": 6, "inventories": {"VCPU": null}}`},
		{"PUT", "/resource_providers/99999999-9999-4999-8999-999999999999/inventories", "1.39", inv(0, vcpu)},
		{"PUT", "/resource_providers/99999999-9999-4999-8999-999999999999/inventories", "1.39", `{"x": 1}`},
		// Aggregates, before and from 1.19.
		{"PUT", "/resource_providers/" + rp1 + "/aggregates", "1.39", `{"aggregates":["` + agg + `"],"resource_provider_generation":6}`},
		{"PUT", "/resource_providers/" + rp1 + "/aggregates", "1.39", `{"aggregates":["AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"],"resource_provider_generation":7}`},
		{"PUT", "/resource_providers/" + rp1 + "/aggregates", "1.39", `{"aggregates":[],"resource_provider_generation":8}`},
		{"PUT", "/resource_providers/" + rp1 + "/aggregates", "1.39", `{"aggregates":[],"resource_provider_generation":8}`},
		{"PUT", "/resource_providers/" + rp1 + "/aggregates", "1.39", `{"aggregates":["` + agg + `","` + agg + `"],"resource_provider_generation":9}`},
		{"PUT", "/resource_providers/" + rp1 + "/aggregates", "1.39", `{"aggregates":["x"],"resource_provider_generation":9}`},
		{"PUT", "/resource_providers/" + rp1 + "/aggregates", "1.39", `{"aggregates":["` + agg + `"],"resource_provider_generation":9.0}`},
		{"PUT", "/resource_providers/" + rp1 + "/aggregates", "1.39", `["` + agg + `"]`},
		{"PUT", "/resource_providers/" + rp1 + "/aggregates", "1.18", `["` + agg + `"]`},
		{"PUT", "/resource_providers/" + rp1 + "/aggregates", "1.18", `[]`},
		{"PUT", "/resource_providers/" + rp1 + "/aggregates", "1.18", `{"aggregates": []}`},
		{"PUT", "/resource_providers/" + rp1 + "/aggregates", "1.0", `[]`},
		// Traits.
		{"PUT", "/resource_providers/" + rp1 + "/traits", "1.39", `{"traits":["CUSTOM_GOLDEN"],"resource_provider_generation":11}`},
		{"PUT", "/resource_providers/" + rp1 + "/traits", "1.39", `{"traits":["CUSTOM_GOLDEN","HW_CPU_X86_AVX"],"resource_provider_generation":12}`},
		{"PUT", "/resource_providers/" + rp1 + "/traits", "1.39", `{"traits":[],"resource_provider_generation":13}`},
		{"PUT", "/resource_providers/" + rp1 + "/traits", "1.39", `{"traits":["CUSTOM_NOPE"],"resource_provider_generation":14}`},
		{"PUT", "/resource_providers/" + rp1 + "/traits", "1.39", `{"traits":["CUSTOM_GOLDEN"],"resource_provider_generation":2}`},
		{"PUT", "/resource_providers/" + rp1 + "/traits", "1.39", `{"traits":["CUSTOM_GOLDEN"]}`},
		{"PUT", "/resource_providers/" + rp1 + "/traits", "1.39", `{"traits":"CUSTOM_GOLDEN","resource_provider_generation":14}`},
		{"PUT", "/resource_providers/" + rp1 + "/traits", "1.5", `{"traits":[],"resource_provider_generation":14}`},
	}
	var out bytes.Buffer
	for i, c := range calls {
		req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
		req.Header.Set("X-Auth-Token", "admin")
		req.Header.Set("OpenStack-API-Version", "placement "+c.version)
		req.Header.Set("Accept", "application/json")
		if c.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		id := rec.Header().Get(wire.HeaderRequestID)
		fmt.Fprintf(&out, "== %d %s %s %s\n%s\n-> %d\n", i, c.method, c.path, c.version, c.body, rec.Code)
		var names []string
		for k := range rec.Header() {
			names = append(names, k)
		}
		slices.Sort(names)
		for _, k := range names {
			for _, v := range rec.Header()[k] {
				switch k {
				case wire.HeaderRequestID, "Date", "Last-Modified":
					v = "(masked)"
				}
				fmt.Fprintf(&out, "%s: %s\n", k, v)
			}
		}
		body := rec.Body.String()
		if id != "" {
			body = strings.ReplaceAll(body, id, "REQUEST-ID")
		}
		fmt.Fprintf(&out, "%s\n", body)
	}
	const path = "testdata/writes.golden"
	if *updateWriteGolden {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (record it with -update-write-golden)", err)
	}
	if got := out.Bytes(); !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("answers differ from %s at line %d:\n got %s\nwant %s", path, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("answers differ from %s in length: %d lines, want %d", path, len(gl), len(wl))
	}
}
