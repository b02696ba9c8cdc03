package jsonschema

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestSchemaMessages(t *testing.T) {
	s := Must(`{
		"type": "object",
		"properties": {
			"name": {"type": "string", "maxLength": 5, "pattern": "^[A-Z]+$"},
			"total": {"type": "integer", "minimum": 1, "maximum": 2147483647},
			"tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": true}
		},
		"required": ["name"],
		"additionalProperties": false
	}`)
	tests := []struct {
		doc  string
		want string
	}{
		{`{"name": "ABC"}`, ""},
		{`{}`, "'name' is a required property"},
		{`{"name": "ABC", "bad_field": 1}`, "Additional properties are not allowed ('bad_field' was unexpected)"},
		{`{"name": "ABCDEFG"}`, "'ABCDEFG' is too long\n\nFailed validating 'maxLength' in schema['properties']['name']"},
		{`{"name": "abc"}`, "'abc' does not match '^[A-Z]+$'"},
		{`{"name": "A", "total": 0}`, "0 is less than the minimum of 1"},
		{`{"name": "A", "total": 99999999999999999999}`, "99999999999999999999 is greater than the maximum of 2147483647"},
		{`{"name": "A", "total": "x"}`, "'x' is not of type 'integer'"},
		{`{"name": "A", "tags": ["a", "a"]}`, "['a', 'a'] has non-unique elements"},
		{`{"name": 5, "bad": 1}`, "Additional properties are not allowed ('bad' was unexpected)"},
	}
	for _, tt := range tests {
		doc, err := parse([]byte(tt.doc))
		if err != nil {
			t.Fatal(err)
		}
		err = s.Validate(doc)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tt.doc, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: error %v, want it to contain %q", tt.doc, err, tt.want)
		}
	}
}

func TestPatternPropertiesMessage(t *testing.T) {
	s := Must(`{"type": "object", "patternProperties": {"^[A-Z0-9_]+$": {"type": "integer"}}, "additionalProperties": false}`)
	doc, _ := parse([]byte(`{"bad-key": 1}`))
	err := s.Validate(doc)
	if err == nil || !strings.Contains(err.Error(), "'bad-key' does not match any of the regexes: '^[A-Z0-9_]+$'") {
		t.Fatalf("got %v", err)
	}
}

// parse decodes one JSON document as the API does: numbers as json.Number.
func parse(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	err := dec.Decode(&doc)
	return doc, err
}
