package resources

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/berthd/berth/ledger/quotas"
	"github.com/jackc/pgx/v5"
)

// Allocations are the consumers and what they hold: the reads and writes
// of allocations, Placement's and claims' alike (claim_write.go), and the
// reshape that moves inventory and allocations together. It is safe for
// concurrent use.
type Allocations struct {
	core *core.Core
	// claims group-commits the claims' one-round-trip writes
	// (claim_writers.go); nil when every claim goes alone.
	claims *core.GroupWriter[fastClaim, *core.OwnWrite]
	// noStoredLimits is what the claim writers' last batch statement
	// found: no limit stored at all. A hint for the statement's choice
	// (limitMayApply), never the check: the statement checks it again.
	noStoredLimits atomic.Bool
}

// NewAllocations returns the Allocations of co, with writers claim
// writers (claim_writers.go) running on bg (co.Wait waits for them);
// writers <= 0 sends every claim alone.
func NewAllocations(bg context.Context, co *core.Core, writers int) *Allocations {
	s := &Allocations{core: co}
	if writers > 0 {
		s.claims = s.startClaimBatcher(bg, writers)
	}
	return s
}

// WriterStats reports the claim writers' work: how many transactions
// they sent, how many claims those held, and how many claims wait for
// them now.
func (s *Allocations) WriterStats() (batches, claims int64, queued int) {
	if s.claims == nil {
		return 0, 0, 0
	}
	return s.claims.Groups.Load(), s.claims.Items.Load(), s.claims.Queued()
}

// ConsumerAllocations is what one consumer should hold after a write.
type ConsumerAllocations struct {
	ConsumerUUID string
	// ProjectID and UserID are external ids; empty means
	// IncompleteConsumerID. They replace what the consumer had.
	ProjectID string
	UserID    string
	// ConsumerType, when not empty, becomes the consumer's type.
	ConsumerType string
	// CheckGeneration makes the write conditional on Generation: the
	// consumer's current generation, or nil for a consumer that must not
	// exist yet (microversion 1.28 on).
	CheckGeneration bool
	Generation      *int64
	// Allocations replace all of the consumer's allocations; none removes
	// them all (and with them the consumer).
	Allocations []engine.Allocation
	// Name, when not empty, is stored as the consumer's display name
	// (claims carry the instance's name); Properties, when not nil, as its
	// free-form properties (affinity groups are read from them).
	Name       string
	Properties map[string]any
	// CopyStickyKeys copies the sticky placement keys of the providers
	// allocated from to the consumer, in the same transaction.
	CopyStickyKeys bool
}

// AllocationRecord is an amount of one class a consumer holds on one provider.
type AllocationRecord struct {
	ProviderUUID       string
	ProviderGeneration int64
	ConsumerUUID       string
	ConsumerGeneration int64
	ResourceClass      string
	Used               int64
	// UpdatedAt is when the allocation was written.
	UpdatedAt time.Time
}

// ConsumerAllocationList is a consumer and what it holds, provider by
// provider, in the order of provider uuid and class name.
type ConsumerAllocationList struct {
	// Consumer is nil when no such consumer exists.
	Consumer    *Consumer
	Allocations []AllocationRecord
}

// LastModified is the latest write among allocations, zero if none.
func LastModified(allocs []AllocationRecord) time.Time {
	var t time.Time
	for _, a := range allocs {
		if a.UpdatedAt.After(t) {
			t = a.UpdatedAt
		}
	}
	return t
}

const selectAllocations = `
	SELECT rp.uuid::text, rp.generation, c.uuid::text, c.generation, rc.name, a.used, a.updated_at
	FROM allocations a
	JOIN resource_providers rp ON rp.id = a.resource_provider_id
	JOIN consumers c ON c.id = a.consumer_id
	JOIN resource_classes rc ON rc.id = a.resource_class_id
`

func scanAllocations(rows pgx.Rows) ([]AllocationRecord, error) {
	var out []AllocationRecord
	var a AllocationRecord
	_, err := pgx.ForEachRow(rows, []any{&a.ProviderUUID, &a.ProviderGeneration, &a.ConsumerUUID,
		&a.ConsumerGeneration, &a.ResourceClass, &a.Used, &a.UpdatedAt}, func() error {
		out = append(out, a)
		return nil
	})
	return out, err
}

