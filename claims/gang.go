package claims

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/uuid"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/quotas"
	"github.com/berthd/berth/ledger/resources"
	"github.com/berthd/berth/scheduler"
)

// Gang claims (docs/gangs.md): every member placed, in one domain, or
// none. One snapshot is read; the engine simulates the gang in each
// domain (engine.Snapshot.Gang) and ranks the domains that hold it
// whole, level by level (GangParams.Fallback) until a level has one, or,
// with a GangParams.MinCount, the domains that hold at least that many
// members; the gang's policy ranks the domains that hold it whole
// (gang_rank.go); the best is written in one transaction
// (resources.Allocations.GangWrite), which re-checks every provider's
// capacity under its lock and the project's limits for the whole gang.
// A write that finds capacity gone tries the next domain; when those run
// out, a fresh snapshot is asked once more. Nothing of a refused gang is
// written.

// Bounds of a gang.
const (
	// MaxGangMembers bounds GangParams.Members.
	MaxGangMembers = 1024
	// MaxGangDomains bounds the aggregates of GangParams.Domains and
	// Fallback together.
	MaxGangDomains = 1000
	// MaxGangLevels bounds GangParams.Fallback.
	MaxGangLevels = 8
)

// SpreadHosts is GangParams.Spread's one value: each member on a
// different root provider.
const SpreadHosts = "hosts"

// GangParams is one gang claim.
type GangParams struct {
	// ProjectID and UserID own every member.
	ProjectID string
	UserID    string
	// Members are the members, each a new consumer.
	Members []GangMember
	// Spread is "" (members may share a root) or SpreadHosts.
	Spread string
	// Domains are aggregate uuids: all members in one of them. Empty:
	// anywhere in the cloud.
	Domains []string
	// Fallback are the levels tried, in order, when no domain of the
	// level before holds the whole gang (a rack, then a block): each a
	// list of aggregate uuids as Domains. Only with Domains.
	Fallback [][]string
	// MinCount, when above 0, places a gang of which no level holds
	// every member with at least that many members (up to all): the
	// level whose best domain holds the most, the earlier on a tie.
	MinCount int
	// Policy names the scheduling policy that ranks the domains holding
	// the whole gang (gang_rank.go); empty means the default, as for a
	// single claim.
	Policy string
	// MaxAttempts bounds the writes tried; 0 means the configured bound.
	MaxAttempts int
	// DryRun does everything but the write.
	DryRun bool
	// LeaseSeconds, when not nil, makes every member's claim provisional
	// with that lease; the members' leases are renewed, confirmed and
	// released together.
	LeaseSeconds *int64
}

// GangMember is one member of a gang: a consumer and what it needs, as
// a single claim's fields say.
type GangMember struct {
	ConsumerUUID string
	ConsumerType string
	Name         string
	Properties   map[string]any
	// Candidates is the member's request (its own resources, traits,
	// aggregates and request groups).
	Candidates engine.CandidatesParams
	// Request is the member's request as stored with its claim (a JSON
	// object a single claim could have sent), for GET /claims/{member}
	// and for a reschedule or move of that member to reuse; nil stores {}.
	Request []byte
}

// GangResult is a gang placed, or a dry run's placement.
type GangResult struct {
	// ID is the gang's id (a new uuid; a dry run's is empty).
	ID string
	// Domain is the aggregate the gang went into ("" without domains).
	Domain string
	// Members are where each member placed went, in the request's order
	// (every member, but with a MinCount).
	Members []GangPlacement
	// Unplaced are the members not placed (only with a MinCount), in the
	// request's order.
	Unplaced []string
	// Domains are every domain looked at, best first (a dry run's
	// ranking; a placed gang's list too).
	Domains []GangDomain
	// Attempts is how many writes were tried (0 for a dry run).
	Attempts int
	DryRun   bool
	// Quota is a dry run's quota check of the whole gang (nil without
	// limits).
	Quota *QuotaReport
}

// GangPlacement is one member's place.
type GangPlacement struct {
	ConsumerUUID       string
	ConsumerGeneration int64
	Root, RootName     string
	Allocations        []engine.Allocation
	Mappings           map[string][]string
	// member is the member's index in GangParams.Members.
	member int
}

// GangDomain is how much of the gang a domain holds: Fits members at
// most of the gang's, on Roots root providers; for one that does not
// hold it whole, Stopped is the first member that did not fit and
// Reasons count the domain's roots by why it did not fit on each.
type GangDomain struct {
	Aggregate string
	Roots     int
	Fits      int
	Stopped   string
	Reasons   map[string]int
}

