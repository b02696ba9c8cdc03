package claimrecords

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/internal/core"
)

// Preemptions (migrations/0015_preemptions.up.sql): one record per
// consumer a claim displaced, written in the claim's transaction
// (WritePreemptions, called by resources' ClaimWrite), read by
// GET /claims/{victim} (PreemptionOf) and the feed GET /preemptions
// (Preemptions).

// Preemption is one displaced consumer.
type Preemption struct {
	// ID orders the records (the feed's marker).
	ID           int64
	ConsumerUUID string
	// PreemptedBy is the consumer of the claim that displaced it.
	PreemptedBy string
	// RootUUID is the root provider it was displaced from.
	RootUUID string
	// Priority is its priority; PreemptorPriority the claim's.
	Priority, PreemptorPriority int64
	ProjectID, UserID           string
	// Allocations are what it held.
	Allocations []engine.Allocation
	// Request is its stored claim's request (a JSON object).
	Request     []byte
	PreemptedAt time.Time
}

// WritePreemptions records ps in t (the claim's transaction, which
// removed their allocations); PreemptedAt and ID are the database's.
func WritePreemptions(ctx context.Context, t *core.Txn, ps []Preemption) error {
	for i := range ps {
		p := &ps[i]
		allocs, err := allocationsDoc(p.Allocations)
		if err != nil {
			return err
		}
		request := p.Request
		if len(request) == 0 {
			request = []byte("{}")
		}
		if _, err := t.Exec(ctx, `
			INSERT INTO preemptions (consumer_uuid, preempted_by, root_provider_uuid, priority, preemptor_priority,
			                         project_id, user_id, allocations, request)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
			p.ConsumerUUID, p.PreemptedBy, p.RootUUID, p.Priority, p.PreemptorPriority,
			p.ProjectID, p.UserID, json.RawMessage(allocs), json.RawMessage(request)); err != nil {
			return err
		}
	}
	return nil
}

// ForgetRequests drops the retry records of consumers (claim_requests):
// a displaced consumer's earlier claim is no longer what it holds, so a
// retry of it must not be answered with the old placement.
func ForgetRequests(ctx context.Context, t *core.Txn, consumers []string) error {
	if len(consumers) == 0 {
		return nil
	}
	_, err := t.Exec(ctx, `DELETE FROM claim_requests WHERE consumer_uuid = ANY($1::uuid[])`, consumers)
	return err
}

// allocationsDoc is allocs as the API writes them: provider uuid ->
// {"resources": {class: amount}}.
func allocationsDoc(allocs []engine.Allocation) ([]byte, error) {
	doc := make(map[string]map[string]map[string]int64, len(allocs))
	for _, a := range allocs {
		res := make(map[string]int64, len(a.Resources))
		for _, r := range a.Resources {
			res[r.Class] = r.Amount
		}
		doc[a.ProviderUUID] = map[string]map[string]int64{"resources": res}
	}
	return json.Marshal(doc)
}

// allocationsOf reads allocationsDoc's document back, providers and
// classes in name order.
func allocationsOf(doc []byte) ([]engine.Allocation, error) {
	var m map[string]struct {
		Resources map[string]int64 `json:"resources"`
	}
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, err
	}
	out := make([]engine.Allocation, 0, len(m))
	for rp, a := range m {
		al := engine.Allocation{ProviderUUID: rp}
		for class, n := range a.Resources {
			al.Resources = append(al.Resources, engine.ResourceAmount{Class: class, Amount: n})
		}
		slices.SortFunc(al.Resources, func(x, y engine.ResourceAmount) int { return strings.Compare(x.Class, y.Class) })
		out = append(out, al)
	}
	slices.SortFunc(out, func(x, y engine.Allocation) int { return strings.Compare(x.ProviderUUID, y.ProviderUUID) })
	return out, nil
}

const preemptionColumns = `
	id, consumer_uuid::text, preempted_by::text, root_provider_uuid::text, priority, preemptor_priority,
	project_id, user_id, allocations, request, preempted_at`

// scanPreemption reads one row of preemptionColumns.
func scanPreemption(row pgx.Row) (*Preemption, error) {
	var p Preemption
	var allocs []byte
	if err := row.Scan(&p.ID, &p.ConsumerUUID, &p.PreemptedBy, &p.RootUUID, &p.Priority, &p.PreemptorPriority,
		&p.ProjectID, &p.UserID, &allocs, &p.Request, &p.PreemptedAt); err != nil {
		return nil, err
	}
	var err error
	p.Allocations, err = allocationsOf(allocs)
	return &p, err
}

// PreemptionOf returns the latest record of consumerUUID's displacement,
// nil if it was never displaced.
func (s *Records) PreemptionOf(ctx context.Context, consumerUUID string) (*Preemption, error) {
	id, ok := core.CanonicalUUID(consumerUUID)
	if !ok {
		return nil, nil
	}
	p, err := scanPreemption(s.core.DB.QueryRow(ctx, `SELECT`+preemptionColumns+`
		FROM preemptions WHERE consumer_uuid = $1 ORDER BY id DESC LIMIT 1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return p, err
}

// PreemptionsParams pages the feed of displacements.
type PreemptionsParams struct {
	// Since: records of displacements at or after it (zero: all).
	Since time.Time
	// After: records whose ID is greater (the previous page's last; 0:
	// from the first).
	After int64
	// Limit is the page's size, at least 1.
	Limit int
}

// Preemptions lists the displacements p asks for, in ID order, and
// whether more follow the page.
func (s *Records) Preemptions(ctx context.Context, p PreemptionsParams) ([]Preemption, bool, error) {
	if p.Limit < 1 {
		return nil, false, fault.Invalid("", "limit must be at least 1")
	}
	rows, err := s.core.DB.Query(ctx, `SELECT`+preemptionColumns+`
		FROM preemptions WHERE preempted_at >= $1 AND id > $2 ORDER BY id LIMIT $3`,
		p.Since, p.After, p.Limit+1)
	if err != nil {
		return nil, false, err
	}
	defer rows.Close()
	var out []Preemption
	for rows.Next() {
		pr, err := scanPreemption(rows)
		if err != nil {
			return nil, false, err
		}
		out = append(out, *pr)
	}
	if err := rows.Err(); err != nil {
		return nil, false, err
	}
	more := len(out) > p.Limit
	if more {
		out = out[:p.Limit]
	}
	return out, more, nil
}