// AllocationsByConsumer returns a consumer and its allocations. A consumer
// that does not exist (or a string that is not a UUID) has none.
func (s *Allocations) AllocationsByConsumer(ctx context.Context, consumerUUID string) (ConsumerAllocationList, error) {
	var out ConsumerAllocationList
	id, ok := core.StoredUUID(consumerUUID)
	if !ok {
		return out, nil
	}
	err := s.core.WithTx(ctx, func(t *core.Txn) error {
		out = ConsumerAllocationList{}
		var c Consumer
		err := t.QueryRow(ctx, `
			SELECT c.uuid::text, p.external_id, u.external_id, c.generation, COALESCE(ct.name, $2)
			FROM consumers c
			JOIN projects p ON p.id = c.project_id
			JOIN users u ON u.id = c.user_id
			LEFT JOIN consumer_types ct ON ct.id = c.consumer_type_id
			WHERE c.uuid = $1`, id, UnknownConsumerType).
			Scan(&c.UUID, &c.ProjectID, &c.UserID, &c.Generation, &c.Type)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		out.Consumer = &c
		rows, err := t.Query(ctx, selectAllocations+`WHERE c.uuid = $1 ORDER BY a.id`, id)
		if err != nil {
			return err
		}
		out.Allocations, err = scanAllocations(rows)
		return err
	})
	return out, err
}

// AllocationsByProvider returns a provider's generation and the
// allocations held on it, in the order of consumer uuid and class name.
func (s *Allocations) AllocationsByProvider(ctx context.Context, providerUUID string) (int64, []AllocationRecord, error) {
	var gen int64
	var out []AllocationRecord
	err := s.core.WithTx(ctx, func(t *core.Txn) error {
		ref, err := LookupProvider(ctx, t, providerUUID)
		if err != nil {
			return err
		}
		gen = ref.Generation
		rows, err := t.Query(ctx, selectAllocations+`WHERE a.resource_provider_id = $1 ORDER BY c.uuid, rc.name`, ref.ID)
		if err != nil {
			return err
		}
		out, err = scanAllocations(rows)
		return err
	})
	return gen, out, err
}

// AllocationsReplace replaces the allocations of one or more consumers in
// one transaction (PUT /allocations/{consumer_uuid}, POST /allocations):
// either every consumer gets exactly what it asks for or nothing changes.
// A consumer left without allocations is deleted. Every provider named in
// the request has its generation bumped, as do the providers of a consumer
// whose allocations are emptied, as in Placement.
//
// Rejections, in the order they are checked: a consumer generation
// mismatch (fault.ErrConflict, placement.concurrent_update); a provider that does
// not exist (fault.ErrInvalid); a resource class that does not exist
// (fault.ErrInvalid); a provider without inventory of a class, an amount outside
// min_unit/max_unit/step_size, or more than the capacity left (fault.ErrConflict).
func (s *Allocations) AllocationsReplace(ctx context.Context, consumers []ConsumerAllocations) error {
	return s.allocationsReplace(ctx, consumers, nil, nil) // claim_write.go
}

// AllocationsReplaceChecked is AllocationsReplace checked against q
// (quota_check.go): a write that would take a project past one of its limits
// is refused (fault.ErrForbidden, fault.CodeOverQuota) after the checks
// above, with nothing written.
func (s *Allocations) AllocationsReplaceChecked(ctx context.Context, consumers []ConsumerAllocations, q *quotas.Quota) error {
	return s.allocationsReplace(ctx, consumers, nil, q)
}

// replaceAllocationsGeneral is the general path of AllocationsReplace,
// in transaction t, checked against q (nil: no limits).
func (s *Allocations) replaceAllocationsGeneral(ctx context.Context, t *core.Txn, consumers []ConsumerAllocations, q *quotas.Quota) error {
	ws := slices.Clone(consumers)
	rows, err := prepareConsumers(ctx, t, ws)
	if err != nil {
		return err
	}
	plan, err := planAllocations(ctx, t, ws, rows)
	if err != nil {
		return err
	}
	if err := plan.lock(ctx, t); err != nil {
		return err
	}
	err = plan.clear(ctx, t)
	var uc *unknownClassError
	if errors.As(err, &uc) {
		return fault.Invalid("", "Unable to allocate inventory for consumer %s: No such resource class %s.", uc.consumer, uc.class)
	}
	if err != nil {
		return err
	}
	guard, err := s.countQuota(ctx, t, q, plan)
	if err != nil {
		return err
	}
	if err := plan.write(ctx, t); err != nil {
		return err
	}
	if err := guard.check(); err != nil {
		return err
	}
	return writeConsumerDetails(ctx, t, ws, rows)
}

