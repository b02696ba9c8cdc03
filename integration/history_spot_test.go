package integration

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// The history's second workload (issues 40 and 41): preemption and
// gangs, beside the first and on providers of their own, so that the
// per-provider register of history_test.go keeps its model. Their
// clients claim slots (CUSTOM_HIST_SLOT) on four hosts in two racks
// (aggregates): preemptible claims of low priority, claims of higher
// priority that preempt them, gangs of two or three members in one rack
// (some spread over hosts), deletes, and reads of the victims' stored
// claims and of the feed GET /preemptions, through any berthd while the
// faults go on. The checker (checkSpot) holds them to preemption's and
// gangs' invariants:
//
//   - An acknowledged preemption's victims were this workload's
//     preemptible claims of strictly lower priority, on the preemptor's
//     host; they hold nothing afterwards and are in the feed, displaced
//     by that preemptor; a read of a victim's stored claim begun after
//     the preemption's answer says "preempted" by it, and so does every
//     read of the feed begun after it.
//   - No consumer is in the feed twice, named by two answers, or
//     displaced when it was not preemptible or not of lower priority
//     (the feed's entries are checked whoever made them, answered or
//     lost); a claim answered 409 displaced nobody.
//   - After the whole history, every gang is whole (every member holds
//     its slot, all in one rack, on distinct hosts when spread; as
//     answered, when answered) or absent, never partial; a gang answered
//     409 holds nothing.
//   - Every acknowledged claim that was neither freed nor preempted
//     holds its slots; nothing refused or freed holds anything; no host
//     is over capacity.
//
// Lost answers are settled as the first workload's: a non-preemptible
// claim is retried (its retry answers as the first), a preemptible
// claim or a gang is not (a retry of a preempted claim would place it
// anew), and the database says at the end what it did, which must be
// all or none.
const (
	spotClients   = 4
	spotProviders = 4
	spotTotal     = 4 // each host's slots
	spotClass     = "CUSTOM_HIST_SLOT"
)

// spotRacks are the racks: hosts 0 and 1, hosts 2 and 3.
var spotRacks = []string{"a5000000-0000-4000-8000-000000000001", "a5000000-0000-4000-8000-000000000002"}

// spotClaim is one consumer of the second workload, as its client
// knows it: a single claim or a gang's member.
type spotClaim struct {
	consumer    string
	priority    int64
	preemptible bool
	slots       int64
	state       string // claimHeld, claimLost, claimRefused, claimFreed, claimFreeing
	rp          string // the host answered, when held
	gone404     bool   // a delete found it gone at once: it must have been preempted
	gang        *spotGang
}

// spotGang is one gang claim.
type spotGang struct {
	id      int
	members []*spotClaim
	spread  bool
	state   string // as spotClaim's
	rack    string // the rack answered, when held
}

// spotPlaced is a gang as its answer placed it, for the reads of its
// members' stored claims: when the answer came, and when its client
// began to free it (math.MaxInt64: never).
type spotPlaced struct {
	id                int
	rack              string
	members           []*spotClaim
	roots             []string
	answered, freeing int64
}

// spotVictim is one victim an acknowledged preemption named.
type spotVictim struct {
	by       *spotClaim
	answered int64 // when the preemption's answer came, on the history's clock
}

// spotRig is the second workload's record.
type spotRig struct {
	mu        sync.Mutex
	rps       []string
	consumers map[string]*spotClaim
	victims   map[string]spotVictim
	gangs     []*spotGang
	refusedBy map[string]bool // claims answered 409: they displaced nobody
	reads     map[string]int
	placed    []*spotPlaced // the gangs answered 200, for the reads
	// Once the clients stopped: the feed, and what the hosts held.
	feedAtEnd []spotEntry
	heldAtEnd map[string]spotHeld
}

