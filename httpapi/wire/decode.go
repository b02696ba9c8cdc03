package wire

import (
	"bytes"
	"encoding/json"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/internal/jsonerror"
	"github.com/berthd/berth/internal/jsonschema"
)

// Request bodies.
//
// A handler decodes its JSON body with one call, Bodies.Decode (or its
// variants below), which takes the body through these steps, each in its
// own file, in this order:
//
//  1. read (body.go): declared as JSON, at most the server's body limit,
//     a large body holding a share of the body budget while it is read
//     and decoded;
//  2. bounded (body.go, CheckJSON): UTF-8 as Python decodes it, no lone UTF-16
//     surrogate, within the decoding bounds, all before anything is built;
//  3. parsed: refused with Python's words where Python's json.loads
//     refuses it (pyjson.go), else built once into a generic document of
//     maps, slices, strings, json.Number, bools and nil (document.go);
//  4. validated against the route's schema (internal/jsonschema, whose
//     messages are Python jsonschema's);
//  5. decoded into the handler's typed body: filled from the document
//     where the handler can (fill.go), else by encoding/json from the
//     bytes, whose errors are worded in the API's terms (DecodeError).
//
// Errors read as Placement's: "Malformed JSON: ..." and "JSON does not
// validate: ...".

// Bodies reads and decodes the request bodies of one server.
type Bodies struct {
	maxBytes int64
	budget   Budget
}

// NewBodies reads bodies of at most maxBytes, a large one holding its
// share of budget.
func NewBodies(maxBytes int64, budget Budget) *Bodies {
	return &Bodies{maxBytes: maxBytes, budget: budget}
}

// Decode reads the request's JSON body, validates it against schema and
// decodes it into dst (nil: validate only).
func (b *Bodies) Decode(c echo.Context, schema *jsonschema.Schema, dst any) error {
	_, err := b.DecodeRaw(c, schema, dst)
	return err
}

// DecodeRaw is Decode, and returns the body as read.
func (b *Bodies) DecodeRaw(c echo.Context, schema *jsonschema.Schema, dst any) ([]byte, error) {
	body, err := b.Read(c)
	if err != nil {
		return nil, err
	}
	return body, DecodeJSON(body, schema, dst)
}

// DecodeDoc is Decode with DecodeJSONDoc's fast path, fromDoc.
func (b *Bodies) DecodeDoc(c echo.Context, schema *jsonschema.Schema, dst any, fromDoc func(doc any, body []byte) bool) error {
	body, err := b.Read(c)
	if err != nil {
		return err
	}
	return DecodeJSONDoc(body, schema, dst, fromDoc)
}

// DecodeJSON validates body, as read by Bodies.Read, against schema and
// decodes it into dst (nil: validate only): steps 3 to 5 above.
func DecodeJSON(body []byte, schema *jsonschema.Schema, dst any) error {
	return DecodeJSONDoc(body, schema, dst, nil)
}

// DecodeJSONDoc is DecodeJSON, but first tries fromDoc (if not nil),
// which fills dst from the document the schema validated, without a
// second parse (fill.go): it must fill dst as json.Unmarshal(body, dst)
// would, or report false having changed nothing, and is called only
// with a document buildDoc made.
func DecodeJSONDoc(body []byte, schema *jsonschema.Schema, dst any, fromDoc func(doc any, body []byte) bool) error {
	doc, built, err := parseJSONDoc(body)
	if err != nil {
		return BadRequest("Malformed JSON: %v", err)
	}
	if schema != nil {
		if err := schema.Validate(doc); err != nil {
			return BadRequest("JSON does not validate: %v", err)
		}
	}
	if dst == nil {
		return nil
	}
	if fromDoc != nil && built && fromDoc(doc, body) {
		return nil
	}
	if err := json.Unmarshal(body, dst); err != nil {
		if nonFinite(doc) {
			// Placement would store such a value where the schema lets
			// a float through (an allocation ratio); Berth does not.
			return BadRequest("JSON does not validate: NaN, Infinity and -Infinity are not accepted.")
		}
		return DecodeError(err)
	}
	return nil
}

// DecodeError is the 400 for err, an error of encoding/json decoding a
// request body (or a part of one) into a typed value. A body the schema
// accepted can still not fit the handler's typed body (an integer past
// 64 bits, a float where an integer goes); encoding/json's message for
// that names Go types ("cannot unmarshal number into Go struct field
// claimBody..."), which no answer may repeat: this says the same in the
// API's terms, the field's path, the value and what the field takes.
func DecodeError(err error) *Error {
	return BadRequest("JSON does not validate: %s.", jsonerror.Message(err))
}

// nonFinite reports whether v holds NaN, Infinity or -Infinity.
func nonFinite(v any) bool {
	switch t := v.(type) {
	case json.Number:
		s := t.String()
		return s == "NaN" || s == "Infinity" || s == "-Infinity"
	case []any:
		for _, e := range t {
			if nonFinite(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range t {
			if nonFinite(e) {
				return true
			}
		}
	}
	return false
}

// parseJSON decodes one JSON document, keeping numbers as json.Number. A
// body Python's json.loads refuses is refused with Python's words, as
// Placement does (pyJSONError).
func parseJSON(body []byte) (any, error) {
	doc, _, err := parseJSONDoc(body)
	return doc, err
}

// parseJSONDoc is parseJSON, and reports whether buildDoc built the
// document (so that it holds no NaN or Infinity).
func parseJSONDoc(body []byte) (any, bool, error) {
	if err := pyJSONError(body); err != nil {
		return nil, false, err
	}
	if doc, ok := buildDoc(body); ok {
		return doc, true, nil
	}
	doc, err := parseJSONGeneral(body)
	return doc, false, err
}

// parseJSONGeneral decodes a body pyJSONError accepted with encoding/json.
func parseJSONGeneral(body []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		// What Python reads and encoding/json does not: NaN, Infinity
		// and -Infinity, which the schema then judges as Python's floats.
		return pyJSONDecode(body)
	}
	return doc, nil
}

// RouteSchema is a schema one route validates its request with at the
// latest microversion, its JSON body's (the one its handler passes to
// Bodies.Decode) or its query string's (ValidateQuery's), for the API's
// description (GET /openapi.json). Method and Path are the route table's
// (path parameters as ":name").
type RouteSchema struct {
	Method, Path string
	Schema       *jsonschema.Schema
}