// AllocationsDelete removes all of a consumer's allocations and the
// consumer. As in Placement, provider generations do not change.
func (s *Allocations) AllocationsDelete(ctx context.Context, consumerUUID string) error {
	return s.core.WithTx(ctx, func(t *core.Txn) error {
		noAllocs := fault.NotFound("No allocations for consumer '%s'", consumerUUID)
		id, ok := core.CanonicalUUID(consumerUUID)
		if !ok {
			return noAllocs
		}
		locked, err := LockConsumers(ctx, t, []string{id})
		if err != nil {
			return err
		}
		c := locked[id]
		if c == nil {
			return noAllocs
		}
		var providers []int64
		rows, err := t.Query(ctx, `SELECT DISTINCT resource_provider_id FROM allocations WHERE consumer_id = $1`, c.ID)
		if err != nil {
			return err
		}
		if providers, err = pgx.CollectRows(rows, pgx.RowTo[int64]); err != nil {
			return err
		}
		if len(providers) == 0 {
			return noAllocs
		}
		if _, err := lockProviders(ctx, t, providers); err != nil {
			return err
		}
		if _, err := t.Exec(ctx, releaseUsageSQL, c.ID); err != nil {
			return err
		}
		if _, err := t.Exec(ctx, deleteConsumerSQL, c.ID); err != nil {
			return err
		}
		t.Touch(providers...)
		return nil
	})
}

// deleteConsumerSQL deletes a consumer whose row the caller locked, and
// its allocations. Allocations have no foreign key to their consumer
// (migrations/0020): a consumer is deleted only here, with its
// allocations, or by allocPlan.write when it has none, both under its row
// lock, which every writer of a consumer's allocations holds (or
// created the consumer in the same statement: the claims' statements);
// so no allocation outlives its consumer
// (TestConsumerDeletesLeaveNoAllocations). The consumer's other rows go
// with it (ON DELETE CASCADE).
const deleteConsumerSQL = `
WITH a AS (DELETE FROM allocations WHERE consumer_id = $1)
DELETE FROM consumers WHERE id = $1`

// DeleteConsumer deletes, in t, a consumer whose row t has locked, and its
// allocations, locking their providers first and taking what it held out
// of its project's usage counters, as AllocationsDelete does.
func DeleteConsumer(ctx context.Context, t *core.Txn, consumerID int64) error {
	rows, err := t.Query(ctx, `SELECT DISTINCT resource_provider_id FROM allocations WHERE consumer_id = $1`, consumerID)
	if err != nil {
		return err
	}
	providers, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return err
	}
	if len(providers) > 0 {
		if _, err := lockProviders(ctx, t, providers); err != nil {
			return err
		}
	}
	// What it holds leaves its project's usage counters (quota_check.go).
	if _, err := t.Exec(ctx, releaseUsageSQL, consumerID); err != nil {
		return err
	}
	tag, err := t.Exec(ctx, deleteConsumerSQL, consumerID)
	if err != nil {
		return err
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("ledger: audit fix: consumer %d not deleted", consumerID)
	}
	t.Touch(providers...)
	return nil
}

// allocWrite is one allocation to write: used 0 marks a class of a
// consumer's current allocations that is being removed.
type allocWrite struct {
	consumer     int // index into allocPlan.consumers
	providerID   int64
	providerUUID string
	class        string
	classID      int32
	used         int64
}

// heldAlloc is an allocation a consumer of a plan holds before the write.
type heldAlloc struct {
	consumer     int // index into allocPlan.consumers
	providerID   int64
	providerUUID string
	class        string
	classID      int32
	used         int64
}

