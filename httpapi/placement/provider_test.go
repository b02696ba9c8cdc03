package placement

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/ledger/engine"
	"github.com/labstack/echo/v4"
)

func TestProviderJSONByMicroversion(t *testing.T) {
	p := engine.Provider{UUID: "u1", Name: "n", Generation: 3, RootUUID: "u1"}
	tests := []struct {
		minor     int
		wantLinks []string
		wantTree  bool
	}{
		{0, []string{"self", "inventories", "usages"}, false},
		{1, []string{"self", "inventories", "usages", "aggregates"}, false},
		{5, []string{"self", "inventories", "usages", "aggregates"}, false},
		{6, []string{"self", "inventories", "usages", "aggregates", "traits"}, false},
		{11, []string{"self", "inventories", "usages", "aggregates", "traits", "allocations"}, false},
		{14, []string{"self", "inventories", "usages", "aggregates", "traits", "allocations"}, true},
	}
	e := echo.New()
	for _, tt := range tests {
		c := e.NewContext(httptest.NewRequest(http.MethodGet, "/", nil), httptest.NewRecorder())
		wire.SetVersion(c, wire.Version{Major: 1, Minor: tt.minor})
		out := providerJSON(c, p)
		links := out["links"].([]any)
		var rels []string
		for _, l := range links {
			m := l.(map[string]any)
			rels = append(rels, m["rel"].(string))
			want := "/resource_providers/u1"
			if m["rel"] != "self" {
				want += "/" + m["rel"].(string)
			}
			if m["href"] != want {
				t.Errorf("1.%d: link %v", tt.minor, m)
			}
		}
		if strings.Join(rels, ",") != strings.Join(tt.wantLinks, ",") {
			t.Errorf("1.%d: links %v, want %v", tt.minor, rels, tt.wantLinks)
		}
		_, hasParent := out["parent_provider_uuid"]
		_, hasRoot := out["root_provider_uuid"]
		if hasParent != tt.wantTree || hasRoot != tt.wantTree {
			t.Errorf("1.%d: tree fields present %v/%v, want %v", tt.minor, hasParent, hasRoot, tt.wantTree)
		}
		if tt.wantTree && (out["parent_provider_uuid"] != nil || out["root_provider_uuid"] != "u1") {
			t.Errorf("1.%d: parent %v root %v", tt.minor, out["parent_provider_uuid"], out["root_provider_uuid"])
		}
	}
}
