package wire

import (
	"bytes"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Placement decodes a body with Python's json.loads (through oslo's
// jsonutils) and answers a syntax error with "Malformed JSON: " and
// Python's message, which names what it expected and where:
// "Expecting ',' delimiter: line 1 column 9 (char 8)". pyJSONError finds
// the error Python's decoder (the C scanner of CPython 3.11, strict) finds
// first in a body, and words it as Python does.

// pyJSONSyntaxError is one json.JSONDecodeError: what was expected, and
// where, as a character offset into the body.
type pyJSONSyntaxError struct {
	msg               string
	line, column, pos int
}

func (e *pyJSONSyntaxError) Error() string {
	return fmt.Sprintf("%s: line %d column %d (char %d)", e.msg, e.line, e.column, e.pos)
}

// pyIntMaxDigits is CPython's default limit on the digits of an integer
// converted from a string (sys.get_int_max_str_digits()).
const pyIntMaxDigits = 4300

// pyJSONError returns the error json.loads raises for the UTF-8 text b,
// or nil if it decodes it. Python accepts NaN, Infinity and -Infinity as
// values; so does this check. Nesting is followed with an explicit stack,
// so any depth costs memory, not Go stack.
func pyJSONError(b []byte) error {
	if bytes.HasPrefix(b, []byte("\ufeff")) {
		return pySyntaxError(b, "Unexpected UTF-8 BOM (decode using utf-8-sig)", 0)
	}
	s := pyJSONScanner{b: b}
	i := jsonSpace(s.b, 0)
	i, err := s.document(i)
	if err != nil {
		return err
	}
	if i = jsonSpace(s.b, i); i != len(b) {
		return pySyntaxError(b, "Extra data", i)
	}
	return nil
}

type pyJSONScanner struct {
	b []byte
}

// document scans the value at i and returns the index after it. It
// follows scan_once_unicode, _parse_object_unicode and
// _parse_array_unicode; stack holds the open containers.
func (s *pyJSONScanner) document(i int) (int, error) {
	b := s.b
	var stack []byte
	var err error
value:
	if i >= len(b) {
		return 0, pySyntaxError(b, "Expecting value", i)
	}
	switch b[i] {
	case '"':
		if i, err = s.str(i + 1); err != nil {
			return 0, err
		}
		goto after
	case '{':
		if i = jsonSpace(s.b, i+1); i < len(b) && b[i] == '}' {
			i++
			goto after
		}
		stack = append(stack, '{')
		goto key
	case '[':
		if i = jsonSpace(s.b, i+1); i < len(b) && b[i] == ']' {
			i++
			goto after
		}
		stack = append(stack, '[')
		goto value
	}
	for _, lit := range []string{"null", "true", "false", "NaN", "Infinity", "-Infinity"} {
		if bytes.HasPrefix(b[i:], []byte(lit)) {
			i += len(lit)
			goto after
		}
	}
	if i, err = s.number(i); err != nil {
		return 0, err
	}
	goto after

key:
	if i >= len(b) || b[i] != '"' {
		return 0, pySyntaxError(b, "Expecting property name enclosed in double quotes", i)
	}
	if i, err = s.str(i + 1); err != nil {
		return 0, err
	}
	if i = jsonSpace(s.b, i); i >= len(b) || b[i] != ':' {
		return 0, pySyntaxError(b, "Expecting ':' delimiter", i)
	}
	i = jsonSpace(s.b, i+1)
	goto value

after:
	if len(stack) == 0 {
		return i, nil
	}
	i = jsonSpace(s.b, i)
	if top := stack[len(stack)-1]; i < len(b) && b[i] == closing(top) {
		stack = stack[:len(stack)-1]
		i++
		goto after
	}
	if i >= len(b) || b[i] != ',' {
		return 0, pySyntaxError(b, "Expecting ',' delimiter", i)
	}
	i = jsonSpace(s.b, i+1)
	if stack[len(stack)-1] == '{' {
		goto key
	}
	goto value
}

func closing(open byte) byte {
	if open == '{' {
		return '}'
	}
	return ']'
}

// number scans the number at i (_match_number_unicode): an optional
// minus, 0 or digits without a leading zero, a fraction only if a digit
// follows the point, an exponent only if a digit follows the e and its
// sign. What is not part of it is left for the caller ("1." is the number
// 1 and extra data).
func (s *pyJSONScanner) number(start int) (int, error) {
	b, i := s.b, start
	end := len(b) - 1 // the last index, as the C code counts
	digit := func(i int) bool { return i < len(b) && b[i] >= '0' && b[i] <= '9' }
	if b[i] == '-' {
		if i++; i > end {
			return 0, pySyntaxError(b, "Expecting value", start)
		}
	}
	switch {
	case b[i] >= '1' && b[i] <= '9':
		for i++; digit(i); i++ {
		}
	case b[i] == '0':
		i++
	default:
		return 0, pySyntaxError(b, "Expecting value", start)
	}
	float := false
	if i < end && b[i] == '.' && digit(i+1) {
		float = true
		for i += 2; digit(i); i++ {
		}
	}
	if i < end && (b[i] == 'e' || b[i] == 'E') {
		e := i
		i++
		if i < end && (b[i] == '-' || b[i] == '+') {
			i++
		}
		for digit(i) {
			i++
		}
		if b[i-1] >= '0' && b[i-1] <= '9' {
			float = true
		} else {
			i = e
		}
	}
	if !float {
		digits := i - start
		if b[start] == '-' {
			digits--
		}
		if digits > pyIntMaxDigits {
			return 0, fmt.Errorf("Exceeds the limit (%d digits) for integer string conversion: value has %d digits; use sys.set_int_max_str_digits() to increase the limit", pyIntMaxDigits, digits)
		}
	}
	return i, nil
}

// str scans the string whose contents start at i (scanstring_unicode,
// strict) and returns the index after its closing quote.
func (s *pyJSONScanner) str(i int) (int, error) {
	b := s.b
	begin := i - 1
	for {
		for i < len(b) && b[i] != '"' && b[i] != '\\' {
			if b[i] <= 0x1f {
				return 0, pySyntaxError(b, "Invalid control character at", i)
			}
			i++
		}
		if i >= len(b) {
			return 0, pySyntaxError(b, "Unterminated string starting at", begin)
		}
		if b[i] == '"' {
			return i + 1, nil
		}
		// A backslash at i.
		next := i + 1
		if next == len(b) {
			return 0, pySyntaxError(b, "Unterminated string starting at", begin)
		}
		if b[next] != 'u' {
			switch b[next] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i = next + 1
				continue
			}
			return 0, pySyntaxError(b, "Invalid \\escape", i)
		}
		// \uXXXX: four hex digits and at least one character after them.
		next++
		end := next + 4
		if !pyCharsAtLeast(b, next, 5) {
			return 0, pySyntaxError(b, "Invalid \\uXXXX escape", next-1)
		}
		r, ok := hex4(b, next)
		if !ok {
			return 0, pySyntaxError(b, "Invalid \\uXXXX escape", end-5)
		}
		// A high surrogate followed by another \u escape is read as a
		// pair when seven more characters follow it.
		if r >= 0xD800 && r <= 0xDBFF && pyCharsAtLeast(b, end, 7) && b[end] == '\\' && b[end+1] == 'u' {
			low, ok := hex4(b, end+2)
			if !ok {
				return 0, pySyntaxError(b, "Invalid \\uXXXX escape", end+1)
			}
			if low >= 0xDC00 && low <= 0xDFFF {
				end += 6
			}
		}
		i = end
	}
}