// setupSpot makes the second workload's hosts and racks through b.
func (r *histRig) setupSpot() {
	t, b := r.t, r.procs[0]
	r.spot = &spotRig{consumers: map[string]*spotClaim{}, victims: map[string]spotVictim{}, refusedBy: map[string]bool{}, reads: map[string]int{}}
	b.must(t, 201, "PUT", "/resource_classes/"+spotClass, "1.7", nil, nil)
	for i := range spotProviders {
		rp := fmt.Sprintf("b3300000-0000-4000-8000-1000000000%02d", i+1)
		r.spot.rps = append(r.spot.rps, rp)
		b.must(t, 200, "POST", "/resource_providers", "", map[string]any{"name": fmt.Sprintf("hist-spot%d", i), "uuid": rp}, nil)
		b.must(t, 200, "PUT", "/resource_providers/"+rp+"/inventories", "", map[string]any{
			"resource_provider_generation": 0, "inventories": map[string]any{spotClass: map[string]any{"total": spotTotal}}}, nil)
		b.must(t, 200, "PUT", "/resource_providers/"+rp+"/aggregates", "1.19", map[string]any{
			"resource_provider_generation": 1, "aggregates": []string{spotRacks[i/2]}}, nil)
	}
}

// spotClient makes the second workload's requests until stop closes.
func (r *histRig) spotClient(ci int, stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(uint64(ci)+1000, uint64(time.Now().UnixNano())))
	var held []*spotClaim // single claims
	var gangs []*spotGang
	for {
		select {
		case <-stop:
			return
		default:
		}
		switch k := rng.IntN(100); {
		case k < 15:
			if c := r.spotSingle(rng, ci, -2+rng.Int64N(2), true, 1); c.state == claimHeld {
				held = append(held, c)
			}
		case k < 30:
			if c := r.spotSingle(rng, ci, -1+rng.Int64N(3), false, 1+rng.Int64N(2)); c.state == claimHeld {
				held = append(held, c)
			}
		case k < 55:
			if g := r.spotGangClaim(rng, ci); g.state == claimHeld {
				gangs = append(gangs, g)
			}
		case k < 72 && len(held) > 0:
			i := rng.IntN(len(held))
			r.spotFree(rng, held[i])
			held = slices.Delete(held, i, i+1)
		case k < 76 && len(gangs) > 0:
			i := rng.IntN(len(gangs))
			g := gangs[i]
			gangs = slices.Delete(gangs, i, i+1)
			g.state = claimFreeing // until every member's delete answered
			r.spot.freeing(g.id, r.now())
			freed := true
			for _, m := range g.members {
				r.spotFree(rng, m)
				freed = freed && m.state == claimFreed
			}
			if freed {
				g.state = claimFreed
			}
		case k < 84:
			r.readVictim(rng)
		case k < 92:
			r.readGangMember(rng)
		default:
			r.readFeed(rng.IntN(histProcs))
		}
	}
}

