package placement

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/resources"
)

// Inventories serves a provider's inventories.
type Inventories struct {
	Store  InventoryStore
	Bodies *wire.Bodies
}

// InventoryStore is what the inventory routes ask of the ledger (a
// *resources.Providers).
type InventoryStore interface {
	providerGetter
	InventoryList(ctx context.Context, providerUUID string) (resources.ProviderInventories, error)
	InventoryCreate(ctx context.Context, p resources.InventoryParams, inv engine.Inventory) (resources.ProviderInventories, error)
	InventoryUpdate(ctx context.Context, p resources.InventoryParams, inv engine.Inventory) (resources.ProviderInventories, error)
	InventoriesReplace(ctx context.Context, p resources.InventoryParams, invs []engine.Inventory) (resources.ProviderInventories, error)
	InventoryDelete(ctx context.Context, providerUUID, class string) error
	InventoriesDelete(ctx context.Context, providerUUID string) error
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
func renderInventory(inv engine.Inventory, generation *int64, lits map[string]string) inventoryJSON {
	num := func(name string, v int64) json.Marshaler {
		if lit := lits[name]; strings.ContainsAny(lit, ".eE") {
			return wire.PyNumber(lit)
		}
		return wire.PyNumber(strconv.FormatInt(v, 10))
	}
	out := inventoryJSON{
		Generation: generation,
		Total:      num("total", inv.Total), Reserved: num("reserved", inv.Reserved),
		MinUnit: num("min_unit", inv.MinUnit), MaxUnit: num("max_unit", inv.MaxUnit), StepSize: num("step_size", inv.StepSize),
		AllocationRatio: wire.PyFloat64(inv.AllocationRatio),
	}
	if lit := lits["allocation_ratio"]; lit != "" {
		out.AllocationRatio = wire.PyNumber(lit)
	}
	return out
}

// sendInventories answers with pi's inventories; bodies are a write's
// body by class, whose literals the answer echoes (nil for a read).
func sendInventories(c echo.Context, pi resources.ProviderInventories, bodies map[string]inventoryBody) error {
	wire.SetCacheHeaders(c, pi.LastModified())
	if ok, err := wire.WriteAppended(c, http.StatusOK, func(b []byte) ([]byte, bool) {
		return appendInventories(b, pi, bodies)
	}); ok {
		return err
	}
	return wire.WriteJSON(c, http.StatusOK, inventoriesAnswer(pi, bodies))
}

// inventoriesAnswer is sendInventories' answer as generic values, which
// appendInventories writes by hand (TestAnswersAsWriteJSON compares both).
func inventoriesAnswer(pi resources.ProviderInventories, bodies map[string]inventoryBody) map[string]any {
	// In the ledger's order: Placement's class order.
	out := wire.NewObject()
	for _, inv := range pi.Inventories {
		var lits map[string]string
		if body, in := bodies[inv.ResourceClass]; in {
			lits = body.literals()
		}
		out.Set(inv.ResourceClass, renderInventory(inv, nil, lits))
	}
	return map[string]any{
		"resource_provider_generation": pi.Generation,
		"inventories":                  out,
	}
}

// sendInventory answers with the inventory of class from pi.
func sendInventory(c echo.Context, status int, pi resources.ProviderInventories, class string, lits map[string]string) error {
	inv, ok := pi.Find(class)
	if !ok {
		return fmt.Errorf("inventory of %s missing after write", class)
	}
	wire.SetCacheHeaders(c, inv.UpdatedAt)
	gen := pi.Generation
	return wire.WriteJSON(c, status, renderInventory(inv, &gen, lits))
}

// inventoryParams reads the provider and microversion-dependent checks of
// an inventory write.
func inventoryParams(c echo.Context, generation *int64) resources.InventoryParams {
	return resources.InventoryParams{
		ProviderUUID:   c.Param("uuid"),
		Generation:     generation,
		ZeroCapacityOK: wire.VersionOf(c).AtLeast(26),
	}
}

// List serves GET /resource_providers/{uuid}/inventories.
func (h *Inventories) List(c echo.Context) error {
	pi, err := h.Store.InventoryList(c.Request().Context(), c.Param("uuid"))
	if err != nil {
		return wire.CaughtNotFound(err, "No resource provider with uuid %s found : %s", c.Param("uuid"))
	}
	return sendInventories(c, pi, nil)
}

// Show serves GET /resource_providers/{uuid}/inventories/{resource_class}.
func (h *Inventories) Show(c echo.Context) error {
	pi, err := h.Store.InventoryList(c.Request().Context(), c.Param("uuid"))
	if err != nil {
		return wire.CaughtNotFound(err, "No resource provider with uuid %s found : %s", c.Param("uuid"))
	}
	class := c.Param("resource_class")
	if _, ok := pi.Find(class); !ok {
		return wire.NotFound("No inventory of class %s for %s", class, c.Param("uuid"))
	}
	return sendInventory(c, http.StatusOK, pi, class, nil)
}

// Create serves POST /resource_providers/{uuid}/inventories.
func (h *Inventories) Create(c echo.Context) error {
	var body inventoryBody
	if err := h.Bodies.Decode(c, postInventorySchema, &body); err != nil {
		return providerFirst(c, h.Store, err)
	}
	pi, err := h.Store.InventoryCreate(c.Request().Context(), inventoryParams(c, nil), body.inventory(body.ResourceClass))
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, absoluteURL(c,
		"/resource_providers/"+c.Param("uuid")+"/inventories/"+body.ResourceClass))
	return sendInventory(c, http.StatusCreated, pi, body.ResourceClass, body.literals())
}

