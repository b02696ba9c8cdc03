package docstest

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
)

// Comparing what a command printed with what the document shows.
//
// When the document shows JSON (its text parses as JSON once its
// wildcards are read), the output must be one JSON document with the same
// value: layout, member order and number spelling do not matter. Else the
// lines must be the same, trailing blanks and trailing empty lines aside.
//
// Wildcards: "..." or "…" stands for what varies or is left out.
//   - A line that is only a wildcard stands for any lines (none included).
//   - Within a line, or within a JSON string, it stands for any text.
//   - In JSON, bare (outside a string): as an array element, any elements;
//     as an object member ({"a": 1, ...}), any other members; as a value
//     ("request_id": ...), any value. A string that is only a wildcard
//     ("...") is any value too.

// anyValue and anyMembers are what bare wildcards become when the shown
// JSON is read: strings no document contains.
const (
	anyValue   = "\x00any"
	anyMembers = "\x00members"
)

var wildcardRE = regexp.MustCompile(`\.\.\.|…`)

// outputMatches reports whether got is what the document shows as want.
func outputMatches(got, want string) bool {
	if w, ok := parseShownJSON(want); ok {
		g, err := decodeOne(got)
		return err == nil && jsonMatches(g, w)
	}
	return linesMatch(splitLines(got), splitLines(want))
}

// splitLines splits text into lines with trailing blanks, and trailing
// empty lines, removed.
func splitLines(s string) []string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " \t\r")
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

func linesMatch(got, want []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if isWildcard(strings.TrimSpace(want[0])) {
		for k := 0; k <= len(got); k++ {
			if linesMatch(got[k:], want[1:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && globMatches(got[0], want[0]) && linesMatch(got[1:], want[1:])
}

func isWildcard(s string) bool { return s == "..." || s == "…" }

// wildcardAt returns the wildcard s starts with, or "".
func wildcardAt(s string) string {
	for _, w := range []string{"...", "…"} {
		if strings.HasPrefix(s, w) {
			return w
		}
	}
	return ""
}

// globMatches matches s against pattern, whose wildcards stand for any
// text.
func globMatches(s, pattern string) bool {
	parts := wildcardRE.Split(pattern, -1)
	if len(parts) == 1 {
		return s == pattern
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		i := strings.Index(s, p)
		if i < 0 {
			return false
		}
		s = s[i+len(p):]
	}
	return strings.HasSuffix(s, last)
}

// decodeOne decodes text holding exactly one JSON value.
func decodeOne(text string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var extra any
	if err := dec.Decode(&extra); err == nil {
		return nil, strconv.ErrSyntax
	}
	return v, nil
}

// parseShownJSON reads the JSON a document shows, its bare wildcards made
// anyValue or anyMembers; ok is false when the text is not JSON.
func parseShownJSON(text string) (any, bool) {
	t := strings.TrimSpace(text)
	if t == "" || (t[0] != '{' && t[0] != '[') {
		return nil, false
	}
	var b bytes.Buffer
	var stack []byte // open { and [
	var last byte    // last significant byte outside strings
	inString := false
	for i := 0; i < len(t); i++ {
		c := t[i]
		if inString {
			b.WriteByte(c)
			switch c {
			case '\\':
				if i+1 < len(t) {
					i++
					b.WriteByte(t[i])
				}
			case '"':
				inString = false
				last = '"'
			}
			continue
		}
		if w := wildcardAt(t[i:]); w != "" {
			if len(stack) > 0 && stack[len(stack)-1] == '{' && (last == '{' || last == ',') {
				b.WriteString(`"\u0000members": null`)
			} else {
				b.WriteString(`"\u0000any"`)
			}
			i += len(w) - 1
			last = '"'
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			stack = append(stack, c)
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			last = c
		}
		b.WriteByte(c)
	}
	v, err := decodeOne(b.String())
	return v, err == nil
}

// jsonMatches compares a decoded output with shown JSON (see above).
func jsonMatches(got, want any) bool {
	switch w := want.(type) {
	case string:
		if w == anyValue || isWildcard(w) {
			return true
		}
		g, ok := got.(string)
		return ok && globMatches(g, w)
	case json.Number:
		g, ok := got.(json.Number)
		if !ok {
			return false
		}
		gf, err1 := g.Float64()
		wf, err2 := w.Float64()
		return err1 == nil && err2 == nil && gf == wf
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		_, open := w[anyMembers]
		n := 0
		for k, wv := range w {
			if k == anyMembers {
				continue
			}
			n++
			gv, ok := g[k]
			if !ok || !jsonMatches(gv, wv) {
				return false
			}
		}
		return open || n == len(g)
	case []any:
		g, ok := got.([]any)
		return ok && elementsMatch(g, w)
	default: // bool, nil
		return got == want
	}
}

func elementsMatch(got, want []any) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if s, ok := want[0].(string); ok && (s == anyValue || isWildcard(s)) {
		for k := 0; k <= len(got); k++ {
			if elementsMatch(got[k:], want[1:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && jsonMatches(got[0], want[0]) && elementsMatch(got[1:], want[1:])
}
