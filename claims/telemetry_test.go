package claims

import (
	"errors"
	"fmt"
	"testing"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/telemetry/instrument"
	"github.com/berthd/berth/scheduler"
)

// TestClaimOutcome checks the metric label of each way a claim ends; it
// must agree with the error code the API answers with.
func TestClaimOutcome(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, instrument.OutcomeClaimed},
		{&NotPlacedError{Reason: NoCandidates}, instrument.OutcomeNoValidHost},
		{&NotPlacedError{Reason: AllFiltered}, instrument.OutcomeNoValidHost},
		{&NotPlacedError{Reason: ConflictsExhausted}, instrument.OutcomeClaimConflict},
		{&NotPlacedError{Reason: Refused}, instrument.OutcomeScriptletRefused},
		{fmt.Errorf("rank: %w", &scheduler.RefusedError{Reason: "no"}), instrument.OutcomeScriptletRefused},
		{&fault.Error{Kind: fault.ErrConflict, Code: fault.CodeConcurrentUpdate}, instrument.OutcomeConflict},
		{errors.New("boom"), instrument.OutcomeError},
	} {
		if got := claimOutcome(tc.err); got != tc.want {
			t.Errorf("claimOutcome(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}
