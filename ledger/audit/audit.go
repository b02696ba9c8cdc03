package audit

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/berthd/berth/ledger/resources"
	"github.com/berthd/berth/ledger/snapshot"
	"github.com/jackc/pgx/v5"
)

// The allocation audit (GET /audit, POST /audit/fix): allocations that
// look orphaned or wrong, found page by page, and the few fixes that are
// safe (fix.go). Orphaned allocations come from a scheduler or
// conductor that claimed and died, a build that failed without its
// cleanup, an evacuation whose source never came back; Nova's operators
// find them with `nova-manage placement audit`, which needs Nova's
// database. These findings need only the ledger's.
//
// Each kind has a page query that walks its keys (consumer or provider
// ids, the order they were created in) from a key on, in key order, and
// stops at the page's limit. The consumer kinds walk the consumers'
// primary key and the allocations' (consumer, provider, class) index
// side by side, so a page costs what it reads and a whole audit reads
// them once, whatever the page size. over_capacity asks the snapshot,
// which holds every provider's usage, for its candidates (one look at
// every inventory in memory), and the database confirms each: summing
// every provider's allocations in the database would read the whole
// table, and reading them provider by provider costs a random read each,
// as a provider's allocations are spread over the table. Nothing is held
// between pages; a page is read in one read-only transaction. The page queries also decide a finding when
// its fix re-checks it (from = through = its key), so the listing and
// the fix cannot disagree on what a finding is.
//
// Auditor lists the audit's findings and applies their fixes. It is
// safe for concurrent use.
type Auditor struct {
	core *core.Core
	// snaps gives over_capacity its candidates.
	snaps *snapshot.Cache
}

// New returns the Auditor of co, which asks snaps for the providers
// over capacity.
func New(co *core.Core, snaps *snapshot.Cache) *Auditor { return &Auditor{core: co, snaps: snaps} }

// Audit kinds, in the order Audit reports them.
const (
	// AuditSplitConsumer: a consumer holds allocations on more than one
	// root provider (sharing providers left out) and is neither of type
	// MIGRATION nor either half of a move claims recorded: the leftover
	// of an evacuation whose source never came back. Report only: which
	// root it runs on is not recorded.
	AuditSplitConsumer = "split_consumer"
	// AuditStaleMigration: a consumer of type MIGRATION created longer
	// ago than AuditThresholds.MigrationAge that still holds allocations.
	// Fixed (AuditFixConfirmMove) when it holds the source of a move
	// claims recorded whose instance is settled on its destination;
	// otherwise report only.
	AuditStaleMigration = "stale_migration"
	// AuditStaleProvider: a provider whose agent last reported its state
	// longer ago than AuditThresholds.StateAge, with allocations on it or
	// below it. Providers that never reported are not findings (clouds
	// whose agents report nothing would be all findings). Report only.
	AuditStaleProvider = "stale_provider"
	// AuditOverCapacity: a provider with more of a class allocated than
	// its capacity, (total - reserved) * allocation_ratio, after its
	// inventory was lowered. Report only.
	AuditOverCapacity = "over_capacity"
	// AuditEmptyConsumer: a consumer row without allocations. Writes
	// delete a consumer they leave empty, so these come from imports and
	// interrupted tools. Fixed by deleting the row (AuditFixDeleteConsumer).
	AuditEmptyConsumer = "empty_consumer"
	// AuditExpiredLease: a claim whose lease ran out more than
	// AuditLeaseGrace ago and whose consumer still holds allocations: the
	// lease reaper was down, or no berthd ran it, for longer than that.
	// Fixed (AuditFixReleaseLease) for a provisional claim: its
	// allocations are released as the reaper releases them. A move's
	// expired lease is report only (the reaper, or POST
	// /claims/{c}/move/revert, reverts it).
	AuditExpiredLease = "expired_lease"
	// AuditPartialGang: a member of a gang (claims' gangs: every member
	// placed or none) that holds allocations while another member of
	// its gang, whose consumer is still there, holds none: the gang was
	// left partial by a hand edit of the allocations. Report only.
	AuditPartialGang = "partial_gang"
	// AuditPreemptedConsumer: a consumer a claim preempted (a record of
	// GET /preemptions) that exists again without a claim of its own, a
	// stored claim written after its latest preemption: its allocations
	// were written back outside claims (PUT /allocations by its agent or
	// conductor, Nova's heal_allocations), so its instance most likely
	// still runs where it was preempted from or elsewhere. Reported as
	// this kind only, never as split_consumer or empty_consumer. Fixed
	// (AuditFixDeleteConsumer) when it holds nothing; report only
	// otherwise.
	AuditPreemptedConsumer = "preempted_consumer"
	// AuditPreemptibleEmpty: a preemptible stored claim whose consumer
	// holds nothing and was not preempted (no preemption record since
	// the claim): its allocations were removed outside Berth's writes
	// (which delete a consumer they empty), so no preemption record told
	// its agent to stop it. Reported as this kind only, never as
	// empty_consumer. Fixed by deleting the consumer and its stored claim
	// (AuditFixDeleteConsumer).
	AuditPreemptibleEmpty = "preemptible_empty"
)

// What a finding's fix does (AuditFix.Action).
const (
	// AuditFixReportOnly: nothing; the finding says why.
	AuditFixReportOnly = "report_only"
	// AuditFixConfirmMove: delete the migration consumer (its source
	// allocations) and forget the move, as confirming the move does.
	AuditFixConfirmMove = "confirm_move"
	// AuditFixDeleteConsumer: delete the consumer row.
	AuditFixDeleteConsumer = "delete_consumer"
	// AuditFixReleaseLease: delete the consumer, its allocations and its
	// stored claim, as the lease reaper does when a lease runs out.
	AuditFixReleaseLease = "release_lease"
)

// Page sizes and default thresholds.
const (
	DefaultAuditLimit = 100
	MaxAuditLimit     = 1000
	// DefaultAuditMigrationAge: a migration unconfirmed for a day is
	// abandoned (Nova's resize_confirm_window, when set, is shorter).
	DefaultAuditMigrationAge = 24 * time.Hour
	// DefaultAuditStateAge: an agent silent for an hour is down.
	DefaultAuditStateAge = time.Hour
	// AuditLeaseGrace is how long past its lease's end an expired claim
	// must hold allocations to be a finding: many passes of the lease
	// reaper (every 5 s by default) release it well before.
	AuditLeaseGrace = time.Minute
	// auditConsumersListed caps AuditFinding.Consumers.
	auditConsumersListed = 100
)

