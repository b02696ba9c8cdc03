package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger"
)

// The inventory schemas, as Placement's placement/schemas/inventory.py.
const (
	rcPattern       = `^[A-Z0-9_]+$`
	inventoryFields = `
		"resource_provider_generation": {"type": "integer"},
		"total": {"type": "integer", "maximum": 2147483647, "minimum": 1},
		"reserved": {"type": "integer", "maximum": 2147483647, "minimum": 0},
		"min_unit": {"type": "integer", "maximum": 2147483647, "minimum": 1},
		"max_unit": {"type": "integer", "maximum": 2147483647, "minimum": 1},
		"step_size": {"type": "integer", "maximum": 2147483647, "minimum": 1},
		"allocation_ratio": {"type": "number", "maximum": 3.40282e+38}`
	// inventoryRecordSchema is one inventory inside PUT .../inventories.
	inventoryRecordSchema = `{
		"type": "object",
		"properties": {` + inventoryFields + `},
		"required": ["total"],
		"additionalProperties": false
	}`
	// putInventoriesSchema is the body of PUT .../inventories (and of each
	// provider in a reshape).
	putInventoriesSchema = `{
		"type": "object",
		"properties": {
			"resource_provider_generation": {"type": "integer"},
			"inventories": {
				"type": "object",
				"patternProperties": {"` + rcPattern + `": ` + inventoryRecordSchema + `}
			}
		},
		"required": ["resource_provider_generation", "inventories"],
		"additionalProperties": false
	}`
)

var (
	putInventorySchema = jsonschema.Must(`{
		"type": "object",
		"properties": {` + inventoryFields + `},
		"required": ["total", "resource_provider_generation"],
		"additionalProperties": false
	}`)
	postInventorySchema = jsonschema.Must(`{
		"type": "object",
		"properties": {` + inventoryFields + `,
			"resource_class": {"type": "string", "pattern": "` + rcPattern + `"}
		},
		"required": ["total", "resource_class"],
		"additionalProperties": false
	}`)
	putInventoriesSchemaCompiled = jsonschema.Must(putInventoriesSchema)
)

// inventoryBody is one inventory as sent by a client; absent fields take
// Placement's defaults.
type inventoryBody struct {
	ResourceClass string   `json:"resource_class"`
	Generation    *int64   `json:"resource_provider_generation"`
	Total         jsonInt  `json:"total"`
	Reserved      *jsonInt `json:"reserved"`
	MinUnit       *jsonInt `json:"min_unit"`
	MaxUnit       *jsonInt `json:"max_unit"`
	StepSize      *jsonInt `json:"step_size"`
	// AllocationRatio keeps the number as written: Placement's answer to
	// a write echoes it (an integer stays an integer there).
	AllocationRatio *json.Number `json:"allocation_ratio"`
}

// jsonInt is an integer field of a request body as Python's json and
// jsonschema take it: an integer, or a float with an integral value
// (4.0). Lit is the number as written, which Placement's answer to the
// write echoes.
type jsonInt struct {
	V   int64
	Lit string
}

func (n *jsonInt) UnmarshalJSON(b []byte) error {
	v, err := parseJSONInt(string(b))
	if err != nil {
		return err
	}
	*n = v
	return nil
}

// parseJSONInt reads the number literal lit as a jsonInt.
func parseJSONInt(lit string) (jsonInt, error) {
	if v, err := strconv.ParseInt(lit, 10, 64); err == nil {
		return jsonInt{v, lit}, nil
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) >= 1<<63 {
		return jsonInt{}, &json.UnmarshalTypeError{Value: "number " + lit, Type: reflect.TypeFor[int64]()}
	}
	return jsonInt{int64(f), lit}, nil
}

// docJSONInt is v as json.Unmarshal decodes a number into a jsonInt,
// stored in *dst.
func docJSONInt(v any, dst *jsonInt) (*jsonInt, bool) {
	lit, ok := v.(json.Number)
	if !ok {
		return nil, false
	}
	n, err := parseJSONInt(string(lit))
	*dst = n
	return dst, err == nil
}

