package claims

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
)

// Idempotent gangs: a retry of a gang claim that was written gets the
// first answer, the whole gang's, as a single claim's retry does
// (idempotent.go).
//
// The gang's write records, in its transaction, one claim_requests row
// per member placed under OpGang: the fingerprint of the whole gang's
// request (the same in every member's row), the gang's request, and what
// the member holds after the write. The row of the gang's first member
// (in the request's order) also holds the whole answer; it is written
// even when a min_count left that member unplaced. A retry (the same
// body: the same first member, the same fingerprint) is answered from
// that row, confirmed as a single claim's answer is, when every member
// still holds what the gang wrote; a member deleted, rescheduled or moved
// since makes the record history, and the retry is a new gang, which
// meets the existing members (409 placement.concurrent_update).
//
// A gang whose write conflicts on a member that an earlier gang, with a
// different request, placed and that still holds what it was given is a
// *MismatchError naming that member and the fields that differ. A gang
// refused (nothing written) records nothing: its retry is a new attempt.
// A write whose outcome Berth did not learn is settled as a single
// claim's (settleUnknown).

// OpGang is the operation a gang's members are recorded under.
const OpGang = "gang"

// gangRetryDoc is the gang request a retry key fingerprints; its fields
// and its members' are in byte order of their JSON names, as retryDoc's.
type gangRetryDoc struct {
	Domains      []string        `json:"domain"`
	Fallback     [][]string      `json:"fallback,omitempty"`
	LeaseSeconds *int64          `json:"lease_seconds,omitempty"`
	Members      []gangMemberDoc `json:"members"`
	MinCount     int             `json:"min_count,omitempty"`
	Policy       string          `json:"policy,omitempty"`
	ProjectID    string          `json:"project_id"`
	Spread       string          `json:"spread"`
	UserID       string          `json:"user_id"`
}

// gangMemberDoc is one member as fingerprinted.
type gangMemberDoc struct {
	ConsumerType string                  `json:"consumer_type"`
	ConsumerUUID string                  `json:"consumer_uuid"`
	Name         string                  `json:"name"`
	Properties   map[string]any          `json:"properties"`
	Resources    engine.CandidatesParams `json:"resources"`
}

// gangRecordResult is what a member's record holds: what the member
// holds after the gang's write (the fields stillHeld reads, named as
// Result's) and, in the first member's, the gang's answer.
type gangRecordResult struct {
	ConsumerGeneration int64
	Allocations        []engine.Allocation
	Gang               *GangResult `json:",omitempty"`
}

// newGangRetryKey fingerprints p's request; nil when it cannot be
// recorded (properties that do not marshal: the write refuses them).
func newGangRetryKey(p *GangParams) *retryKey {
	doc := gangRetryDoc{Domains: p.Domains, Fallback: p.Fallback, LeaseSeconds: p.LeaseSeconds, MinCount: p.MinCount,
		Policy: p.Policy, ProjectID: p.ProjectID, Spread: p.Spread, UserID: p.UserID}
	for _, m := range p.Members {
		md := gangMemberDoc{ConsumerType: m.ConsumerType, ConsumerUUID: canonicalOr(m.ConsumerUUID), Name: m.Name,
			Properties: m.Properties, Resources: m.Candidates}
		// Only what the request asks for: not the server's limits.
		g := &md.Resources
		g.Limit, g.Max, g.MaxSteps = 0, 0, 0
		g.Randomize, g.Sample, g.VersionsOnly = false, false, false
		g.AvoidEvacuated = false
		doc.Members = append(doc.Members, md)
	}
	raw, err := json.Marshal(&doc)
	if err != nil {
		return nil
	}
	return &retryKey{op: OpGang, fingerprint: fingerprint(OpGang, raw), request: raw}
}

// gangRequests are the records of res, the gang p written with key o:
// one per member placed, and the first member's (which holds the answer)
// even when a MinCount left it unplaced.
func gangRequests(o *retryKey, p *GangParams, res *GangResult) []*claimrecords.ClaimRequest {
	if o == nil {
		return nil
	}
	first := canonicalOr(p.Members[0].ConsumerUUID)
	out := make([]*claimrecords.ClaimRequest, 0, len(res.Members)+1)
	add := func(consumer string, held gangRecordResult) bool {
		if consumer == first {
			held.Gang = res
		}
		raw, err := json.Marshal(&held)
		if err != nil {
			return false
		}
		out = append(out, &claimrecords.ClaimRequest{ConsumerUUID: consumer, Op: OpGang, Fingerprint: o.fingerprint,
			Request: o.request, Result: raw, Generation: held.ConsumerGeneration})
		return true
	}
	if slices.Contains(res.Unplaced, p.Members[0].ConsumerUUID) && !add(first, gangRecordResult{}) {
		return nil // not recorded: its retry is not recognised
	}
	for _, m := range res.Members {
		if !add(canonicalOr(m.ConsumerUUID), gangRecordResult{ConsumerGeneration: m.ConsumerGeneration, Allocations: m.Allocations}) {
			return nil
		}
	}
	return out
}

