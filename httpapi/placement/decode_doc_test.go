package placement

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/berthd/berth/httpapi/wire"
)

// decodeDocSeeds are bodies of every shape the fast decoders meet, good
// and odd (wire's document seeds).
var decodeDocSeeds = []string{
	`{"name": "cn1", "uuid": "8b9b3c4e-3a8b-4d6e-9f3b-1c2d3e4f5a6b"}`,
	`{"name":"n\u00e9\"<&>\\u2028","parent_provider_uuid":null,"name":"x"}`,
	`{"name": "é😀", "NAME": "y", "uuid": 5}`,
	`{"resource_provider_generation":0,"inventories":{"DISK_GB":{"total":4000,"reserved":100,"min_unit":1,"max_unit":4000,"step_size":1,"allocation_ratio":1},"VCPU":{"total":64,"allocation_ratio":4}}}`,
	`{"resource_provider_generation": 1.0, "inventories": {"VCPU": {"total": 64.0, "max_unit": 1e1, "allocation_ratio": 1.50}, "DISK_GB": {"total": 10}, "VCPU": {"total": 32}}}`,
	`{"inventories": {}, "resource_provider_generation": -0, "inventories": {"A": {"total": 2, "resource_provider_generation": 3}}}`,
	`{"inventories": {"A": {"total": 1e400}, "B": null, "C": {"total": 2, "x": [1, {"y": "]}"}]}}}`,
	`{"inventories": {"A\u0042": {"total": 1}}, "resource_provider_generation": 99999999999999999999}`,
	`{"aggregates": ["a", "b"], "resource_provider_generation": 3}`,
	`{"aggregates": [], "resource_provider_generation": 3, "aggregates": ["c"]}`,
	`{"traits": ["T", 1], "resource_provider_generation": 3}`,
	`{"traits": null, "resource_provider_generation": true}`,
	`["a", "b\n", "\ud83d\ude00"]`,
	`[]`, `{}`, `null`, `true`, `-1.5e-3`, `"s"`, ` [ [ [ ] ] , { } ] `,
	`{"a": NaN}`, `{"a": -Infinity}`, `{"a": Infinity}`,
}

// FuzzDecodeDoc checks the fast decoders of the seeding's bodies
// (providerCreateBody, inventoriesBody) against encoding/json: whatever
// they accept of a document wire built, they decode exactly as
// json.Unmarshal does. (wire's FuzzBuildDoc checks the document.)
func FuzzDecodeDoc(f *testing.F) {
	for _, s := range decodeDocSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		checkFromDoc(t, body)
	})
}

// checkFromDoc checks each fast decoder on the document wire builds of
// body (when it builds one) against json.Unmarshal of body, and returns
// the decoders that accepted it.
func checkFromDoc(t *testing.T, body []byte) map[string]bool {
	t.Helper()
	took := map[string]bool{}
	if wire.CheckJSON(body) != nil {
		return took
	}
	same := func(what string, fromDoc func(doc any, body []byte) bool, got, fresh any) {
		t.Helper()
		ok := false
		_ = wire.DecodeJSONDoc(body, nil, got, func(doc any, b []byte) bool {
			ok = fromDoc(doc, b)
			return ok
		})
		if !ok {
			return
		}
		took[what] = true
		if err := json.Unmarshal(body, fresh); err != nil {
			t.Fatalf("%s: the fast decoder took %q, json.Unmarshal refused it: %v", what, body, err)
		}
		if !reflect.DeepEqual(got, fresh) {
			t.Fatalf("%s of %q: fast %#v, json.Unmarshal %#v", what, body, got, fresh)
		}
	}
	var pc providerCreateBody
	same("providerCreateBody", pc.decodeDoc, &pc, &providerCreateBody{})
	var ib inventoriesBody
	same("inventoriesBody", ib.decodeDoc, &ib, &inventoriesBody{})
	return took
}

func TestDecodeDocSeeds(t *testing.T) {
	for _, s := range decodeDocSeeds {
		checkFromDoc(t, []byte(s))
	}
	// The seeding's bodies take the fast paths.
	for s, decoder := range map[string]string{decodeDocSeeds[0]: "providerCreateBody", decodeDocSeeds[3]: "inventoriesBody"} {
		if !checkFromDoc(t, []byte(s))[decoder] {
			t.Errorf("%s: no fast path", s)
		}
	}
}