// GangNotPlacedError is a gang that no domain holds whole (409
// berth.no_valid_host), that the policy's scriptlet refused (409
// berth.no_valid_host: Refusal), or whose every write lost to
// concurrent claims (409 berth.claim_conflict: Conflicts). Nothing was
// written.
type GangNotPlacedError struct {
	Members int
	// MinCount is GangParams.MinCount.
	MinCount  int
	Domains   []GangDomain
	Conflicts bool
	Attempts  int
	// Refusal is the scriptlet's reason when its gang_placement refused
	// the gang, and ScriptletLog what it logged.
	Refusal      string
	ScriptletLog []scheduler.LogLine
}

func (e *GangNotPlacedError) Error() string {
	if e.Refusal != "" {
		complete := 0
		for _, d := range e.Domains {
			if d.Stopped == "" {
				complete++
			}
		}
		return fmt.Sprintf("%d of %d domains hold the gang of %d members; then %s%s", complete, len(e.Domains), e.Members,
			scheduler.RefusalPrefix, e.Refusal)
	}
	if e.Conflicts {
		return fmt.Sprintf("No domain took the gang of %d members: %d writes lost to concurrent claims.", e.Members, e.Attempts)
	}
	holds := fmt.Sprintf("the gang of %d members", e.Members)
	if e.MinCount > 0 && e.MinCount < e.Members {
		holds = fmt.Sprintf("at least %d of the gang's %d members", e.MinCount, e.Members)
	}
	if len(e.Domains) == 0 {
		return fmt.Sprintf("No domain holds %s.", holds)
	}
	parts := make([]string, 0, len(e.Domains))
	for _, d := range e.Domains {
		name := d.Aggregate
		if name == "" {
			name = "the cloud"
		}
		parts = append(parts, fmt.Sprintf("%s: %d of %d fit (%s)", name, d.Fits, e.Members, reasonWords(d.Reasons)))
	}
	return fmt.Sprintf("No domain holds %s: %s.", holds, strings.Join(parts, "; "))
}

// reasonWords words a domain's reasons, most roots first: "3 lacked VCPU
// 8, 1 used by another member (spread hosts)".
func reasonWords(reasons map[string]int) string {
	keys := slices.Sorted(maps.Keys(reasons))
	slices.SortStableFunc(keys, func(a, b string) int { return reasons[b] - reasons[a] })
	words := make([]string, len(keys))
	for i, k := range keys {
		if reasons[k] == 0 {
			words[i] = k
			continue
		}
		words[i] = fmt.Sprintf("%d %s", reasons[k], k)
	}
	return strings.Join(words, ", ")
}

// Gangs places gangs with a Claimer's store, limits and bounds.
type Gangs struct {
	c *Claimer
}

// NewGangs returns the gang placer of c.
func NewGangs(c *Claimer) *Gangs { return &Gangs{c: c} }

// Claim places p: every member or none (see the top of this file). A
// gang that no domain holds is a *GangNotPlacedError; a gang over its
// project's limits is fault.ErrForbidden (berth.over_quota); a member
// that exists already is the ledger's ErrConflict
// (placement.concurrent_update), or a *MismatchError when an earlier gang
// with a different request placed it. Bad input is fault.ErrInvalid. A
// retry of a gang that was written gets the first answer
// (gang_retry.go).
func (g *Gangs) Claim(ctx context.Context, p GangParams) (*GangResult, error) {
	if err := checkGang(&p); err != nil {
		return nil, err
	}
	if err := g.c.checkLease(p.LeaseSeconds); err != nil {
		return nil, err
	}
	if p.DryRun {
		return g.place(ctx, &p, nil)
	}
	return g.claimOnce(ctx, &p, func(o *retryKey) (*GangResult, error) { return g.place(ctx, &p, o) })
}

