package httpapi

import (
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/internal/jsonschema"
	"github.com/berthd/berth/ledger"
)

// Hand-written answers.
//
// The answers of the busiest writes (the seeding's: a new provider, its
// inventories, aggregates and traits) are appended by hand into a pooled
// buffer instead of being built as generic maps and encoded by
// reflection. They are byte for byte what writeJSON writes of the maps
// (keys sorted as encoding/json sorts a map's, jsonObject's members in
// their order, strings escaped as encoding/json escapes them, numbers as
// pyNumber and pyFloat64 write them); where that cannot be sure (a
// non-finite float, a class twice), an appender reports false and the
// general path answers. TestAnswersAsWriteJSON compares both.

// answerBufs pools the buffers hand-written answers are appended to.
var answerBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// maxPooledAnswer is the largest buffer put back in answerBufs.
const maxPooledAnswer = 64 << 10

// writeJSONFast answers with status and the JSON that app appends, and
// reports true, unless app reports false: then it has written nothing.
func writeJSONFast(c echo.Context, status int, app func([]byte) ([]byte, bool)) (bool, error) {
	bp := answerBufs.Get().(*[]byte)
	b, ok := app((*bp)[:0])
	var err error
	if ok {
		err = c.Blob(status, echo.MIMEApplicationJSON, b)
	}
	if cap(b) <= maxPooledAnswer {
		*bp = b[:0]
		answerBufs.Put(bp)
	}
	return ok, err
}

// appendHTMLString appends s as json.Marshal encodes a string (HTML
// escaping on): as appendGoString, with <, > and & as \u003c, \u003e
// and \u0026. jsonObject encodes its keys so.
func appendHTMLString(b []byte, s string) []byte {
	if !strings.ContainsAny(s, "<>&") {
		return appendGoString(b, s)
	}
	for _, c := range appendGoString(nil, s) {
		switch c {
		case '<':
			b = append(b, `\u003c`...)
		case '>':
			b = append(b, `\u003e`...)
		case '&':
			b = append(b, `\u0026`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendPyNumber appends what pyNumber(lit) marshals to, or reports
// false where that fails.
func appendPyNumber(b []byte, lit string) ([]byte, bool) {
	if !strings.ContainsAny(lit, ".eE") {
		return append(b, lit...), true
	}
	f, err := strconv.ParseFloat(lit, 64)
	if err != nil {
		return b, false
	}
	return appendPyFloat(b, f)
}

// appendPyFloat appends what pyFloat64(f) marshals to, or reports false
// where that fails.
func appendPyFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	return append(b, jsonschema.PyFloat(f)...), true
}

// appendStrings appends list as encoding/json encodes a []string with
// HTML escaping off (nil is null).
func appendStrings(b []byte, list []string) []byte {
	if list == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendGoString(b, s)
	}
	return append(b, ']')
}

// appendInventory appends renderInventory(inv, nil, body.literals())
// (nil body: no literals) as writeJSON encodes it.
func appendInventory(b []byte, inv ledger.Inventory, body *inventoryBody) ([]byte, bool) {
	lit := func(f *jsonInt) string {
		if f == nil {
			return ""
		}
		return f.Lit
	}
	var total, ratio string
	var reserved, minUnit, maxUnit, stepSize *jsonInt
	if body != nil {
		total, reserved, minUnit, maxUnit, stepSize = body.Total.Lit, body.Reserved, body.MinUnit, body.MaxUnit, body.StepSize
		if body.AllocationRatio != nil {
			ratio = body.AllocationRatio.String()
		}
	}
	ok := true
	for _, f := range [...]struct {
		key string
		lit string
		v   int64
	}{
		{`{"total":`, total, inv.Total},
		{`,"reserved":`, lit(reserved), inv.Reserved},
		{`,"min_unit":`, lit(minUnit), inv.MinUnit},
		{`,"max_unit":`, lit(maxUnit), inv.MaxUnit},
		{`,"step_size":`, lit(stepSize), inv.StepSize},
	} {
		b = append(b, f.key...)
		if strings.ContainsAny(f.lit, ".eE") {
			if b, ok = appendPyNumber(b, f.lit); !ok {
				return b, false
			}
		} else {
			b = strconv.AppendInt(b, f.v, 10)
		}
	}
	b = append(b, `,"allocation_ratio":`...)
	if ratio != "" {
		b, ok = appendPyNumber(b, ratio)
	} else {
		b, ok = appendPyFloat(b, inv.AllocationRatio)
	}
	return append(b, '}'), ok
}

// appendInventories appends what sendInventories writes of pi, with the
// literals of bodies (a write's body by class; nil for a read).
func appendInventories(b []byte, pi ledger.ProviderInventories, bodies map[string]inventoryBody) ([]byte, bool) {
	b = append(b, `{"inventories":{`...)
	for i, inv := range pi.Inventories {
		for _, prev := range pi.Inventories[:i] {
			if prev.ResourceClass == inv.ResourceClass {
				return b, false // one member in jsonObject: leave it to it
			}
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = appendHTMLString(b, inv.ResourceClass)
		b = append(b, ':')
		var body *inventoryBody
		if ib, in := bodies[inv.ResourceClass]; in {
			body = &ib
		}
		var ok bool
		if b, ok = appendInventory(b, inv, body); !ok {
			return b, false
		}
	}
	b = append(b, `},"resource_provider_generation":`...)
	b = strconv.AppendInt(b, pi.Generation, 10)
	return append(b, '}'), true
}

// appendAggregates appends aggregatesJSON's answer (withGeneration from
// microversion 1.19).
func appendAggregates(b []byte, generation int64, aggregates []string, withGeneration bool) []byte {
	b = append(b, `{"aggregates":`...)
	b = appendStrings(b, aggregates)
	if withGeneration {
		b = append(b, `,"resource_provider_generation":`...)
		b = strconv.AppendInt(b, generation, 10)
	}
	return append(b, '}')
}

// appendProviderTraits appends providerTraitsJSON's answer.
func appendProviderTraits(b []byte, generation int64, names []string) []byte {
	b = append(b, `{"resource_provider_generation":`...)
	b = strconv.AppendInt(b, generation, 10)
	b = append(b, `,"traits":`...)
	b = appendStrings(b, names)
	return append(b, '}')
}