// Update serves PUT /resource_providers/{uuid}/inventories/{resource_class}.
func (h *Inventories) Update(c echo.Context) error {
	var body inventoryBody
	if err := h.Bodies.Decode(c, putInventorySchema, &body); err != nil {
		return providerFirst(c, h.Store, err)
	}
	class := c.Param("resource_class")
	pi, err := h.Store.InventoryUpdate(c.Request().Context(), inventoryParams(c, body.Generation), body.inventory(class))
	if err != nil {
		return err
	}
	return sendInventory(c, http.StatusOK, pi, class, body.literals())
}

// Replace serves PUT /resource_providers/{uuid}/inventories.
func (h *Inventories) Replace(c echo.Context) error {
	var body inventoriesBody
	if err := h.Bodies.DecodeDoc(c, putInventoriesSchemaCompiled, &body, body.decodeDoc); err != nil {
		return providerFirst(c, h.Store, err)
	}
	pi, err := h.Store.InventoriesReplace(c.Request().Context(), inventoryParams(c, &body.Generation), body.inventories())
	if err != nil {
		return err
	}
	// Placement answers a PUT with the inventories in the request's order.
	pos := make(map[string]int, len(body.Inventories.Keys))
	for i, k := range body.Inventories.Keys {
		pos[k] = i
	}
	slices.SortStableFunc(pi.Inventories, func(a, b engine.Inventory) int { return pos[a.ResourceClass] - pos[b.ResourceClass] })
	return sendInventories(c, pi, body.Inventories.Values)
}

// Delete serves DELETE /resource_providers/{uuid}/inventories/{resource_class}.
func (h *Inventories) Delete(c echo.Context) error {
	if err := h.Store.InventoryDelete(c.Request().Context(), c.Param("uuid"), c.Param("resource_class")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// DeleteAll serves DELETE /resource_providers/{uuid}/inventories, from
// microversion 1.5; earlier versions answer 405, as Placement does.
func (h *Inventories) DeleteAll(c echo.Context) error {
	if !wire.VersionOf(c).AtLeast(5) {
		// Placement's version_handler raises a 405 without a message
		// (and with no Allow header).
		return &wire.Error{Status: http.StatusMethodNotAllowed, NoDetail: true}
	}
	if err := h.Store.InventoriesDelete(c.Request().Context(), c.Param("uuid")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// absoluteURL turns a path of this API into the absolute URL Placement
// puts in Location headers.
func absoluteURL(c echo.Context, path string) string {
	return c.Scheme() + "://" + c.Request().Host + path
}

// appendInventory appends renderInventory(inv, nil, body.literals())
// (nil body: no literals) as wire.WriteJSON encodes it.
func appendInventory(b []byte, inv engine.Inventory, body *inventoryBody) ([]byte, bool) {
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
			if b, ok = wire.AppendPyNumber(b, f.lit); !ok {
				return b, false
			}
		} else {
			b = strconv.AppendInt(b, f.v, 10)
		}
	}
	b = append(b, `,"allocation_ratio":`...)
	if ratio != "" {
		b, ok = wire.AppendPyNumber(b, ratio)
	} else {
		b, ok = wire.AppendPyFloat(b, inv.AllocationRatio)
	}
	return append(b, '}'), ok
}

// appendInventories appends what sendInventories writes of pi, with the
// literals of bodies (a write's body by class; nil for a read).
func appendInventories(b []byte, pi resources.ProviderInventories, bodies map[string]inventoryBody) ([]byte, bool) {
	b = append(b, `{"inventories":{`...)
	for i, inv := range pi.Inventories {
		for _, prev := range pi.Inventories[:i] {
			if prev.ResourceClass == inv.ResourceClass {
				return b, false // one member in wire.Object: leave it to it
			}
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = wire.AppendHTMLString(b, inv.ResourceClass)
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
