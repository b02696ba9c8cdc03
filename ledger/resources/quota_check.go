package resources

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/berthd/berth/ledger/quotas"
	"github.com/jackc/pgx/v5"
)

// Quotas (docs/quotas.md). Every project's usage is counted in
// project_usages (migrations/0009_quotas.up.sql), per resource class and
// in consumers, by every statement that changes allocations or a
// consumer's project or type, in the same transaction:
//
//   - the claim fast path and its batches add what they write (cnt in
//     fastWriteSQL and batchWriteSQL);
//   - the general path (AllocationsReplace, ClaimWrite, Reshape) adds
//     what its plan changes, old allocations out and new ones in, with
//     the consumers' old and new projects and types (usageDeltas,
//     countQuota), once they fit, before they are written;
//   - AllocationsDelete and the audit's fixes that delete a consumer
//     (ledger/audit/fix.go, DeleteConsumer) take the consumer's allocations out
//     (releaseUsageSQL);
//   - the lease reaper's release and revert are ClaimWrites: the general
//     path; so is a claim that preempts (preempt.go), whose victims'
//     allocations leave their projects' counters in its plan;
//   - an import recounts everything (RecountUsage).
//
// Nothing else changes allocations (an update of one in place is refused
// by the database), and TestProjectUsagesFollowEveryWrite recounts the
// counters from the allocations after every kind of write.
//
// A write with a Quota is checked against the limits of the projects it
// adds to in its own transaction: it locks their counters (after its
// providers' locks, as every writer of allocations takes them) and checks
// against their newest committed values, so no other write to those
// counters can commit between its check and its commit, from any
// process; a write that would take a counter past its limit is refused
// (fault.ErrForbidden, fault.CodeOverQuota) and writes nothing.
//
// Only a write that adds to a limited resource is refused: one that
// leaves a counter as it was or lowers it passes even above the limit (a
// limit lowered below what a project holds stops it growing, it does not
// take anything away), as oslo.limit checks only the deltas it is given.
//
// The fast paths lock and check the counters in their write statement
// (lk and qok in fastWriteSQL, lk and over in batchWriteSQL), once the
// claim is known to fit: SELECT ... FOR UPDATE there, under READ
// COMMITTED, waits for a concurrent writer of a counter and returns the
// version it committed, so the check counts the newest usage under a lock
// held to the commit. So a limited claim holds its counters from its
// write statement on, as an unlimited one holds them from its count (cnt)
// on, not from its pipeline's first statement: claims of one project
// queue on its counters only for the end of their write statements and
// their commits. A claim over its limit, or one that adds to a counter
// that does not exist yet, is not written there and goes down the general
// path, whose count (countQuota) creates the counters and whose check
// (quotaGuard) words the refusal.
//
// Every writer locks counters in one order, the last of the global order
// (ledger's doc.go): after its providers, by project id, then by resource
// in byte order (COLLATE "C" in every ORDER BY that locks counters, so
// that the order does not depend on the database's collation and is the
// order Go sorts in). And each writer locks all its counters in one
// statement, so that no statement of it locks a counter after another
// statement locked a later one:
//
//   - a claim alone, in its write statement (lk when limited, else cnt:
//     one project);
//   - a batch, in its write statement (lk when a claim of it is limited,
//     else cnt);
//   - the claims of a batch that its statement did not write, sent again
//     one statement each in one transaction (claim_writers.go), in their
//     lock statement (usageLockSQL), limited or not: their statements,
//     one after the other in queue order, would otherwise lock several
//     projects' counters, or one project's resources, out of that order;
//   - the general path, in one statement that counts its plan and creates
//     the counters that do not exist yet (countUsageSQL): creating a
//     counter takes its lock as locking it does, so creating one after
//     locking others would take a lock out of order;
//   - a consumer's delete, in releaseUsageSQL (one project).

// quotaArgs are one fast write's limits as its statement's parameters:
// resources and limits given (none: empty, not nil), or nil slices for
// the stored limits, which the statement reads.
type quotaArgs struct {
	resources []string
	limits    []int64
}

