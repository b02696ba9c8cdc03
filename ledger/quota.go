package ledger

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/berthd/berth/internal/fault"
	"github.com/jackc/pgx/v5"
)

// Quotas (docs/quotas.md). Every project's usage is counted in
// project_usages, per resource class and in consumers, by triggers on
// every write of allocations and consumers (migrations/0007_quotas.up.sql),
// so the count is exact whatever path wrote. A write with a Quota is
// checked against the limits of the projects it adds to in its own
// transaction: it locks the counters it adds to (after its providers'
// locks, as every writer of allocations takes them) and reads their
// newest committed values, so no other write to those counters can
// commit between its check and its commit, from any process; a write
// that would take a counter past its limit is refused
// (fault.ErrForbidden, fault.CodeOverQuota) and writes nothing.
//
// Only a write that adds to a limited resource is refused: one that
// leaves a counter as it was or lowers it passes even above the limit (a
// limit lowered below what a project holds stops it growing, it does not
// take anything away), as oslo.limit checks only the deltas it is given.
//
// The fast paths check in their write statement (fastWriteSQL,
// batchWriteSQL): a claim over its limit is not written there and goes
// down the general path, whose check (quotaGuard) words the refusal.

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

// quotaArgs are one fast write's limits as its statement's parameters:
// resources and limits given (none: empty, not nil), or nil slices for
// the stored limits, which the statement reads.
type quotaArgs struct {
	resources []string
	limits    []int64
}

// argsFor returns q's limits of project as statement parameters.
func (q *Quota) argsFor(project string) quotaArgs {
	if q != nil && q.Given == nil {
		return quotaArgs{} // stored
	}
	a := quotaArgs{resources: []string{}, limits: []int64{}}
	if q == nil {
		return a
	}
	for _, r := range sortedResources(q.Given[project]) {
		a.resources = append(a.resources, r)
		a.limits = append(a.limits, q.Given[project][r])
	}
	return a
}

// stored reports whether a's limits are the stored ones.
func (a quotaArgs) stored() bool { return a.resources == nil }

