package resources

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/jackc/pgx/v5"
)

// IncompleteConsumerID is the project and user recorded for consumers
// written without them (microversions before 1.8), as Placement's
// incomplete_consumer_project_id and incomplete_consumer_user_id defaults.
const IncompleteConsumerID = "00000000-0000-0000-0000-000000000000"

// UnknownConsumerType is the type reported for consumers written without
// one (microversions before 1.38).
const UnknownConsumerType = "unknown"

// MigrationConsumerType is the type of a consumer that holds the source
// allocations of a move: the type Nova gives its migration consumers
// (microversion 1.38), and the one claims' Move gives its own. The audit
// reads it (ledger/audit/audit.go).
const MigrationConsumerType = "MIGRATION"

// Consumer is something that holds allocations: an instance, a migration.
type Consumer struct {
	UUID       string
	ProjectID  string
	UserID     string
	Generation int64
	// Type is UnknownConsumerType when the consumer was written without one.
	Type string
}

// ConsumerRow is a consumer as locked for a write: projectID, userID and
// typeID as the write leaves them (prepareConsumers), oldProjectID as it
// was (0 for a consumer the write creates).
type ConsumerRow struct {
	ID         int64
	UUID       string
	Generation int64
	projectID  int32
	userID     int32
	typeID     *int32
	// migration: its type is MIGRATION (as locked). oldProjectID,
	// oldCounts and counts say what its allocations counted toward before
	// the write and count toward after it (quota_check.go: a migration
	// consumer's count toward nothing).
	migration    bool
	oldProjectID int32
	oldCounts    bool
	counts       bool
}

// No statement deletes a project, a user or a consumer type: consumers
// hold their ids without foreign keys (migrations/0020), written only as
// namedIDs or a claim's statement (owner in fastWriteSQL, batchReadSQL)
// found them (TestOwnerRowsAreNeverDeleted).

// externalIDs gets or creates the rows of the given external ids in table
// (projects or users, never user input). Rows are inserted in sorted order
// (byte order, whatever the database's collation) so that concurrent
// writers wait for each other instead of deadlocking.
func externalIDs(ctx context.Context, t *core.Txn, table string, names []string) (map[string]int32, error) {
	return namedIDs(ctx, t, table, "external_id", names)
}

// consumerTypeIDs gets or creates consumer types by name.
func consumerTypeIDs(ctx context.Context, t *core.Txn, names []string) (map[string]int32, error) {
	return namedIDs(ctx, t, "consumer_types", "name", names)
}

// namedIDs gets or creates rows of table by a unique text column, in two
// statements whatever the number of names. table and column are constants
// of this package.
func namedIDs(ctx context.Context, t *core.Txn, table, column string, names []string) (map[string]int32, error) {
	names = slices.Clone(names)
	sort.Strings(names)
	names = slices.Compact(names)
	ids := make(map[string]int32, len(names))
	if len(names) == 0 {
		return ids, nil
	}
	if _, err := t.Exec(ctx, `
		INSERT INTO `+table+` (`+column+`)
		SELECT n FROM unnest($1::text[]) AS n ORDER BY n COLLATE "C"
		ON CONFLICT DO NOTHING`, names); err != nil {
		return nil, err
	}
	// A separate statement: it sees rows that concurrent writers committed
	// while the insert waited for them.
	rows, err := t.Query(ctx, `SELECT `+column+`, id FROM `+table+` WHERE `+column+` = ANY($1)`, names)
	if err != nil {
		return nil, err
	}
	var name string
	var id int32
	if _, err := pgx.ForEachRow(rows, []any{&name, &id}, func() error {
		ids[name] = id
		return nil
	}); err != nil {
		return nil, err
	}
	if len(ids) != len(names) {
		return nil, fmt.Errorf("ledger: %s: %d of %d rows after insert", table, len(ids), len(names))
	}
	return ids, nil
}

// LockConsumers locks the rows of the consumers that exist among uuids (in
// uuid order) and returns them by uuid.
func LockConsumers(ctx context.Context, t *core.Txn, uuids []string) (map[string]*ConsumerRow, error) {
	rows, err := t.Query(ctx, `
		SELECT c.id, c.uuid::text, c.generation, c.project_id, c.user_id, c.consumer_type_id, COALESCE(ct.name = $2, false)
		FROM consumers c LEFT JOIN consumer_types ct ON ct.id = c.consumer_type_id
		WHERE c.uuid = ANY($1::uuid[]) ORDER BY c.uuid FOR UPDATE OF c`, uuids, MigrationConsumerType)
	if err != nil {
		return nil, err
	}
	out := make(map[string]*ConsumerRow, len(uuids))
	var c ConsumerRow
	_, err = pgx.ForEachRow(rows, []any{&c.ID, &c.UUID, &c.Generation, &c.projectID, &c.userID, &c.typeID, &c.migration}, func() error {
		row := c
		out[row.UUID] = &row
		return nil
	})
	return out, err
}

// ConsumerGenerationConflict is Placement's wording of a consumer
// generation mismatch; got is nil for a client that expects no consumer.
func ConsumerGenerationConflict(expected *int64, got *int64) error {
	show := func(g *int64) string {
		if g == nil {
			return "None"
		}
		return fmt.Sprint(*g)
	}
	exp := "null"
	if expected != nil {
		exp = fmt.Sprint(*expected)
	}
	return fault.Conflict(fault.CodeConcurrentUpdate, "consumer generation conflict - expected %s but got %s", exp, show(got))
}

