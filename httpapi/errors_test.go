package httpapi

import (
	"net/http"
	"testing"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/internal/fault"
)

func TestClaimConflictsExhaustedCode(t *testing.T) {
	for _, tc := range []struct {
		reason claims.Reason
		code   string
	}{
		{claims.ConflictsExhausted, fault.CodeClaimConflict},
		{claims.AllFiltered, fault.CodeNoValidHost},
		{claims.NoCandidates, fault.CodeNoValidHost},
	} {
		e := toError(nil, &claims.NotPlacedError{Reason: tc.reason, Roots: 3, Attempts: 3})
		if e.Status != http.StatusConflict || e.Code != tc.code {
			t.Errorf("%s: %d %s, want 409 %s", tc.reason, e.Status, e.Code, tc.code)
		}
	}
}