// AuditKinds lists the kinds in the order Audit reports them.
func AuditKinds() []string {
	names := make([]string, len(auditKinds))
	for i, k := range auditKinds {
		names[i] = k.name
	}
	return names
}

// AuditThresholds are the ages past which a migration or a provider's
// last report is stale. Zero makes every migration (every report) stale.
type AuditThresholds struct {
	MigrationAge time.Duration
	StateAge     time.Duration
}

// DefaultAuditThresholds are the thresholds a request names none of.
func DefaultAuditThresholds() AuditThresholds {
	return AuditThresholds{MigrationAge: DefaultAuditMigrationAge, StateAge: DefaultAuditStateAge}
}

func (th AuditThresholds) check() error {
	if th.MigrationAge < 0 || th.StateAge < 0 {
		return fault.Invalid(fault.CodeAuditInvalid, "Audit thresholds must not be negative: migration_age %s, state_age %s.",
			th.MigrationAge, th.StateAge)
	}
	return nil
}

// AuditParams asks for one page of findings.
type AuditParams struct {
	// Kinds are the kinds to report (AuditKinds' names, in any order,
	// reported in AuditKinds' order); empty means all.
	Kinds []string
	// Limit caps the page: 1 to MaxAuditLimit; 0 means DefaultAuditLimit.
	Limit int
	// Marker is the previous page's NextMarker; empty for the first.
	Marker     string
	Thresholds AuditThresholds
}

// AuditPage is one page of findings.
type AuditPage struct {
	Findings []AuditFinding
	// NextMarker continues the audit where this page stopped (opaque);
	// empty when the audit is complete. A full page always has one, so
	// the page after it may be empty.
	NextMarker string
}

// AuditFinding is one finding: what it is about, the amounts concerned,
// since when, and what its fix would do.
type AuditFinding struct {
	Kind string
	// Consumer is the consumer of a consumer kind's finding
	// (split_consumer, stale_migration, empty_consumer, expired_lease,
	// partial_gang, preempted_consumer, preemptible_empty); nil
	// otherwise.
	Consumer *AuditConsumer
	// Provider is the provider of a provider kind's finding
	// (stale_provider, over_capacity); nil otherwise. For over_capacity
	// its Resources are the classes over capacity, with their Capacity.
	Provider *AuditProvider
	// Providers hold the amounts concerned: a consumer's allocations per
	// provider, or for stale_provider the usage of each provider of the
	// stale provider's subtree that has any. In provider uuid order.
	Providers []AuditProvider
	// Consumers are, for the provider kinds, the consumers holding
	// allocations there (the subtree for stale_provider), the first
	// auditConsumersListed in uuid order; ConsumerCount counts them all.
	Consumers     []string
	ConsumerCount int
	// Move is, for stale_migration, the move claims recorded whose source
	// the migration consumer holds; nil if none.
	Move *claimrecords.MoveRecord
	// Preemption is, for preempted_consumer, the consumer's latest
	// preemption; nil otherwise.
	Preemption *AuditPreemption
	// Since is when the finding's condition began, as far as the ledger
	// knows: the consumer's last write (split_consumer, empty_consumer),
	// its creation (stale_migration), the provider's last report
	// (stale_provider) or its last inventory change (over_capacity). Age
	// is how long ago that was by the database's clock.
	Since  time.Time
	Age    time.Duration
	Detail string
	Fix    AuditFix
	// key orders the finding within its kind: its consumer's or
	// provider's id.
	key int64
}

// AuditConsumer is the consumer of a finding.
type AuditConsumer struct {
	UUID       string
	Generation int64
	// Type is UnknownConsumerType for a consumer written without one.
	Type              string
	ProjectID, UserID string
}

// AuditPreemption is a consumer's preemption as a finding names it: the
// consumer of the claim that displaced it, the root provider it was
// displaced from, and when.
type AuditPreemption struct {
	PreemptedBy, RootUUID string
	PreemptedAt           time.Time
}

// AuditProvider is a provider of a finding and amounts on it.
type AuditProvider struct {
	UUID, Name, RootUUID string
	// Resources are amounts by class, in class name order.
	Resources []engine.ResourceAmount
	// Capacity is, for over_capacity, the capacity of each class of
	// Resources, (total - reserved) * allocation_ratio; nil otherwise.
	Capacity []float64
}

// AuditFix is what fixing a finding does: Action is one of the
// AuditFix* constants, Detail says what in words (for report_only, why
// not, and what an operator can do).
type AuditFix struct {
	Action string
	Detail string
}

// auditKind is one kind of finding.
type auditKind struct {
	name string
	// page answers the findings of the kind whose key lies in
	// [a.from, a.through], at most a.limit, in key order.
	page func(ctx context.Context, q core.Querier, a auditArgs) ([]AuditFinding, error)
	// fix re-checks the finding of consumer id under locks and applies
	// its fix in t (fix.go); nil for a report-only kind.
	fix func(ctx context.Context, t *core.Txn, id string, p AuditFixParams) (AuditFinding, error)
}

// auditKinds is the registry, in report order.
var auditKinds = []auditKind{
	{name: AuditSplitConsumer, page: splitConsumers},
	{name: AuditStaleMigration, page: staleMigrations, fix: fixStaleMigration},
	{name: AuditStaleProvider, page: staleProviders},
	{name: AuditOverCapacity, page: overCapacityProviders},
	{name: AuditEmptyConsumer, page: emptyConsumers, fix: fixEmptyConsumer},
	{name: AuditExpiredLease, page: expiredLeases, fix: fixExpiredLease},
	{name: AuditPartialGang, page: partialGangs},
	{name: AuditPreemptedConsumer, page: preemptedConsumers, fix: fixPreemptedConsumer},
	{name: AuditPreemptibleEmpty, page: preemptibleEmpties, fix: fixPreemptibleEmpty},
}

// auditKindNamed returns the kind called name.
func auditKindNamed(name string) (auditKind, error) {
	for _, k := range auditKinds {
		if k.name == name {
			return k, nil
		}
	}
	return auditKind{}, fault.Invalid(fault.CodeAuditUnknownKind, "Unknown audit kind %q: want one of %s.",
		name, strings.Join(AuditKinds(), ", "))
}

// auditArgs is what a page query is asked.
type auditArgs struct {
	from, through int64 // the key range, inclusive
	limit         int
	th            AuditThresholds
	now           time.Time // the database's clock
	// overCapacity are the providers the snapshot says are over
	// capacity, ascending (over_capacity's candidates).
	overCapacity []int64
}

