package httpapi

import (
	"encoding/json"

	"github.com/berthd/berth/internal/jsonerror"
)

// Decoding errors in Berth's words. A body the schema accepted can still
// not fit the handler's typed body (an integer past 64 bits, a float
// where an integer goes); encoding/json's message for that names Go
// types ("cannot unmarshal number into Go struct field claimBody..."),
// which no answer may repeat. decodeError says the same in the API's
// terms: the field's path, the value and what the field takes.

// decodeError is the 400 for err, an error of encoding/json decoding a
// request body (or a part of one) into a typed value.
func decodeError(err error) *Error {
	return badRequest("JSON does not validate: %s.", jsonerror.Message(err))
}

// jsonTokenKind describes a token of json.Decoder as
// UnmarshalTypeError.Value does.
func jsonTokenKind(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			return "array"
		}
		return "object"
	case string:
		return "string"
	case bool:
		return "bool"
	case float64, json.Number:
		return "number"
	}
	return ""
}
