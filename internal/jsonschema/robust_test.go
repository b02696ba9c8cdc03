package jsonschema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestJSONEqual(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{`1`, `1.0`, true},
		{`1`, `1e0`, true},
		{`-0`, `0.0`, true},
		{`1e400`, `2e400`, true}, // both inf, as in Python
		{`1`, `2`, false},
		{`9007199254740993`, `9007199254740992`, false},
		{`9007199254740993.0`, `9007199254740992`, true}, // the float rounds
		{`"1"`, `1`, false},
		{`[1, {"a": 1.0}]`, `[1.0, {"a": 1}]`, true},
		{`{"a": 1, "b": 2}`, `{"b": 2, "a": 1}`, true},
		{`{"a": 1}`, `{"a": 1, "b": 2}`, false},
		{`null`, `false`, false},
		{`"a\u0000"`, `"a"`, false},
	}
	for _, tt := range tests {
		a, err := parse([]byte(tt.a))
		if err != nil {
			t.Fatal(err)
		}
		b, err := parse([]byte(tt.b))
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonEqual(a, b); got != tt.want {
			t.Errorf("jsonEqual(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
		if got := allUnique([]any{a, b}); got == tt.want {
			t.Errorf("allUnique([%s, %s]) = %v, want %v", tt.a, tt.b, got, !tt.want)
		}
	}
}

// TestUniqueItemsLongArray: uniqueItems over an array of distinct elements
// as long as a request body allows used to compare every pair and pinned a
// CPU for hours (found by FuzzDecodeJSON, seed aggregates-1.1-huge-distinct).
func TestUniqueItemsLongArray(t *testing.T) {
	var b strings.Builder
	b.WriteByte('[')
	for i := range 100000 {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%d", i)
	}
	b.WriteByte(']')
	// The schema of PUT /resource_providers/{uuid}/aggregates from 1.1.
	aggregates := Must(`{"type": "array", "items": {"type": "string", "format": "uuid"}, "uniqueItems": true}`)
	doc, _ := parse([]byte(b.String()))
	err := aggregates.Validate(doc)
	if err == nil || !strings.Contains(err.Error(), "is not of type 'string'") {
		t.Fatalf("err = %.200v", err)
	}
	if !allUnique(doc.([]any)) {
		t.Error("distinct numbers reported as duplicates")
	}
	if allUnique(append(doc.([]any), json.Number("99999.0"))) {
		t.Error("a duplicate went unnoticed")
	}
}

func TestPyReprNumbersAndNesting(t *testing.T) {
	tests := []struct{ doc, want string }{
		{`1e400`, `inf`},
		{`-1e400`, `-inf`},
		{`1e-400`, `0.0`},
		{`99999999999999999999`, `99999999999999999999`},
		{`[1, [2.5, {"b": null, "a": true}], "x"]`, `[1, [2.5, {'a': True, 'b': None}], 'x']`},
		{strings.Repeat(`[`, 3000) + strings.Repeat(`]`, 3000), strings.Repeat(`[`, 3000) + strings.Repeat(`]`, 3000)},
	}
	for _, tt := range tests {
		doc, err := parse([]byte(tt.doc))
		if err != nil {
			t.Fatal(err)
		}
		if got := pyRepr(doc); got != tt.want {
			t.Errorf("pyRepr(%.40s) = %.40s, want %.40s", tt.doc, got, tt.want)
		}
	}
}