// allocPlan is a resolved allocation write, built before any allocation
// changes so that every rejection leaves the ledger as it was.
type allocPlan struct {
	requests  []ConsumerAllocations
	consumers []*ConsumerRow
	writes    []allocWrite
	// held are the consumers' current allocations, and oldProviders the
	// providers they are on.
	held         []heldAlloc
	oldProviders []int64
	// gens are the providers' generations once locked.
	gens map[int64]int64
}

// planAllocations resolves the providers named by each consumer's new
// allocations, in request order, and reads what the consumers hold now.
func planAllocations(ctx context.Context, t *core.Txn, ws []ConsumerAllocations, rows []*ConsumerRow) (*allocPlan, error) {
	p := &allocPlan{requests: ws, consumers: rows}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r.ID
	}
	index := make(map[int64]int, len(rows))
	for i, r := range rows {
		index[r.ID] = i
	}
	rs, err := t.Query(ctx, `
		SELECT a.consumer_id, a.resource_provider_id, rp.uuid::text, rc.name, a.resource_class_id, a.used
		FROM allocations a
		JOIN resource_providers rp ON rp.id = a.resource_provider_id
		JOIN resource_classes rc ON rc.id = a.resource_class_id
		WHERE a.consumer_id = ANY($1)
		ORDER BY a.id`, ids)
	if err != nil {
		return nil, err
	}
	var h heldAlloc
	var consumerID int64
	if _, err := pgx.ForEachRow(rs, []any{&consumerID, &h.providerID, &h.providerUUID, &h.class, &h.classID, &h.used}, func() error {
		h.consumer = index[consumerID]
		p.held = append(p.held, h)
		p.oldProviders = append(p.oldProviders, h.providerID)
		return nil
	}); err != nil {
		return nil, err
	}
	current := p.held

	resolved := map[string]ProviderRef{}
	for i, w := range ws {
		if len(w.Allocations) == 0 {
			// Emptied: its current allocations are written with used 0,
			// which removes them and still counts their providers as
			// changed.
			for _, h := range current {
				if h.consumer == i {
					p.writes = append(p.writes, allocWrite{consumer: i, providerID: h.providerID,
						providerUUID: h.providerUUID, class: h.class, classID: h.classID})
				}
			}
			continue
		}
		for _, pr := range w.Allocations {
			ref, ok := resolved[pr.ProviderUUID]
			if !ok {
				var err error
				ref, err = LookupProvider(ctx, t, pr.ProviderUUID)
				if errors.Is(err, fault.ErrNotFound) {
					return nil, fault.New(fault.ErrUnknownProvider, "", "Allocation for resource provider '%s' that does not exist.", pr.ProviderUUID)
				}
				if err != nil {
					return nil, err
				}
				resolved[pr.ProviderUUID] = ref
			}
			for _, r := range pr.Resources {
				p.writes = append(p.writes, allocWrite{consumer: i, providerID: ref.ID,
					providerUUID: pr.ProviderUUID, class: r.Class, used: r.Amount})
			}
		}
	}
	return p, nil
}

// providerIDs lists every provider the plan changes: those written to and
// those the consumers held allocations on.
func (p *allocPlan) providerIDs() []int64 {
	ids := slices.Clone(p.oldProviders)
	for _, w := range p.writes {
		ids = append(ids, w.providerID)
	}
	return ids
}

// lock takes the row locks of every provider the plan changes.
func (p *allocPlan) lock(ctx context.Context, t *core.Txn) error {
	gens, err := lockProviders(ctx, t, p.providerIDs())
	if err != nil {
		return err
	}
	p.gens = gens
	for _, w := range p.writes {
		if _, ok := gens[w.providerID]; !ok {
			// Deleted since it was resolved.
			return fault.New(fault.ErrUnknownProvider, "", "Allocation for resource provider '%s' that does not exist.", w.providerUUID)
		}
	}
	return nil
}

// unknownClassError: an allocation names a class that does not exist.
// Callers word it per operation.
type unknownClassError struct {
	consumer string
	class    string
}

func (e *unknownClassError) Error() string { return "No such resource class " + e.class + "." }

// invKey identifies an inventory.
type invKey struct {
	provider int64
	class    int32
}

