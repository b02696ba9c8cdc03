package httpapi

import (
	"net/http/httptest"
	"testing"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/labstack/echo/v4"
)

func TestVersionGate(t *testing.T) {
	tests := []struct {
		v     minors
		minor int
		open  bool
	}{
		{since(0), 0, true},
		{since(6), 5, false},
		{since(6), 6, true},
		{since(6), 39, true},
		{minors{2, 5}, 1, false},
		{minors{2, 5}, 2, true},
		{minors{2, 5}, 5, true},
		{minors{2, 5}, 6, false},
	}
	for _, tt := range tests {
		c := echo.New().NewContext(httptest.NewRequest("GET", "/", nil), httptest.NewRecorder())
		wire.SetVersion(c, wire.Version{Major: 1, Minor: tt.minor})
		err := versionGate(c, tt.v)
		if (err == nil) != tt.open {
			t.Errorf("versionGate(%v) at 1.%d: err %v, want open %v", tt.v, tt.minor, err, tt.open)
		}
	}
}

// TestJSONAcceptShortcut: the Accept values requireJSONAccept takes
// without parsing (application/json, and none or */*, which AcceptHeader
// answers as it) are ones whose parse accepts JSON.
func TestJSONAcceptShortcut(t *testing.T) {
	for _, accept := range []string{"", "*/*", echo.MIMEApplicationJSON} {
		req := httptest.NewRequest("GET", "/", nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		h := wire.AcceptHeader(req)
		if got := wire.AcceptableOffers(h, echo.MIMEApplicationJSON); len(got) != 1 {
			t.Errorf("Accept %q (%q): offers %v, want JSON", accept, h, got)
		}
		c := echo.New().NewContext(req, httptest.NewRecorder())
		if err := requireJSONAccept(c); err != nil {
			t.Errorf("Accept %q: %v", accept, err)
		}
	}
}
