package httpapi

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"
)

// One parse per request body.
//
// A body is parsed once into a generic document (maps, slices, strings,
// json.Number, bools, nil), the document is validated against the
// route's schema, and the handler's typed body is filled from the
// document (decodeJSONDoc) instead of parsing the bytes a second time with
// encoding/json. Both steps are fast paths that give up, never guess:
// buildDoc gives up on what it does not build exactly as encoding/json
// does (NaN and Infinity, deep nesting), and a handler's fromDoc on any value it
// would not decode as json.Unmarshal does (a float where an integer goes,
// a key it does not know); the general path (encoding/json) then runs as
// before and words the errors. Only the busiest writes (the seeding's)
// have a fromDoc.

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

// docListAndGeneration fills list and generation from doc as
// json.Unmarshal fills a struct of a []string field named key and an
// int64 field named resource_provider_generation, or reports false
// having changed nothing.
func docListAndGeneration(doc any, key string, list *[]string, generation *int64) bool {
	m, ok := doc.(map[string]any)
	if !ok {
		return false
	}
	l, g := *list, *generation
	for k, v := range m {
		switch k {
		case key:
			l, ok = docStrings(v)
		case "resource_provider_generation":
			g, ok = docInt64(v)
		default:
			ok = false
		}
		if !ok {
			return false
		}
	}
	*list, *generation = l, g
	return true
}

// docInt64 is v as json.Unmarshal decodes a number into an int64.
func docInt64(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	return i, err == nil
}

// docStrings is v as json.Unmarshal decodes an array of strings into a
// []string (an empty array is an empty, non-nil slice).
func docStrings(v any) ([]string, bool) {
	a, ok := v.([]any)
	if !ok {
		return nil, false
	}
	out := make([]string, len(a))
	for i, e := range a {
		if out[i], ok = e.(string); !ok {
			return nil, false
		}
	}
	return out, true
}

// memberKeys returns the member names of the object that is the value of
// the top-level member key of body (a JSON object pyJSONError accepted),
// in the order of their first appearance, as orderedMap keeps them (nil
// for an empty object). It reports false, for the general path to decode
// the body, when key is not there exactly once, when its value is not an
// object, or when a name it reads is escaped.
func memberKeys(body []byte, key string) ([]string, bool) {
	s := keyScanner{b: body}
	i := jsonSpace(s.b, 0)
	if i >= len(body) || body[i] != '{' {
		return nil, false
	}
	var keys []string
	found := false
	ok := s.members(i, func(name string, at int) (int, bool) {
		if name != key {
			return s.skip(at)
		}
		if found || at >= len(body) || body[at] != '{' {
			return 0, false
		}
		found = true
		var seen map[string]bool // past a handful of keys
		if !s.members(at, func(name string, at int) (int, bool) {
			switch {
			case seen != nil:
				if seen[name] {
					return s.skip(at)
				}
				seen[name] = true
			case slices.Contains(keys, name):
				return s.skip(at)
			case len(keys) == 16:
				seen = make(map[string]bool, 2*len(keys))
				for _, k := range keys {
					seen[k] = true
				}
				seen[name] = true
			}
			keys = append(keys, name)
			return s.skip(at)
		}) {
			return 0, false
		}
		return s.next, true
	})
	if !ok || !found {
		return nil, false
	}
	return keys, true
}

// keyScanner walks a JSON text that is known to be valid.
type keyScanner struct {
	b    []byte
	next int // index after the last object members walked
}

// members calls member with each member's unescaped name and the index
// of its value, in order; member returns the index after the value.
// s.next is then the index after the object.
func (s *keyScanner) members(i int, member func(name string, at int) (int, bool)) bool {
	b := s.b
	i = jsonSpace(s.b, i+1) // past '{'
	if i < len(b) && b[i] == '}' {
		s.next = i + 1
		return true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return false
		}
		j := i + 1
		for j < len(b) && b[j] != '"' {
			if b[j] == '\\' {
				return false
			}
			j++
		}
		if j >= len(b) {
			return false
		}
		name, known := docWords[string(b[i+1:j])]
		if !known {
			name = string(b[i+1 : j])
		}
		k := jsonSpace(s.b, j+1)
		if k >= len(b) || b[k] != ':' {
			return false
		}
		end, ok := member(name, jsonSpace(s.b, k+1))
		if !ok {
			return false
		}
		i = jsonSpace(s.b, end)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case '}':
			s.next = i + 1
			return true
		case ',':
			i = jsonSpace(s.b, i+1)
		default:
			return false
		}
	}
}

// skip returns the index after the value at i.
func (s *keyScanner) skip(i int) (int, bool) {
	b := s.b
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			i++
			for i < len(b) && b[i] != '"' {
				if b[i] == '\\' {
					i++
				}
				i++
			}
			if depth == 0 {
				return i + 1, i < len(b)
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 { // the end of the object or array a scalar is in
				return i, true
			}
			if depth--; depth == 0 {
				return i + 1, true
			}
		case ',':
			if depth == 0 {
				return i, true
			}
		case ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i, true
			}
		}
	}
	return i, depth == 0
}
