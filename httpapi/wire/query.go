package wire

import (
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/internal/jsonschema"
)

// ValidateQuery checks the request's query string against schema, the way
// Placement does: as an object of strings, the last value winning for a
// repeated key. Violations read "Invalid query string parameters: ..."
// followed, as str() of a jsonschema error does, by the "Failed
// validating ..." trailer that clients match on.
func ValidateQuery(c echo.Context, schema *jsonschema.Schema) error {
	if err := checkQueryUTF8(c.Request().URL.RawQuery); err != nil {
		return BadRequest("Invalid query string parameters: %v", err)
	}
	q := c.QueryParams()
	doc := make(map[string]any, len(q))
	for k, vs := range q {
		doc[k] = vs[len(vs)-1]
	}
	if err := schema.Validate(doc); err != nil {
		return BadRequest("Invalid query string parameters: %s", err)
	}
	return nil
}

// checkQueryUTF8 reports the first name or value of a query string whose
// percent-decoded bytes are not UTF-8, as webob's decoding of req.GET
// fails on it (Python's UnicodeDecodeError, its position counted in that
// name or value).
func checkQueryUTF8(raw string) error {
	for _, pair := range strings.Split(raw, "&") {
		name, value, _ := strings.Cut(pair, "=")
		for _, part := range []string{name, value} {
			decoded, err := url.QueryUnescape(part)
			if err != nil {
				continue
			}
			if err := checkUTF8([]byte(decoded)); err != nil {
				return err
			}
		}
	}
	return nil
}

// QueryLast returns the last value of a query parameter, as webob's
// req.GET[key] does, and whether it was given at all.
func QueryLast(c echo.Context, key string) (string, bool) {
	vs, ok := c.QueryParams()[key]
	if !ok || len(vs) == 0 {
		return "", false
	}
	return vs[len(vs)-1], true
}