// pyCharsAtLeast reports whether b holds at least n characters from i.
func pyCharsAtLeast(b []byte, i, n int) bool {
	for ; n > 0; n-- {
		if i >= len(b) {
			return false
		}
		_, size := utf8.DecodeRune(b[i:])
		i += size
	}
	return true
}

// pySyntaxError is the JSONDecodeError for msg at byte offset at of b:
// Python counts the line, the column and the offset in characters.
func pySyntaxError(b []byte, msg string, at int) error {
	before := b[:at]
	line := bytes.Count(before, []byte("\n")) + 1
	pos := utf8.RuneCount(before)
	col := pos + 1
	if nl := bytes.LastIndexByte(before, '\n'); nl >= 0 {
		col = pos - utf8.RuneCount(b[:nl])
	}
	return &pyJSONSyntaxError{msg: msg, line: line, column: col, pos: pos}
}

// pyJSONDecode decodes b, which pyJSONError accepted, as json.loads does
// for the values encoding/json refuses: NaN, Infinity and -Infinity, kept
// as json.Number with that text (package jsonschema reads them as Python's
// floats). It is buildDoc's decoding with those literals allowed and
// nesting bounded by maxPyJSONDepth (scanJSON lets deeper bodies through
// to encoding/json, which refuses them).
func pyJSONDecode(b []byte) (any, error) {
	d := docBuilder{b: b, python: true}
	v, ok := d.value(jsonSpace(b, 0), 0)
	if !ok {
		if d.tooDeep {
			return nil, errors.New("nested too deeply")
		}
		return nil, errors.New("invalid JSON")
	}
	return v, nil
}

// maxPyJSONDepth bounds pyJSONDecode's recursion.
const maxPyJSONDepth = maxJSONDepth