// clear resolves the plan's classes, deletes its consumers' allocations
// and checks the new ones against what their providers hold without them
// (checkCapacity). The caller holds the row locks of every provider
// involved (lock), so the capacity seen here cannot change before commit.
func (p *allocPlan) clear(ctx context.Context, t *core.Txn) error {
	if err := p.resolveClasses(ctx, t); err != nil {
		return err
	}
	if _, err := t.Exec(ctx, `DELETE FROM allocations WHERE consumer_id = ANY($1)`, p.consumerIDs()); err != nil {
		return err
	}
	return p.checkCapacity(ctx, t)
}

// write writes the plan's allocations, after clear, once the plan is
// counted in its projects' usage counters (countQuota, quota_check.go):
// the new allocations, the generations, and the delete of consumers left
// with nothing.
func (p *allocPlan) write(ctx context.Context, t *core.Txn) error {
	if err := p.insert(ctx, t); err != nil {
		return err
	}
	if err := p.bumpGenerations(ctx, t); err != nil {
		return err
	}
	// Consumers left with nothing are deleted, as in Placement: checked
	// under their row locks (prepareConsumers), in a statement after them
	// (deleteConsumerSQL).
	if _, err := t.Exec(ctx, `
		DELETE FROM consumers c WHERE c.id = ANY($1)
		AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = c.id)`, p.consumerIDs()); err != nil {
		return err
	}
	t.Touch(p.providerIDs()...)
	return nil
}

// consumerIDs lists the ids of the plan's consumers.
func (p *allocPlan) consumerIDs() []int64 {
	ids := make([]int64, len(p.consumers))
	for i, c := range p.consumers {
		ids[i] = c.ID
	}
	return ids
}

// resolveClasses sets the class id of every write, resolved in request
// order; a class that does not exist is an *unknownClassError.
func (p *allocPlan) resolveClasses(ctx context.Context, t *core.Txn) error {
	var names []string
	for _, w := range p.writes {
		if w.used > 0 {
			names = append(names, w.class)
		}
	}
	ids, unknown, err := classIDs(ctx, t, names)
	if err != nil {
		return err
	}
	if unknown != "" {
		for _, w := range p.writes {
			if w.class == unknown {
				return &unknownClassError{consumer: p.requests[w.consumer].ConsumerUUID, class: unknown}
			}
		}
	}
	for i := range p.writes {
		if w := &p.writes[i]; w.used > 0 {
			w.classID = ids[w.class]
		}
	}
	return nil
}

// insert inserts the plan's allocations, in one statement.
func (p *allocPlan) insert(ctx context.Context, t *core.Txn) error {
	var insC, insP []int64
	var insRC []int32
	var insUsed []int64
	for _, w := range p.writes {
		if w.used == 0 {
			continue
		}
		insC = append(insC, p.consumers[w.consumer].ID)
		insP = append(insP, w.providerID)
		insRC = append(insRC, w.classID)
		insUsed = append(insUsed, w.used)
	}
	if len(insC) == 0 {
		return nil
	}
	_, err := t.Exec(ctx, `
		INSERT INTO allocations (consumer_id, resource_provider_id, resource_class_id, used)
		SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::bigint[])`,
		insC, insP, insRC, insUsed)
	return err
}

// bumpGenerations gives every provider the writes name a new generation,
// once, and writes what the request says about its consumers (project,
// user, type), with a new generation for those the writes name.
func (p *allocPlan) bumpGenerations(ctx context.Context, t *core.Txn) error {
	var bumped []int64
	visited := map[int]bool{}
	for _, w := range p.writes {
		visited[w.consumer] = true
		if !slices.Contains(bumped, w.providerID) {
			bumped = append(bumped, w.providerID)
		}
	}
	slices.Sort(bumped)
	if len(bumped) > 0 {
		if _, err := t.Exec(ctx, `
			UPDATE resource_providers SET generation = generation + 1, updated_at = now()
			WHERE id = ANY($1)`, bumped); err != nil {
			return err
		}
	}
	var cIDs, cInc []int64
	var cProj, cUser []int32
	var cType []*int32
	for i, c := range p.consumers {
		inc := int64(0)
		if visited[i] {
			inc = 1
		}
		cIDs, cInc = append(cIDs, c.ID), append(cInc, inc)
		cProj, cUser, cType = append(cProj, c.projectID), append(cUser, c.userID), append(cType, c.typeID)
	}
	_, err := t.Exec(ctx, `
		UPDATE consumers c SET generation = c.generation + v.inc, project_id = v.project_id,
		       user_id = v.user_id, consumer_type_id = v.type_id, updated_at = now()
		FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::int[], $5::int[])
		     AS v(id, inc, project_id, user_id, type_id)
		WHERE c.id = v.id`, cIDs, cInc, cProj, cUser, cType)
	return err
}