// quotaArgsFor returns q's limits of project as statement parameters.
func quotaArgsFor(q *quotas.Quota, project string) quotaArgs {
	if q != nil && q.Given == nil {
		return quotaArgs{} // stored
	}
	a := quotaArgs{resources: []string{}, limits: []int64{}}
	if q == nil {
		return a
	}
	for _, r := range quotas.SortedResources(q.Given[project]) {
		a.resources = append(a.resources, r)
		a.limits = append(a.limits, q.Given[project][r])
	}
	return a
}

// stored reports whether a's limits are the stored ones.
func (a quotaArgs) stored() bool { return a.resources == nil }

// usageLockSQL is the lock statement of a pipeline of several fast write
// statements (sendWrites: the claims of a batch that its statement did
// not write, sent again one statement each): it locks the providers $1
// (as fastLockSQL), then the usage counters of every (project $2,
// resource $3) pair its claims add to (distinct; resources that are
// neither a resource class nor consumers left out), creating them at 0
// when missing, in the global order (by project id, then resource in
// byte order). All the pipeline's counters are locked here, in one step,
// whether its claims are limited or not, so that its statements, which
// lock or count their own project's counters each (lk and cnt in
// fastWriteSQL), take no counter lock after it: one after the other, in
// queue order, they would lock several projects' counters, or one
// project's resources, out of that order. The counters' rows are
// inserted only once the InitPlan that counts the providers' rows has
// run, so after every provider's lock; ON CONFLICT DO UPDATE locks the
// newest version of a counter's row, committed after this statement's
// snapshot or not. (The counters of a project that does not exist are
// not locked: its claims refuse.)
const usageLockSQL = `
WITH rp AS (
	SELECT id FROM resource_providers WHERE uuid = ANY($1::uuid[]) ORDER BY id FOR UPDATE
), u AS (
	INSERT INTO project_usages AS u (project_id, resource, used)
	SELECT p.id, k.resource, 0 FROM unnest($2::text[], $3::text[]) AS k(project, resource)
	JOIN projects p ON p.external_id = k.project
	WHERE (SELECT count(*) FROM rp) >= 0
	  AND (k.resource = 'consumers' OR EXISTS (SELECT 1 FROM resource_classes WHERE name = k.resource))
	ORDER BY p.id, k.resource COLLATE "C"
	ON CONFLICT (project_id, resource) DO UPDATE SET used = u.used
	RETURNING 1
)
SELECT (SELECT count(*) FROM rp), (SELECT count(*) FROM u)`

// usageLocks are usageLockSQL's parameters: distinct (project, resource)
// pairs.
type usageLocks struct {
	projects, resources []string
}

// usageLocksOf returns usageLockSQL's parameters for the claims fcs: every
// counter they add to (a migration consumer's add to none).
func usageLocksOf(fcs []fastClaim) *usageLocks {
	l := &usageLocks{projects: []string{}, resources: []string{}}
	type pair struct{ project, resource string }
	seen := map[pair]bool{}
	for _, fc := range fcs {
		if fc.consumerType == MigrationConsumerType {
			continue
		}
		for _, r := range append(distinctInOrder(fc.allocClasses), quotas.ResourceConsumers) {
			if k := (pair{fc.project, r}); !seen[k] {
				seen[k] = true
				l.projects, l.resources = append(l.projects, fc.project), append(l.resources, r)
			}
		}
	}
	return l
}

// quotaCounter is one counter that a general-path write grows under a
// limit: a project's usage of a resource, what it held before the write
// (under the write's lock), what the write adds, and the limit.
type quotaCounter struct {
	projectID int32
	resource  string
	before    int64
	delta     int64
	limit     int64
}

// quotaGuard checks a general-path write (AllocationsReplace, ClaimWrite,
// Reshape) against its quota: countQuota before the write's allocations
// are written, check after.
type quotaGuard struct {
	projects map[int32]string // id -> external id
	counters []quotaCounter   // in the global order
}

