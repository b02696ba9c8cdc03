package jsonschema

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/berthd/berth/internal/testing/pythontest"
)

// pformatCase is one value, as JSON, and the width to print it in.
type pformatCase struct {
	JSON  string `json:"json"`
	Width int    `json:"width"`
}

// pformatCases are values chosen to reach each rule of pprint's layout:
// dicts, lists and strings that just fit or just do not, strings with
// quotes, escapes, line ends and runs of white space, nesting deep enough
// to push values past the width, and the schemas' own shapes.
var pformatCases = []pformatCase{
	{`null`, 80}, {`true`, 80}, {`false`, 1}, {`0`, 80}, {`-12`, 1},
	{`1.5`, 80}, {`1e16`, 80}, {`3.40282e+38`, 80}, {`1.0`, 80}, {`0.1`, 80}, {`1e-7`, 80},
	{`[1e22, 1e15, 1234567890123456.0, 12345678901234567.0, 1e-5, 0.0001, 0.00012345, -0.0, 5e-324, 1.7976931348623157e308, 1084856.2211063283, 100.0, 123456789012345678901234567890, -7]`, 200},
	{`["­ soft hyphen", "​ zero width", "  em space", "͸ unassigned", " private", "؜ mark"]`, 200},
	{`""`, 1}, {`"a"`, 1}, {`{}`, 1}, {`[]`, 1}, {`[[]]`, 2}, {`{"a": {}}`, 3},
	{`"it's"`, 80}, {`"it's \"quoted\""`, 80}, {`"tab\there\nnew line\r\n\u0001\u007f\u0085 \u00a0 é ☃ \ud83d\ude00"`, 80},
	{`"back\\slash"`, 80},
	{`"The quick brown fox jumps over the lazy dog and keeps running far beyond the edge of the line"`, 80},
	{`"The quick brown fox jumps over the lazy dog and keeps running far beyond the edge of the line"`, 20},
	{`"word  with   runs    of     spaces      and       tabs\t\t\tand then some more text to wrap"`, 30},
	{`"first line\nsecond line that is rather long and must be wrapped at some point or another\rthird\u2028fourth\u000bfifth\u000csixth\u001cseventh"`, 40},
	{`"averyveryveryveryveryveryveryveryveryveryveryveryveryveryveryveryveryveryverylongword"`, 20},
	{`"   leading spaces then words that go on and on and on and on and on and on"`, 25},
	{`"trailing spaces at the end of a long string that will need wrapping          "`, 25},
	{`"it's a long string with an apostrophe that gets wrapped, and \"quotes\" too, in pieces"`, 30},
	{`["a string inside a list that is long enough to need wrapping over lines", 1]`, 40},
	{`{"key": "a string inside a dict that is long enough to need wrapping over lines"}`, 40},
	{`{"k": ["x", "a string inside a list inside a dict, long enough to be wrapped"]}`, 40},
	{`[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25]`, 80},
	{`[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26]`, 80},
	{`{"b": 1, "a": 2, "c": {"z": [1, 2, {"y": "why"}], "x": null}, "A": true, "_": false, "é": 1.5}`, 20},
	{`{"additionalProperties": false, "properties": {"name": {"maxLength": 200, "type": "string"}, "parent_provider_uuid": {"anyOf": [{"format": "uuid", "type": "string"}, {"type": "null"}]}, "uuid": {"format": "uuid", "type": "string"}}, "required": ["name"], "type": "object"}`, 72},
	{`{"additionalProperties": false, "properties": {"name": {"maxLength": 200, "type": "string"}, "parent_provider_uuid": {"anyOf": [{"format": "uuid", "type": "string"}, {"type": "null"}]}, "uuid": {"format": "uuid", "type": "string"}}, "required": ["name"], "type": "object"}`, 80},
	{`{"type": ["integer", "null"], "additionalProperties": false, "pattern": "^[a-zA-Z0-9_-]{1,64}$ with a long enough tail to wrap somewhere else"}`, 40},
	{`{"allocations": {"5a000000-0000-4000-8000-000000000001": {"resources": {"VCPU": 1}}}, "consumer_generation": null, "project_id": "p", "user_id": "u"}`, 72},
	{`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["deep", "deeper", "deepest string of all"]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`, 72},
	{`{"a-very-long-key-that-takes-most-of-the-line-on-its-own-and-more": "value with words"}`, 72},
	{`{"a-very-long-key-that-takes-most-of-the-line-on-its-own-and-more": ["value", "with", "words"]}`, 72},
	{`{"x": "", "y": ["", ""], "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz": ""}`, 72},
	{`["☃☃☃☃☃☃☃☃☃☃ ☃☃☃☃☃☃☃☃☃☃ ☃☃☃☃☃☃☃☃☃☃ ☃☃☃☃☃☃☃☃☃☃", "ééééé ééééé ééééé"]`, 30},
}

