package wire

import (
	"fmt"
	"net/http"
	"unicode/utf8"
)

// Bounds on what a JSON request body may decode to. A body is read whole
// (up to the server's body limit, body.go) and then decoded into generic
// values for schema validation and into the handler's typed body, which
// costs far more memory than the body: many small array items cost many
// times their bytes as values, and every byte of its strings is copied at
// each decoding. CheckJSON counts before anything is built. The
// bounds are far above any Placement or Berth request (a reshaper body
// for a large tree has a few tens of thousands of values, a few MiB of
// strings at most; a scriptlet's source is at most 1 MiB).
const (
	maxJSONValues    = 250_000 // values of every kind, object keys included
	maxJSONItems     = 100_000 // items of one array or members of one object
	maxJSONString    = 2 << 20 // bytes of one decoded string
	maxJSONTextBytes = 8 << 20 // bytes of all decoded strings (keys included) and numbers
	// maxJSONDepth is encoding/json's own nesting limit: deeper bodies
	// are left to its error.
	maxJSONDepth = 10_000
)

// CheckJSON refuses, before the body is decoded (step 2 of decode.go;
// Bodies.Read runs it on every body it reads): bytes that are not
// UTF-8 (with the message Placement gives,
// Python's UnicodeDecodeError); \u escapes of lone UTF-16 surrogates
// (encoding/json would store U+FFFD for them, so different invalid names
// would collide); and bodies past the bounds above (413). Malformed JSON
// is left to parseJSONDoc, which words its errors as Python does.
func CheckJSON(body []byte) error {
	// The charset parameter is not looked at: Placement decodes the bytes
	// as JSON whatever the Content-Type says, and so does this.
	if err := checkUTF8(body); err != nil {
		return BadRequest("Malformed JSON: %v", err)
	}
	return scanJSON(body)
}

// checkUTF8 reports the first invalid UTF-8 sequence in b as Python's
// strict UTF-8 decoder does: "'utf-8' codec can't decode byte 0xff in
// position 10: invalid start byte".
func checkUTF8(b []byte) error {
	if utf8.Valid(b) {
		return nil
	}
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		if r, n := utf8.DecodeRune(b[i:]); r != utf8.RuneError || n > 1 {
			i += n
			continue
		}
		// The longest prefix of a valid sequence that starts at i, as
		// CPython reports it.
		lo, hi, need := byte(0x80), byte(0xBF), 0
		switch c := b[i]; {
		case c >= 0xC2 && c <= 0xDF:
			need = 1
		case c == 0xE0:
			lo, need = 0xA0, 2
		case c == 0xED:
			hi, need = 0x9F, 2
		case c >= 0xE1 && c <= 0xEF:
			need = 2
		case c == 0xF0:
			lo, need = 0x90, 3
		case c == 0xF4:
			hi, need = 0x8F, 3
		case c >= 0xF1 && c <= 0xF3:
			need = 3
		default:
			return utf8Error(b, i, i, "invalid start byte")
		}
		end := i // last byte of the valid prefix
		for k := 1; k <= need; k++ {
			if i+k >= len(b) {
				return utf8Error(b, i, len(b)-1, "unexpected end of data")
			}
			if c := b[i+k]; c < lo || c > hi {
				return utf8Error(b, i, end, "invalid continuation byte")
			}
			lo, hi, end = 0x80, 0xBF, i+k
		}
		i += need + 1 // not reached for an invalid sequence
	}
	return nil
}

func utf8Error(b []byte, start, end int, reason string) error {
	if start == end {
		return fmt.Errorf("'utf-8' codec can't decode byte 0x%02x in position %d: %s", b[start], start, reason)
	}
	return fmt.Errorf("'utf-8' codec can't decode bytes in position %d-%d: %s", start, end, reason)
}

// tooLarge is the answer to a body past a decoding bound.
func tooLarge(format string, args ...any) *Error {
	return NewError(http.StatusRequestEntityTooLarge, "", "JSON body too large to decode: "+format, args...)
}

// scanJSON counts the values, container items and string lengths of a
// JSON text without building anything, and checks \u escapes. It stops at
// the first syntax it does not expect, leaving the error to the decoder.
func scanJSON(b []byte) error {
	var items []int           // per open container, the commas seen
	values, textBytes := 0, 0 // textBytes: of strings and numbers, as decoded
	for i := 0; i < len(b); i++ {
		switch c := b[i]; c {
		case ' ', '\t', '\n', '\r', ':':
			continue
		case '[', '{':
			if len(items) >= maxJSONDepth {
				return nil
			}
			items = append(items, 0)
		case ']', '}':
			if len(items) == 0 {
				return nil
			}
			items = items[:len(items)-1]
			continue
		case ',':
			if len(items) == 0 {
				return nil
			}
			if items[len(items)-1]++; items[len(items)-1] >= maxJSONItems {
				return tooLarge("an array or object has more than %d items.", maxJSONItems)
			}
			continue
		case '"':
			end, n, err := scanString(b, i+1)
			if err != nil {
				return err
			}
			if end < 0 {
				return nil
			}
			if textBytes += n; textBytes > maxJSONTextBytes {
				return tooLarge("strings and numbers of more than %d bytes in all.", maxJSONTextBytes)
			}
			i = end
		default:
			// A number or literal: up to the next delimiter. A number is
			// kept as its text (json.Number) when decoded.
			start := i
			for i+1 < len(b) && !jsonDelimiter[b[i+1]] {
				i++
			}
			if textBytes += i + 1 - start; textBytes > maxJSONTextBytes {
				return tooLarge("strings and numbers of more than %d bytes in all.", maxJSONTextBytes)
			}
		}
		if values++; values > maxJSONValues {
			return tooLarge("more than %d values.", maxJSONValues)
		}
	}
	return nil
}

// jsonDelimiter marks the bytes that end a number or literal in scanJSON.
var jsonDelimiter = func() (d [256]bool) {
	for _, c := range []byte(" \t\n\r,:]}[{\"") {
		d[c] = true
	}
	return d
}()

// scanString checks the string whose contents start at b[start] and
// returns the index of its closing quote and its decoded length in bytes,
// or -1 if it has none or a malformed escape (the decoder's error then).
func scanString(b []byte, start int) (int, int, error) {
	n := 0 // decoded bytes
	for i := start; i < len(b); i++ {
		if n > maxJSONString {
			return 0, 0, tooLarge("a string is longer than %d bytes.", maxJSONString)
		}
		switch b[i] {
		case '"':
			return i, n, nil
		case '\\':
			if i+1 >= len(b) {
				return -1, 0, nil
			}
			if b[i+1] != 'u' {
				i++
				n++
				continue
			}
			r, ok := hex4(b, i+2)
			if !ok {
				return -1, 0, nil
			}
			switch {
			case r >= 0xD800 && r <= 0xDBFF:
				if low, ok := hex4(b, i+8); ok && b[i+6] == '\\' && b[i+7] == 'u' && low >= 0xDC00 && low <= 0xDFFF {
					i += 11
					n += 4
					continue
				}
				return 0, 0, loneSurrogate(b, i, r)
			case r >= 0xDC00 && r <= 0xDFFF:
				return 0, 0, loneSurrogate(b, i, r)
			}
			i += 5
			n += utf8.RuneLen(r)
		default:
			n++
		}
	}
	return -1, 0, nil
}

func loneSurrogate(b []byte, i int, r rune) error {
	return BadRequest("Malformed JSON: invalid \\u%04x escape at char %d: a lone UTF-16 surrogate is not a character",
		r, utf8.RuneCount(b[:i]))
}
