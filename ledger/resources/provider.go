package resources

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/uuid"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/jackc/pgx/v5"
)

// Providers are Placement's resource providers and what they carry:
// their trees, inventories, traits and aggregates, the resource classes
// and traits themselves, and what is used of them. It is safe for
// concurrent use.
type Providers struct {
	core *core.Core
	// trips group-commits the provider writes sent as one pipeline
	// (provider_writers.go); nil when every write goes alone.
	trips *core.GroupWriter[oneTrip, struct{}]
	// generalWrites, set by tests only, sends every provider write by its
	// general path (provider_pipeline.go), to compare the two.
	generalWrites bool
	// fastWrites counts the provider writes a pipeline committed.
	fastWrites atomic.Int64
	// knownAggregates holds the canonical uuids of the aggregates these
	// Providers have linked a provider to (provider_pipeline.go): a write
	// that names only those need not create any. Aggregates are few.
	knownAggregates sync.Map
}

// NewProviders returns the Providers of co, with writers provider writers
// (provider_writers.go) running on bg (co.Wait waits for them); writers
// <= 0 sends every provider write alone.
func NewProviders(bg context.Context, co *core.Core, writers int) *Providers {
	s := &Providers{core: co}
	if writers > 0 {
		s.trips = s.startTripWriter(bg, writers)
	}
	return s
}

// WriterStats reports the provider writers' work: how many groups they
// sent, how many writes those held, and how many writes wait for them
// now.
func (s *Providers) WriterStats() (groups, writes int64, queued int) {
	if s.trips == nil {
		return 0, 0, 0
	}
	return s.trips.Groups.Load(), s.trips.Items.Load(), s.trips.Queued()
}

// providerSelect reads resource providers in the column order scanProvider
// expects. Callers append a WHERE and ORDER BY clause written against the
// alias rp; the list endpoint reuses it with its own filters.
const providerSelect = `
SELECT rp.id, rp.uuid::text, rp.name, rp.generation,
       COALESCE(parent.uuid::text, ''), root.uuid::text,
       rp.created_at, rp.updated_at
FROM resource_providers rp
JOIN resource_providers root ON root.id = rp.root_provider_id
LEFT JOIN resource_providers parent ON parent.id = rp.parent_provider_id`

// scanProvider scans one row read with providerSelect.
func scanProvider(row pgx.Row) (engine.Provider, error) {
	var p engine.Provider
	err := row.Scan(&p.ID, &p.UUID, &p.Name, &p.Generation, &p.ParentUUID, &p.RootUUID, &p.CreatedAt, &p.UpdatedAt)
	return p, err
}

