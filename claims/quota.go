package claims

import (
	"context"

	"github.com/berthd/berth/claims/quota"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/quotas"
	"github.com/berthd/berth/ledger/resources"
)

// Quotas (docs/quotas.md): every claim's write is checked against its
// project's limits by the ledger, in the write's own transaction
// (ledger/resources/quota_check.go); the Claimer only hands the write
// the limits its quota.Source gives (quotaOf). A dry run writes nothing,
// so it reports instead what the check would say (quotaReport).

// projectOf is the project a write of p counts toward: p's, or the one
// the ledger records for a write without one.
func projectOf(project string) string {
	if project == "" {
		return resources.IncompleteConsumerID
	}
	return project
}

// quotaOf returns what a write for project is checked against: nil
// without a quota.Source.
func (c *Claimer) quotaOf(ctx context.Context, project string) (*quotas.Quota, error) {
	if c.limits == nil {
		return nil, nil
	}
	return c.limits.Quota(ctx, projectOf(project))
}

// quotaReport is a dry run's quota check for p placed on allocs: per
// limited resource of p's project, what the claim would add (allocs, and
// one consumer for a new one, less what the consumer holds now; nothing
// for a migration consumer), what the project holds (its usage counters,
// read now) and the limit. Nil without a quota.Source, and when the
// project has no limits (the answer is then as without quotas).
func (c *Claimer) quotaReport(ctx context.Context, p *Params, allocs []engine.Allocation) (*QuotaReport, error) {
	if c.limits == nil {
		return nil, nil
	}
	project := projectOf(p.ProjectID)
	own, registered, err := c.limits.Limits(ctx, project)
	if err != nil {
		return nil, err
	}
	limits := quota.Effective(own, registered)
	if len(limits) == 0 {
		return nil, nil
	}
	used, err := c.store.Quotas.ProjectUsage(ctx, project)
	if err != nil {
		return nil, err
	}
	adds := map[string]int64{}
	if p.ConsumerType != resources.MigrationConsumerType {
		for _, a := range allocs {
			for _, r := range a.Resources {
				adds[r.Class] += r.Amount
			}
		}
		for _, a := range p.held {
			for _, r := range a.Resources {
				adds[r.Class] -= r.Amount
			}
		}
		if p.ConsumerGeneration == nil {
			adds[quotas.ResourceConsumers]++
		}
	}
	rep := &QuotaReport{ProjectID: project, Fits: true, Resources: map[string]QuotaResource{}}
	for r, limit := range limits {
		q := QuotaResource{Requested: adds[r], Used: used[r], Limit: limit}
		rep.Resources[r] = q
		if q.Requested > 0 && q.Used+q.Requested > q.Limit {
			rep.Fits = false
		}
	}
	return rep, nil
}