func (b *inventoryBody) decodeDoc(doc any, _ []byte) bool {
	m, ok := doc.(map[string]any)
	if !ok {
		return false
	}
	// What the optional fields point to, in one allocation.
	fields := new(struct {
		ints       [4]jsonInt
		generation int64
		ratio      json.Number
	})
	var out inventoryBody
	for k, v := range m {
		switch k {
		case "resource_class":
			out.ResourceClass, ok = v.(string)
		case "resource_provider_generation":
			fields.generation, ok = docInt64(v)
			out.Generation = &fields.generation
		case "total":
			var n jsonInt
			_, ok = docJSONInt(v, &n)
			out.Total = n
		case "reserved":
			out.Reserved, ok = docJSONInt(v, &fields.ints[0])
		case "min_unit":
			out.MinUnit, ok = docJSONInt(v, &fields.ints[1])
		case "max_unit":
			out.MaxUnit, ok = docJSONInt(v, &fields.ints[2])
		case "step_size":
			out.StepSize, ok = docJSONInt(v, &fields.ints[3])
		case "allocation_ratio":
			// buildDoc's numbers are all valid JSON numbers.
			fields.ratio, ok = v.(json.Number)
			out.AllocationRatio = &fields.ratio
		default:
			ok = false
		}
		if !ok {
			return false
		}
	}
	*b = out
	return true
}

func (b inventoryBody) inventory(class string) ledger.Inventory {
	inv := ledger.DefaultInventory(class, b.Total.V)
	set := func(dst *int64, src *jsonInt) {
		if src != nil {
			*dst = src.V
		}
	}
	set(&inv.Reserved, b.Reserved)
	set(&inv.MinUnit, b.MinUnit)
	set(&inv.MaxUnit, b.MaxUnit)
	set(&inv.StepSize, b.StepSize)
	if b.AllocationRatio != nil {
		// The schema let only numbers through.
		inv.AllocationRatio, _ = b.AllocationRatio.Float64()
	}
	return inv
}

// literals are the numbers of the body that Placement's answer to the
// write echoes as written rather than as stored: the allocation ratio,
// and integer fields written as floats (4.0). Keyed by field name.
func (b inventoryBody) literals() map[string]string {
	out := map[string]string{"total": b.Total.Lit}
	for name, f := range map[string]*jsonInt{"reserved": b.Reserved, "min_unit": b.MinUnit, "max_unit": b.MaxUnit, "step_size": b.StepSize} {
		if f != nil {
			out[name] = f.Lit
		}
	}
	if b.AllocationRatio != nil {
		out["allocation_ratio"] = b.AllocationRatio.String()
	}
	return out
}

// inventoriesBody is the body of PUT .../inventories.
type inventoriesBody struct {
	Generation  int64                     `json:"resource_provider_generation"`
	Inventories orderedMap[inventoryBody] `json:"inventories"`
}

func (b *inventoriesBody) decodeDoc(doc any, body []byte) bool {
	m, ok := doc.(map[string]any)
	if !ok {
		return false
	}
	var out inventoriesBody
	for k, v := range m {
		switch k {
		case "resource_provider_generation":
			out.Generation, ok = docInt64(v)
		case "inventories":
			var invs map[string]any
			if invs, ok = v.(map[string]any); !ok {
				return false
			}
			// The classes in the body's order, which the map lost.
			keys, found := memberKeys(body, "inventories")
			if !found || len(keys) != len(invs) {
				return false
			}
			out.Inventories = orderedMap[inventoryBody]{Keys: keys, Values: make(map[string]inventoryBody, len(keys))}
			for _, class := range keys {
				var inv inventoryBody
				if rec, in := invs[class]; !in || !inv.decodeDoc(rec, nil) {
					return false
				}
				out.Inventories.Values[class] = inv
			}
		default:
			ok = false
		}
		if !ok {
			return false
		}
	}
	*b = out
	return true
}

func (b inventoriesBody) inventories() []ledger.Inventory {
	out := make([]ledger.Inventory, 0, len(b.Inventories.Keys))
	for _, class := range b.Inventories.Keys {
		out = append(out, b.Inventories.Values[class].inventory(class))
	}
	return out
}