// claimOnce is Claim's retry handling around place (see the top of this
// file).
func (g *Gangs) claimOnce(ctx context.Context, p *GangParams, place func(o *retryKey) (*GangResult, error)) (*GangResult, error) {
	o := newGangRetryKey(p)
	if o == nil {
		return place(nil)
	}
	first := p.Members[0].ConsumerUUID
	if res, err := g.recorded(ctx, o, first); res != nil || err != nil {
		return res, err
	}
	res, err := place(o)
	if err == nil {
		return res, nil
	}
	var np *GangNotPlacedError
	switch {
	case unavailable(err) && !ledger.RolledBack(err):
		return settleUnknown(ctx, g.c, first, OpGang, err, func(ctx context.Context) (*GangResult, error) {
			return g.replay(ctx, o, first)
		})
	case unavailable(err):
		return nil, err
	case errors.As(err, &np) || generationConflict(err):
	default:
		return nil, err
	}
	// A retry sent while its first attempt was being written.
	if res, rerr := g.recorded(ctx, o, first); res != nil || rerr != nil {
		if rerr != nil && !unavailable(rerr) {
			return nil, err
		}
		return res, rerr
	}
	if generationConflict(err) {
		if mm := g.mismatch(ctx, o, p); mm != nil {
			return nil, mm
		}
	}
	return nil, err
}

// recorded is the recorded answer to o when the gang whose first member
// is first was written by a request with o's fingerprint and every
// member still holds what it wrote; nil, nil otherwise.
func (g *Gangs) recorded(ctx context.Context, o *retryKey, first string) (*GangResult, error) {
	rec, err := g.c.store.Claims.ClaimRequestGet(ctx, first, OpGang)
	if err != nil || rec == nil || !bytes.Equal(rec.Fingerprint, o.fingerprint) {
		return nil, err
	}
	var r gangRecordResult
	if json.Unmarshal(rec.Result, &r) != nil || r.Gang == nil {
		return nil, nil
	}
	for _, m := range r.Gang.Members {
		held, err := g.c.holds(ctx, m.ConsumerUUID, m.ConsumerGeneration, m.Allocations)
		if err != nil || !held {
			return nil, err
		}
	}
	res, err := g.replay(ctx, o, first)
	if errors.Is(err, errNotRecorded) {
		return nil, nil
	}
	return res, err
}

// replay is the recorded answer to o, read with confirmation (as
// Claimer.replay); errNotRecorded if there is none with o's fingerprint.
func (g *Gangs) replay(ctx context.Context, o *retryKey, first string) (*GangResult, error) {
	rec, err := g.c.store.Claims.ClaimRequestConfirmed(ctx, first, OpGang)
	if err != nil {
		return nil, err
	}
	if rec == nil || !bytes.Equal(rec.Fingerprint, o.fingerprint) {
		return nil, errNotRecorded
	}
	var r gangRecordResult
	if err := json.Unmarshal(rec.Result, &r); err != nil || r.Gang == nil {
		return nil, fmt.Errorf("claims: recorded result of gang member %s: %v", first, err)
	}
	return r.Gang, nil
}

// mismatch is the *MismatchError of p, whose write met existing members,
// when one of them was placed by a gang with a different request and
// still holds what it was given; nil otherwise.
func (g *Gangs) mismatch(ctx context.Context, o *retryKey, p *GangParams) *MismatchError {
	for i, m := range p.Members {
		rec, err := g.c.store.Claims.ClaimRequestGet(ctx, m.ConsumerUUID, OpGang)
		if err != nil || rec == nil || bytes.Equal(rec.Fingerprint, o.fingerprint) {
			continue
		}
		if held, err := g.c.stillHeld(ctx, rec); err != nil || !held {
			continue
		}
		return &MismatchError{ConsumerUUID: canonicalOr(m.ConsumerUUID), Fields: gangDiff(o.request, rec.Request, i)}
	}
	return nil
}

// gangDiff names the fields of request (a gangRetryDoc) that differ from
// recorded's, the member at index i by its own fields
// ("members[i].resources"); "members" when the gangs' members differ
// otherwise.
func gangDiff(request, recorded []byte, i int) []string {
	var a, b struct {
		Rest    map[string]json.RawMessage
		Members []map[string]json.RawMessage `json:"members"`
	}
	if json.Unmarshal(request, &a.Rest) != nil || json.Unmarshal(recorded, &b.Rest) != nil ||
		json.Unmarshal(request, &a) != nil || json.Unmarshal(recorded, &b) != nil || i >= len(a.Members) {
		return []string{"request"}
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(a.Rest)) {
		if k != "members" && !bytes.Equal(a.Rest[k], b.Rest[k]) {
			out = append(out, k)
		}
	}
	mine := a.Members[i]
	var theirs map[string]json.RawMessage
	others := func(ms []map[string]json.RawMessage, skip string) []string {
		var ids []string
		for _, m := range ms {
			if id := string(m["consumer_uuid"]); id != skip {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		return ids
	}
	for _, m := range b.Members {
		if bytes.Equal(m["consumer_uuid"], mine["consumer_uuid"]) {
			theirs = m
		}
	}
	for _, k := range slices.Sorted(maps.Keys(mine)) {
		if !bytes.Equal(mine[k], theirs[k]) {
			out = append(out, fmt.Sprintf("members[%d].%s", i, k))
		}
	}
	if id := string(mine["consumer_uuid"]); !slices.Equal(others(a.Members, id), others(b.Members, id)) {
		out = append(out, "members")
	}
	if len(out) == 0 {
		out = []string{"members"} // the same fields in another order
	}
	return out
}
