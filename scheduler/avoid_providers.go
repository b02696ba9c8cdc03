package scheduler

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/uuid"
)

// AvoidProvidersName names the avoid_providers filter.
const AvoidProvidersName = "avoid_providers"

// AvoidFilterName is the name under which a request's own Avoid list is
// counted; it runs before every configured filter.
const AvoidFilterName = "request_avoid"

// AvoidProviders rejects candidates that allocate from any of the listed
// providers or from the trees rooted at them: providers drained for
// maintenance, say.
type AvoidProviders struct {
	name      string
	Providers []string `json:"providers"`
}

var _ Filter = (*AvoidProviders)(nil)

// NewAvoidProviders builds the filter from {"providers": [uuid, ...]}.
func NewAvoidProviders(params json.RawMessage) (Filter, error) {
	f := &AvoidProviders{name: AvoidProvidersName}
	if err := decodeParams(AvoidProvidersName, params, f); err != nil {
		return nil, err
	}
	for i, p := range f.Providers {
		u, err := uuid.Parse(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %q is not a uuid", AvoidProvidersName, p)
		}
		f.Providers[i] = u.String()
	}
	return f, nil
}

// Name implements Filter.
func (f *AvoidProviders) Name() string { return f.name }

// Filter implements Filter.
func (f *AvoidProviders) Filter(_ context.Context, _ *Request, c *Candidate) *Status {
	for _, p := range f.Providers {
		if c.Uses(p) {
			return Reject("uses avoided provider " + p)
		}
	}
	return nil
}

// requestAvoid is the filter for Request.Avoid, built per request.
func requestAvoid(req *Request) Filter {
	return &AvoidProviders{name: AvoidFilterName, Providers: req.Avoid}
}