// inventoryJSON is an inventory as Placement renders it.
type inventoryJSON struct {
	Generation      *int64         `json:"resource_provider_generation,omitempty"`
	Total           json.Marshaler `json:"total"`
	Reserved        json.Marshaler `json:"reserved"`
	MinUnit         json.Marshaler `json:"min_unit"`
	MaxUnit         json.Marshaler `json:"max_unit"`
	StepSize        json.Marshaler `json:"step_size"`
	AllocationRatio json.Marshaler `json:"allocation_ratio"`
}

// renderInventory renders inv. lits, from a write's body, are the numbers
// Placement's answer to the write echoes as written (nil for a read: a
// stored ratio is a float, 1.0; the other fields are integers).
func renderInventory(inv ledger.Inventory, generation *int64, lits map[string]string) inventoryJSON {
	num := func(name string, v int64) json.Marshaler {
		if lit := lits[name]; strings.ContainsAny(lit, ".eE") {
			return pyNumber(lit)
		}
		return pyNumber(strconv.FormatInt(v, 10))
	}
	out := inventoryJSON{
		Generation: generation,
		Total:      num("total", inv.Total), Reserved: num("reserved", inv.Reserved),
		MinUnit: num("min_unit", inv.MinUnit), MaxUnit: num("max_unit", inv.MaxUnit), StepSize: num("step_size", inv.StepSize),
		AllocationRatio: pyFloat64(inv.AllocationRatio),
	}
	if lit := lits["allocation_ratio"]; lit != "" {
		out.AllocationRatio = pyNumber(lit)
	}
	return out
}

// sendInventories answers with pi's inventories; bodies are a write's
// body by class, whose literals the answer echoes (nil for a read).
func (s *Server) sendInventories(c echo.Context, pi ledger.ProviderInventories, bodies map[string]inventoryBody) error {
	setCacheHeaders(c, pi.LastModified())
	if ok, err := writeJSONFast(c, http.StatusOK, func(b []byte) ([]byte, bool) {
		return appendInventories(b, pi, bodies)
	}); ok {
		return err
	}
	return writeJSON(c, http.StatusOK, inventoriesAnswer(pi, bodies))
}

// inventoriesAnswer is sendInventories' answer as generic values, which
// appendInventories writes by hand.
func inventoriesAnswer(pi ledger.ProviderInventories, bodies map[string]inventoryBody) map[string]any {
	// In the ledger's order: Placement's class order.
	out := newJSONObject()
	for _, inv := range pi.Inventories {
		var lits map[string]string
		if body, in := bodies[inv.ResourceClass]; in {
			lits = body.literals()
		}
		out.set(inv.ResourceClass, renderInventory(inv, nil, lits))
	}
	return map[string]any{
		"resource_provider_generation": pi.Generation,
		"inventories":                  out,
	}
}

// sendInventory answers with the inventory of class from pi.
func (s *Server) sendInventory(c echo.Context, status int, pi ledger.ProviderInventories, class string, lits map[string]string) error {
	inv, ok := pi.Find(class)
	if !ok {
		return fmt.Errorf("inventory of %s missing after write", class)
	}
	setCacheHeaders(c, inv.UpdatedAt)
	gen := pi.Generation
	return writeJSON(c, status, renderInventory(inv, &gen, lits))
}

// inventoryParams reads the provider and microversion-dependent checks of
// an inventory write.
func inventoryParams(c echo.Context, generation *int64) ledger.InventoryParams {
	return ledger.InventoryParams{
		ProviderUUID:   c.Param("uuid"),
		Generation:     generation,
		ZeroCapacityOK: version(c).AtLeast(26),
	}
}

// providerFirst is the answer to a provider write (inventories,
// aggregates) whose body was
// refused with err: Placement's handler looks the provider up before it
// decodes the body, so a provider that does not exist is the answer to a
// malformed or invalid body (400) instead. The lookup is made only then,
// not on every write.
func (s *Server) providerFirst(c echo.Context, err error) error {
	var e *Error
	if !errors.As(err, &e) || e.Status != http.StatusBadRequest {
		return err
	}
	if _, perr := s.store.ProviderGet(c.Request().Context(), c.Param("uuid")); perr != nil {
		return perr
	}
	return err
}

