package claims

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/berthd/berth/ledger/engine"
)

// The recent refusals: the last claims of this process that placed
// nothing (409 berth.no_valid_host), with their per-step counts, kept in
// memory for the operator console's "why did last hour's boots fail".
// A ring of fixed size per process: recording one costs a lock and a
// copy of its steps, no database work on the claim's path, and the
// memory is bounded (RecentRefusalsSize entries). Each replica keeps its
// own; they are lost on restart. The counts over time are the
// berth_claims_total{outcome="no_valid_host"} metric's.

// RecentRefusalsSize is how many refusals a Claimer remembers.
const RecentRefusalsSize = 500

// Refusal is one claim that placed nothing.
type Refusal struct {
	Time         time.Time
	ConsumerUUID string
	ProjectID    string
	// Policy is the policy named by the claim (empty: the default).
	Policy string
	// Request words the request groups, as "VCPU:4,MEMORY_MB:8192
	// required=HW_CPU_X86_AVX2".
	Request string
	DryRun  bool
	// Err is the refusal, with its steps.
	Err *NotPlacedError
}

// refusalRing is a bounded ring of refusals, safe for concurrent use.
type refusalRing struct {
	mu   sync.Mutex
	list []Refusal // at most RecentRefusalsSize
	next int       // where the next one goes once list is full
}

// record remembers p's refusal when err is one (a *NotPlacedError).
// Scriptlet tests (PolicyOverride) are not claims and are not recorded.
func (r *refusalRing) record(p *Params, err error) {
	if err != nil {
		r.recordErr(p, err)
	}
}

// recordErr is record of an error (apart, so that a claim that succeeds
// does not allocate the target of errors.As).
func (r *refusalRing) recordErr(p *Params, err error) {
	var np *NotPlacedError
	if !errors.As(err, &np) || p.PolicyOverride != nil {
		return
	}
	ref := Refusal{Time: time.Now(), ConsumerUUID: p.ConsumerUUID, ProjectID: p.ProjectID, Policy: p.Policy,
		Request: requestWords(&p.Candidates.Groups), DryRun: p.DryRun, Err: np}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.list) < RecentRefusalsSize {
		r.list = append(r.list, ref)
		return
	}
	r.list[r.next] = ref
	r.next = (r.next + 1) % RecentRefusalsSize
}

// recent returns the refusals since since, newest first.
func (r *refusalRing) recent(since time.Time) []Refusal {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Refusal, 0, len(r.list))
	for i := range len(r.list) {
		// Newest first: the one before next, backwards.
		ref := r.list[(r.next-1-i+2*len(r.list))%len(r.list)]
		if ref.Time.Before(since) {
			break
		}
		out = append(out, ref)
	}
	return out
}

// RecentRefusals returns the claims of this process that placed nothing
// since since (at most RecentRefusalsSize of them), newest first. The
// steps of each are shared and must not be changed.
func (c *Claimer) RecentRefusals(since time.Time) []Refusal {
	return c.refusals.recent(since)
}

// requestWords words request groups for a Refusal.
func requestWords(groups *[]engine.RequestGroup) string {
	var parts []string
	for _, g := range *groups {
		var res []string
		for _, r := range g.Resources {
			res = append(res, fmt.Sprintf("%s:%d", r.Class, r.Amount))
		}
		w := "resources" + g.Suffix + "=" + strings.Join(res, ",")
		for _, any := range g.RequiredTraits {
			w += " required" + g.Suffix + "=" + strings.Join(any, "|")
		}
		for _, t := range g.ForbiddenTraits {
			w += " required" + g.Suffix + "=!" + t
		}
		for _, any := range g.MemberOf {
			w += " member_of" + g.Suffix + "=" + strings.Join(any, ",")
		}
		parts = append(parts, w)
	}
	return strings.Join(parts, " ")
}