// lastKey ends the key range of a whole kind.
const lastKey = math.MaxInt64

// Audit answers one page of findings: the kinds asked for in AuditKinds'
// order, each in its key's order, from where p.Marker left off. It
// writes nothing and reads in one read-only transaction; a page holds at
// most the limit's findings in memory. An unknown kind, a limit out of
// range, a negative threshold or a marker of another audit is
// fault.ErrInvalid.
func (s *Auditor) Audit(ctx context.Context, p AuditParams) (AuditPage, error) {
	kinds, err := auditKindsOf(p.Kinds)
	if err != nil {
		return AuditPage{}, err
	}
	limit := p.Limit
	if limit == 0 {
		limit = DefaultAuditLimit
	}
	if limit < 1 || limit > MaxAuditLimit {
		return AuditPage{}, fault.Invalid(fault.CodeAuditInvalid, "Invalid limit %d: want 1 to %d.", p.Limit, MaxAuditLimit)
	}
	if err := p.Thresholds.check(); err != nil {
		return AuditPage{}, err
	}
	start, from, err := parseAuditMarker(p.Marker, kinds)
	if err != nil {
		return AuditPage{}, err
	}
	var over []int64
	if slices.ContainsFunc(kinds[start:], func(k auditKind) bool { return k.name == AuditOverCapacity }) {
		// Caught up with the change log (as a Placement read): a provider
		// another process lowered before this request is a candidate.
		snap, err := s.snaps.Snapshot(ctx, nil, nil)
		if err != nil {
			return AuditPage{}, err
		}
		over = snap.OverCapacity()
	}
	var page AuditPage
	_, err = s.core.Txs.WithTx(ctx, core.TxReadOnly, func(t *core.Txn) error {
		page = AuditPage{} // afresh if run again
		a := auditArgs{from: from, through: lastKey, th: p.Thresholds, overCapacity: over}
		if err := t.QueryRow(ctx, `SELECT now()`).Scan(&a.now); err != nil {
			return err
		}
		for i := start; i < len(kinds); i++ {
			a.limit = limit - len(page.Findings)
			found, err := kinds[i].page(ctx, t, a)
			if err != nil {
				return err
			}
			page.Findings = append(page.Findings, found...)
			if len(found) == a.limit {
				page.NextMarker = nextAuditMarker(kinds, i, found[len(found)-1].key)
				return nil
			}
			a.from = 0
		}
		return nil
	})
	return page, err
}

// auditKindsOf resolves names to kinds in report order (all for none).
func auditKindsOf(names []string) ([]auditKind, error) {
	if len(names) == 0 {
		return auditKinds, nil
	}
	for _, n := range names {
		if _, err := auditKindNamed(n); err != nil {
			return nil, err
		}
	}
	var out []auditKind
	for _, k := range auditKinds {
		if slices.Contains(names, k.name) {
			out = append(out, k)
		}
	}
	return out, nil
}

// A marker is "kind:key": the page after it starts at that key of that
// kind. Clients treat it as opaque.

// nextAuditMarker is the marker after a full page whose last finding,
// of kinds[i], has key last.
func nextAuditMarker(kinds []auditKind, i int, last int64) string {
	return kinds[i].name + ":" + strconv.FormatInt(last+1, 10)
}

// parseAuditMarker returns where the page of marker starts: the index in
// kinds and the first key.
func parseAuditMarker(marker string, kinds []auditKind) (int, int64, error) {
	if marker == "" {
		return 0, 0, nil
	}
	name, key, _ := strings.Cut(marker, ":")
	if from, err := strconv.ParseInt(key, 10, 64); err == nil && from >= 0 {
		for i, k := range kinds {
			if k.name == name {
				return i, from, nil
			}
		}
	}
	return 0, 0, fault.Invalid(fault.CodeAuditInvalid,
		"Invalid marker %q: not the marker of an audit of these kinds; start again without one.", marker)
}

// isSharing is true for the provider rp when it shares its inventory
// through aggregates: allocations on it are not on another host.
const isSharing = `EXISTS (SELECT 1 FROM resource_provider_traits rt
	WHERE rt.resource_provider_id = rp.id
	  AND rt.trait_id = (SELECT id FROM traits WHERE name = 'MISC_SHARES_VIA_AGGREGATE'))`

// The consumer kinds' page queries answer consumer ids in id order: $1
// the limit, $2 and $3 the id range, then the kind's own arguments.

// splitConsumersSQL walks the allocations' (consumer, provider, class)
// index for the consumers on more than one provider (the index alone
// answers), then keeps those on more than one root, sharing providers
// left out, that are no MIGRATION consumer and no half of a move.
const splitConsumersSQL = `
SELECT c.id FROM (
	SELECT a.consumer_id FROM allocations a
	WHERE a.consumer_id BETWEEN $2 AND $3
	GROUP BY a.consumer_id
	HAVING min(a.resource_provider_id) <> max(a.resource_provider_id)) m
JOIN consumers c ON c.id = m.consumer_id
WHERE c.consumer_type_id IS DISTINCT FROM (SELECT id FROM consumer_types WHERE name = '` + resources.MigrationConsumerType + `')
  AND c.uuid NOT IN (SELECT consumer_uuid FROM claim_moves UNION ALL SELECT migration_uuid FROM claim_moves)
  AND NOT ` + preemptedAgain + `
  AND (SELECT min(rp.root_provider_id) <> max(rp.root_provider_id)
       FROM allocations a JOIN resource_providers rp ON rp.id = a.resource_provider_id
       WHERE a.consumer_id = c.id AND NOT ` + isSharing + `)
ORDER BY c.id LIMIT $1`

// staleMigrationsSQL: $4 is the migration age.
const staleMigrationsSQL = `
SELECT c.id FROM consumers c
WHERE c.id BETWEEN $2 AND $3
  AND c.consumer_type_id = (SELECT id FROM consumer_types WHERE name = '` + resources.MigrationConsumerType + `')
  AND c.created_at < now() - $4::interval
  AND EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = c.id)
ORDER BY c.id LIMIT $1`

// emptyConsumersSQL leaves out the empty consumers the preemption kinds
// report.
const emptyConsumersSQL = `
SELECT c.id FROM consumers c
WHERE c.id BETWEEN $2 AND $3
  AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = c.id)
  AND NOT ` + preemptedAgain + `
  AND NOT EXISTS (SELECT 1 FROM claim_state cs WHERE cs.consumer_uuid = c.uuid AND ` + isPreemptible + `)
ORDER BY c.id LIMIT $1`