// place chooses p's domain and writes it, recording the write for its
// retries with o (nil: not recorded).
func (g *Gangs) place(ctx context.Context, p *GangParams, o *retryKey) (*GangResult, error) {
	c := g.c
	maxAttempts := c.cfg.MaxAttempts
	if p.MaxAttempts > 0 {
		maxAttempts = min(p.MaxAttempts, MaxMaxAttempts)
	}
	gp := engine.GangParams{Spread: p.Spread == SpreadHosts, Keep: maxAttempts, MinCount: p.MinCount}
	for _, m := range p.Members {
		cp := m.Candidates
		cp.AvoidEvacuated = true
		gp.Members = append(gp.Members, cp)
	}
	pol, ranks, err := g.gangPolicy(ctx, p)
	if err != nil {
		return nil, err
	}
	if ranks {
		gp.Keep = max(gp.Keep, MaxGangRanked)
	}
	chosen, looked, err := g.chooseRanked(ctx, &gp, p, pol, ranks)
	if err != nil {
		return nil, err
	}
	if chosen.Acceptable == 0 {
		return nil, g.notPlaced(p, looked)
	}
	if p.DryRun {
		return g.dryRun(ctx, p, chosen, looked)
	}
	q, err := c.quotaOf(ctx, p.ProjectID)
	if err != nil {
		return nil, err
	}
	attempts := 0
	for round := 0; round < 2; round++ {
		for i := 0; i < chosen.Acceptable && i < len(chosen.Domains) && attempts < maxAttempts; i++ {
			if chosen.Domains[i].Members == nil {
				break // beyond the domains kept
			}
			attempts++
			res := g.result(p, chosen, i, uuid.New(), looked)
			res.Attempts = attempts // the answer's, recorded with it
			err := g.write(ctx, p, res, q, o)
			if err == nil {
				return res, nil
			}
			if !retryable(err) {
				return nil, err
			}
			c.log.DebugContext(ctx, "gang attempt conflicted", "domain", res.Domain, "error", err)
		}
		if attempts >= maxAttempts || round > 0 {
			break
		}
		// Every domain kept lost to concurrent claims: once more, from a
		// snapshot that has the writes that won.
		if chosen, looked, err = g.chooseRanked(ctx, &gp, p, pol, ranks); err != nil {
			return nil, err
		}
		if chosen.Acceptable == 0 {
			return nil, g.notPlaced(p, looked)
		}
	}
	np := g.notPlaced(p, looked)
	np.Conflicts, np.Attempts = true, attempts
	return nil, np
}

// notPlaced is the refusal of p, whose domains looked at are looked.
func (g *Gangs) notPlaced(p *GangParams, looked []engine.GangDomain) *GangNotPlacedError {
	return &GangNotPlacedError{Members: len(p.Members), MinCount: p.MinCount, Domains: domainsOf(p, looked)}
}

// dryRun is the answer of a dry run: the best domain's placement, with
// the whole gang's quota check.
func (g *Gangs) dryRun(ctx context.Context, p *GangParams, chosen *engine.Gang, looked []engine.GangDomain) (*GangResult, error) {
	res := g.result(p, chosen, 0, "", looked)
	var err error
	if res.Quota, err = g.c.quotaReport(ctx, &Params{ProjectID: p.ProjectID}, gangAllocations(res.Members)); err != nil {
		return nil, err
	}
	if res.Quota != nil {
		// One consumer per member, not one for the gang.
		if q, ok := res.Quota.Resources[quotas.ResourceConsumers]; ok {
			q.Requested = int64(len(res.Members))
			res.Quota.Resources[quotas.ResourceConsumers] = q
			res.Quota.Fits = res.Quota.Fits && q.Used+q.Requested <= q.Limit
		}
	}
	return res, nil
}

// write writes res, the placement of p in one domain, in one transaction
// checked against q (resources.Allocations.GangWrite): every member's
// allocations and stored claim, the gang's record, and the records of
// its retries with o (gang_retry.go).
func (g *Gangs) write(ctx context.Context, p *GangParams, res *GangResult, q *quotas.Quota, o *retryKey) error {
	w := resources.GangWriteParams{ID: res.ID, Domain: res.Domain, Quota: q}
	for j, placed := range res.Members {
		m := &p.Members[placed.member]
		w.Members = append(w.Members, resources.ConsumerAllocations{
			ConsumerUUID: m.ConsumerUUID, ProjectID: p.ProjectID, UserID: p.UserID, ConsumerType: m.ConsumerType,
			CheckGeneration: true, Allocations: res.Members[j].Allocations, Name: m.Name, Properties: m.Properties,
			CopyStickyKeys: true})
		req, err := requestInDomain(m.Request, res.Domain)
		if err != nil {
			return err
		}
		st := &claimrecords.ClaimStateWrite{Op: OpClaim, Request: req, RootUUID: res.Members[j].Root, Mode: claimrecords.LeaseSet}
		if p.LeaseSeconds != nil {
			st.LeaseSeconds = *p.LeaseSeconds
		}
		w.States = append(w.States, st)
	}
	w.Requests = gangRequests(o, p, res)
	start := time.Now()
	if err := g.c.store.Allocations.GangWrite(ctx, w); err != nil {
		return err
	}
	g.c.log.DebugContext(ctx, "claims: gang placed", "gang", res.ID, "domain", res.Domain,
		"members", len(res.Members), "of", len(p.Members), "write", time.Since(start))
	return nil
}