// sortedResources lists l's resources in name order.
func sortedResources(l Limits) []string {
	out := make([]string, 0, len(l))
	for r := range l {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// quotaCounter is one locked counter of a general-path write: a project's
// usage of a resource and, when the resource is limited, its limit.
type quotaCounter struct {
	projectID int32
	resource  string
	before    int64
	limit     *int64
}

// quotaGuard checks a general-path write (AllocationsReplace, ClaimWrite,
// Reshape) against its quota: lockQuota before the write's allocations
// change, check after.
type quotaGuard struct {
	projects map[int32]string // id -> external id
	counters []quotaCounter
}

// quotaLockSQL locks every counter of the projects $1, in the global
// order, and reads what they hold.
const quotaLockSQL = `
SELECT project_id, resource, used FROM project_usages WHERE project_id = ANY($1::int[])
ORDER BY project_id, resource FOR UPDATE`

// quotaCreateSQL creates the missing counters ($1, $2: project id and
// resource) at 0. A counter that a concurrent write is creating is waited
// for; quotaLockSQL, a later statement, then sees and locks it.
const quotaCreateSQL = `
INSERT INTO project_usages (project_id, resource, used)
SELECT k.project_id, k.resource, 0 FROM unnest($1::int[], $2::text[]) AS k(project_id, resource) ORDER BY 1, 2
ON CONFLICT (project_id, resource) DO NOTHING`

// storedLimitsSQL reads the stored limits of the projects $1 (ids).
const storedLimitsSQL = `
SELECT p.id, l.resource, l.resource_limit FROM projects p CROSS JOIN LATERAL limits_of(p.external_id) l
WHERE p.id = ANY($1::int[])`

// lockQuota locks, in t and after the providers' locks, the usage
// counters of projects (id -> external id: the projects a general-path
// write adds to): every counter they have, in the global order, so that
// the write's statements, whatever they change, take no counter lock out
// of that order; and, with q, the counters of their limited resources,
// created at 0 when missing. It returns the guard whose check the write
// runs after its allocations changed.
func lockQuota(ctx context.Context, t *txn, q *Quota, projects map[int32]string) (*quotaGuard, error) {
	g := &quotaGuard{projects: projects}
	ids := make([]int32, 0, len(projects))
	for id := range projects {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	limits, err := quotaLimits(ctx, t, q, g.projects, ids)
	if err != nil {
		return nil, err
	}
	if len(limits) > 0 {
		var cp []int32
		var cr []string
		for _, c := range limits {
			cp, cr = append(cp, c.projectID), append(cr, c.resource)
		}
		if _, err := t.Exec(ctx, quotaCreateSQL, cp, cr); err != nil {
			return nil, err
		}
	}
	rows, err := t.Query(ctx, quotaLockSQL, ids)
	if err != nil {
		return nil, err
	}
	held := map[quotaKey]int64{}
	var k quotaKey
	var used int64
	if _, err := pgx.ForEachRow(rows, []any{&k.project, &k.resource, &used}, func() error {
		held[k] = used
		return nil
	}); err != nil {
		return nil, err
	}
	for _, c := range limits {
		c.before = held[quotaKey{c.projectID, c.resource}]
		g.counters = append(g.counters, c)
	}
	return g, nil
}

// quotaKey names a counter.
type quotaKey struct {
	project  int32
	resource string
}

// quotaLimits lists the limited counters of the projects ids under q, in
// the global order (the limit set; before still 0).
func quotaLimits(ctx context.Context, t *txn, q *Quota, projects map[int32]string, ids []int32) ([]quotaCounter, error) {
	var out []quotaCounter
	switch {
	case q == nil:
		return nil, nil
	case q.Given != nil:
		for _, id := range ids {
			l := q.Given[projects[id]]
			for _, r := range sortedResources(l) {
				v := l[r]
				out = append(out, quotaCounter{projectID: id, resource: r, limit: &v})
			}
		}
		return out, nil
	}
	rows, err := t.Query(ctx, storedLimitsSQL, ids)
	if err != nil {
		return nil, err
	}
	var c quotaCounter
	var v int64
	if _, err := pgx.ForEachRow(rows, []any{&c.projectID, &c.resource, &v}, func() error {
		row := c
		lim := v
		row.limit = &lim
		out = append(out, row)
		return nil
	}); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b quotaCounter) int {
		return cmp.Or(cmp.Compare(a.projectID, b.projectID), strings.Compare(a.resource, b.resource))
	})
	return out, nil
}

// check refuses the write when it took a limited counter past its limit:
// a counter that grew and now holds more than the limit. The counters are
// locked since lockQuota, so what they hold now is what they held then
// plus this write. Refusals name every such counter, project by project
// in the global order.
func (g *quotaGuard) check(ctx context.Context, t *txn) error {
	if g == nil || len(g.counters) == 0 {
		return nil
	}
	var ids []int32
	var res []string
	for _, c := range g.counters {
		ids, res = append(ids, c.projectID), append(res, c.resource)
	}
	rows, err := t.Query(ctx, `
		SELECT u.project_id, u.resource, u.used FROM project_usages u
		JOIN unnest($1::int[], $2::text[]) AS k(project_id, resource) USING (project_id, resource)`, ids, res)
	if err != nil {
		return err
	}
	after := map[quotaKey]int64{}
	var k quotaKey
	var used int64
	if _, err := pgx.ForEachRow(rows, []any{&k.project, &k.resource, &used}, func() error {
		after[k] = used
		return nil
	}); err != nil {
		return err
	}
	var over []string
	project := ""
	for _, c := range g.counters {
		now := after[quotaKey{c.projectID, c.resource}]
		if now <= c.before || now <= *c.limit {
			continue
		}
		if p := g.projects[c.projectID]; p != project {
			project = p
			over = append(over, fmt.Sprintf("project %s: ", p))
		} else {
			over[len(over)-1] += ", "
		}
		over[len(over)-1] += fmt.Sprintf("%s %d requested, %d of %d used", c.resource, now-c.before, c.before, *c.limit)
	}
	if len(over) == 0 {
		return nil
	}
	return fault.New(fault.ErrForbidden, fault.CodeOverQuota, "Quota exceeded: %s.", strings.Join(over, "; "))
}

// projectsOf maps the project ids of a general-path write's consumers
// (rows, as prepareConsumers returned them for ws) to their external ids.
func projectsOf(ws []ConsumerAllocations, rows []*consumerRow) map[int32]string {
	out := make(map[int32]string, len(rows))
	for i, r := range rows {
		out[r.projectID] = ws[i].ProjectID
	}
	return out
}

// ProjectUsage returns what project's consumers hold, per resource
// (ResourceConsumers included), as the counters hold it: only resources
// held now (none for a project that never wrote).
func (s *Store) ProjectUsage(ctx context.Context, project string) (map[string]int64, error) {
	out := map[string]int64{}
	rows, err := s.db.Query(ctx, `
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