// preemptedAgain is true for the consumer c when a claim preempted it
// and it has no stored claim written since its latest preemption
// (preempted_consumer). A preemption deletes its victim's consumer, so
// such a consumer was written again outside claims.
const preemptedAgain = `EXISTS (SELECT 1 FROM preemptions p WHERE p.consumer_uuid = c.uuid
	AND NOT EXISTS (SELECT 1 FROM claim_state cs WHERE cs.consumer_uuid = c.uuid AND cs.created_at > p.preempted_at))`

// isPreemptible is true for the stored claim cs when it is preemptible
// (the partial index claim_state_preemptible).
const isPreemptible = `cs.request @> '{"preemptible": true}'`

// preemptedConsumersSQL starts from the preemption records (one index
// scan), so a cloud that never preempted pays nothing.
const preemptedConsumersSQL = `
SELECT c.id FROM (SELECT DISTINCT consumer_uuid FROM preemptions) v
JOIN consumers c ON c.uuid = v.consumer_uuid
WHERE c.id BETWEEN $2 AND $3 AND ` + preemptedAgain + `
ORDER BY c.id LIMIT $1`

// preemptibleEmptiesSQL starts from the preemptible stored claims (the
// partial index claim_state_preemptible).
const preemptibleEmptiesSQL = `
SELECT c.id FROM claim_state cs JOIN consumers c ON c.uuid = cs.consumer_uuid
WHERE c.id BETWEEN $2 AND $3 AND ` + isPreemptible + `
  AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = c.id)
  AND NOT ` + preemptedAgain + `
ORDER BY c.id LIMIT $1`

// latestPreemptionsSQL: the latest preemption of each consumer $1.
const latestPreemptionsSQL = `
SELECT DISTINCT ON (consumer_uuid) consumer_uuid::text, preempted_by::text, root_provider_uuid::text, preempted_at
FROM preemptions WHERE consumer_uuid = ANY($1::uuid[])
ORDER BY consumer_uuid, id DESC`

// expiredLeasesSQL: $4 is the grace. It starts from the stored claims
// whose lease ran out (the partial index on lease_expires_at), so a page
// costs what those few rows cost, not a walk of every consumer.
const expiredLeasesSQL = `
WITH expired AS MATERIALIZED (
	SELECT consumer_uuid FROM claim_state WHERE lease_expires_at < now() - $4::interval)
SELECT c.id FROM expired e JOIN consumers c ON c.uuid = e.consumer_uuid
WHERE c.id BETWEEN $2 AND $3
  AND EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = c.id)
ORDER BY c.id LIMIT $1`

// partialGangsSQL finds the gangs' members that hold allocations while
// a member of their gang holds none. It starts from the gangs' members
// (table gang_members), so a cloud without gangs pays nothing.
const partialGangsSQL = `
SELECT c.id FROM gang_members g JOIN consumers c ON c.uuid = g.consumer_uuid
WHERE c.id BETWEEN $2 AND $3
  AND EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = c.id)
  AND EXISTS (SELECT 1 FROM gang_members o JOIN consumers oc ON oc.uuid = o.consumer_uuid
              WHERE o.gang_id = g.gang_id AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = oc.id))
ORDER BY c.id LIMIT $1`

// gangsEmptyMembersSQL lists, per member $1 of a gang, its gang and the
// members of that gang that hold nothing.
const gangsEmptyMembersSQL = `
SELECT g.consumer_uuid::text, g.gang_id::text, array_agg(o.consumer_uuid::text ORDER BY o.consumer_uuid)
FROM gang_members g JOIN gang_members o ON o.gang_id = g.gang_id
JOIN consumers oc ON oc.uuid = o.consumer_uuid
WHERE g.consumer_uuid = ANY($1::uuid[]) AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = oc.id)
GROUP BY g.consumer_uuid, g.gang_id`

// auditConsumer is a consumer of a page, with its allocations.
type auditConsumer struct {
	id int64
	AuditConsumer
	created, updated time.Time
	holdings         []auditHolding
}

// auditHolding is one allocation of a consumer.
type auditHolding struct {
	provider, name, root, rootName string
	sharing                        bool
	class                          string
	used                           int64
}

const auditConsumersSQL = `
SELECT c.id, c.uuid::text, c.generation, COALESCE(ct.name, $2), p.external_id, u.external_id,
       c.created_at, c.updated_at
FROM consumers c
JOIN projects p ON p.id = c.project_id
JOIN users u ON u.id = c.user_id
LEFT JOIN consumer_types ct ON ct.id = c.consumer_type_id
WHERE c.id = ANY($1) ORDER BY c.id`

const auditHoldingsSQL = `
SELECT a.consumer_id, rp.uuid::text, rp.name, root.uuid::text, root.name, ` + isSharing + `, rc.name, a.used
FROM allocations a
JOIN resource_providers rp ON rp.id = a.resource_provider_id
JOIN resource_providers root ON root.id = rp.root_provider_id
JOIN resource_classes rc ON rc.id = a.resource_class_id
WHERE a.consumer_id = ANY($1)
ORDER BY a.consumer_id, rp.uuid, rc.name`

// consumerKindPage runs a consumer kind's page query (args after the
// range) and reads the consumers it names with their allocations.
func consumerKindPage(ctx context.Context, q core.Querier, sql string, a auditArgs, args ...any) ([]*auditConsumer, error) {
	rows, err := q.Query(ctx, sql, append([]any{a.limit, a.from, a.through}, args...)...)
	if err != nil {
		return nil, err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, err
	}
	return auditConsumers(ctx, q, ids)
}

// auditConsumers reads consumers by id, in id order, with their
// allocations; those deleted meanwhile are left out.
func auditConsumers(ctx context.Context, q core.Querier, ids []int64) ([]*auditConsumer, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	rows, err := q.Query(ctx, auditConsumersSQL, ids, resources.UnknownConsumerType)
	if err != nil {
		return nil, err
	}
	var out []*auditConsumer
	byID := map[int64]*auditConsumer{}
	var c auditConsumer
	if _, err := pgx.ForEachRow(rows, []any{&c.id, &c.UUID, &c.Generation, &c.Type, &c.ProjectID, &c.UserID,
		&c.created, &c.updated}, func() error {
		row := c
		out = append(out, &row)
		byID[row.id] = &row
		return nil
	}); err != nil {
		return nil, err
	}
	rows, err = q.Query(ctx, auditHoldingsSQL, ids)
	if err != nil {
		return nil, err
	}
	var id int64
	var h auditHolding
	_, err = pgx.ForEachRow(rows, []any{&id, &h.provider, &h.name, &h.root, &h.rootName, &h.sharing, &h.class, &h.used}, func() error {
		if c := byID[id]; c != nil {
			c.holdings = append(c.holdings, h)
		}
		return nil
	})
	return out, err
}

