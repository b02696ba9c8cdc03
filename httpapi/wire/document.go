package wire

import (
	"encoding/json"
	"unicode/utf8"
)

// One parse per request body.
//
// A body is parsed once into a generic document (maps, slices, strings,
// json.Number, bools, nil), the document is validated against the
// route's schema, and the handler's typed body is filled from the
// document (DecodeJSONDoc, fill.go) instead of parsing the bytes a second
// time with encoding/json. Both steps are fast paths that give up, never
// guess: buildDoc gives up on what it does not build exactly as
// encoding/json does (NaN and Infinity, deep nesting), and a handler's
// fromDoc on any value it would not decode as json.Unmarshal does (a float
// where an integer goes, a key it does not know); the general path
// (encoding/json) then runs and words the errors. Only the busiest writes
// (the seeding's) have a fromDoc.

// maxDocDepth is the nesting buildDoc follows; deeper bodies take the
// general path, which bounds them as before.
const maxDocDepth = 64

// buildDoc decodes b, a body pyJSONError accepted, into the document
// encoding/json's Decoder with UseNumber would decode, or reports false
// when it cannot be sure to: see above.
func buildDoc(b []byte) (any, bool) {
	d := docBuilder{b: b}
	v, ok := d.value(jsonSpace(d.b, 0), 0)
	if !ok || jsonSpace(d.b, d.end) != len(b) {
		return nil, false
	}
	return v, true
}

type docBuilder struct {
	b   []byte
	end int // index after the last value decoded
	// python allows what json.loads reads and encoding/json does not
	// (NaN, Infinity, -Infinity, as json.Number) and nesting up to
	// maxPyJSONDepth: pyJSONDecode.
	python bool
	// tooDeep reports that decoding stopped at the nesting bound.
	tooDeep bool
}

// pyLiterals are the values json.loads reads and encoding/json does not.
var pyLiterals = [...]struct {
	text string
	v    json.Number
}{{"NaN", "NaN"}, {"Infinity", "Infinity"}, {"-Infinity", "-Infinity"}}

// value decodes the value at i; d.end is then the index after it.
func (d *docBuilder) value(i, depth int) (any, bool) {
	b := d.b
	if i >= len(b) {
		return nil, false
	}
	if depth > maxDocDepth && !d.python || depth > maxPyJSONDepth {
		d.tooDeep = true
		return nil, false
	}
	if d.python {
		for _, lit := range pyLiterals {
			if d.literal(i, lit.text) {
				return lit.v, true
			}
		}
	}
	switch c := b[i]; {
	case c == '"':
		return d.str(i)
	case c == '{':
		return d.object(i, depth)
	case c == '[':
		return d.array(i, depth)
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number(i)
	}
	for _, lit := range [...]struct {
		text string
		v    any
	}{{"null", nil}, {"true", true}, {"false", false}} {
		if d.literal(i, lit.text) {
			return lit.v, true
		}
	}
	return nil, false // NaN, Infinity
}

// literal reports whether text is written at i, and if so ends the value
// after it.
func (d *docBuilder) literal(i int, text string) bool {
	if len(d.b)-i >= len(text) && string(d.b[i:i+len(text)]) == text {
		d.end = i + len(text)
		return true
	}
	return false
}

// object decodes the object whose '{' is at i.
func (d *docBuilder) object(i, depth int) (any, bool) {
	b := d.b
	m := map[string]any{}
	i = jsonSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		d.end = i + 1
		return m, true
	}
	for {
		k, ok := d.str(i)
		if !ok {
			return nil, false
		}
		i = jsonSpace(b, d.end)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		v, ok := d.value(jsonSpace(b, i+1), depth+1)
		if !ok {
			return nil, false
		}
		m[k] = v // the last of a repeated key wins, as in encoding/json
		i = jsonSpace(b, d.end)
		if i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case '}':
			d.end = i + 1
			return m, true
		case ',':
			i = jsonSpace(b, i+1)
		default:
			return nil, false
		}
	}
}

// array decodes the array whose '[' is at i.
func (d *docBuilder) array(i, depth int) (any, bool) {
	b := d.b
	a := []any{}
	i = jsonSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		d.end = i + 1
		return a, true
	}
	for {
		v, ok := d.value(i, depth+1)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		i = jsonSpace(b, d.end)
		if i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case ']':
			d.end = i + 1
			return a, true
		case ',':
			i = jsonSpace(b, i+1)
		default:
			return nil, false
		}
	}
}

// number decodes the number that starts at i, as a json.Number.
func (d *docBuilder) number(i int) (any, bool) {
	b := d.b
	j := i + 1
	for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '.' || b[j] == 'e' || b[j] == 'E' || b[j] == '+' || b[j] == '-') {
		j++
	}
	// -Infinity, and anything else encoding/json would refuse.
	if !isJSONNumber(b[i:j]) {
		return nil, false
	}
	d.end = j
	if j == i+1 {
		return docDigits[b[i]-'0'], true // no allocation for 0 to 9
	}
	return json.Number(b[i:j]), true
}

// docWords are the member names of the busiest bodies (and the usual
// resource classes), which buildDoc gives without allocating them.
var docWords = func() map[string]string {
	m := map[string]string{}
	for _, w := range []string{
		"name", "uuid", "parent_provider_uuid",
		"resource_provider_generation", "inventories", "aggregates", "traits",
		"total", "reserved", "min_unit", "max_unit", "step_size", "allocation_ratio",
		"resource_class", "resources", "allocations", "consumer_uuid", "project_id", "user_id",
		"consumer_generation", "consumer_type", "mappings",
		"VCPU", "MEMORY_MB", "DISK_GB", "PCPU", "SRIOV_NET_VF",
	} {
		m[w] = w
	}
	return m
}()

// docDigits are the one-digit numbers.
var docDigits = [10]json.Number{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}

// str decodes the string whose opening quote is at i.
func (d *docBuilder) str(i int) (string, bool) {
	b := d.b
	if i >= len(b) || b[i] != '"' {
		return "", false
	}
	plain := true // printable ASCII without escapes: the bytes are the string
	j := i + 1
	for ; j < len(b); j++ {
		c := b[j]
		if c == '"' {
			break
		}
		if c == '\\' {
			plain = false
			j++ // the escaped byte cannot end the string
			continue
		}
		if c < 0x20 || c >= utf8.RuneSelf {
			plain = false
		}
	}
	if j >= len(b) {
		return "", false
	}
	d.end = j + 1
	if plain {
		if s, ok := docWords[string(b[i+1:j])]; ok {
			return s, true // no allocation for the usual names
		}
		return string(b[i+1 : j]), true
	}
	// Escapes and non-ASCII text: encoding/json's own decoding of the
	// string, so that both paths agree on every rune.
	var s string
	if err := json.Unmarshal(b[i:j+1], &s); err != nil {
		return "", false
	}
	return s, true
}

// isJSONNumber reports whether s is a number in JSON's grammar.
func isJSONNumber(s []byte) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			return false
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	return i == len(s)
}
