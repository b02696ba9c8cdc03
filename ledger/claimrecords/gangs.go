package claimrecords

import (
	"context"
	"slices"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/internal/core"
)

// Gangs: the members of each gang a claim placed whole (table
// gang_members, migration 0014), written in the gang's transaction by
// WriteGang, each row deleted with its consumer. A member's stored claim
// is an ordinary one (records.go); its gang makes its lease one with the
// other members': ClaimLeaseSet renews or confirms every member of the
// gang in one transaction, and the reaper releases them together
// (resources.Allocations.GangRelease).

// GangRecord is one gang as stored: its id, the domain it was placed in
// (an aggregate uuid, "" for none) and its members still present, in
// uuid order.
type GangRecord struct {
	ID      string
	Domain  string
	Members []string
}

// WriteGang records consumers as the members of gang id, placed in
// domain, in the claim's transaction t.
func WriteGang(ctx context.Context, t *core.Txn, id, domain string, consumers []string) error {
	gid, ok := core.CanonicalUUID(id)
	if !ok {
		return fault.Invalid("", "Malformed gang id: %s", id)
	}
	uuids := make([]string, 0, len(consumers))
	for _, c := range consumers {
		u, ok := core.CanonicalUUID(c)
		if !ok {
			return fault.Invalid("", "Malformed consumer uuid: %s", c)
		}
		uuids = append(uuids, u)
	}
	_, err := t.Exec(ctx, `
		INSERT INTO gang_members (consumer_uuid, gang_id, domain)
		SELECT u, $2, $3 FROM unnest($1::uuid[]) AS u
		ON CONFLICT (consumer_uuid) DO UPDATE SET gang_id = EXCLUDED.gang_id, domain = EXCLUDED.domain, created_at = now()`,
		uuids, gid, domain)
	return err
}

// gangOfSQL lists the gang of consumer $1: its id, domain and members.
const gangOfSQL = `
	SELECT g.gang_id::text, g.domain, array_agg(o.consumer_uuid::text ORDER BY o.consumer_uuid)
	FROM gang_members g JOIN gang_members o ON o.gang_id = g.gang_id
	WHERE g.consumer_uuid = $1
	GROUP BY g.gang_id, g.domain`

// GangOf returns the gang consumerUUID is a member of, nil if none.
func (s *Records) GangOf(ctx context.Context, consumerUUID string) (*GangRecord, error) {
	id, ok := core.CanonicalUUID(consumerUUID)
	if !ok {
		return nil, nil
	}
	rows, err := s.core.DB.Query(ctx, gangOfSQL, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var g *GangRecord
	for rows.Next() {
		g = &GangRecord{}
		if err := rows.Scan(&g.ID, &g.Domain, &g.Members); err != nil {
			return nil, err
		}
	}
	return g, rows.Err()
}

// gangMembersTx is the members of consumer id's gang, in uuid order (id
// alone when it is in none), read in t.
func gangMembersTx(ctx context.Context, t *core.Txn, id string) ([]string, error) {
	var g GangRecord
	rows, err := t.Query(ctx, gangOfSQL, id)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(&g.ID, &g.Domain, &g.Members); err != nil {
			return nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if !slices.Contains(g.Members, id) {
		return []string{id}, nil
	}
	return g.Members, nil
}

// GangSummary is one gang as the console lists it: its id and domain,
// when it was placed, how many members are still there and how many of
// them hold allocations (fewer: the gang is partial).
type GangSummary struct {
	ID, Domain       string
	CreatedAt        time.Time
	Members, Holding int
}

// Gangs lists the latest limit gangs, newest first.
func (s *Records) Gangs(ctx context.Context, limit int) ([]GangSummary, error) {
	rows, err := s.core.DB.Query(ctx, `
		SELECT g.gang_id::text, min(g.domain), min(g.created_at), count(*),
		       count(*) FILTER (WHERE EXISTS (SELECT 1 FROM consumers c JOIN allocations a ON a.consumer_id = c.id
		                                      WHERE c.uuid = g.consumer_uuid))
		FROM gang_members g GROUP BY g.gang_id
		ORDER BY min(g.created_at) DESC, g.gang_id LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []GangSummary
	for rows.Next() {
		var g GangSummary
		if err := rows.Scan(&g.ID, &g.Domain, &g.CreatedAt, &g.Members, &g.Holding); err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, rows.Err()
}