// collectProviders scans every row read with providerSelect and closes rows.
func collectProviders(rows pgx.Rows) ([]engine.Provider, error) {
	defer rows.Close()
	var out []engine.Provider
	for rows.Next() {
		p, err := scanProvider(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// ProviderGet returns the provider with this uuid, or fault.ErrNotFound.
func (s *Providers) ProviderGet(ctx context.Context, uuid string) (engine.Provider, error) {
	return providerGet(ctx, s.core.DB, uuid)
}

func providerGet(ctx context.Context, q core.Querier, uuid string) (engine.Provider, error) {
	canon, ok := core.StoredUUID(uuid)
	if !ok {
		return engine.Provider{}, ProviderNotFound(uuid)
	}
	p, err := scanProvider(q.QueryRow(ctx, providerSelect+` WHERE rp.uuid = $1`, canon))
	if errors.Is(err, pgx.ErrNoRows) {
		return engine.Provider{}, ProviderNotFound(uuid)
	}
	if err != nil {
		return engine.Provider{}, fmt.Errorf("ledger: get provider: %w", err)
	}
	return p, nil
}

// ProvidersByID returns the providers with these row ids, ordered by id.
// Ids that do not exist (any more) are left out.
func (s *Providers) ProvidersByID(ctx context.Context, ids []int64) ([]engine.Provider, error) {
	rows, err := s.core.DB.Query(ctx, providerSelect+` WHERE rp.id = ANY($1) ORDER BY rp.id`, ids)
	if err != nil {
		return nil, fmt.Errorf("ledger: get providers: %w", err)
	}
	ps, err := collectProviders(rows)
	if err != nil {
		return nil, fmt.Errorf("ledger: get providers: %w", err)
	}
	return ps, nil
}

// ProviderCreateParams describes a new resource provider.
type ProviderCreateParams struct {
	// UUID is the provider's uuid in any form Placement accepts; empty
	// means a new random uuid.
	UUID string
	Name string
	// ParentUUID makes the provider a child of an existing provider; empty
	// means a new root provider.
	ParentUUID string
}

// ProviderCreate creates a resource provider with generation 0 and returns
// it. A duplicate uuid or name is fault.ErrConflict (fault.CodeDuplicateName); a parent
// that is the provider itself or does not exist is fault.ErrInvalid.
func (s *Providers) ProviderCreate(ctx context.Context, params ProviderCreateParams) (engine.Provider, error) {
	rpUUID := uuid.New()
	if params.UUID != "" {
		var ok bool
		if rpUUID, ok = core.CanonicalUUID(params.UUID); !ok {
			return engine.Provider{}, fault.Invalid("", "Invalid resource provider uuid %s", params.UUID)
		}
	}
	refuse := func(reason string) error {
		return fault.Invalid("", `Unable to create resource provider "%s", %s: Object action create failed because: %s`,
			params.Name, rpUUID, reason)
	}
	var parentUUID string
	if params.ParentUUID != "" {
		var ok bool
		// Placement finds the parent by comparing the uuid as written:
		// another spelling of an existing uuid finds nothing.
		parentUUID, ok = core.StoredUUID(params.ParentUUID)
		if !ok {
			return engine.Provider{}, refuse("parent provider UUID does not exist.")
		}
		if parentUUID == rpUUID {
			return engine.Provider{}, refuse("parent provider UUID cannot be same as UUID. " +
				"Please set parent provider UUID to None if there is no parent.")
		}
	}

	if parentUUID == "" {
		p, err := s.providerCreateFast(ctx, rpUUID, params.Name)
		if !errors.Is(err, errFallBack) {
			return p, err
		}
	}
	var p engine.Provider
	err := s.core.WithTx(ctx, func(t *core.Txn) error {
		var parentID, rootID *int64
		if parentUUID != "" {
			id, ok, err := providerID(ctx, t, parentUUID)
			if err != nil {
				return err
			}
			if !ok {
				return refuse("parent provider UUID does not exist.")
			}
			roots, err := lockTrees(ctx, t, id)
			if errors.Is(err, errProviderGone) {
				return refuse("parent provider UUID does not exist.")
			}
			if err != nil {
				return err
			}
			parentID, rootID = &id, &roots[0]
		}
		// A name and a uuid both taken: Placement's insert trips over the
		// name first (the order of its unique indexes), so check it first.
		var nameTaken bool
		if err := t.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM resource_providers WHERE name = $1)`, params.Name).Scan(&nameTaken); err != nil {
			return fmt.Errorf("ledger: check provider name: %w", err)
		}
		if nameTaken {
			return fault.Conflict(fault.CodeDuplicateName, "Conflicting resource provider name: %s already exists.", params.Name)
		}
		var id int64
		err := t.QueryRow(ctx, `
			INSERT INTO resource_providers (id, uuid, name, parent_provider_id, root_provider_id)
			SELECT n.id, $1, $2, $3, COALESCE($4, n.id)
			FROM (SELECT nextval(pg_get_serial_sequence('resource_providers', 'id')) AS id) n
			RETURNING id`, rpUUID, params.Name, parentID, rootID).Scan(&id)
		if constraint, ok := core.UniqueViolation(err); ok {
			if constraint == "resource_providers_uuid_key" {
				return fault.Conflict(fault.CodeDuplicateName, "Conflicting resource provider uuid: %s already exists.", rpUUID)
			}
			return fault.Conflict(fault.CodeDuplicateName, "Conflicting resource provider name: %s already exists.", params.Name)
		}
		if _, ok := core.ForeignKeyViolation(err); ok {
			// The parent was deleted after we locked its tree's root.
			return refuse("parent provider UUID does not exist.")
		}
		if err != nil {
			return fmt.Errorf("ledger: create provider: %w", err)
		}
		if p, err = scanProvider(t.QueryRow(ctx, providerSelect+` WHERE rp.id = $1`, id)); err != nil {
			return fmt.Errorf("ledger: read new provider: %w", err)
		}
		t.Touch(id)
		if parentID != nil {
			t.Touch(*parentID)
		}
		return nil
	})
	return p, err
}

// ProviderUpdateParams describes a change to a resource provider. Fields
// left at their zero value are not changed.
type ProviderUpdateParams struct {
	// Name, when not nil, renames the provider.
	Name *string
	// SetParent says the request names the parent: ParentUUID, or no parent
	// at all when ParentUUID is empty.
	SetParent  bool
	ParentUUID string
	// AllowReparent permits moving a provider that has a parent to another
	// parent, or making it a root (microversion 1.37). Giving a root
	// provider a parent is always allowed.
	AllowReparent bool
}

// ProviderUpdate renames and/or re-parents the provider with this uuid and
// returns it. It does not change the provider's generation, as Placement
// does not. Moving a provider moves its whole subtree: every descendant
// gets the new root. A duplicate name is fault.ErrConflict (fault.CodeDuplicateName);
// a missing parent, a forbidden re-parent and a loop are fault.ErrInvalid.
func (s *Providers) ProviderUpdate(ctx context.Context, rpUUID string, params ProviderUpdateParams) (engine.Provider, error) {
	refuse := func(action, reason string) error {
		return fault.Invalid("", "Unable to save resource provider %s: Object action %s failed because: %s",
			rpUUID, action, reason)
	}
	var parentUUID string
	if params.SetParent && params.ParentUUID != "" {
		var ok bool
		if parentUUID, ok = core.StoredUUID(params.ParentUUID); !ok { // compared as written, as on create
			return engine.Provider{}, refuse("create", "parent provider UUID does not exist.")
		}
	}

	var p engine.Provider
	err := s.core.WithTx(ctx, func(t *core.Txn) error {
		ref, err := LookupProvider(ctx, t, rpUUID)
		if err != nil {
			return err
		}
		if params.SetParent {
			if err := reparent(ctx, t, ref.ID, parentUUID, params.AllowReparent, refuse); err != nil {
				return err
			}
		}
		if params.Name != nil {
			_, err := t.Exec(ctx, `UPDATE resource_providers SET name = $2 WHERE id = $1`, ref.ID, *params.Name)
			if _, ok := core.UniqueViolation(err); ok {
				// Placement's update words it differently from its create.
				return fault.Conflict(fault.CodeDuplicateName, "Conflicting resource provider %s already exists.", *params.Name)
			}
			if err != nil {
				return fmt.Errorf("ledger: rename provider: %w", err)
			}
		}
		if _, err := t.Exec(ctx, `UPDATE resource_providers SET updated_at = now() WHERE id = $1`, ref.ID); err != nil {
			return fmt.Errorf("ledger: update provider: %w", err)
		}
		if p, err = scanProvider(t.QueryRow(ctx, providerSelect+` WHERE rp.id = $1`, ref.ID)); err != nil {
			return fmt.Errorf("ledger: read updated provider: %w", err)
		}
		t.Touch(ref.ID)
		return nil
	})
	return p, err
}

// reparent makes parentUUID (empty: none) the parent of provider id, with
// Placement's rules: before microversion 1.37 an existing parent cannot be
// changed or removed; the new parent must exist and must not be the
// provider or one of its descendants. It locks the trees involved and
// moves the provider's subtree to the new parent's root.
func reparent(ctx context.Context, t *core.Txn, id int64, parentUUID string, allow bool,
	refuse func(action, reason string) error) error {
	var oldParent *int64
	if err := t.QueryRow(ctx, `SELECT parent_provider_id FROM resource_providers WHERE id = $1`, id).
		Scan(&oldParent); err != nil {
		return fmt.Errorf("ledger: read provider parent: %w", err)
	}
	var newParent *int64
	if parentUUID != "" {
		pid, ok, err := providerID(ctx, t, parentUUID)
		if err != nil {
			return err
		}
		if !ok {
			return refuse("create", "parent provider UUID does not exist.")
		}
		newParent = &pid
	}
	// checkChange applies the rules that depend only on the old and new
	// parent; it runs once unlocked, so that the common no-change case
	// takes no lock, and again once the trees are locked.
	checkChange := func() (change bool, err error) {
		switch {
		case newParent == nil && oldParent == nil,
			newParent != nil && oldParent != nil && *newParent == *oldParent:
			return false, nil
		case newParent == nil && !allow:
			return false, refuse("update", "un-parenting a provider is not currently allowed.")
		case oldParent != nil && !allow:
			return false, refuse("update", "re-parenting a provider is not currently allowed.")
		}
		return true, nil
	}
	if change, err := checkChange(); !change || err != nil {
		return err
	}

	lockIDs := []int64{id}
	if newParent != nil {
		lockIDs = append(lockIDs, *newParent)
	}
	roots, err := lockTrees(ctx, t, lockIDs...)
	if errors.Is(err, errProviderGone) {
		return refuse("create", "parent provider UUID does not exist.")
	}
	if err != nil {
		return err
	}
	// Reread the parent now that the trees are locked: it may have changed
	// while we waited.
	if err := t.QueryRow(ctx, `SELECT parent_provider_id FROM resource_providers WHERE id = $1`, id).
		Scan(&oldParent); err != nil {
		return fmt.Errorf("ledger: read provider parent: %w", err)
	}
	if change, err := checkChange(); !change || err != nil {
		return err
	}
	subtree, err := descendants(ctx, t, id)
	if err != nil {
		return err
	}
	newRoot := id
	if newParent != nil {
		if slices.Contains(subtree, *newParent) {
			return refuse("update", "creating loop in the provider tree is not allowed.")
		}
		newRoot = roots[1]
	}
	if _, err := t.Exec(ctx, `UPDATE resource_providers SET parent_provider_id = $2 WHERE id = $1`,
		id, newParent); err != nil {
		return fmt.Errorf("ledger: set provider parent: %w", err)
	}
	if _, err := t.Exec(ctx, `UPDATE resource_providers SET root_provider_id = $2 WHERE id = ANY($1)`,
		subtree, newRoot); err != nil {
		return fmt.Errorf("ledger: set subtree root: %w", err)
	}
	t.Touch(subtree...)
	if oldParent != nil {
		t.Touch(*oldParent)
	}
	if newParent != nil {
		t.Touch(*newParent)
	}
	return nil
}

// ProviderDelete deletes the provider with this uuid, with its inventories,
// traits and aggregate links. A provider that has allocations
// (fault.CodeProviderInUse) or children (fault.CodeProviderCannotDelete) is fault.ErrConflict.
func (s *Providers) ProviderDelete(ctx context.Context, rpUUID string) error {
	inUse := func() error {
		return fault.Conflict(fault.CodeProviderInUse, "Unable to delete resource provider %s: Resource provider has allocations.", rpUUID)
	}
	hasChildren := func() error {
		return fault.Conflict(fault.CodeProviderCannotDelete,
			"Unable to delete parent resource provider %s: It has child resource providers.", rpUUID)
	}
	if err := s.providerDeleteFast(ctx, rpUUID); !errors.Is(err, errFallBack) {
		return err
	}
	return s.core.WithTx(ctx, func(t *core.Txn) error {
		ref, err := LookupProvider(ctx, t, rpUUID)
		if errors.Is(err, fault.ErrNotFound) {
			return fault.NotFound("No resource provider with uuid %s found for delete", rpUUID)
		}
		if err != nil {
			return err
		}
		var parent *int64
		err = t.QueryRow(ctx, `SELECT parent_provider_id FROM resource_providers WHERE id = $1 FOR UPDATE`,
			ref.ID).Scan(&parent)
		if errors.Is(err, pgx.ErrNoRows) {
			return fault.NotFound("No resource provider with uuid %s found for delete", rpUUID)
		}
		if err != nil {
			return fmt.Errorf("ledger: lock provider before delete: %w", err)
		}
		// Checked in a statement of its own, after the lock: its snapshot
		// holds every allocation committed on the provider, as every
		// writer of allocations holds the provider's lock until it
		// commits. (A check in the locking statement would read the
		// snapshot it took before waiting for that lock.) Allocations
		// have no foreign key to their provider (migrations/0020): this
		// check, and providerDeleteFastSQL's, are what keeps a provider
		// with allocations (TestProviderDeleteRacesClaims).
		var allocated, parenting bool
		err = t.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM allocations WHERE resource_provider_id = $1),
			       EXISTS (SELECT 1 FROM resource_providers WHERE parent_provider_id = $1)`, ref.ID).Scan(&allocated, &parenting)
		if err != nil {
			return fmt.Errorf("ledger: check provider before delete: %w", err)
		}
		// Children first, as Placement's ResourceProvider._delete checks.
		if parenting {
			return hasChildren()
		}
		if allocated {
			return inUse()
		}
		// Inventories, trait and aggregate links go with the provider
		// (ON DELETE CASCADE). A child that appeared since the check
		// above makes the delete fail on its foreign key.
		_, err = t.Exec(ctx, `DELETE FROM resource_providers WHERE id = $1`, ref.ID)
		if _, ok := core.ForeignKeyViolation(err); ok {
			return hasChildren()
		}
		if err != nil {
			return fmt.Errorf("ledger: delete provider: %w", err)
		}
		t.Touch(ref.ID)
		if parent != nil {
			t.Touch(*parent)
		}
		return nil
	})
}

// providerID returns the row id of the provider with this canonical uuid.
func providerID(ctx context.Context, q core.Querier, canonUUID string) (id int64, ok bool, err error) {
	err = q.QueryRow(ctx, `SELECT id FROM resource_providers WHERE uuid = $1`, canonUUID).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("ledger: look up provider: %w", err)
	}
	return id, true, nil
}

