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

// WebobQuery returns the raw query string raw with each '%' that does
// not start a percent-escape (two hex digits) escaped itself, so that Go
// decodes the query as webob does: webob keeps a bad escape ("%zz",
// "%%") as it is, where Go's url.ParseQuery drops the whole pair (and
// the parameter with it). Anything else is left as it is.
func WebobQuery(raw string) string {
	if !strings.Contains(raw, "%") {
		return raw
	}
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		if raw[i] == '%' && (i+2 >= len(raw) || !isHex(raw[i+1]) || !isHex(raw[i+2])) {
			b.WriteString("%25")
			continue
		}
		b.WriteByte(raw[i])
	}
	return b.String()
}

// isHex reports whether c is a hexadecimal digit.
func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
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