// countUsageSQL adds what a general-path write changes to its projects'
// usage counters ($1 to $3: project id, resource, delta), creating the
// missing ones, in the global order of counters: by project, then by
// resource in byte order (COLLATE "C", whatever the database's
// collation, as Go sorts strings), so that every writer of counters
// takes their locks in the same order. It answers what each holds after.
// ON CONFLICT DO UPDATE, under READ COMMITTED, waits for a concurrent
// writer of a counter and adds to the version it committed.
const countUsageSQL = `
INSERT INTO project_usages AS u (project_id, resource, used)
SELECT * FROM unnest($1::int[], $2::text[], $3::bigint[]) AS k(project_id, resource, used)
ORDER BY k.project_id, k.resource COLLATE "C"
ON CONFLICT (project_id, resource) DO UPDATE SET used = u.used + EXCLUDED.used
RETURNING project_id, resource, used`

// storedLimitsSQL reads the stored limits of the projects $1 (ids).
const storedLimitsSQL = `
SELECT p.id, l.resource, l.resource_limit FROM projects p CROSS JOIN LATERAL limits_of(p.external_id) l
WHERE p.id = ANY($1::int[])`

// countQuota counts plan in its projects' usage counters (usageDeltas:
// its consumers' new and old projects), in t, after the providers' locks
// and the capacity check (allocPlan.clear), before the plan's allocations
// are written (allocPlan.write): one statement, which locks
// every counter the plan changes, creating the missing ones, in the
// global order. Those are the only counter locks the write takes, so it
// takes none out of that order, and it takes none at all when it changes
// no counter (a move that keeps the instance's size). With q, it then
// reads the limits of the counters the plan grows, and returns the guard
// whose check the write runs once its allocations changed.
func (s *Allocations) countQuota(ctx context.Context, t *core.Txn, q *quotas.Quota, plan *allocPlan) (*quotaGuard, error) {
	g := &quotaGuard{projects: map[int32]string{}}
	for i, c := range plan.consumers {
		g.projects[c.projectID] = plan.requests[i].ProjectID
	}
	deltas := plan.usageDeltas()
	if len(deltas) == 0 {
		return g, nil
	}
	keys := slices.SortedFunc(maps.Keys(deltas), compareQuotaKeys)
	ids, res, vals := make([]int32, len(keys)), make([]string, len(keys)), make([]int64, len(keys))
	var growing []int32
	for i, k := range keys {
		ids[i], res[i], vals[i] = k.project, k.resource, deltas[k]
		if vals[i] > 0 && !slices.Contains(growing, k.project) {
			growing = append(growing, k.project)
		}
	}
	rows, err := t.Query(ctx, countUsageSQL, ids, res, vals)
	if err != nil {
		return nil, err
	}
	after := make(map[quotaKey]int64, len(keys))
	var k quotaKey
	var used int64
	if _, err := pgx.ForEachRow(rows, []any{&k.project, &k.resource, &used}, func() error {
		after[k] = used
		return nil
	}); err != nil {
		return nil, err
	}
	if len(growing) == 0 {
		return g, nil
	}
	limits, err := quotaLimits(ctx, t, q, g.projects, growing)
	if err != nil {
		return nil, err
	}
	for _, c := range limits {
		k := quotaKey{c.projectID, c.resource}
		if c.delta = deltas[k]; c.delta > 0 {
			c.before = after[k] - c.delta
			g.counters = append(g.counters, c)
		}
	}
	return g, nil
}

// quotaKey names a counter.
type quotaKey struct {
	project  int32
	resource string
}

// compareQuotaKeys orders counters in the global order: by project, then
// by resource in byte order (SQL's COLLATE "C").
func compareQuotaKeys(a, b quotaKey) int {
	return cmp.Or(cmp.Compare(a.project, b.project), strings.Compare(a.resource, b.resource))
}

