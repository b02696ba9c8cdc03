package wire

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Filling typed bodies from the document.
//
// A handler's fromDoc (DecodeJSONDoc) fills its typed body from the
// document the schema validated, with these helpers, exactly as
// json.Unmarshal would fill it from the bytes, or reports false having
// changed nothing (document.go says why).

// DocListAndGeneration fills list and generation from doc as
// json.Unmarshal fills a struct of a []string field named key and an
// int64 field named resource_provider_generation, or reports false
// having changed nothing.
func DocListAndGeneration(doc any, key string, list *[]string, generation *int64) bool {
	m, ok := doc.(map[string]any)
	if !ok {
		return false
	}
	l, g := *list, *generation
	for k, v := range m {
		switch k {
		case key:
			l, ok = DocStrings(v)
		case "resource_provider_generation":
			g, ok = DocInt64(v)
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

// DocInt64 is v as json.Unmarshal decodes a number into an int64.
func DocInt64(v any) (int64, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return 0, false
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	return i, err == nil
}

// DocStrings is v as json.Unmarshal decodes an array of strings into a
// []string (an empty array is an empty, non-nil slice).
func DocStrings(v any) ([]string, bool) {
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

// MemberKeys returns the member names of the object that is the value of
// the top-level member key of body (a JSON object pyJSONError accepted),
// in the order of their first appearance, as OrderedMap keeps them (nil
// for an empty object). It reports false, for the general path to decode
// the body, when key is not there exactly once, when its value is not an
// object, or when a name it reads is escaped.
func MemberKeys(body []byte, key string) ([]string, bool) {
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
		var ok bool
		if keys, ok = s.objectKeys(at); !ok {
			return 0, false
		}
		return s.next, true
	})
	if !ok || !found {
		return nil, false
	}
	return keys, true
}

// ObjectKeys returns the member names of the JSON object b (valid JSON,
// as json.Unmarshaler's are given), in the order of their first
// appearance (nil for an empty object). It reports false when b is not an
// object or a name in it is escaped.
func ObjectKeys(b []byte) ([]string, bool) {
	s := keyScanner{b: b}
	i := jsonSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	keys, ok := s.objectKeys(i)
	for _, k := range keys {
		if !utf8.ValidString(k) { // encoding/json would name it otherwise
			return nil, false
		}
	}
	return keys, ok
}

// objectKeys returns the member names of the object at i, in the order of
// their first appearance; s.next is then the index after the object.
func (s *keyScanner) objectKeys(i int) ([]string, bool) {
	var keys []string
	var seen map[string]bool // past a handful of keys
	ok := s.members(i, func(name string, at int) (int, bool) {
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
	})
	return keys, ok
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
