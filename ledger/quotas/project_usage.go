package quotas

import (
	"context"

	"github.com/berthd/berth/ledger/internal/core"
	"github.com/jackc/pgx/v5"
)

// ProjectUsage is what one project's consumers hold: the console's
// projects page. Usages are by class name, Classes in class id order.
type ProjectUsage struct {
	ProjectID     string
	ConsumerCount int64
	Usages        map[string]int64
	Classes       []string
}

// ProjectUsagesParams pages the projects, in external id order.
type ProjectUsagesParams struct {
	// After is the last project of the previous page; empty for the
	// first page.
	After string
	// Limit is the most projects answered (1 or more).
	Limit int
}

// sqlProjectUsages sums the allocations of the consumers of one page of
// projects: the page is read first (by the projects' unique index), then
// their consumers (consumers_project_user_idx) and those consumers'
// allocations (by the allocations' unique key, consumer first). A project
// with no consumer is listed with none.
const sqlProjectUsages = `
	WITH page AS (
		SELECT id, external_id FROM projects
		WHERE external_id > $1 ORDER BY external_id LIMIT $2
	), held AS (
		SELECT c.project_id, a.resource_class_id, sum(a.used)::bigint AS used
		FROM page JOIN consumers c ON c.project_id = page.id
		JOIN allocations a ON a.consumer_id = c.id
		GROUP BY c.project_id, a.resource_class_id
	)
	SELECT page.external_id,
	       (SELECT count(*) FROM consumers c WHERE c.project_id = page.id),
	       COALESCE(rc.name, ''), COALESCE(held.used, 0)
	FROM page
	LEFT JOIN held ON held.project_id = page.id
	LEFT JOIN resource_classes rc ON rc.id = held.resource_class_id
	ORDER BY page.external_id, rc.id`

// ProjectUsages sums, for one page of projects, their consumers'
// allocations by resource class. It reads without a transaction: each
// project's sums are one statement's, consistent with each other.
func (s *Quotas) ProjectUsages(ctx context.Context, p ProjectUsagesParams) ([]ProjectUsage, error) {
	rows, err := s.core.DB.Query(ctx, sqlProjectUsages, p.After, max(p.Limit, 1))
	if err != nil {
		return nil, err
	}
	var out []ProjectUsage
	var project, class string
	var consumers, used int64
	_, err = pgx.ForEachRow(rows, []any{&project, &consumers, &class, &used}, func() error {
		if len(out) == 0 || out[len(out)-1].ProjectID != project {
			out = append(out, ProjectUsage{ProjectID: project, ConsumerCount: consumers, Usages: map[string]int64{}})
		}
		if class != "" {
			u := &out[len(out)-1]
			u.Usages[class] = used
			u.Classes = append(u.Classes, class)
		}
		return nil
	})
	return out, core.DBError(err)
}
