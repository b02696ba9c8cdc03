package quotas

import (
	"context"
	"sort"

	"github.com/berthd/berth/ledger/internal/core"
	"github.com/jackc/pgx/v5"
)

// The projects' limits and usage counters that quotas are checked
// against. The checking and the counting are part of every write of
// allocations and run in its transaction (ledger/resources,
// quota_check.go); this package keeps the limits Berth stores
// (limits.go) and reads the counters (ProjectUsage, project_usage.go).

// ResourceConsumers is the resource that counts a project's consumers
// (those holding allocations; migration consumers count toward nothing).
// Every other resource is a resource class's name.
const ResourceConsumers = "consumers"

// Limits are a project's limits: per resource, the most its consumers may
// hold together.
type Limits map[string]int64

// Quota says which limits a write is checked against; a nil *Quota checks
// none.
type Quota struct {
	// Given, when not nil, are the limits of the projects the write adds
	// to, by project (external id), read elsewhere (Keystone's unified
	// limits); a project absent from it has none. Nil: the limits stored
	// in the ledger (LimitsSet, RegisteredLimitsSet), read in the write's
	// transaction.
	Given map[string]Limits
}

// Quotas are the limits Berth keeps and the projects' usage counters.
// It is safe for concurrent use.
type Quotas struct{ core *core.Core }

// New returns the Quotas of co.
func New(co *core.Core) *Quotas { return &Quotas{core: co} }

// SortedResources lists l's resources in name order.
func SortedResources(l Limits) []string {
	out := make([]string, 0, len(l))
	for r := range l {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// recountUsageSQL counts every project's usage afresh from the
// allocations (as migration 0009 first did).
const recountUsageSQL = `
DELETE FROM project_usages;
INSERT INTO project_usages (project_id, resource, used)
SELECT c.project_id, rc.name, sum(a.used)::bigint
FROM allocations a JOIN consumers c ON c.id = a.consumer_id JOIN resource_classes rc ON rc.id = a.resource_class_id
LEFT JOIN consumer_types t ON t.id = c.consumer_type_id
WHERE t.name IS DISTINCT FROM 'MIGRATION'
GROUP BY c.project_id, rc.name
UNION ALL
SELECT c.project_id, 'consumers', count(*)
FROM consumers c LEFT JOIN consumer_types t ON t.id = c.consumer_type_id
WHERE t.name IS DISTINCT FROM 'MIGRATION' AND EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = c.id)
GROUP BY c.project_id`

// RecountUsage counts every project's usage afresh from the allocations,
// in tx: for a writer of allocations outside the ledger's types (an import,
// ledger/placementdb), after its writes.
func RecountUsage(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, recountUsageSQL)
	return err
}

// ProjectUsage returns what project's consumers hold, per resource
// (ResourceConsumers included), as the counters hold it: only resources
// held now (none for a project that never wrote).
func (s *Quotas) ProjectUsage(ctx context.Context, project string) (map[string]int64, error) {
	out := map[string]int64{}
	rows, err := s.core.DB.Query(ctx, `
		SELECT u.resource, u.used FROM project_usages u JOIN projects p ON p.id = u.project_id
		WHERE p.external_id = $1 AND u.used <> 0`, project)
	if err != nil {
		return nil, err
	}
	var r string
	var used int64
	if _, err := pgx.ForEachRow(rows, []any{&r, &used}, func() error {
		out[r] = used
		return nil
	}); err != nil {
		return nil, err
	}
	return out, nil
}