// errProviderGone: a provider vanished while lockTrees worked.
var errProviderGone = errors.New("ledger: provider deleted concurrently")

// maxTreeLockAttempts bounds how often lockTrees rereads roots that moved.
const maxTreeLockAttempts = 5

// lockTrees locks the root rows (FOR UPDATE) of the trees the providers
// with these ids belong to, and returns each provider's root id in the
// same order. Every change of a tree's shape (a new child, a re-parent)
// takes this lock first, so such changes are serialised per tree and the
// root ids returned stay true until the transaction ends. Roots are locked
// in id order so that two transactions locking the same trees cannot
// deadlock. A provider that no longer exists yields errProviderGone.
func lockTrees(ctx context.Context, t *core.Txn, ids ...int64) ([]int64, error) {
	readRoots := func() ([]int64, error) {
		roots := make([]int64, len(ids))
		for i, id := range ids {
			err := t.QueryRow(ctx, `SELECT root_provider_id FROM resource_providers WHERE id = $1`, id).Scan(&roots[i])
			if errors.Is(err, pgx.ErrNoRows) {
				return nil, errProviderGone
			}
			if err != nil {
				return nil, fmt.Errorf("ledger: read provider root: %w", err)
			}
		}
		return roots, nil
	}
	roots, err := readRoots()
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		sorted := slices.Clone(roots)
		slices.Sort(sorted)
		if _, err := t.Exec(ctx, `
			SELECT id FROM resource_providers WHERE id = ANY($1) ORDER BY id FOR UPDATE`, sorted); err != nil {
			return nil, fmt.Errorf("ledger: lock provider trees: %w", err)
		}
		again, err := readRoots()
		if err != nil {
			return nil, err
		}
		if slices.Equal(again, roots) {
			return roots, nil
		}
		if attempt == maxTreeLockAttempts {
			return nil, fault.Conflict(fault.CodeConcurrentUpdate, "Provider tree changed concurrently, please retry.")
		}
		roots = again
	}
}

