package wire

import (
	"encoding/json"
	"reflect"
	"testing"
)

// jsonDocSeeds are bodies of every shape buildDoc and the fast decoders
// meet, good and odd.
var jsonDocSeeds = []string{
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

// FuzzBuildDoc checks buildDoc and the fast decoders of fill.go against
// encoding/json: whatever they accept, they decode exactly as the
// general path does. (The fast decoders of Placement's bodies are
// checked so in package placement: FuzzDecodeDoc.)
func FuzzBuildDoc(f *testing.F) {
	for _, s := range jsonDocSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if checkUTF8(body) != nil || scanJSON(body) != nil || pyJSONError(body) != nil {
			return
		}
		doc, ok := buildDoc(body)
		if !ok {
			return
		}
		want, err := parseJSONGeneral(body)
		if err != nil {
			t.Fatalf("buildDoc accepted %q, the general path refused it: %v", body, err)
		}
		if !reflect.DeepEqual(doc, want) {
			t.Fatalf("%q: buildDoc %#v, general path %#v", body, doc, want)
		}
		checkFromDoc(t, body, doc)
	})
}

// checkFromDoc checks each fast decoder that takes doc against
// json.Unmarshal of body.
func checkFromDoc(t *testing.T, body []byte, doc any) {
	t.Helper()
	same := func(what string, ok bool, got, fresh any) {
		t.Helper()
		if !ok {
			return
		}
		if err := json.Unmarshal(body, fresh); err != nil {
			t.Fatalf("%s: the fast decoder took %q, json.Unmarshal refused it: %v", what, body, err)
		}
		if !reflect.DeepEqual(got, fresh) {
			t.Fatalf("%s of %q: fast %#v, json.Unmarshal %#v", what, body, got, fresh)
		}
	}
	type listBody struct {
		Aggregates []string `json:"aggregates"`
		Generation int64    `json:"resource_provider_generation"`
	}
	var lb listBody
	same("aggregates", DocListAndGeneration(doc, "aggregates", &lb.Aggregates, &lb.Generation), &lb, &listBody{})
	list, ok := DocStrings(doc)
	var fresh []string
	same("[]string", ok, &list, &fresh)
}

func TestBuildDocSeeds(t *testing.T) {
	for _, s := range jsonDocSeeds {
		body := []byte(s)
		if pyJSONError(body) != nil {
			t.Fatalf("seed %s is not JSON", s)
		}
		doc, ok := buildDoc(body)
		want, err := parseJSONGeneral(body)
		if err != nil {
			t.Fatal(err)
		}
		if ok && !reflect.DeepEqual(doc, want) {
			t.Errorf("%s: buildDoc %#v, general path %#v", s, doc, want)
		}
		if ok {
			checkFromDoc(t, body, doc)
		}
	}
	// What the fast path must leave to the general one.
	for _, s := range []string{`{"a": NaN}`, `[-Infinity]`, `{"a": Infinity}`} {
		if _, ok := buildDoc([]byte(s)); ok {
			t.Errorf("buildDoc took %s", s)
		}
	}
	deep := make([]byte, 0, 2*(maxDocDepth+2))
	for range maxDocDepth + 2 {
		deep = append(deep, '[')
	}
	for range maxDocDepth + 2 {
		deep = append(deep, ']')
	}
	if _, ok := buildDoc(deep); ok {
		t.Errorf("buildDoc took %d levels", maxDocDepth+2)
	}
	// The seeding's bodies are built (the fast paths of their decoding
	// are checked in package placement).
	for _, s := range []string{jsonDocSeeds[0], jsonDocSeeds[3], jsonDocSeeds[8]} {
		doc, ok := buildDoc([]byte(s))
		var l []string
		var g int64
		if !ok || (s == jsonDocSeeds[8] && !DocListAndGeneration(doc, "aggregates", &l, &g)) {
			t.Errorf("%s: no fast path", s)
		}
	}
}

func TestMemberKeys(t *testing.T) {
	for _, tc := range []struct {
		body string
		want []string
		ok   bool
	}{
		{`{"inventories": {"B": 1, "A": {"x": [1, "}"]}, "B": 2}}`, []string{"B", "A"}, true},
		{` {"a": [{"inventories": 1}], "inventories" : { } , "z": "\"inventories\""} `, nil, true},
		{`{"inventories": {"A": 1}, "inventories": {"B": 1}}`, nil, false},
		{`{"inventories": [1]}`, nil, false},
		{`{"x": 1}`, nil, false},
		{`{"inventories": {"A\u0041": 1}}`, nil, false},
		{`{"inventories":{"A":1,"B":true,"C":null,"D":-1e5}}`, []string{"A", "B", "C", "D"}, true},
		{`{"inventories":{"A":1,"B":1,"C":1,"D":1,"E":1,"F":1,"G":1,"H":1,"I":1,"J":1,"K":1,"L":1,"M":1,"N":1,"O":1,"P":1,"A":2,"Q":1,"R":1,"Q":1,"B":3}}`,
			[]string{"A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M", "N", "O", "P", "Q", "R"}, true},
	} {
		got, ok := MemberKeys([]byte(tc.body), "inventories")
		if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: %q %v, want %q %v", tc.body, got, ok, tc.want, tc.ok)
		}
	}
}
