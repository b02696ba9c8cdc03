package quota

import (
	"context"
	"maps"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/quotas"
)

// Sources, as --limits-source names them.
const (
	SourceBerth    = "berth"
	SourceKeystone = "keystone"
)

// Source gives the limits projects are held to. Its methods are safe for
// concurrent use.
type Source interface {
	// Name is SourceBerth or SourceKeystone.
	Name() string
	// Quota returns what a write adding to projects (external ids) is
	// checked against.
	Quota(ctx context.Context, projects ...string) (*quotas.Quota, error)
	// Limits returns project's own limits and the registered ones (the
	// defaults of the resources it has no limit of its own of).
	Limits(ctx context.Context, project string) (own, registered quotas.Limits, err error)
	// Registered returns the registered limits.
	Registered(ctx context.Context) (quotas.Limits, error)
	// Projects returns every project's own limits, by project.
	Projects(ctx context.Context) (map[string]quotas.Limits, error)
	// Writable reports whether Berth keeps the limits (the limits API
	// may change them).
	Writable() bool
}

// Effective is what a project is held to: resource by resource its own
// limit, else the registered one; a limit of -1 (Keystone's unlimited)
// holds it to nothing.
func Effective(own, registered quotas.Limits) quotas.Limits {
	out := maps.Clone(registered)
	if out == nil {
		out = quotas.Limits{}
	}
	maps.Copy(out, own)
	maps.DeleteFunc(out, func(_ string, v int64) bool { return v < 0 })
	return out
}

// Stored is the limits Berth keeps in its ledger (--limits-source berth).
type Stored struct{ Store *ledger.Store }

var _ Source = Stored{}

// Name is SourceBerth.
func (Stored) Name() string { return SourceBerth }

// Quota is the stored limits, which the ledger reads in the write's own
// transaction.
func (Stored) Quota(context.Context, ...string) (*quotas.Quota, error) { return &quotas.Quota{}, nil }

// Limits reads project's own limits and the registered ones.
func (s Stored) Limits(ctx context.Context, project string) (own, registered quotas.Limits, err error) {
	if own, err = s.Store.Quotas.ProjectLimits(ctx, project); err != nil {
		return nil, nil, err
	}
	if registered, err = s.Store.Quotas.RegisteredLimits(ctx); err != nil {
		return nil, nil, err
	}
	return own, registered, nil
}

// Registered reads the registered limits.
func (s Stored) Registered(ctx context.Context) (quotas.Limits, error) {
	return s.Store.Quotas.RegisteredLimits(ctx)
}

// Projects reads every project's own limits.
func (s Stored) Projects(ctx context.Context) (map[string]quotas.Limits, error) {
	return s.Store.Quotas.LimitsList(ctx)
}

// Writable is true: the limits API changes these.
func (Stored) Writable() bool { return true }

// ReadOnly is the refusal of a change to limits Berth does not keep.
func ReadOnly(s Source) error {
	return fault.Conflict(fault.CodeLimitsReadOnly,
		"Limits come from %s (--limits-source %s): change them there (openstack limit set, openstack registered limit set).",
		s.Name(), s.Name())
}
