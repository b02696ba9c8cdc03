package wire

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestOrderedMapAsTokens: UnmarshalJSON (its map and key-scanner path)
// gives what the token path gives, keys, values and errors, for every
// kind of object and non-object.
func TestOrderedMapAsTokens(t *testing.T) {
	var many strings.Builder
	many.WriteString("{")
	for i := range 40 {
		fmt.Fprintf(&many, `"k%d": %d, `, 39-i, i)
	}
	many.WriteString(`"k3": 100}`)
	bodies := []string{
		`{}`, ` { } `, `null`, `[]`, `[1]`, `"x"`, `1`, `true`,
		`{"VCPU": 4, "MEMORY_MB": 16384, "DISK_GB": 100}`,
		`{"b": 1, "a": 2, "b": 3}`,
		"{\n\t\"a\" :\r 1 ,\"c\":2}",
		`{"a\u0062": 1, "ab": 2}`, `{"\"": 1}`, `{"é": 1, "日本": 2}`,
		"{\"\xff\": 1}",
		`{"a": "1"}`, `{"a": 1.5}`, `{"a": 1e400}`, `{"a": -1}`, `{"a": null}`, `{"a": {"b": 1}}`, `{"a": [1, 2]}`,
		`{"a": 1, "b": "x", "c": 2}`, `{"a": 9223372036854775808}`,
		many.String(),
	}
	for _, body := range bodies {
		t.Run(body, func(t *testing.T) {
			compareOrdered[int64](t, body)
			compareOrdered[json.Number](t, body)
			compareOrdered[any](t, body)
			compareOrdered[map[string]int](t, body)
		})
	}
}

func compareOrdered[V any](t *testing.T, body string) {
	t.Helper()
	var got, want OrderedMap[V]
	gotErr := json.Unmarshal([]byte(body), &got)
	var wantErr error
	if json.Valid([]byte(body)) {
		wantErr = want.unmarshalTokens([]byte(body))
	} else {
		wantErr = json.Unmarshal([]byte(body), new(map[string]V))
	}
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("%T: error %v, want %v", got, gotErr, wantErr)
	}
	if gotErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%T: %#v, want %#v", got, got, want)
	}
}

// BenchmarkOrderedMap decodes a claim's resources.
func BenchmarkOrderedMap(b *testing.B) {
	body := []byte(`{"VCPU": 4, "MEMORY_MB": 16384, "DISK_GB": 100}`)
	b.Run("tokens", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m OrderedMap[json.Number]
			if err := m.unmarshalTokens(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m OrderedMap[json.Number]
			if err := m.UnmarshalJSON(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}
