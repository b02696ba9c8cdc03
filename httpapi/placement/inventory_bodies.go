package placement

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/resources"
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
			fields.generation, ok = wire.DocInt64(v)
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

func (b inventoryBody) inventory(class string) engine.Inventory {
	inv := resources.DefaultInventory(class, b.Total.V)
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
	Generation  int64                          `json:"resource_provider_generation"`
	Inventories wire.OrderedMap[inventoryBody] `json:"inventories"`
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
			out.Generation, ok = wire.DocInt64(v)
		case "inventories":
			var invs map[string]any
			if invs, ok = v.(map[string]any); !ok {
				return false
			}
			// The classes in the body's order, which the map lost.
			keys, found := wire.MemberKeys(body, "inventories")
			if !found || len(keys) != len(invs) {
				return false
			}
			out.Inventories = wire.OrderedMap[inventoryBody]{Keys: keys, Values: make(map[string]inventoryBody, len(keys))}
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

func (b inventoriesBody) inventories() []engine.Inventory {
	out := make([]engine.Inventory, 0, len(b.Inventories.Keys))
	for _, class := range b.Inventories.Keys {
		out = append(out, b.Inventories.Values[class].inventory(class))
	}
	return out
}