// randomJSON builds a random value that exercises pformat's layout: short
// keys and words so that lines fill up and break at varied places.
func randomJSON(r *rand.Rand, depth int) any {
	words := []string{"a", "bb", "ccc", "uuid", "type", "object", "it's", `say "hi"`, "tab\t", "x\ny", "  ", "é", "minimum", "additionalProperties", "^[A-Z0-9_]+$"}
	word := func() string { return words[r.Intn(len(words))] }
	k := r.Intn(10)
	if depth > 4 {
		k = r.Intn(5)
	}
	switch k {
	case 0:
		return nil
	case 1:
		return r.Intn(2) == 0
	case 2:
		return json.Number(fmt.Sprint(r.Intn(2000000) - 1000))
	case 3:
		return json.Number(fmt.Sprintf("%g", r.NormFloat64()*1e6))
	case 4:
		n := r.Intn(12)
		var b strings.Builder
		for i := 0; i < n; i++ {
			if i > 0 {
				b.WriteString([]string{" ", " ", "  ", "\t", "-"}[r.Intn(5)])
			}
			b.WriteString(word())
		}
		return b.String()
	case 5, 6, 7:
		n := r.Intn(6)
		l := make([]any, n)
		for i := range l {
			l[i] = randomJSON(r, depth+1)
		}
		return l
	default:
		n := r.Intn(6)
		m := make(map[string]any, n)
		for i := 0; i < n; i++ {
			m[word()] = randomJSON(r, depth+1)
		}
		return m
	}
}

// TestPFormatMatchesPython prints every case, and a few hundred random
// values at several widths, with pprint.pformat in the system's Python
// and with PFormat, and compares.
func TestPFormatMatchesPython(t *testing.T) {
	cases := append([]pformatCase{}, pformatCases...)
	r := rand.New(rand.NewSource(16))
	for i := 0; i < 400; i++ {
		b, err := json.Marshal(randomJSON(r, 0))
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, pformatCase{JSON: string(b), Width: []int{10, 20, 40, 72, 80}[i%5]})
	}
	var want []string
	pythontest.Run(t, `
import json, pprint, sys
cases = json.load(sys.stdin)
print(json.dumps([pprint.pformat(json.loads(c["json"]), width=c["width"]) for c in cases]))
`, cases, &want)
	if len(want) != len(cases) {
		t.Fatalf("python printed %d values for %d cases", len(want), len(cases))
	}
	for i, c := range cases {
		v, err := parse([]byte(c.JSON))
		if err != nil {
			t.Fatalf("%s: %v", c.JSON, err)
		}
		if got := PFormat(v, c.Width); got != want[i] {
			t.Errorf("pformat(%s, width=%d):\n got %s\nwant %s", c.JSON, c.Width, got, want[i])
		}
	}
}