// finding starts the consumer's finding of kind, its condition begun at
// since.
func (c *auditConsumer) finding(kind string, since time.Time, a auditArgs) AuditFinding {
	cons := c.AuditConsumer
	return AuditFinding{Kind: kind, Consumer: &cons, Providers: c.providers(), Since: since, Age: max(a.now.Sub(since), 0), key: c.id}
}

// providers groups the consumer's allocations by provider.
func (c *auditConsumer) providers() []AuditProvider {
	var out []AuditProvider
	for _, h := range c.holdings {
		if n := len(out); n == 0 || out[n-1].UUID != h.provider {
			out = append(out, AuditProvider{UUID: h.provider, Name: h.name, RootUUID: h.root})
		}
		last := &out[len(out)-1]
		last.Resources = append(last.Resources, engine.ResourceAmount{Class: h.class, Amount: h.used})
	}
	return out
}

// roots are the roots of the trees the consumer holds allocations in,
// sharing providers left out, by uuid (with their names), in uuid order.
func (c *auditConsumer) roots() (uuids, names []string) {
	seen := map[string]string{}
	for _, h := range c.holdings {
		if !h.sharing {
			seen[h.root] = h.rootName
		}
	}
	for u := range seen {
		uuids = append(uuids, u)
	}
	slices.Sort(uuids)
	for _, u := range uuids {
		names = append(names, seen[u])
	}
	return uuids, names
}

func splitConsumers(ctx context.Context, q core.Querier, a auditArgs) ([]AuditFinding, error) {
	cs, err := consumerKindPage(ctx, q, splitConsumersSQL, a)
	if err != nil {
		return nil, err
	}
	out := make([]AuditFinding, 0, len(cs))
	for _, c := range cs {
		f := c.finding(AuditSplitConsumer, c.updated, a)
		_, names := c.roots()
		f.Detail = fmt.Sprintf("Consumer %s holds allocations on %d root providers (%s) and is not part of a move.",
			c.UUID, len(names), strings.Join(names, ", "))
		f.Fix = AuditFix{Action: AuditFixReportOnly, Detail: "Which root provider the consumer runs on is not " +
			"recorded: once known, rewrite its allocations without the others (PUT /allocations/{consumer_uuid})."}
		out = append(out, f)
	}
	return out, nil
}

func emptyConsumers(ctx context.Context, q core.Querier, a auditArgs) ([]AuditFinding, error) {
	cs, err := consumerKindPage(ctx, q, emptyConsumersSQL, a)
	if err != nil {
		return nil, err
	}
	out := make([]AuditFinding, 0, len(cs))
	for _, c := range cs {
		f := c.finding(AuditEmptyConsumer, c.updated, a)
		f.Detail = fmt.Sprintf("Consumer %s holds no allocations.", c.UUID)
		f.Fix = AuditFix{Action: AuditFixDeleteConsumer, Detail: "Delete the consumer, which holds nothing " +
			"(as a write that empties a consumer does)."}
		out = append(out, f)
	}
	return out, nil
}

// preemptedConsumers reads the page's consumers and their latest
// preemptions.
func preemptedConsumers(ctx context.Context, q core.Querier, a auditArgs) ([]AuditFinding, error) {
	cs, err := consumerKindPage(ctx, q, preemptedConsumersSQL, a)
	if err != nil || len(cs) == 0 {
		return nil, err
	}
	uuids := make([]string, len(cs))
	for i, c := range cs {
		uuids[i] = c.UUID
	}
	rows, err := q.Query(ctx, latestPreemptionsSQL, uuids)
	if err != nil {
		return nil, err
	}
	latest := map[string]AuditPreemption{}
	var u string
	var pr AuditPreemption
	if _, err := pgx.ForEachRow(rows, []any{&u, &pr.PreemptedBy, &pr.RootUUID, &pr.PreemptedAt}, func() error {
		latest[u] = pr
		return nil
	}); err != nil {
		return nil, err
	}
	out := make([]AuditFinding, 0, len(cs))
	for _, c := range cs {
		pr, ok := latest[c.UUID]
		if !ok {
			continue // cannot happen within one transaction: records are kept
		}
		f := c.finding(AuditPreemptedConsumer, c.created, a)
		f.Preemption = &pr
		was := fmt.Sprintf("Consumer %s was preempted by %s at %s from root provider %s", c.UUID, pr.PreemptedBy,
			pr.PreemptedAt.UTC().Format(time.RFC3339), pr.RootUUID)
		if len(c.holdings) == 0 {
			f.Detail = was + "; its consumer was written again, without allocations and without a claim."
			f.Fix = AuditFix{Action: AuditFixDeleteConsumer, Detail: "Delete the consumer, which holds nothing " +
				"(as the preemption did)."}
			out = append(out, f)
			continue
		}
		roots, names := c.roots()
		where := "elsewhere"
		if slices.Contains(roots, pr.RootUUID) {
			where = "on the root provider it was preempted from"
		}
		f.Detail = fmt.Sprintf("%s, and holds allocations again (%s: %s) written outside claims: its instance "+
			"was probably never stopped, and runs %s.", was, plural(len(names), "root provider"), strings.Join(names, ", "), where)
		f.Fix = AuditFix{Action: AuditFixReportOnly, Detail: "Whether the instance should run is its owner's to say: " +
			"stop it and delete its allocations (DELETE /allocations/" + c.UUID + "), or claim it anew (POST /claims " +
			"with its consumer_uuid and consumer_generation) to make it a claim of Berth's again."}
		out = append(out, f)
	}
	return out, nil
}

// plural is "n noun" or "n nouns".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func preemptibleEmpties(ctx context.Context, q core.Querier, a auditArgs) ([]AuditFinding, error) {
	cs, err := consumerKindPage(ctx, q, preemptibleEmptiesSQL, a)
	if err != nil {
		return nil, err
	}
	out := make([]AuditFinding, 0, len(cs))
	for _, c := range cs {
		f := c.finding(AuditPreemptibleEmpty, c.updated, a)
		f.Detail = fmt.Sprintf("Consumer %s has a preemptible claim but holds nothing, and no claim preempted it: "+
			"its allocations were removed outside claims, and GET /preemptions never named it.", c.UUID)
		f.Fix = AuditFix{Action: AuditFixDeleteConsumer, Detail: "Delete the consumer and its stored claim, which hold " +
			"nothing, once its instance is known to be stopped (nothing told its agent to stop it); if it still runs, " +
			"claim it again instead (POST /claims with its consumer_uuid and consumer_generation)."}
		out = append(out, f)
	}
	return out, nil
}