// choose reads the snapshot (with every member's names) and asks the
// engine for the gang, level by level (p's Domains, then its Fallback):
// the first level with a domain that holds every member; else, with a
// MinCount, the level whose best domain holds the most members, at least
// MinCount (the earlier level on a tie); else a Gang with no acceptable
// domain. looked are the domains of the levels looked at, in level
// order, each level's best first.
func (g *Gangs) choose(ctx context.Context, gp *engine.GangParams, p *GangParams) (*engine.Gang, []engine.GangDomain, error) {
	var classes, traits []string
	for i := range gp.Members {
		cs, ts := engine.ParamsNames(&gp.Members[i])
		classes, traits = append(classes, cs...), append(traits, ts...)
	}
	slices.Sort(classes)
	slices.Sort(traits)
	snap, err := g.c.store.Snapshots.RankingSnapshot(ctx, slices.Compact(classes), slices.Compact(traits))
	if err != nil {
		return nil, nil, err
	}
	var looked []engine.GangDomain
	best := &engine.Gang{}
	for _, level := range append([][]string{p.Domains}, p.Fallback...) {
		q := *gp
		q.Domains = level
		gang, err := snap.Gang(ctx, &q)
		if err != nil {
			return nil, nil, err
		}
		looked = append(looked, gang.Domains...)
		if gang.Complete > 0 {
			return gang, looked, nil
		}
		if gang.Acceptable > 0 && (best.Acceptable == 0 || gang.Domains[0].Placed > best.Domains[0].Placed) {
			best = gang
		}
	}
	return best, looked, nil
}

// checkGang refuses a gang the API's schema let through but that cannot
// be placed as asked: no members, too many, a consumer twice, a bad
// spread or domain.
func checkGang(p *GangParams) error {
	switch {
	case len(p.Members) == 0:
		return invalid("A gang needs at least one member.")
	case len(p.Members) > MaxGangMembers:
		return invalid("A gang has at most %d members, not %d.", MaxGangMembers, len(p.Members))
	case len(p.Fallback) > MaxGangLevels:
		return invalid("A gang's domain has at most %d fallback levels, not %d.", MaxGangLevels, len(p.Fallback))
	case len(p.Fallback) > 0 && len(p.Domains) == 0:
		return invalid("A gang's domain needs member_of to fall back from.")
	case p.MinCount < 0 || p.MinCount > len(p.Members):
		return invalid("Invalid min_count %d: want 1 to the gang's %d members.", p.MinCount, len(p.Members))
	case p.Spread != "" && p.Spread != SpreadHosts:
		return invalid("Invalid spread %q: want %q, or none.", p.Spread, SpreadHosts)
	}
	seen := make(map[string]bool, len(p.Members))
	for _, m := range p.Members {
		id := strings.ToLower(strings.ReplaceAll(m.ConsumerUUID, "-", ""))
		if !uuid.Valid(m.ConsumerUUID) {
			return invalid("Malformed consumer_uuid of a member: %s", m.ConsumerUUID)
		}
		if seen[id] {
			return invalid("Consumer %s is a member of the gang twice.", m.ConsumerUUID)
		}
		seen[id] = true
	}
	n := len(p.Domains)
	for _, level := range p.Fallback {
		if len(level) == 0 {
			return invalid("A gang's fallback level names no aggregate.")
		}
		n += len(level)
	}
	if n > MaxGangDomains {
		return invalid("A gang's domain names at most %d aggregates, not %d.", MaxGangDomains, n)
	}
	for _, level := range append([][]string{p.Domains}, p.Fallback...) {
		for _, d := range level {
			if !uuid.Valid(d) {
				return invalid("Invalid domain aggregate %q: want an aggregate uuid.", d)
			}
		}
	}
	return nil
}