// TestPFormatLiterals pins a few layouts as Python 3.11 printed them, so
// that the rules are visible (and checked) without Python.
func TestPFormatLiterals(t *testing.T) {
	tests := []struct {
		json  string
		width int
		want  string
	}{
		{`{"additionalProperties": false, "properties": {"name": {"maxLength": 200, "type": "string"}, "uuid": {"format": "uuid", "type": "string"}}, "required": ["name"], "type": "object"}`, 72,
			"{'additionalProperties': False,\n 'properties': {'name': {'maxLength': 200, 'type': 'string'},\n                'uuid': {'format': 'uuid', 'type': 'string'}},\n 'required': ['name'],\n 'type': 'object'}"},
		{`"The quick brown fox jumps over the lazy dog, then it's gone"`, 30,
			"('The quick brown fox jumps '\n 'over the lazy dog, then '\n \"it's gone\")"},
		{`["The quick brown fox jumps over the lazy dog"]`, 30,
			"['The quick brown fox jumps '\n 'over the lazy dog']"},
	}
	for _, tt := range tests {
		v, err := parse([]byte(tt.json))
		if err != nil {
			t.Fatal(err)
		}
		if got := PFormat(v, tt.width); got != tt.want {
			t.Errorf("pformat(%s, width=%d):\n got %q\nwant %q", tt.json, tt.width, got, tt.want)
		}
	}
}

// TestErrorMatchesPython checks whole messages, trailer included, against
// str(ValidationError) from the jsonschema library Placement runs on
// (Debian's, with Placement's uuid format checker), for schemas and
// instances big enough to wrap.
func TestErrorMatchesPython(t *testing.T) {
	provider := `{"type": "object", "properties": {"name": {"type": "string", "maxLength": 200}, "uuid": {"type": "string", "format": "uuid"}, "parent_provider_uuid": {"anyOf": [{"type": "string", "format": "uuid"}, {"type": "null"}]}}, "required": ["name"], "additionalProperties": false}`
	inventory := `{"type": "object", "properties": {"inventories": {"type": "object", "patternProperties": {"^[A-Z0-9_]+$": {"type": "object", "properties": {"total": {"type": "integer", "maximum": 2147483647, "minimum": 1}, "reserved": {"type": "integer", "maximum": 2147483647, "minimum": 0}, "allocation_ratio": {"type": "number", "maximum": 3.40282e+38}}, "additionalProperties": false, "required": ["total"]}}}}}`
	cases := []struct {
		Schema   string `json:"schema"`
		Instance string `json:"instance"`
	}{
		{provider, `{"name": "x", "color": "blue"}`},
		{provider, `{}`},
		{provider, `{"name": "x", "uuid": "abc"}`},
		{provider, `{"name": "x", "parent_provider_uuid": 17}`},
		{provider, `{"name": "a name that is long enough to wrap: ` + strings.Repeat("word ", 50) + `"}`},
		{inventory, `{"inventories": {"VCPU": {"reserved": 1}}}`},
		{inventory, `{"inventories": {"VCPU": {"total": 0}}}`},
		{inventory, `{"inventories": {"VCPU": {"total": 1, "allocation_ratio": 1e39}}}`},
		{inventory, `{"inventories": {"VCPU": {"total": "many", "reserved": 1, "allocation_ratio": 16.0, "note": "a long note that makes the instance wrap over more than one line"}}}`},
		{`{"type": "array", "items": {"type": "string"}, "minItems": 1}`, `[]`},
		{`{"type": "object", "properties": {"limit": {"type": "string", "pattern": "^[1-9][0-9]*$"}}}`, `{"limit": "-1"}`},
		{`{"type": "string", "enum": ["a long enumerated value", "another long enumerated value", "and a third one"]}`, `"nope"`},
	}
	var want []*string
	pythontest.Run(t, `
import json, sys, jsonschema
import placement.util  # registers Placement's uuid format checker
out = []
for c in json.load(sys.stdin):
    try:
        jsonschema.validate(json.loads(c["instance"]), json.loads(c["schema"]), format_checker=jsonschema.FormatChecker())
        out.append(None)
    except jsonschema.ValidationError as e:
        out.append(str(e))
print(json.dumps(out))
`, cases, &want)
	for i, c := range cases {
		inst, err := parse([]byte(c.Instance))
		if err != nil {
			t.Fatal(err)
		}
		var got *string
		if err := Must(c.Schema).Validate(inst); err != nil {
			s := err.Error()
			got = &s
		}
		switch {
		case got == nil && want[i] == nil:
		case got == nil || want[i] == nil:
			t.Errorf("%s against %s: got %v, want %v", c.Instance, c.Schema, got, want[i])
		case *got != *want[i]:
			t.Errorf("%s against %s:\n got %s\nwant %s", c.Instance, c.Schema, *got, *want[i])
		}
	}
}