// GET /resource_providers/{uuid}/inventories
func (s *Server) inventoriesList(c echo.Context) error {
	pi, err := s.store.InventoryList(c.Request().Context(), c.Param("uuid"))
	if err != nil {
		return caughtNotFound(err, "No resource provider with uuid %s found : %s", c.Param("uuid"))
	}
	return s.sendInventories(c, pi, nil)
}

// GET /resource_providers/{uuid}/inventories/{resource_class}
func (s *Server) inventoryShow(c echo.Context) error {
	pi, err := s.store.InventoryList(c.Request().Context(), c.Param("uuid"))
	if err != nil {
		return caughtNotFound(err, "No resource provider with uuid %s found : %s", c.Param("uuid"))
	}
	class := c.Param("resource_class")
	if _, ok := pi.Find(class); !ok {
		return notFound("No inventory of class %s for %s", class, c.Param("uuid"))
	}
	return s.sendInventory(c, http.StatusOK, pi, class, nil)
}

// POST /resource_providers/{uuid}/inventories
func (s *Server) inventoryCreate(c echo.Context) error {
	var body inventoryBody
	if err := s.decodeBody(c, postInventorySchema, &body); err != nil {
		return s.providerFirst(c, err)
	}
	pi, err := s.store.InventoryCreate(c.Request().Context(), inventoryParams(c, nil), body.inventory(body.ResourceClass))
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, absoluteURL(c,
		"/resource_providers/"+c.Param("uuid")+"/inventories/"+body.ResourceClass))
	return s.sendInventory(c, http.StatusCreated, pi, body.ResourceClass, body.literals())
}

// PUT /resource_providers/{uuid}/inventories/{resource_class}
func (s *Server) inventoryUpdate(c echo.Context) error {
	var body inventoryBody
	if err := s.decodeBody(c, putInventorySchema, &body); err != nil {
		return s.providerFirst(c, err)
	}
	class := c.Param("resource_class")
	pi, err := s.store.InventoryUpdate(c.Request().Context(), inventoryParams(c, body.Generation), body.inventory(class))
	if err != nil {
		return err
	}
	return s.sendInventory(c, http.StatusOK, pi, class, body.literals())
}

// PUT /resource_providers/{uuid}/inventories
func (s *Server) inventoriesReplace(c echo.Context) error {
	var body inventoriesBody
	if err := s.decodeBodyDoc(c, putInventoriesSchemaCompiled, &body, body.decodeDoc); err != nil {
		return s.providerFirst(c, err)
	}
	pi, err := s.store.InventoriesReplace(c.Request().Context(), inventoryParams(c, &body.Generation), body.inventories())
	if err != nil {
		return err
	}
	// Placement answers a PUT with the inventories in the request's order.
	pos := make(map[string]int, len(body.Inventories.Keys))
	for i, k := range body.Inventories.Keys {
		pos[k] = i
	}
	slices.SortStableFunc(pi.Inventories, func(a, b ledger.Inventory) int { return pos[a.ResourceClass] - pos[b.ResourceClass] })
	return s.sendInventories(c, pi, body.Inventories.Values)
}

// DELETE /resource_providers/{uuid}/inventories/{resource_class}
func (s *Server) inventoryDelete(c echo.Context) error {
	if err := s.store.InventoryDelete(c.Request().Context(), c.Param("uuid"), c.Param("resource_class")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// DELETE /resource_providers/{uuid}/inventories, from microversion 1.5;
// earlier versions answer 405, as Placement does.
func (s *Server) inventoriesDelete(c echo.Context) error {
	if !version(c).AtLeast(5) {
		// Placement's version_handler raises a 405 without a message
		// (and with no Allow header).
		return &Error{Status: http.StatusMethodNotAllowed, NoDetail: true}
	}
	if err := s.store.InventoriesDelete(c.Request().Context(), c.Param("uuid")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// absoluteURL turns a path of this API into the absolute URL Placement
// puts in Location headers.
func absoluteURL(c echo.Context, path string) string {
	return c.Scheme() + "://" + c.Request().Host + path
}