// checkCapacity refuses writes that a provider's inventory cannot take,
// with Placement's wording and in its order: a provider with no inventory
// of any class asked for; then, allocation by allocation, a class the
// provider has no inventory of, an amount outside min_unit, max_unit or
// step_size, or more than the capacity left (counting what the same
// request already takes). The consumers' old allocations are already
// deleted, so they do not count against the new ones.
func (p *allocPlan) checkCapacity(ctx context.Context, t *core.Txn) error {
	var providers []int64
	var classes []int32
	var askedIDs []int64
	className := map[int64]string{}
	for _, w := range p.writes {
		providers = append(providers, w.providerID)
		if !slices.Contains(classes, w.classID) {
			classes = append(classes, w.classID)
			askedIDs = append(askedIDs, int64(w.classID))
			className[int64(w.classID)] = w.class
		}
	}
	// Placement names the classes of a provider without inventory in the
	// iteration order of a Python set of their ids.
	var classNames []string
	for _, id := range pySetOrder(askedIDs) {
		classNames = append(classNames, className[id])
	}
	if len(providers) == 0 {
		return nil
	}
	type inv struct {
		engine.Inventory
		used int64
	}
	rows, err := t.Query(ctx, `
		SELECT i.resource_provider_id, i.resource_class_id, i.total, i.reserved, i.min_unit,
		       i.max_unit, i.step_size, i.allocation_ratio,
		       COALESCE((SELECT sum(a.used) FROM allocations a
		                 WHERE a.resource_provider_id = i.resource_provider_id
		                   AND a.resource_class_id = i.resource_class_id), 0)::bigint
		FROM inventories i
		WHERE i.resource_provider_id = ANY($1) AND i.resource_class_id = ANY($2)`, providers, classes)
	if err != nil {
		return err
	}
	invs := map[invKey]*inv{}
	withInv := map[int64]bool{}
	var k invKey
	var v inv
	if _, err := pgx.ForEachRow(rows, []any{&k.provider, &k.class, &v.Total, &v.Reserved, &v.MinUnit,
		&v.MaxUnit, &v.StepSize, &v.AllocationRatio, &v.used}, func() error {
		row := v
		invs[k] = &row
		withInv[k.provider] = true
		return nil
	}); err != nil {
		return err
	}

	var missing []string
	for _, w := range p.writes {
		if !withInv[w.providerID] && !slices.Contains(missing, w.providerUUID) {
			missing = append(missing, w.providerUUID)
		}
	}
	if len(missing) > 0 {
		return cannotAllocate("Inventory for '%s' on resource provider '%s' invalid.",
			strings.Join(classNames, ", "), strings.Join(missing, ", "))
	}
	taken := map[invKey]int64{}
	for _, w := range p.writes {
		if w.used == 0 {
			continue
		}
		key := invKey{w.providerID, w.classID}
		in, ok := invs[key]
		if !ok {
			return cannotAllocate("Inventory for '%s' on resource provider '%s' invalid.", w.class, w.providerUUID)
		}
		if w.used < in.MinUnit || w.used > in.MaxUnit || w.used%in.StepSize != 0 {
			return cannotAllocate("Unable to create allocation for '%s' on resource provider '%s'. "+
				"The requested amount would violate inventory constraints.", w.class, w.providerUUID)
		}
		taken[key] += w.used
		if float64(in.used)+float64(taken[key]) > in.Capacity() {
			return cannotAllocate("Unable to create allocation for '%s' on resource provider '%s'. "+
				"The requested amount would exceed the capacity.", w.class, w.providerUUID)
		}
	}
	return nil
}

func cannotAllocate(format string, args ...any) error {
	return fault.Conflict("", "Unable to allocate inventory: %s", fmt.Sprintf(format, args...))
}