// partialGangs reads the page's consumers and, for each, its gang and
// the gang's members that hold nothing.
func partialGangs(ctx context.Context, q core.Querier, a auditArgs) ([]AuditFinding, error) {
	cs, err := consumerKindPage(ctx, q, partialGangsSQL, a)
	if err != nil || len(cs) == 0 {
		return nil, err
	}
	uuids := make([]string, len(cs))
	for i, c := range cs {
		uuids[i] = c.UUID
	}
	rows, err := q.Query(ctx, gangsEmptyMembersSQL, uuids)
	if err != nil {
		return nil, err
	}
	type gang struct {
		id    string
		empty []string
	}
	gangs := map[string]gang{}
	var member string
	var g gang
	if _, err := pgx.ForEachRow(rows, []any{&member, &g.id, &g.empty}, func() error {
		gangs[member] = g
		return nil
	}); err != nil {
		return nil, err
	}
	out := make([]AuditFinding, 0, len(cs))
	for _, c := range cs {
		g, ok := gangs[c.UUID]
		if !ok {
			continue // made whole (or released) meanwhile
		}
		f := c.finding(AuditPartialGang, c.updated, a)
		f.Detail = fmt.Sprintf("Consumer %s is a member of gang %s, whose members %s hold nothing: the gang is partial.",
			c.UUID, g.id, strings.Join(g.empty, ", "))
		f.Fix = AuditFix{Action: AuditFixReportOnly, Detail: "Release the rest of the gang (DELETE /allocations/{member} " +
			"for each member), or place the missing members again; whether the job can run partial is its owner's to say."}
		out = append(out, f)
	}
	return out, nil
}

// expiredLeases reads the page's consumers and their stored claims' state
// and lease.
func expiredLeases(ctx context.Context, q core.Querier, a auditArgs) ([]AuditFinding, error) {
	cs, err := consumerKindPage(ctx, q, expiredLeasesSQL, a, AuditLeaseGrace)
	if err != nil || len(cs) == 0 {
		return nil, err
	}
	uuids := make([]string, len(cs))
	for i, c := range cs {
		uuids[i] = c.UUID
	}
	type lease struct {
		state   string
		expires time.Time
	}
	leases := map[string]lease{}
	rows, err := q.Query(ctx, `SELECT consumer_uuid::text, state, lease_expires_at FROM claim_state
		WHERE consumer_uuid = ANY($1::uuid[]) AND lease_expires_at IS NOT NULL`, uuids)
	if err != nil {
		return nil, err
	}
	var u string
	var l lease
	if _, err := pgx.ForEachRow(rows, []any{&u, &l.state, &l.expires}, func() error {
		leases[u] = l
		return nil
	}); err != nil {
		return nil, err
	}
	out := make([]AuditFinding, 0, len(cs))
	for _, c := range cs {
		l, ok := leases[c.UUID]
		if !ok {
			continue // confirmed between the two reads
		}
		f := c.finding(AuditExpiredLease, l.expires, a)
		if l.state == claimrecords.ClaimMoving {
			f.Detail = fmt.Sprintf("The lease of consumer %s's move ran out at %s and the move was not reverted.",
				c.UUID, l.expires.UTC().Format(time.RFC3339))
			f.Fix = AuditFix{Action: AuditFixReportOnly, Detail: "The lease reaper reverts it once a berthd runs " +
				"it; or revert (POST /claims/" + c.UUID + "/move/revert) or confirm the move by hand."}
		} else {
			f.Detail = fmt.Sprintf("The lease of consumer %s's claim ran out at %s and its allocations were not released.",
				c.UUID, l.expires.UTC().Format(time.RFC3339))
			f.Fix = AuditFix{Action: AuditFixReleaseLease, Detail: "Release the claim's allocations and forget " +
				"it, as the lease reaper does when a lease runs out."}
		}
		out = append(out, f)
	}
	return out, nil
}

// staleMigrations reads the page's migration consumers, the moves they
// hold the source of, and those moves' instances, to decide each fix.
func staleMigrations(ctx context.Context, q core.Querier, a auditArgs) ([]AuditFinding, error) {
	cs, err := consumerKindPage(ctx, q, staleMigrationsSQL, a, a.th.MigrationAge)
	if err != nil {
		return nil, err
	}
	uuids := make([]string, len(cs))
	for i, c := range cs {
		uuids[i] = c.UUID
	}
	moves, instances, err := movesOfMigrations(ctx, q, uuids)
	if err != nil {
		return nil, err
	}
	out := make([]AuditFinding, 0, len(cs))
	for _, c := range cs {
		f := c.finding(AuditStaleMigration, c.created, a)
		f.Detail = fmt.Sprintf("Migration consumer %s was created more than %s ago and still holds allocations.",
			c.UUID, a.th.MigrationAge)
		if m := moves[c.UUID]; m != nil {
			f.Move = m
			f.Detail += fmt.Sprintf(" It holds the source of the %s of consumer %s.", m.Reason, m.ConsumerUUID)
		}
		f.Fix = migrationFix(c, f.Move, instances)
		out = append(out, f)
	}
	return out, nil
}

// migrationFix decides what fixing the stale migration c does: confirm
// its move when the move's instance is settled, holding allocations and
// none in the trees the migration holds; otherwise report only.
func migrationFix(c *auditConsumer, m *claimrecords.MoveRecord, instances map[string]*auditConsumer) AuditFix {
	if m == nil {
		return AuditFix{Action: AuditFixReportOnly, Detail: "No move recorded by Berth (a migration written " +
			"through the Placement API): its owner decides (nova-manage placement audit --delete for Nova's)."}
	}
	inst := instances[m.ConsumerUUID]
	if inst == nil || len(inst.holdings) == 0 {
		return AuditFix{Action: AuditFixReportOnly, Detail: fmt.Sprintf("Its instance %s holds nothing: "+
			"confirm or revert the move by hand, or delete the migration's allocations.", m.ConsumerUUID)}
	}
	from, names := c.roots()
	at, _ := inst.roots()
	for _, r := range at {
		if slices.Contains(from, r) {
			return AuditFix{Action: AuditFixReportOnly, Detail: fmt.Sprintf("Its instance %s still holds "+
				"allocations where the migration does: confirm or revert the move by hand.", m.ConsumerUUID)}
		}
	}
	return AuditFix{Action: AuditFixConfirmMove, Detail: fmt.Sprintf("Delete the migration's allocations on %s "+
		"and forget the move, as confirming it does (POST /claims/%s/move/confirm): its instance is settled "+
		"on its destination.", strings.Join(names, ", "), m.ConsumerUUID)}
}