// descendants returns the id of provider id and of all its descendants.
func descendants(ctx context.Context, q core.Querier, id int64) ([]int64, error) {
	rows, err := q.Query(ctx, `
		WITH RECURSIVE sub(id) AS (
			SELECT id FROM resource_providers WHERE id = $1
			UNION
			SELECT rp.id FROM resource_providers rp JOIN sub ON rp.parent_provider_id = sub.id
		)
		SELECT id FROM sub`, id)
	if err != nil {
		return nil, fmt.Errorf("ledger: read subtree: %w", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, fmt.Errorf("ledger: read subtree: %w", err)
	}
	return ids, nil
}

// ProviderNotFound is the fault.ErrProviderNotFound of the provider with
// this uuid, in the object layer's words.
func ProviderNotFound(uuid string) error {
	return &fault.Error{Kind: fault.ErrProviderNotFound, Msg: fmt.Sprintf("No resource provider with uuid %s found", uuid)}
}

// resourceClassNotFound is the fault.ErrClassNotFound of the class with this
// name, in the object layer's words.
func resourceClassNotFound(name string) error {
	return &fault.Error{Kind: fault.ErrClassNotFound, Msg: fmt.Sprintf("No such resource class %s.", name)}
}

// ProviderRef is a provider's row id and generation, as read for a write.
type ProviderRef struct {
	ID         int64
	Generation int64
}

// LookupProvider finds a provider by uuid. A missing provider, or a uuid
// that is not a UUID at all, is reported as fault.ErrNotFound with Placement's
// wording.
func LookupProvider(ctx context.Context, q core.Querier, uuid string) (ProviderRef, error) {
	var ref ProviderRef
	canon, ok := core.StoredUUID(uuid)
	if !ok {
		return ref, ProviderNotFound(uuid)
	}
	err := q.QueryRow(ctx, `SELECT id, generation FROM resource_providers WHERE uuid = $1`, canon).
		Scan(&ref.ID, &ref.Generation)
	if errors.Is(err, pgx.ErrNoRows) {
		return ref, ProviderNotFound(uuid)
	}
	return ref, err
}