// spotSingle claims slots for a new consumer; a non-preemptible claim
// again after each lost answer, a preemptible one never.
func (r *histRig) spotSingle(rng *rand.Rand, ci int, priority int64, preemptible bool, slots int64) *spotClaim {
	s := r.spot
	c := &spotClaim{consumer: uuid.NewString(), priority: priority, preemptible: preemptible, slots: slots, state: claimLost}
	s.mu.Lock()
	s.consumers[c.consumer] = c
	s.mu.Unlock()
	body := claimBody(c.consumer, fmt.Sprintf("hist-spot-%d", ci), resources{spotClass: slots})
	body["priority"], body["preemptible"] = priority, preemptible
	retries := histRetries
	if preemptible {
		retries = 1
	}
	for range retries {
		via := rng.IntN(histProcs)
		a := r.do(via, "POST", "/claims", body)
		ret := r.now()
		switch {
		case a.status == http.StatusOK:
			var doc struct {
				allocationsDoc
				Preempted []struct {
					ConsumerUUID     string `json:"consumer_uuid"`
					RootProviderUUID string `json:"root_provider_uuid"`
					Priority         int64  `json:"priority"`
				} `json:"preempted"`
			}
			if err := json.Unmarshal(a.body, &doc); err != nil || len(doc.Allocations) != 1 {
				r.failf("POST /claims (priority %d, preemptible %v) answer: %v: %s", priority, preemptible, err, a.body)
				return c
			}
			for rp, al := range doc.Allocations {
				c.rp = rp
				if al.Resources[spotClass] != slots || !slices.Contains(s.rps, rp) {
					r.failf("claim %s of %d slots answered %s: %v", c.consumer, slots, rp, al.Resources)
				}
			}
			c.state = claimHeld
			if len(doc.Preempted) > 0 {
				r.count("preemptions answered")
			}
			s.mu.Lock()
			for _, v := range doc.Preempted {
				vc := s.consumers[v.ConsumerUUID]
				switch prev, twice := s.victims[v.ConsumerUUID]; {
				case vc == nil:
					r.failf("claim %s preempted %s, not a claim of this workload", c.consumer, v.ConsumerUUID)
				case twice && prev.by != c:
					r.failf("consumer %s preempted twice: by %s and by %s", v.ConsumerUUID, prev.by.consumer, c.consumer)
				case !vc.preemptible || vc.priority >= priority || v.Priority != vc.priority:
					r.failf("claim %s (priority %d) preempted %s (preemptible %v, priority %d, answered %d)",
						c.consumer, priority, vc.consumer, vc.preemptible, vc.priority, v.Priority)
				case v.RootProviderUUID != c.rp:
					r.failf("claim %s on %s preempted %s on %s", c.consumer, c.rp, v.ConsumerUUID, v.RootProviderUUID)
				}
				if _, twice := s.victims[v.ConsumerUUID]; !twice {
					s.victims[v.ConsumerUUID] = spotVictim{by: c, answered: ret}
				}
			}
			s.mu.Unlock()
			return c
		case !a.lost():
			if a.status != http.StatusConflict {
				r.failf("POST /claims (priority %d, preemptible %v): %d %s", priority, preemptible, a.status, a.body)
			}
			c.state = claimRefused
			s.mu.Lock()
			s.refusedBy[c.consumer] = true
			s.mu.Unlock()
			r.count("spot claim refused")
			return c
		}
		time.Sleep(300 * time.Millisecond)
	}
	return c
}