// movesOfMigrations reads the moves whose source the migration consumers
// hold, by migration uuid, and their instances with their allocations,
// by uuid. A migration named by two moves (never written by claims) is
// taken with the first instance in uuid order.
func movesOfMigrations(ctx context.Context, q core.Querier, migrations []string) (map[string]*claimrecords.MoveRecord, map[string]*auditConsumer, error) {
	moves := map[string]*claimrecords.MoveRecord{}
	if len(migrations) == 0 {
		return moves, nil, nil
	}
	rows, err := q.Query(ctx, `
		SELECT DISTINCT ON (m.migration_uuid) m.consumer_uuid::text, m.migration_uuid::text, m.reason,
		       COALESCE(m.source_root::text, ''), m.created_at, c.id
		FROM claim_moves m LEFT JOIN consumers c ON c.uuid = m.consumer_uuid
		WHERE m.migration_uuid = ANY($1::uuid[])
		ORDER BY m.migration_uuid, m.consumer_uuid`, migrations)
	if err != nil {
		return nil, nil, err
	}
	var ids []int64
	var m claimrecords.MoveRecord
	var id *int64
	if _, err := pgx.ForEachRow(rows, []any{&m.ConsumerUUID, &m.MigrationUUID, &m.Reason, &m.SourceRoot, &m.CreatedAt, &id}, func() error {
		rec := m
		moves[rec.MigrationUUID] = &rec
		if id != nil {
			ids = append(ids, *id)
		}
		return nil
	}); err != nil {
		return nil, nil, err
	}
	insts, err := auditConsumers(ctx, q, ids)
	if err != nil {
		return nil, nil, err
	}
	byUUID := make(map[string]*auditConsumer, len(insts))
	for _, c := range insts {
		byUUID[c.UUID] = c
	}
	return moves, byUUID, nil
}

// The provider kinds' page queries answer provider ids and when their
// condition began, in id order: $1 the limit, $2 and $3 the id range,
// then the kind's own arguments.

// staleProvidersSQL: $4 is the state age. The subtree is walked from
// the provider down its parent index.
const staleProvidersSQL = `
SELECT rp.id, st.reported_at FROM provider_state st
JOIN resource_providers rp ON rp.id = st.resource_provider_id
WHERE st.resource_provider_id BETWEEN $2 AND $3
  AND st.reported_at < now() - $4::interval
  AND EXISTS (
	WITH RECURSIVE sub(id) AS (
		SELECT rp.id
		UNION ALL
		SELECT d.id FROM resource_providers d JOIN sub ON d.parent_provider_id = sub.id)
	SELECT 1 FROM sub JOIN allocations a ON a.resource_provider_id = sub.id)
ORDER BY st.resource_provider_id LIMIT $1`

// overCapacitySQL: of the candidates $4, the providers with a class
// whose allocations sum to more than its capacity, since the last change
// of those inventories.
const overCapacitySQL = `
SELECT u.resource_provider_id, max(i.updated_at) FROM (
	SELECT a.resource_provider_id, a.resource_class_id, sum(a.used) AS used
	FROM allocations a
	WHERE a.resource_provider_id = ANY($4) AND a.resource_provider_id BETWEEN $2 AND $3
	GROUP BY a.resource_provider_id, a.resource_class_id) u
JOIN inventories i ON i.resource_provider_id = u.resource_provider_id AND i.resource_class_id = u.resource_class_id
WHERE u.used > (i.total - i.reserved) * i.allocation_ratio
GROUP BY u.resource_provider_id
ORDER BY u.resource_provider_id LIMIT $1`

// overCapacityClassesSQL: the classes over capacity of the providers $1.
const overCapacityClassesSQL = `
SELECT i.resource_provider_id, rc.name, u.used, (i.total - i.reserved) * i.allocation_ratio
FROM inventories i
JOIN resource_classes rc ON rc.id = i.resource_class_id
CROSS JOIN LATERAL (
	SELECT sum(a.used)::bigint AS used FROM allocations a
	WHERE a.resource_provider_id = i.resource_provider_id AND a.resource_class_id = i.resource_class_id) u
WHERE i.resource_provider_id = ANY($1) AND u.used > (i.total - i.reserved) * i.allocation_ratio
ORDER BY i.resource_provider_id, rc.name`

// auditSubtreeSQL walks the subtrees of the providers $1 (only the
// providers themselves when $2 is false), as (top, id).
const auditSubtreeSQL = `
WITH RECURSIVE sub(top, id) AS (
	SELECT t, t FROM unnest($1::bigint[]) t
	UNION ALL
	SELECT sub.top, d.id FROM resource_providers d JOIN sub ON d.parent_provider_id = sub.id WHERE $2)`

// auditUsageSQL: the usage of each provider of the subtrees, per class.
const auditUsageSQL = auditSubtreeSQL + `
SELECT sub.top, rp.uuid::text, rp.name, root.uuid::text, rc.name, sum(a.used)::bigint
FROM sub
JOIN allocations a ON a.resource_provider_id = sub.id
JOIN resource_providers rp ON rp.id = sub.id
JOIN resource_providers root ON root.id = rp.root_provider_id
JOIN resource_classes rc ON rc.id = a.resource_class_id
GROUP BY sub.top, rp.uuid, rp.name, root.uuid, rc.name
ORDER BY sub.top, rp.uuid, rc.name`

// auditHoldersSQL: the consumers holding allocations in the subtrees,
// the first $3 of each in uuid order, with how many there are.
const auditHoldersSQL = auditSubtreeSQL + `,
held AS (SELECT DISTINCT sub.top, a.consumer_id FROM sub JOIN allocations a ON a.resource_provider_id = sub.id)
SELECT top, uuid, n FROM (
	SELECT h.top, c.uuid::text AS uuid, row_number() OVER w AS rn, count(*) OVER (PARTITION BY h.top) AS n
	FROM held h JOIN consumers c ON c.id = h.consumer_id
	WINDOW w AS (PARTITION BY h.top ORDER BY c.uuid)) x
WHERE rn <= $3
ORDER BY top, uuid`

