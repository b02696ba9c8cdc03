// Package jsonerror words the errors of encoding/json in an API's terms.
// encoding/json's messages name Go types and struct fields ("json: cannot
// unmarshal number into Go struct field claimBody.consumer_generation of
// type int64"); no answer or message meant for a user may repeat them.
// Message says the same with the field's JSON path, the value and what
// the field takes. It imports nothing of Berth's.
package jsonerror

import (
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"
)

// maxValue is how much of a refused number Message repeats.
const maxValue = 64

// Message words err, an error of decoding JSON into a typed value:
// "consumer_generation: 1e30 is not an integer between ...", "unknown
// field \"x\"", "not valid JSON at byte 12". Errors of other origins
// are returned as they are.
func Message(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		where := te.Field
		if where == "" {
			where = "the value"
		}
		return where + ": " + valueWords(te.Value) + " is not " + KindWords(te.Type)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "not valid JSON at byte " + strconv.FormatInt(se.Offset, 10)
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return "not valid JSON: it ends too soon"
	}
	// Decoder.DisallowUnknownFields' error has no type of its own; its
	// text is `json: unknown field "name"`: the package prefix goes.
	return strings.TrimPrefix(err.Error(), "json: ")
}

// valueWords describes a value as UnmarshalTypeError.Value does
// ("number 1e400", "string", "array").
func valueWords(v string) string {
	if n, ok := strings.CutPrefix(v, "number "); ok {
		if len(n) > maxValue {
			cut := maxValue
			for cut > 0 && !utf8.RuneStart(n[cut]) {
				cut--
			}
			n = n[:cut] + "..."
		}
		return n
	}
	switch v {
	case "array", "object":
		return "an " + v
	case "bool":
		return "a boolean"
	case "":
		return "the value"
	case "number":
		return "a number"
	}
	return "a " + v
}

// KindWords says what a value of Go type t holds, in JSON's terms: "an
// integer between ...", "a string", "an object".
func KindWords(t reflect.Type) string {
	if t == nil {
		return "of the expected type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int64, reflect.Int:
		return "an integer between -9223372036854775808 and 9223372036854775807"
	case reflect.Int32:
		return "an integer between -2147483648 and 2147483647"
	case reflect.Int8, reflect.Int16, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
		return "an integer in range"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "of the expected type"
}