// spotGangClaim claims a gang of two or three members of one slot each,
// in either rack; never again after a lost answer.
func (r *histRig) spotGangClaim(rng *rand.Rand, ci int) *spotGang {
	s := r.spot
	g := &spotGang{state: claimLost, spread: rng.IntN(2) == 0}
	n := 2 + rng.IntN(2)
	if g.spread {
		n = 2 // a rack has two hosts
	}
	var members []map[string]any
	s.mu.Lock()
	g.id = len(s.gangs)
	s.gangs = append(s.gangs, g)
	for range n {
		m := &spotClaim{consumer: uuid.NewString(), slots: 1, state: claimLost, gang: g}
		g.members = append(g.members, m)
		s.consumers[m.consumer] = m
		members = append(members, map[string]any{"consumer_uuid": m.consumer, "resources": resources{spotClass: 1}})
	}
	s.mu.Unlock()
	racks := slices.Clone(spotRacks)
	rng.Shuffle(len(racks), func(i, j int) { racks[i], racks[j] = racks[j], racks[i] })
	body := map[string]any{"project_id": fmt.Sprintf("hist-gang-%d", ci), "user_id": "fault", "members": members,
		"domain": map[string]any{"member_of": racks}}
	if g.spread {
		body["spread"] = "hosts"
	}
	a := r.do(rng.IntN(histProcs), "POST", "/claims", body)
	set := func(state string) {
		g.state = state
		for _, m := range g.members {
			m.state = state
		}
	}
	switch {
	case a.status == http.StatusOK:
		var doc struct {
			Domain struct {
				MemberOf string `json:"member_of"`
			} `json:"domain"`
			Members []struct {
				ConsumerUUID     string `json:"consumer_uuid"`
				RootProviderUUID string `json:"root_provider_uuid"`
			} `json:"members"`
		}
		if err := json.Unmarshal(a.body, &doc); err != nil || len(doc.Members) != n {
			r.failf("POST /claims (gang of %d) answer: %v: %s", n, err, a.body)
			return g
		}
		set(claimHeld)
		g.rack = doc.Domain.MemberOf
		for i, m := range doc.Members {
			if m.ConsumerUUID != g.members[i].consumer {
				r.failf("gang %d: member %d answered %s, want %s", g.id, i, m.ConsumerUUID, g.members[i].consumer)
			}
			g.members[i].rp = m.RootProviderUUID
		}
		if msg := r.spot.gangPlaced(g, g.rack, memberRoots(g)); msg != "" {
			r.failf("gang %d answered: %s: %s", g.id, msg, a.body)
		}
		r.spot.mu.Lock()
		r.spot.placed = append(r.spot.placed, &spotPlaced{id: g.id, rack: g.rack, answered: r.now(), freeing: math.MaxInt64,
			members: slices.Clone(g.members), roots: memberRoots(g)})
		r.spot.mu.Unlock()
		r.count("gang placed")
	case !a.lost():
		if a.status != http.StatusConflict {
			r.failf("POST /claims (gang of %d): %d %s", n, a.status, a.body)
		}
		set(claimRefused)
		r.count("gang refused")
	}
	return g
}

func memberRoots(g *spotGang) []string {
	var roots []string
	for _, m := range g.members {
		roots = append(roots, m.rp)
	}
	return roots
}

// gangPlaced says what is wrong with g's members on roots (one each) in
// rack, or "".
func (s *spotRig) gangPlaced(g *spotGang, rack string, roots []string) string {
	ri := slices.Index(spotRacks, rack)
	if ri < 0 {
		return fmt.Sprintf("rack %q is not one it asked for", rack)
	}
	for _, rp := range roots {
		if i := slices.Index(s.rps, rp); i < 0 || i/2 != ri {
			return fmt.Sprintf("a member on %s, outside rack %s", rp, rack)
		}
	}
	if g.spread && len(slices.Compact(slices.Sorted(slices.Values(roots)))) != len(roots) {
		return fmt.Sprintf("spread over hosts, two members share a host: %v", roots)
	}
	return ""
}