// result is the answer for the domain ranked i of chosen, with gang id;
// looked are the domains looked at.
func (g *Gangs) result(p *GangParams, chosen *engine.Gang, i int, id string, looked []engine.GangDomain) *GangResult {
	d := &chosen.Domains[i]
	res := &GangResult{ID: id, Domain: d.Aggregate, DryRun: p.DryRun, Domains: domainsOf(p, looked)}
	placed := make([]bool, len(p.Members))
	for _, m := range d.Members {
		placed[m.Member] = true
		res.Members = append(res.Members, GangPlacement{ConsumerUUID: p.Members[m.Member].ConsumerUUID, ConsumerGeneration: 1,
			Root: m.Root, RootName: m.RootName, Allocations: allocationsByName(m.Request.Allocations), Mappings: mappings(m.Request),
			member: m.Member})
	}
	for j, ok := range placed {
		if !ok {
			res.Unplaced = append(res.Unplaced, p.Members[j].ConsumerUUID)
		}
	}
	return res
}

// domainsOf is the engine's domains as the answer says them.
func domainsOf(p *GangParams, looked []engine.GangDomain) []GangDomain {
	out := make([]GangDomain, len(looked))
	for i, d := range looked {
		out[i] = GangDomain{Aggregate: d.Aggregate, Roots: d.Roots, Fits: d.Placed, Reasons: d.Reasons}
		if d.FirstUnplaced >= 0 {
			out[i].Stopped = p.Members[d.FirstUnplaced].ConsumerUUID
		}
		if out[i].Reasons == nil {
			out[i].Reasons = map[string]int{}
		}
	}
	return out
}

// gangAllocations is every member's allocations, one after the other.
func gangAllocations(members []GangPlacement) []engine.Allocation {
	var out []engine.Allocation
	for _, m := range members {
		out = append(out, m.Allocations...)
	}
	return out
}

// allocationsByName is allocs with each provider's classes in name order,
// as a single claim writes and answers them.
func allocationsByName(allocs []engine.Allocation) []engine.Allocation {
	out := make([]engine.Allocation, len(allocs))
	for i, a := range allocs {
		res := slices.Clone(a.Resources)
		slices.SortFunc(res, func(x, y engine.ResourceAmount) int { return strings.Compare(x.Class, y.Class) })
		out[i] = engine.Allocation{ProviderUUID: a.ProviderUUID, Resources: res}
	}
	return out
}

// expire is the lease reaper's release of st's gang (claimrecords
// gangs.go): every member still present, in one transaction that checks
// every member's lease ran out (resources.Allocations.GangRelease); a
// member renewed, confirmed or rewritten meanwhile keeps the whole gang
// (errLeaseStays).
func (g *Gangs) expire(ctx context.Context, st *claimrecords.ClaimState, gang *claimrecords.GangRecord) (string, error) {
	c := g.c
	var members []resources.ConsumerAllocations
	var lines []string
	for _, m := range gang.Members { // uuid order: the consumers' lock order
		h, err := c.hold(ctx, m)
		if errors.Is(err, fault.ErrNotFound) {
			continue // released already
		}
		if err != nil {
			return "", err
		}
		gen := h.consumer.Generation
		members = append(members, resources.ConsumerAllocations{ConsumerUUID: m, ProjectID: h.consumer.ProjectID,
			UserID: h.consumer.UserID, CheckGeneration: true, Generation: &gen})
		lines = append(lines, m+"="+allocationsLine(h.allocs))
	}
	if len(members) == 0 {
		return "", errLeaseStays
	}
	if err := leaseStays(c.store.Allocations.GangRelease(ctx, members)); err != nil {
		return "", err
	}
	c.log.InfoContext(ctx, "claims: lease of a gang expired; every member's allocations released", "consumer", st.ConsumerUUID,
		"gang", gang.ID, "lease_expires_at", expiry(st), "members", strings.Join(lines, " "))
	return leaseReleased, nil
}

// requestInDomain is a member's stored request with the gang's domain
// added to its member_of (a clause of its own), so that a reschedule or
// move of the member, which redoes its stored request, stays in the
// domain; unchanged without a domain.
func requestInDomain(req []byte, domain string) ([]byte, error) {
	if domain == "" || req == nil {
		return req, nil
	}
	var obj map[string]any
	d := json.NewDecoder(bytes.NewReader(req))
	d.UseNumber() // amounts as sent
	if err := d.Decode(&obj); err != nil {
		return nil, invalid("A gang member's request is not a JSON object: %v", err)
	}
	memberOf, _ := obj["member_of"].([]any)
	obj["member_of"] = append(memberOf, domain)
	return json.Marshal(obj)
}