// quotaLimits lists the limited counters of the projects ids under q, in
// the global order.
func quotaLimits(ctx context.Context, t *core.Txn, q *quotas.Quota, projects map[int32]string, ids []int32) ([]quotaCounter, error) {
	var out []quotaCounter
	switch {
	case q == nil:
		return nil, nil
	case q.Given != nil:
		for _, id := range ids {
			l := q.Given[projects[id]]
			for _, r := range quotas.SortedResources(l) {
				out = append(out, quotaCounter{projectID: id, resource: r, limit: l[r]})
			}
		}
		return out, nil
	}
	rows, err := t.Query(ctx, storedLimitsSQL, ids)
	if err != nil {
		return nil, err
	}
	var c quotaCounter
	if _, err := pgx.ForEachRow(rows, []any{&c.projectID, &c.resource, &c.limit}, func() error {
		out = append(out, c)
		return nil
	}); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(a, b quotaCounter) int {
		return compareQuotaKeys(quotaKey{a.projectID, a.resource}, quotaKey{b.projectID, b.resource})
	})
	return out, nil
}

// check refuses the write when it takes a limited counter past its
// limit: one that it grows to more than the limit. Refusals name every
// such counter, project by project in the global order.
func (g *quotaGuard) check() error {
	var over []string
	project := ""
	for _, c := range g.counters {
		if c.before+c.delta <= c.limit {
			continue
		}
		if p := g.projects[c.projectID]; p != project {
			project = p
			over = append(over, fmt.Sprintf("project %s: ", p))
		} else {
			over[len(over)-1] += ", "
		}
		over[len(over)-1] += fmt.Sprintf("%s %d requested, %d of %d used", c.resource, c.delta, c.before, c.limit)
	}
	if len(over) == 0 {
		return nil
	}
	return fault.New(fault.ErrForbidden, fault.CodeOverQuota, "Quota exceeded: %s.", strings.Join(over, "; "))
}

// usageDeltas is what p changes in its projects' usage counters: each
// consumer's old allocations out of its old project and its new ones into
// its new project (a migration consumer's count toward nothing), one
// consumer out where it held allocations and in where it holds them.
func (p *allocPlan) usageDeltas() map[quotaKey]int64 {
	d := map[quotaKey]int64{}
	for i, c := range p.consumers {
		had, has := false, false
		for _, h := range p.held {
			if h.consumer == i && c.oldCounts {
				d[quotaKey{c.oldProjectID, h.class}] -= h.used
				had = true
			}
		}
		for _, w := range p.writes {
			if w.consumer == i && w.used > 0 && c.counts {
				d[quotaKey{c.projectID, w.class}] += w.used
				has = true
			}
		}
		if had {
			d[quotaKey{c.oldProjectID, quotas.ResourceConsumers}]--
		}
		if has {
			d[quotaKey{c.projectID, quotas.ResourceConsumers}]++
		}
	}
	maps.DeleteFunc(d, func(_ quotaKey, v int64) bool { return v == 0 })
	return d
}

// releaseUsageSQL takes what consumer $1 holds out of its project's usage
// counters, before the consumer is deleted (AllocationsDelete,
// DeleteConsumer).
const releaseUsageSQL = `
WITH gone AS (
	SELECT c.project_id FROM consumers c LEFT JOIN consumer_types t ON t.id = c.consumer_type_id
	WHERE c.id = $1 AND t.name IS DISTINCT FROM 'MIGRATION'
), held AS (
	SELECT rc.name AS resource, sum(a.used)::bigint AS used
	FROM allocations a JOIN resource_classes rc ON rc.id = a.resource_class_id
	WHERE a.consumer_id = $1 GROUP BY rc.name
	UNION ALL
	SELECT 'consumers', 1 WHERE EXISTS (SELECT 1 FROM allocations WHERE consumer_id = $1)
)
INSERT INTO project_usages AS u (project_id, resource, used)
SELECT gone.project_id, held.resource, -held.used FROM gone, held ORDER BY held.resource COLLATE "C"
ON CONFLICT (project_id, resource) DO UPDATE SET used = u.used + EXCLUDED.used`