// spotFree deletes c's allocations, again after each lost answer; a 404
// at once means c was preempted (checked at the end), after a lost
// answer that the lost one did it.
func (r *histRig) spotFree(rng *rand.Rand, c *spotClaim) {
	for attempt := range histRetries {
		via := rng.IntN(histProcs)
		a := r.do(via, "DELETE", "/allocations/"+c.consumer, nil)
		switch {
		case a.status == http.StatusNoContent, a.status == http.StatusNotFound && attempt > 0:
			c.state = claimFreed
			return
		case a.status == http.StatusNotFound && c.preemptible:
			c.state, c.gone404 = claimFreed, true
			return
		case !a.lost():
			r.failf("DELETE of held consumer %s: %d %s", c.consumer, a.status, a.body)
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
	c.state = claimFreeing
}

// readVictim reads the stored claim of a victim an answered preemption
// named: a read begun after that answer must say it was preempted, by
// that claim.
func (r *histRig) readVictim(rng *rand.Rand) {
	s := r.spot
	s.mu.Lock()
	var names []string
	for v := range s.victims {
		names = append(names, v)
	}
	s.mu.Unlock()
	if len(names) == 0 {
		return
	}
	slices.Sort(names)
	v := names[rng.IntN(len(names))]
	via := rng.IntN(histProcs)
	call := r.now()
	a := r.do(via, "GET", "/claims/"+v, nil)
	var doc struct {
		State       string         `json:"state"`
		PreemptedBy *string        `json:"preempted_by"`
		Allocations map[string]any `json:"allocations"`
	}
	if a.status != http.StatusOK || json.Unmarshal(a.body, &doc) != nil {
		r.unreadable(via, "GET /claims/{victim}", a)
		return
	}
	s.mu.Lock()
	pv := s.victims[v]
	s.reads["victim"]++
	s.mu.Unlock()
	if pv.answered < call && (doc.State != "preempted" || doc.PreemptedBy == nil || *doc.PreemptedBy != pv.by.consumer || len(doc.Allocations) != 0) {
		r.failf("GET /claims/%s through berthd %d, begun %d ms after its preemption by %s was answered: %s",
			v, via, (call-pv.answered)/1e6, pv.by.consumer, a.body)
	}
}

// spotEntry is one entry of the feed.
type spotEntry struct {
	ID                int64  `json:"id"`
	ConsumerUUID      string `json:"consumer_uuid"`
	PreemptedBy       string `json:"preempted_by"`
	Priority          int64  `json:"priority"`
	PreemptorPriority int64  `json:"preemptor_priority"`
	RootProviderUUID  string `json:"root_provider_uuid"`
}

// feed reads every page of GET /preemptions through berthd via; ok is
// false when an answer was lost.
func (r *histRig) feed(via int) (entries []spotEntry, ok bool) {
	path := "/preemptions?limit=1000"
	for path != "" {
		a := r.do(via, "GET", path, nil)
		var doc struct {
			Next        *string     `json:"next"`
			Preemptions []spotEntry `json:"preemptions"`
		}
		if a.status != http.StatusOK || json.Unmarshal(a.body, &doc) != nil {
			r.unreadable(via, "GET /preemptions", a)
			return nil, false
		}
		entries = append(entries, doc.Preemptions...)
		path = ""
		if doc.Next != nil {
			path = *doc.Next
		}
	}
	return entries, true
}

// readFeed reads the feed: every victim whose preemption was answered
// before the read began is in it, displaced by its preemptor.
func (r *histRig) readFeed(via int) {
	call := r.now()
	entries, ok := r.feed(via)
	if !ok {
		return
	}
	by := map[string]string{}
	for _, e := range entries {
		by[e.ConsumerUUID] = e.PreemptedBy
	}
	s := r.spot
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads["feed"]++
	for v, pv := range s.victims {
		if pv.answered < call && by[v] != pv.by.consumer {
			r.failf("GET /preemptions through berthd %d, begun %d ms after %s's preemption by %s was answered: preempted by %q",
				via, (call-pv.answered)/1e6, v, pv.by.consumer, by[v])
		}
	}
}

// checkSpot checks the second workload once the clients stopped:
// against the feed, read through berthd via, and the hosts' allocations
// in the database (held: consumer -> host and slots).
func (r *histRig) checkSpot(via int, held map[string]spotHeld) {
	t, s := r.t, r.spot
	var entries []spotEntry
	for attempt := 0; ; attempt++ {
		var ok bool
		if entries, ok = r.feed(via); ok {
			break
		}
		if attempt == histRetries {
			t.Fatal("GET /preemptions: no answer")
		}
		time.Sleep(300 * time.Millisecond)
	}
	s.mu.Lock()
	s.feedAtEnd, s.heldAtEnd = entries, held
	s.mu.Unlock()
	problems, summary := s.verify(entries, held)
	for _, p := range problems {
		t.Error(p)
	}
	t.Log(summary)
}

// verify checks the second workload's record against the feed's entries
// and what the hosts hold (consumer -> host and slots) once the clients
// stopped, and returns what is wrong, and a summary.
func (s *spotRig) verify(entries []spotEntry, held map[string]spotHeld) (problems []string, summary string) {
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	feed := map[string]spotEntry{}
	for _, e := range entries {
		if prev, twice := feed[e.ConsumerUUID]; twice {
			bad("consumer %s preempted twice: by %s (id %d) and by %s (id %d)", e.ConsumerUUID, prev.PreemptedBy, prev.ID, e.PreemptedBy, e.ID)
		}
		feed[e.ConsumerUUID] = e
		v, by := s.consumers[e.ConsumerUUID], s.consumers[e.PreemptedBy]
		switch {
		case v == nil || by == nil:
			bad("preemption %d: %s by %s, not this workload's claims", e.ID, e.ConsumerUUID, e.PreemptedBy)
		case !v.preemptible || v.priority >= by.priority || e.Priority != v.priority || e.PreemptorPriority != by.priority:
			bad("preemption %d: %s (preemptible %v, priority %d) by %s (priority %d); the feed says %d by %d",
				e.ID, v.consumer, v.preemptible, v.priority, by.consumer, by.priority, e.Priority, e.PreemptorPriority)
		case s.refusedBy[e.PreemptedBy]:
			bad("preemption %d: %s by %s, a claim answered 409", e.ID, e.ConsumerUUID, e.PreemptedBy)
		}
		if h, ok := held[e.ConsumerUUID]; ok {
			bad("preempted consumer %s (by %s) still holds %d slots on %s", e.ConsumerUUID, e.PreemptedBy, h.used, h.rp)
		}
	}
	for v, pv := range s.victims {
		if e, ok := feed[v]; !ok || e.PreemptedBy != pv.by.consumer || e.RootProviderUUID != pv.by.rp {
			bad("victim %s of %s's answered preemption: the feed has %+v (present %v)", v, pv.by.consumer, e, ok)
		}
	}
	states, settled := map[string]int{}, map[string]int{}
	for _, c := range s.consumers {
		if c.gang != nil {
			continue
		}
		states[c.state]++
		h, ok := held[c.consumer]
		if c.state == claimLost {
			settled[fmt.Sprintf("claims lost, held %v", ok)]++
		}
		_, preempted := feed[c.consumer]
		switch {
		case c.state == claimHeld && !preempted && (!ok || h.rp != c.rp || h.used != c.slots):
			bad("acknowledged claim %s (priority %d, preemptible %v): the database holds %+v (present %v), want %d slots on %s",
				c.consumer, c.priority, c.preemptible, h, ok, c.slots, c.rp)
		case (c.state == claimRefused || c.state == claimFreed) && ok:
			bad("%s claim %s: the database holds %+v", c.state, c.consumer, h)
		case c.gone404 && !preempted:
			bad("claim %s: its delete found it gone, and it was not preempted", c.consumer)
		case ok && h.used != c.slots:
			bad("claim %s of %d slots: the database holds %+v", c.consumer, c.slots, h)
		}
	}
	gangs := map[string]int{}
	for _, g := range s.gangs {
		gangs[g.state]++
		var roots []string
		for _, m := range g.members {
			if h, ok := held[m.consumer]; ok {
				roots = append(roots, h.rp)
				if h.used != 1 || g.state == claimHeld && h.rp != m.rp {
					bad("gang %d: member %s holds %+v, answered 1 slot on %s", g.id, m.consumer, h, m.rp)
				}
			}
			if _, ok := feed[m.consumer]; ok {
				bad("gang %d: member %s (not preemptible) was preempted", g.id, m.consumer)
			}
		}
		if g.state == claimLost {
			settled[fmt.Sprintf("gangs lost, members held %d of %d", len(roots), len(g.members))]++
		}
		switch {
		case g.state == claimFreeing:
			// Some members' deletes lost their answers: no longer a gang.
		case g.state == claimHeld && len(roots) != len(g.members), g.state == claimLost && len(roots) != 0 && len(roots) != len(g.members):
			bad("gang %d (%s): %d of its %d members hold slots: a partial gang", g.id, g.state, len(roots), len(g.members))
		case (g.state == claimRefused || g.state == claimFreed) && len(roots) != 0:
			bad("gang %d (%s): %d members hold slots", g.id, g.state, len(roots))
		case len(roots) == len(g.members):
			rack := g.rack
			if rack == "" { // a lost answer: the rack of its first member
				rack = spotRacks[slices.Index(s.rps, roots[0])/2]
			}
			if msg := s.gangPlaced(g, rack, roots); msg != "" {
				bad("gang %d (%s) in the database: %s", g.id, g.state, msg)
			}
		}
	}
	summary = fmt.Sprintf("preemption and gangs: %d preempted (%d victims answered), claims by final state %v, gangs by final state %v, lost answers settled %v, reads %v",
		len(entries), len(s.victims), states, gangs, settled, s.reads)
	return problems, summary
}

// spotHeld is what a consumer holds on the second workload's hosts.
type spotHeld struct {
	rp   string
	used int64
}

func (h spotHeld) String() string {
	return fmt.Sprintf("%d on %s", h.used, strings.TrimPrefix(h.rp, "b3300000-"))
}

// freeing notes that gang id's client began to free it at now.
func (s *spotRig) freeing(id int, now int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.placed {
		if p.id == id {
			p.freeing = now
		}
	}
}

// readGangMember reads the stored claim of a member of a gang answered
// 200: a read begun after that answer and answered before its client
// began to free the gang must show the member holding its slot on the
// host answered, in the gang, in the rack answered. (A read that a
// delete overtakes is not judged: it may answer no claim, or a gang
// without the members already deleted.)
func (r *histRig) readGangMember(rng *rand.Rand) {
	s := r.spot
	s.mu.Lock()
	if len(s.placed) == 0 {
		s.mu.Unlock()
		return
	}
	p := s.placed[rng.IntN(len(s.placed))]
	i := rng.IntN(len(p.members))
	member, root := p.members[i].consumer, p.roots[i]
	s.mu.Unlock()
	via := rng.IntN(histProcs)
	call := r.now()
	a := r.do(via, "GET", "/claims/"+member, nil)
	var doc struct {
		State            string                    `json:"state"`
		RootProviderUUID *string                   `json:"root_provider_uuid"`
		Allocations      map[string]map[string]any `json:"allocations"`
		Gang             *struct {
			Domain *struct {
				MemberOf string `json:"member_of"`
			} `json:"domain"`
			Members []string `json:"members"`
		} `json:"gang"`
	}
	// Its client notes that it frees the gang before it sends the first
	// delete: an answer that came before that note shows no delete.
	s.mu.Lock()
	freeing := p.freeing
	s.mu.Unlock()
	if freeing != math.MaxInt64 || a.lost() {
		return
	}
	if a.status != http.StatusOK || json.Unmarshal(a.body, &doc) != nil {
		r.unreadable(via, "GET /claims/{member}", a)
		return
	}
	s.mu.Lock()
	s.reads["gang member"]++
	s.mu.Unlock()
	var names []string // the gang's members, in any order
	for _, m := range p.members {
		names = append(names, m.consumer)
	}
	_, onRoot := doc.Allocations[root]
	if doc.State == "preempted" || doc.RootProviderUUID == nil || *doc.RootProviderUUID != root || !onRoot || len(doc.Allocations) != 1 ||
		doc.Gang == nil || doc.Gang.Domain == nil || doc.Gang.Domain.MemberOf != p.rack || !slices.Equal(slices.Sorted(slices.Values(doc.Gang.Members)), slices.Sorted(slices.Values(names))) {
		r.failf("GET /claims/%s through berthd %d, begun %d ms after its gang %d was answered (on %s, in %s, members %v): %s",
			member, via, (call-p.answered)/1e6, p.id, root, p.rack, names, a.body)
	}
}