// checkConsumerGeneration applies the 1.28 rule: a client names the
// generation it last saw, or null for a consumer it believes is new.
func checkConsumerGeneration(w *ConsumerAllocations, row *ConsumerRow) error {
	if !w.CheckGeneration {
		return nil
	}
	if row == nil {
		if w.Generation != nil {
			return ConsumerGenerationConflict(nil, w.Generation)
		}
		return nil
	}
	if w.Generation == nil || *w.Generation != row.Generation {
		return ConsumerGenerationConflict(&row.Generation, w.Generation)
	}
	return nil
}

// prepareConsumers locks the consumers of a write, checks their
// generations in request order, and creates the ones that do not exist yet
// (generation 0, no allocations). It returns a row per request, in request
// order. Locks are taken in a fixed order (projects, users, types, then
// consumers by uuid) so that concurrent writers do not deadlock.
func prepareConsumers(ctx context.Context, t *core.Txn, ws []ConsumerAllocations) ([]*ConsumerRow, error) {
	var projects, users, types, uuids []string
	for i := range ws {
		w := &ws[i]
		id, ok := core.CanonicalUUID(w.ConsumerUUID)
		if !ok {
			return nil, fault.Invalid("", "Malformed consumer_uuid: %s", w.ConsumerUUID)
		}
		w.ConsumerUUID = id
		if w.ProjectID == "" {
			w.ProjectID = IncompleteConsumerID
		}
		if w.UserID == "" {
			w.UserID = IncompleteConsumerID
		}
		projects = append(projects, w.ProjectID)
		users = append(users, w.UserID)
		if w.ConsumerType != "" {
			types = append(types, w.ConsumerType)
		}
		uuids = append(uuids, w.ConsumerUUID)
	}
	projectIDs, err := externalIDs(ctx, t, "projects", projects)
	if err != nil {
		return nil, err
	}
	userIDs, err := externalIDs(ctx, t, "users", users)
	if err != nil {
		return nil, err
	}
	typeIDs, err := consumerTypeIDs(ctx, t, types)
	if err != nil {
		return nil, err
	}
	locked, err := LockConsumers(ctx, t, uuids)
	if err != nil {
		return nil, err
	}
	for i := range ws {
		if err := checkConsumerGeneration(&ws[i], locked[ws[i].ConsumerUUID]); err != nil {
			return nil, err
		}
	}

	// Create the missing consumers, in uuid order.
	order := make([]int, len(ws))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return ws[order[a]].ConsumerUUID < ws[order[b]].ConsumerUUID })
	for _, i := range order {
		w := &ws[i]
		if locked[w.ConsumerUUID] != nil {
			continue
		}
		row := &ConsumerRow{UUID: w.ConsumerUUID, projectID: projectIDs[w.ProjectID], userID: userIDs[w.UserID]}
		if w.ConsumerType != "" {
			id := typeIDs[w.ConsumerType]
			row.typeID = &id
		}
		row, err := createConsumer(ctx, t, row, w)
		if err != nil {
			return nil, err
		}
		locked[w.ConsumerUUID] = row
	}

	out := make([]*ConsumerRow, len(ws))
	for i := range ws {
		w := &ws[i]
		out[i] = locked[w.ConsumerUUID]
		out[i].take(w, projectIDs[w.ProjectID], userIDs[w.UserID], typeIDs)
	}
	return out, nil
}

// createAttempts bounds createConsumer's attempts: each one that fails
// saw the consumer created and deleted again by other writers.
const createAttempts = 3

// createConsumer inserts row, the consumer that w writes and that did not
// exist when its writer looked. When a concurrent writer has created it
// since, it locks that consumer and judges w against it; when that one
// was deleted again before the lock, it tries again, and after
// createAttempts such rounds answers a concurrent update conflict, which
// a client retries.
func createConsumer(ctx context.Context, t *core.Txn, row *ConsumerRow, w *ConsumerAllocations) (*ConsumerRow, error) {
	for range createAttempts {
		err := t.QueryRow(ctx, `
			INSERT INTO consumers (uuid, project_id, user_id, consumer_type_id)
			VALUES ($1, $2, $3, $4)
			ON CONFLICT (uuid) DO NOTHING
			RETURNING id`, row.UUID, row.projectID, row.userID, row.typeID).Scan(&row.ID)
		if err == nil {
			return row, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return nil, err
		}
		// Created by a concurrent writer that has committed since we
		// looked: lock it and judge the request against it.
		again, err := LockConsumers(ctx, t, []string{w.ConsumerUUID})
		if err != nil {
			return nil, err
		}
		if found := again[w.ConsumerUUID]; found != nil {
			if err := checkConsumerGeneration(w, found); err != nil {
				return nil, err
			}
			return found, nil
		}
	}
	return nil, fault.Conflict(fault.CodeConcurrentUpdate,
		"consumer %s was created and deleted by other writers while this one wrote; please retry", w.ConsumerUUID)
}

// take gives row what the request w says about its consumer, which wins,
// as in Placement: its project (projectID), user (userID) and, when w
// names one, its type (by typeIDs); it keeps what the consumer counted
// toward before (quota_check.go).
func (row *ConsumerRow) take(w *ConsumerAllocations, projectID, userID int32, typeIDs map[string]int32) {
	if row.oldProjectID == 0 {
		row.oldProjectID = row.projectID // what it holds counts toward it
	}
	row.oldCounts = !row.migration
	row.counts = row.oldCounts
	row.projectID, row.userID = projectID, userID
	if w.ConsumerType != "" {
		row.counts = w.ConsumerType != MigrationConsumerType
		id := typeIDs[w.ConsumerType]
		row.typeID = &id
	}
}
