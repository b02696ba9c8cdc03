package claims

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/scheduler"
)

// Errors: a claim that placed nothing, and why.

// Reason says why a claim placed nothing.
type Reason string

// Reasons of a NotPlacedError.
const (
	NoCandidates       Reason = "no_candidates"
	AllFiltered        Reason = "all_filtered"
	Refused            Reason = "refused"
	ConflictsExhausted Reason = "conflicts_exhausted"
)

// NotPlacedError is a claim that placed nothing, and why: the answer
// "no valid host" (409 berth.no_valid_host over HTTP), an expected
// outcome, not a failure. Nothing was written.
type NotPlacedError struct {
	Reason Reason
	// Roots is how many root providers the request saw.
	Roots int
	// Steps are the selection steps, StepCandidates first.
	Steps []Step
	// Attempts is how many writes lost to concurrent claims.
	Attempts int
	// Refusal is the scriptlet's reason when Reason is Refused.
	Refusal string
	// ScriptletLog are the scriptlet's log lines.
	ScriptletLog []scheduler.LogLine
}

// Error words the steps, as "1000 providers; 612 lacked MEMORY_MB
// 16384; 388 removed by anti_affinity (...)". A scriptlet's refusal comes
// last, after the steps that ran before it, so that the refusal of a
// scriptlet that was handed nothing reads as what it is: "4 providers; 4
// removed by state_freshness (...); then Failed instance placement
// scriptlet: <its reason>".
func (e *NotPlacedError) Error() string {
	noun := "providers"
	if e.Roots == 1 {
		noun = "provider"
	}
	parts := []string{fmt.Sprintf("%d %s", e.Roots, noun)}
	for _, st := range e.Steps {
		if st.Removed == 0 {
			continue
		}
		parts = append(parts, stepWords(st)...)
	}
	switch e.Reason {
	case ConflictsExhausted:
		parts = append(parts, fmt.Sprintf("%d attempts lost to concurrent claims", e.Attempts))
	case Refused:
		parts = append(parts, "then "+scheduler.RefusalPrefix+e.Refusal)
	}
	return strings.Join(parts, "; ")
}

// stepWords words what one step removed: the candidate step as the roots
// counted by their shortfall ("612 lacked MEMORY_MB 16384"), a filter as
// "388 removed by anti_affinity (holds 1 of group web: 388)", its reasons
// most frequent first.
func stepWords(st Step) []string {
	reasons := make([]string, 0, len(st.Reasons))
	for r := range st.Reasons {
		reasons = append(reasons, r)
	}
	slices.SortFunc(reasons, func(a, b string) int {
		if d := st.Reasons[b] - st.Reasons[a]; d != 0 {
			return d
		}
		return strings.Compare(a, b)
	})
	if st.Unit == StepCandidates {
		words := make([]string, len(reasons))
		for i, r := range reasons {
			words[i] = fmt.Sprintf("%d %s", st.Reasons[r], r)
		}
		return words
	}
	s := fmt.Sprintf("%d removed by %s", st.Removed, st.Unit)
	if len(reasons) > 0 && !(len(reasons) == 1 && reasons[0] == "rejected") {
		for i, r := range reasons {
			reasons[i] = fmt.Sprintf("%s: %d", r, st.Reasons[r])
		}
		s += " (" + strings.Join(reasons, ", ") + ")"
	}
	return []string{s}
}

// notPlaced is the answer for a selection that left nothing to write (a
// refusal, no candidate, all filtered), or nil.
func (c *Claimer) notPlaced(ctx context.Context, p *Params, r *resolved, s *selection) *NotPlacedError {
	if s.rankErr == nil && len(s.ranking.Ranked) > 0 {
		return nil
	}
	var refused *scheduler.RefusedError
	if errors.As(s.rankErr, &refused) {
		np := &NotPlacedError{Reason: Refused, Roots: s.roots, Steps: s.steps, Refusal: refused.Reason}
		if s.ranking != nil {
			np.ScriptletLog = s.ranking.Log
		}
		// The steps before the scriptlet are part of the answer: a
		// refusal of what the filters left, or of nothing at all.
		c.explainCapacity(ctx, p, r, np.Steps)
		return np
	}
	if len(s.ranking.Ranked) > 0 {
		return nil
	}
	np := &NotPlacedError{Reason: AllFiltered, Roots: s.roots, Steps: s.steps, ScriptletLog: s.ranking.Log}
	if s.found == 0 {
		np.Reason = NoCandidates
	}
	c.explainCapacity(ctx, p, r, np.Steps)
	return np
}

func invalid(format string, args ...any) error {
	return &fault.Error{Kind: fault.ErrInvalid, Msg: fmt.Sprintf(format, args...)}
}
