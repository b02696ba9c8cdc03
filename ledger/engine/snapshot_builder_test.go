package engine

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"
)

// snapBuilder builds snapshots by hand for engine tests. Providers are
// named; a provider's uuid is its name, which keeps expectations readable.
type snapBuilder struct {
	provs  map[string]*ProviderRecord
	order  []string
	n      *Names
	nextID int64
}

// customClassMinID is the first id the ledger gives a custom resource
// class (resources.CustomClassMinID).
const customClassMinID = 10000

// standardClasses and standardTraits are the ledger's standard resource classes and traits,
// read from its lists, with the ids the database gives them: a class's
// position in its list, a trait's position plus one.
var standardClasses, standardTraits = readNames("../resources/standard/resource-classes.txt"), readNames("../resources/standard/traits.txt")

func readNames(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	return strings.Fields(string(b))
}

func newSnapBuilder() *snapBuilder {
	n := NewNames()
	for i, c := range standardClasses {
		n.AddClass(int32(i), c)
	}
	for i, t := range standardTraits {
		n.AddTrait(int32(i+1), t)
	}
	return &snapBuilder{provs: map[string]*ProviderRecord{}, n: n}
}

// rp creates a provider; parent is "" for a root.
func (b *snapBuilder) rp(name, parent string) *snapBuilder {
	b.nextID++
	p := &ProviderRecord{ID: b.nextID, UUID: name, Name: name, RootID: b.nextID}
	if parent != "" {
		pp := b.provs[parent]
		p.ParentID, p.RootID = pp.ID, pp.RootID
	}
	b.provs[name] = p
	b.order = append(b.order, name)
	return b
}

func (b *snapBuilder) classID(name string) int32 {
	if id, ok := b.n.classByName[name]; ok {
		return id
	}
	id := int32(customClassMinID + len(b.n.classByName))
	b.n.AddClass(id, name)
	return id
}

func (b *snapBuilder) traitID(name string) int32 {
	if id, ok := b.n.traitByName[name]; ok {
		return id
	}
	id := int32(100000 + len(b.n.traitByName))
	b.n.AddTrait(id, name)
	return id
}

// inv adds inventory: total, then optional reserved, min, max, step,
// ratio*100 (defaults 0, 1, total, 1, 100).
func (b *snapBuilder) inv(name, class string, total int64, opt ...int64) *snapBuilder {
	o := []int64{0, 1, total, 1, 100}
	copy(o, opt)
	p := b.provs[name]
	p.Inventories = append(p.Inventories, InventoryRecord{Class: b.classID(class), Total: total, Reserved: o[0],
		MinUnit: o[1], MaxUnit: o[2], StepSize: o[3], Ratio: float64(o[4]) / 100})
	slices.SortFunc(p.Inventories, func(x, y InventoryRecord) int { return int(x.Class - y.Class) })
	return b
}

func (b *snapBuilder) used(name, class string, used int64) *snapBuilder {
	b.provs[name].Inventory(b.classID(class)).Used = used
	return b
}

func (b *snapBuilder) traits(name string, traits ...string) *snapBuilder {
	p := b.provs[name]
	for _, t := range traits {
		p.Traits = append(p.Traits, b.traitID(t))
	}
	slices.Sort(p.Traits)
	return b
}

func (b *snapBuilder) aggs(name string, aggs ...string) *snapBuilder {
	p := b.provs[name]
	for _, a := range aggs {
		id, ok := b.n.aggByUUID[a]
		if !ok {
			id = int32(len(b.n.aggByUUID) + 1)
			b.n.AddAggregate(id, a)
		}
		p.Aggregates = append(p.Aggregates, id)
	}
	slices.Sort(p.Aggregates)
	return b
}

func (b *snapBuilder) build() *Snapshot {
	list := make([]*ProviderRecord, 0, len(b.provs))
	for _, name := range b.order {
		list = append(list, NewRecord(b.provs[name])) // laid out as the ledger loads records
	}
	return New(list, b.n)
}

// res parses "VCPU:1,MEMORY_MB:1024".
func res(s string) []ResourceAmount {
	var out []ResourceAmount
	for _, f := range strings.Split(s, ",") {
		var a ResourceAmount
		c, n, _ := strings.Cut(f, ":")
		a.Class = c
		fmt.Sscan(n, &a.Amount)
		out = append(out, a)
	}
	return out
}

// reqGroup is a request group of suffix taking resources ("CLASS:n,...";
// "" takes nothing).
func reqGroup(suffix, resources string) RequestGroup {
	rg := RequestGroup{Suffix: suffix}
	if resources != "" {
		rg.Resources = res(resources)
	}
	return rg
}

// render describes candidates canonically: one string per candidate,
// "prov:CLASS=n+CLASS=n prov:..." with providers and classes sorted, the
// whole list sorted.
func render(c *Candidates) []string {
	var out []string
	for _, ar := range c.Requests {
		var parts []string
		for _, a := range ar.Allocations {
			var rs []string
			for _, r := range a.Resources {
				rs = append(rs, fmt.Sprintf("%s=%d", r.Class, r.Amount))
			}
			sort.Strings(rs)
			parts = append(parts, a.ProviderUUID+":"+strings.Join(rs, "+"))
		}
		sort.Strings(parts)
		out = append(out, strings.Join(parts, " "))
	}
	sort.Strings(out)
	return out
}

func summaryNames(c *Candidates) []string {
	var out []string
	for _, s := range c.Summaries {
		out = append(out, s.UUID)
	}
	sort.Strings(out)
	return out
}

func mustCandidates(t *testing.T, s *Snapshot, p CandidatesParams) *Candidates {
	t.Helper()
	c, err := s.Candidates(context.Background(), &p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
