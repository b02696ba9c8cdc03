package httpapi

import (
	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/internal/jsonschema"
)

// validateQuery checks the request's query string against schema, the way
// Placement does: as an object of strings, the last value winning for a
// repeated key. Violations read "Invalid query string parameters: ..."
// followed, as str() of a jsonschema error does, by the "Failed
// validating ..." trailer that clients match on.
func validateQuery(c echo.Context, schema *jsonschema.Schema) error {
	q := c.QueryParams()
	doc := make(map[string]any, len(q))
	for k, vs := range q {
		doc[k] = vs[len(vs)-1]
	}
	if err := schema.Validate(doc); err != nil {
		return badRequest("Invalid query string parameters: %s", err)
	}
	return nil
}
