package placement

import (
	"bytes"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/resources"
	"github.com/labstack/echo/v4"
)

// generic is what wire.WriteJSON writes of v.
func generic(t *testing.T, v any) ([]byte, bool) {
	t.Helper()
	rec := httptest.NewRecorder()
	c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/", nil), rec)
	if err := wire.WriteJSON(c, http.StatusOK, v); err != nil {
		return nil, false
	}
	return rec.Body.Bytes(), true
}

// TestAnswersAsWriteJSON compares the hand-written answers (the append
// functions of provider_list.go, aggregates.go, traits.go and
// inventories.go) with wire.WriteJSON's encoding of the generic values they replace, on odd
// names and numbers.
func TestAnswersAsWriteJSON(t *testing.T) {
	odd := []string{"cn1", `<b>&"quoted"</b>`, `back\slash`, "ünïcødé ☃", "tab\tand\nnewline", "\u2028sep", "\b\f\x01\x7f\xff\u2029 <>&", ""}

	// Providers, at every microversion.
	e := echo.New()
	for minor := wire.MinVersion.Minor; minor <= wire.MaxVersion.Minor; minor++ {
		v := wire.Version{Major: 1, Minor: minor}
		c := e.NewContext(httptest.NewRequest(http.MethodPost, "/resource_providers", nil), httptest.NewRecorder())
		wire.SetVersion(c, v)
		for _, p := range listSample() {
			want, _ := generic(t, providerJSON(c, p))
			if got := appendProvider(nil, p, providerRels(v), v.AtLeast(14)); !bytes.Equal(got, want) {
				t.Fatalf("1.%d provider %q:\n got %s\nwant %s", minor, p.Name, got, want)
			}
		}
	}

	// Aggregates and traits.
	for _, list := range [][]string{nil, {}, {"a"}, odd} {
		for _, withGen := range []bool{false, true} {
			m := map[string]any{"aggregates": list}
			if withGen {
				m["resource_provider_generation"] = int64(-3)
			}
			want, _ := generic(t, m)
			if got := appendAggregates(nil, -3, list, withGen); !bytes.Equal(got, want) {
				t.Errorf("aggregates %q:\n got %s\nwant %s", list, got, want)
			}
		}
		want, _ := generic(t, map[string]any{"resource_provider_generation": int64(7), "traits": list})
		if got := appendProviderTraits(nil, 7, list); !bytes.Equal(got, want) {
			t.Errorf("traits %q:\n got %s\nwant %s", list, got, want)
		}
	}

	// Inventories, with and without a write's literals.
	inv := func(class string, total int64, ratio float64) engine.Inventory {
		i := resources.DefaultInventory(class, total)
		i.AllocationRatio = ratio
		return i
	}
	num := func(s string) *json.Number { n := json.Number(s); return &n }
	ji := func(s string) *jsonInt {
		n, err := parseJSONInt(s)
		if err != nil {
			t.Fatal(err)
		}
		return &n
	}
	pis := []resources.ProviderInventories{
		{Generation: 5},
		{Generation: 1, Inventories: []engine.Inventory{inv("VCPU", 64, 4), inv("MEMORY_MB", 262144, 1), inv("DISK_GB", 4000, 1.5)}},
		{Generation: 2, Inventories: []engine.Inventory{inv("CUSTOM_<&>", 1, 1e16), inv("X", 3, 0.1), inv("Y", 1, 3.4e38)}},
		{Generation: 3, Inventories: []engine.Inventory{inv("VCPU", 1, math.Inf(1))}},
		{Generation: 4, Inventories: []engine.Inventory{inv("VCPU", 1, 1), inv("VCPU", 2, 1)}},
	}
	bodies := []map[string]inventoryBody{
		nil,
		{"VCPU": {Total: *ji("64.0"), MaxUnit: ji("1e1"), AllocationRatio: num("4")}},
		{"MEMORY_MB": {Total: *ji("262144"), Reserved: ji("0.0"), MinUnit: ji("1"), StepSize: ji("2E0"), AllocationRatio: num("1.50")}},
		{"DISK_GB": {Total: *ji("4000"), AllocationRatio: num("1e400")}},
		{"X": {Total: *ji("3"), AllocationRatio: num("-0.0")}, "CUSTOM_<&>": {Total: *ji("1"), AllocationRatio: num("16")}},
	}
	for _, pi := range pis {
		for _, bs := range bodies {
			want, wantOK := generic(t, inventoriesAnswer(pi, bs))
			got, ok := appendInventories(nil, pi, bs)
			if ok && (!wantOK || !bytes.Equal(got, want)) {
				t.Errorf("inventories %+v with %+v:\n got %s\nwant %s (encodes: %v)", pi, bs, got, want, wantOK)
			}
			if !ok && wantOK && len(pi.Inventories) < 2 {
				t.Errorf("inventories %+v with %+v: the general path answers %s, the fast one gave up", pi, bs, want)
			}
		}
	}
}
