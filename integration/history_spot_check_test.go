package integration

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// TestHistorySpotChecker checks the second workload's checker (verify)
// without a berthd: a record and a database that keep every invariant
// pass, and each broken invariant is reported.
func TestHistorySpotChecker(t *testing.T) {
	rp := func(i int) string { return fmt.Sprintf("b3300000-0000-4000-8000-1000000000%02d", i+1) }
	// fixture: spot claim v (priority -2) preempted on host 0 by p
	// (priority 1); q, non-preemptible, held on host 3; refused, a claim
	// answered 409; a gang g held in rack 0 (hosts 0 and 1, spread); a
	// gang l whose answer was lost, absent.
	fixture := func() (*spotRig, []spotEntry, map[string]spotHeld) {
		s := &spotRig{consumers: map[string]*spotClaim{}, victims: map[string]spotVictim{}, refusedBy: map[string]bool{}, reads: map[string]int{}}
		for i := range spotProviders {
			s.rps = append(s.rps, rp(i))
		}
		add := func(c *spotClaim) *spotClaim { s.consumers[c.consumer] = c; return c }
		v := add(&spotClaim{consumer: "v", priority: -2, preemptible: true, slots: 1, state: claimHeld, rp: rp(0)})
		p := add(&spotClaim{consumer: "p", priority: 1, slots: 2, state: claimHeld, rp: rp(0)})
		add(&spotClaim{consumer: "q", slots: 1, state: claimHeld, rp: rp(3)})
		add(&spotClaim{consumer: "refused", priority: 1, slots: 1, state: claimRefused})
		add(&spotClaim{consumer: "w", priority: -1, preemptible: true, slots: 1, state: claimLost})
		s.refusedBy["refused"] = true
		s.victims[v.consumer] = spotVictim{by: p, answered: 1}
		g := &spotGang{id: 0, spread: true, state: claimHeld, rack: spotRacks[0]}
		l := &spotGang{id: 1, state: claimLost}
		for i, m := range []string{"g1", "g2"} {
			g.members = append(g.members, add(&spotClaim{consumer: m, slots: 1, state: claimHeld, rp: rp(i), gang: g}))
		}
		for _, m := range []string{"l1", "l2"} {
			l.members = append(l.members, add(&spotClaim{consumer: m, slots: 1, state: claimLost, gang: l}))
		}
		s.gangs = []*spotGang{g, l}
		entries := []spotEntry{{ID: 1, ConsumerUUID: "v", PreemptedBy: "p", Priority: -2, PreemptorPriority: 1, RootProviderUUID: rp(0)}}
		held := map[string]spotHeld{"p": {rp(0), 2}, "q": {rp(3), 1}, "g1": {rp(0), 1}, "g2": {rp(1), 1}}
		return s, entries, held
	}
	s, entries, held := fixture()
	if problems, _ := s.verify(entries, held); len(problems) != 0 {
		t.Fatalf("a history that keeps every invariant: %q", problems)
	}
	// A rejected history is saved with the second workload's record.
	s.feedAtEnd, s.heldAtEnd = entries, held
	raw, err := histFile{Test: t.Name(), Spot: s.record()}.marshal()
	if err != nil {
		t.Fatal(err)
	}
	var f histFile
	if err := json.Unmarshal(raw, &f); err != nil || f.Spot == nil {
		t.Fatalf("the saved history %s: %v", raw, err)
	}
	if len(f.Spot.Consumers) != len(s.consumers) || len(f.Spot.Gangs) != 2 || f.Spot.Victims["v"].By != "p" ||
		len(f.Spot.Feed) != 1 || f.Spot.Held["g2"].RP != rp(1) {
		t.Errorf("the saved record: %+v", f.Spot)
	}
	for _, c := range []struct {
		name, want string
		breakIt    func(s *spotRig, entries *[]spotEntry, held map[string]spotHeld)
	}{
		{"a victim still holds", "still holds", func(_ *spotRig, _ *[]spotEntry, h map[string]spotHeld) { h["v"] = spotHeld{rp(0), 1} }},
		{"an answered victim not in the feed", "the feed has", func(_ *spotRig, e *[]spotEntry, _ map[string]spotHeld) { *e = nil }},
		{"a victim from another host", "the feed has", func(_ *spotRig, e *[]spotEntry, _ map[string]spotHeld) { (*e)[0].RootProviderUUID = rp(1) }},
		{"displaced twice", "preempted twice", func(_ *spotRig, e *[]spotEntry, _ map[string]spotHeld) {
			*e = append(*e, spotEntry{ID: 2, ConsumerUUID: "v", PreemptedBy: "p", Priority: -2, PreemptorPriority: 1, RootProviderUUID: rp(0)})
		}},
		{"a non-preemptible victim", "(preemptible false", func(_ *spotRig, e *[]spotEntry, h map[string]spotHeld) {
			delete(h, "q")
			*e = append(*e, spotEntry{ID: 2, ConsumerUUID: "q", PreemptedBy: "p", PreemptorPriority: 1, RootProviderUUID: rp(3)})
		}},
		{"a victim of equal priority", "priority -1) by p (priority -1)", func(s *spotRig, e *[]spotEntry, _ map[string]spotHeld) {
			s.consumers["p"].priority = -1
			*e = append(*e, spotEntry{ID: 2, ConsumerUUID: "w", PreemptedBy: "p", Priority: -1, PreemptorPriority: -1, RootProviderUUID: rp(0)})
		}},
		{"a refused claim displaced someone", "a claim answered 409", func(_ *spotRig, e *[]spotEntry, _ map[string]spotHeld) {
			*e = append(*e, spotEntry{ID: 2, ConsumerUUID: "w", PreemptedBy: "refused", Priority: -1, PreemptorPriority: 1, RootProviderUUID: rp(2)})
		}},
		{"an acknowledged claim lost", "acknowledged claim q", func(_ *spotRig, _ *[]spotEntry, h map[string]spotHeld) { delete(h, "q") }},
		{"a refused claim holds", "refused claim refused", func(_ *spotRig, _ *[]spotEntry, h map[string]spotHeld) { h["refused"] = spotHeld{rp(2), 1} }},
		{"a delete found a claim gone that nobody preempted", "not preempted", func(s *spotRig, _ *[]spotEntry, h map[string]spotHeld) {
			delete(h, "q")
			s.consumers["q"].state, s.consumers["q"].gone404 = claimFreed, true
		}},
		{"an answered gang partial", "a partial gang", func(_ *spotRig, _ *[]spotEntry, h map[string]spotHeld) { delete(h, "g2") }},
		{"a lost gang partial", "a partial gang", func(_ *spotRig, _ *[]spotEntry, h map[string]spotHeld) { h["l1"] = spotHeld{rp(2), 1} }},
		{"a lost gang across racks", "outside rack", func(_ *spotRig, _ *[]spotEntry, h map[string]spotHeld) {
			h["l1"], h["l2"] = spotHeld{rp(1), 1}, spotHeld{rp(2), 1}
		}},
		{"a spread gang on one host", "share a host", func(_ *spotRig, _ *[]spotEntry, h map[string]spotHeld) {
			h["g2"] = spotHeld{rp(0), 1}
		}},
		{"a refused gang holds", "members hold slots", func(s *spotRig, _ *[]spotEntry, h map[string]spotHeld) {
			s.gangs[1].state = claimRefused
			h["l1"], h["l2"] = spotHeld{rp(2), 1}, spotHeld{rp(3), 1}
		}},
		{"a gang member preempted", "(not preemptible) was preempted", func(_ *spotRig, e *[]spotEntry, h map[string]spotHeld) {
			delete(h, "g2")
			*e = append(*e, spotEntry{ID: 2, ConsumerUUID: "g2", PreemptedBy: "p", PreemptorPriority: 1, RootProviderUUID: rp(1)})
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, entries, held := fixture()
			c.breakIt(s, &entries, held)
			problems, _ := s.verify(entries, held)
			if !strings.Contains(strings.Join(problems, "\n"), c.want) {
				t.Errorf("problems %q, want one saying %q", problems, c.want)
			}
		})
	}
}
