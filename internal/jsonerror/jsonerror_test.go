package jsonerror

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestMessageNamesNoGoTypes decodes values that do not fit their Go
// types and checks the message names the JSON field and value, and no Go
// type, struct or package.
func TestMessageNamesNoGoTypes(t *testing.T) {
	type inner struct {
		N int64 `json:"n"`
	}
	type body struct {
		Generation int64    `json:"consumer_generation"`
		Name       string   `json:"name"`
		Inner      inner    `json:"inner"`
		List       []string `json:"list"`
	}
	for _, tt := range []struct{ doc, want string }{
		{`{"consumer_generation": 99999999999999999999}`,
			"consumer_generation: 99999999999999999999 is not an integer between -9223372036854775808 and 9223372036854775807"},
		{`{"consumer_generation": 1.5}`, "consumer_generation: 1.5 is not an integer"},
		{`{"name": 3}`, "name: a number is not a string"},
		{`{"inner": {"n": "x"}}`, "inner.n: a string is not an integer"},
		{`{"list": {}}`, "list: an object is not an array"},
		{`{"name": true}`, "name: a boolean is not a string"},
		{`[1]`, "the value: an array is not an object"},
		{`{"name": "x"`, "not valid JSON at byte 12"},
		{`{"name": x}`, "not valid JSON at byte"},
		{`{"consumer_generation": ` + strings.Repeat("9", 300) + `}`, strings.Repeat("9", 64) + "... is not an integer"},
	} {
		var b body
		err := json.Unmarshal([]byte(tt.doc), &b)
		if err == nil {
			t.Fatalf("%s: decoded", tt.doc)
		}
		got := Message(err)
		if !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q, want %q", tt.doc, got, tt.want)
		}
		for _, goWords := range []string{"json:", "Go ", "struct", "int64", "body"} {
			if strings.Contains(got, goWords) {
				t.Errorf("%s: %q has Go's words %q", tt.doc, got, goWords)
			}
		}
	}
	dec := json.NewDecoder(strings.NewReader(`{"colour": 1}`))
	dec.DisallowUnknownFields()
	var b body
	if got := Message(dec.Decode(&b)); got != `unknown field "colour"` {
		t.Errorf("unknown field: %q", got)
	}
	if got := Message(errors.New("other")); got != "other" {
		t.Errorf("another error: %q", got)
	}
}
