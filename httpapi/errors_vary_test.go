package httpapi

import (
	"errors"
	"net/http"
	"testing"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/fault"
)

// TestNotFoundVary: a provider or class lookup's NotFound returned as it
// is escapes the handler, as Placement's object layer's NotFound does, and
// is answered without Vary; one a handler catches (wire.CaughtNotFound), and
// every other not-found, keeps it.
func TestNotFoundVary(t *testing.T) {
	provider := &fault.Error{Kind: fault.ErrProviderNotFound, Msg: "No resource provider with uuid x found"}
	class := &fault.Error{Kind: fault.ErrClassNotFound, Msg: "No such resource class CUSTOM_X."}
	other := &fault.Error{Kind: fault.ErrNotFound, Msg: "No allocations for consumer 'c'"}
	tests := []struct {
		name       string
		err        error
		wantNoVary bool
		wantMsg    string
	}{
		{"provider lookup escapes", provider, true, provider.Msg},
		{"class lookup escapes", class, true, class.Msg},
		{"other not found", other, false, other.Msg},
		{"caught provider lookup", wire.CaughtNotFound(provider, "No resource provider with uuid %s found : %s", "x"), false,
			"No resource provider with uuid x found : No resource provider with uuid x found"},
		{"caught leaves others", wire.CaughtNotFound(other, "unused %s"), false, other.Msg},
	}
	for _, tt := range tests {
		e := toError(nil, tt.err)
		if e.Status != http.StatusNotFound || e.NoVary != tt.wantNoVary || e.Msg != tt.wantMsg {
			t.Errorf("%s: status %d, NoVary %v, %q; want 404, %v, %q", tt.name, e.Status, e.NoVary, e.Msg, tt.wantNoVary, tt.wantMsg)
		}
	}
	if !errors.Is(provider, fault.ErrNotFound) || !errors.Is(class, fault.ErrNotFound) {
		t.Error("a lookup's NotFound is not ErrNotFound")
	}
}