// auditProviderRow is a provider of a page and its finding.
type auditProviderRow struct {
	id    int64
	since time.Time
	f     AuditFinding
}

// providerPage is a provider kind's page: its providers in id order,
// their ids, and the same by id.
type providerPage struct {
	rows []*auditProviderRow
	ids  []int64
	byID map[int64]*auditProviderRow
}

// providerKindPage runs a provider kind's page query and starts each
// finding: its provider, since, age, and the consumers holding
// allocations there (in the subtree when subtree is set).
func providerKindPage(ctx context.Context, q core.Querier, kind, sql string, subtree bool, a auditArgs, args ...any) (*providerPage, error) {
	rows, err := q.Query(ctx, sql, append([]any{a.limit, a.from, a.through}, args...)...)
	if err != nil {
		return nil, err
	}
	p := &providerPage{byID: map[int64]*auditProviderRow{}}
	var r auditProviderRow
	if _, err := pgx.ForEachRow(rows, []any{&r.id, &r.since}, func() error {
		row := r
		p.rows, p.ids = append(p.rows, &row), append(p.ids, row.id)
		p.byID[row.id] = &row
		return nil
	}); err != nil || len(p.rows) == 0 {
		return p, err
	}
	rows, err = q.Query(ctx, `
		SELECT rp.id, rp.uuid::text, rp.name, root.uuid::text
		FROM resource_providers rp JOIN resource_providers root ON root.id = rp.root_provider_id
		WHERE rp.id = ANY($1)`, p.ids)
	if err != nil {
		return nil, err
	}
	var id int64
	var pv AuditProvider
	if _, err := pgx.ForEachRow(rows, []any{&id, &pv.UUID, &pv.Name, &pv.RootUUID}, func() error {
		row := p.byID[id]
		prov := pv
		row.f = AuditFinding{Kind: kind, Provider: &prov, Since: row.since, Age: max(a.now.Sub(row.since), 0), key: id}
		return nil
	}); err != nil {
		return nil, err
	}
	return p, holdersOf(ctx, q, p, subtree)
}

// findings are the page's findings, each completed by fill.
func (p *providerPage) findings(fill func(f *AuditFinding)) []AuditFinding {
	out := make([]AuditFinding, 0, len(p.rows))
	for _, r := range p.rows {
		if r.f.Provider == nil {
			continue // not read: cannot happen within one transaction
		}
		fill(&r.f)
		out = append(out, r.f)
	}
	return out
}

// holdersOf fills the Consumers and ConsumerCount of the page's findings.
func holdersOf(ctx context.Context, q core.Querier, p *providerPage, subtree bool) error {
	rows, err := q.Query(ctx, auditHoldersSQL, p.ids, subtree, auditConsumersListed)
	if err != nil {
		return err
	}
	var top, n int64
	var u string
	_, err = pgx.ForEachRow(rows, []any{&top, &u, &n}, func() error {
		f := &p.byID[top].f
		f.Consumers = append(f.Consumers, u)
		f.ConsumerCount = int(n)
		return nil
	})
	return err
}

func staleProviders(ctx context.Context, q core.Querier, a auditArgs) ([]AuditFinding, error) {
	p, err := providerKindPage(ctx, q, AuditStaleProvider, staleProvidersSQL, true, a, a.th.StateAge)
	if err != nil || len(p.rows) == 0 {
		return nil, err
	}
	rows, err := q.Query(ctx, auditUsageSQL, p.ids, true)
	if err != nil {
		return nil, err
	}
	var top int64
	var pv AuditProvider
	var class string
	var used int64
	if _, err := pgx.ForEachRow(rows, []any{&top, &pv.UUID, &pv.Name, &pv.RootUUID, &class, &used}, func() error {
		f := &p.byID[top].f
		if n := len(f.Providers); n == 0 || f.Providers[n-1].UUID != pv.UUID {
			f.Providers = append(f.Providers, AuditProvider{UUID: pv.UUID, Name: pv.Name, RootUUID: pv.RootUUID})
		}
		last := &f.Providers[len(f.Providers)-1]
		last.Resources = append(last.Resources, engine.ResourceAmount{Class: class, Amount: used})
		return nil
	}); err != nil {
		return nil, err
	}
	return p.findings(func(f *AuditFinding) {
		f.Detail = fmt.Sprintf("Provider %s last reported its state more than %s ago; %d consumers hold allocations on it or below it.",
			f.Provider.Name, a.th.StateAge, f.ConsumerCount)
		f.Fix = AuditFix{Action: AuditFixReportOnly, Detail: "A host whose agent stopped reporting may be down: " +
			"restart its agent, or evacuate or delete its instances (their allocations go with them)."}
	}), nil
}

func overCapacityProviders(ctx context.Context, q core.Querier, a auditArgs) ([]AuditFinding, error) {
	var candidates []int64
	for _, id := range a.overCapacity {
		if id >= a.from && id <= a.through {
			candidates = append(candidates, id)
		}
	}
	if len(candidates) == 0 {
		return nil, nil
	}
	p, err := providerKindPage(ctx, q, AuditOverCapacity, overCapacitySQL, false, a, candidates)
	if err != nil || len(p.rows) == 0 {
		return nil, err
	}
	rows, err := q.Query(ctx, overCapacityClassesSQL, p.ids)
	if err != nil {
		return nil, err
	}
	var id, used int64
	var class string
	var capacity float64
	if _, err := pgx.ForEachRow(rows, []any{&id, &class, &used, &capacity}, func() error {
		if pv := p.byID[id].f.Provider; pv != nil {
			pv.Resources = append(pv.Resources, engine.ResourceAmount{Class: class, Amount: used})
			pv.Capacity = append(pv.Capacity, capacity)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	return p.findings(func(f *AuditFinding) {
		var over []string
		for j, r := range f.Provider.Resources {
			over = append(over, fmt.Sprintf("%s %d of %g", r.Class, r.Amount, f.Provider.Capacity[j]))
		}
		f.Detail = fmt.Sprintf("Provider %s has more allocated than its capacity: %s.", f.Provider.Name, strings.Join(over, ", "))
		f.Fix = AuditFix{Action: AuditFixReportOnly, Detail: "Nothing more of those classes fits there until " +
			"usage falls: raise the inventory, or move consumers off the provider."}
	}), nil
}
