package engine

import (
	"iter"
	"slices"
)

// ResourceAmount is an amount of one resource class.
type ResourceAmount struct {
	Class  string
	Amount int64
}

// RequestGroup is one group of a request for resources: Placement's
// `resources`, `required`, `member_of` and `in_tree` query parameters with
// one suffix. The unsuffixed group (Suffix "") may be satisfied by several
// providers of one tree plus sharing providers; a suffixed (granular)
// group must be satisfied by a single provider.
type RequestGroup struct {
	Suffix    string
	Resources []ResourceAmount
	// RequiredTraits: every inner list must be matched by at least one of
	// its traits (all-of any-of).
	RequiredTraits  [][]string
	ForbiddenTraits []string
	// MemberOf: every inner list of aggregate uuids must be matched by at
	// least one of its aggregates.
	MemberOf            [][]string
	ForbiddenAggregates []string
	// InTree is a provider uuid; the group must be satisfied within its tree.
	InTree string
}

// resAmount is a ResourceAmount with its class resolved.
type resAmount struct {
	class  int32
	amount int64
	name   string // the class's name
}

// filter is a request group with names resolved to ids: the predicate a
// single provider must satisfy.
type filter struct {
	res        []resAmount
	required   [][]int32 // all-of any-of
	forbidden  []int32
	memberOf   [][]int32 // all-of any-of; an empty inner list matches nothing
	forbidAggs []int32
	inTree     int32 // root index; -1 for none
}

// GroupNames lists the class and trait names a group mentions.
// A snapshot must have these names right before it resolves the group
// (see Snapshot.UnsureNames).
func GroupNames(g *RequestGroup) (classes, traits []string) {
	return appendGroupNames(nil, nil, g)
}

// appendGroupNames appends GroupNames(g) to classes and traits.
func appendGroupNames(classes, traits []string, g *RequestGroup) ([]string, []string) {
	for _, r := range g.Resources {
		classes = append(classes, r.Class)
	}
	for _, any := range g.RequiredTraits {
		traits = append(traits, any...)
	}
	traits = append(traits, g.ForbiddenTraits...)
	return classes, traits
}

func (s *Snapshot) classIDs(res []ResourceAmount) ([]resAmount, error) {
	out := make([]resAmount, 0, len(res))
	for _, r := range res {
		id, ok := s.names.classByName[r.Class]
		if !ok {
			return nil, &UnknownNameError{Name: r.Class}
		}
		out = append(out, resAmount{class: id, amount: r.Amount, name: r.Class})
	}
	return out, nil
}

func (s *Snapshot) traitIDs(names []string) ([]int32, error) {
	out := make([]int32, 0, len(names))
	for _, n := range names {
		id, ok := s.names.traitByName[n]
		if !ok {
			return nil, &UnknownNameError{Trait: true, Name: n}
		}
		out = append(out, id)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func (s *Snapshot) requiredIDs(req [][]string) ([][]int32, error) {
	out := make([][]int32, 0, len(req))
	for _, any := range req {
		ids, err := s.traitIDs(any)
		if err != nil {
			return nil, err
		}
		out = append(out, ids)
	}
	return out, nil
}

// aggIDs resolves aggregate uuids as spelled (Placement compares them
// with the stored spellings as strings: 5F..A1 does not find 5f..a1),
// dropping unknown ones: an aggregate no provider belongs to matches
// nothing.
func (s *Snapshot) aggIDs(uuids []string) []int32 {
	out := make([]int32, 0, len(uuids))
	for _, u := range uuids {
		if id, ok := s.names.aggByUUID[u]; ok {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func (s *Snapshot) memberOfIDs(memberOf [][]string) [][]int32 {
	out := make([][]int32, 0, len(memberOf))
	for _, any := range memberOf {
		out = append(out, s.aggIDs(any))
	}
	return out
}

// treeOf returns the root index of the provider with the given uuid.
func (s *Snapshot) treeOf(uuid string) (int32, bool) {
	i, ok := s.providerIndex(uuid)
	if !ok {
		return -1, false
	}
	return s.idx.root[i], true
}

// providerIndex finds a provider by uuid as written: Placement compares
// the uuid= and in_tree= filters with the stored (canonical) uuids as
// strings, so an upper-case or dashless spelling finds nothing.
func (s *Snapshot) providerIndex(uuid string) (int32, bool) {
	return s.idx.byUUID.find(uuid, func(i int32) string { return s.provs.at(i).UUID })
}

// hasAllTraits reports whether p matches every any-of clause.
func hasAllTraits(p *ProviderRecord, required [][]int32) bool {
	for _, any := range required {
		if !p.hasAnyTrait(any) {
			return false
		}
	}
	return true
}

// inAllAggs reports whether p matches every any-of aggregate clause.
func inAllAggs(p *ProviderRecord, memberOf [][]int32) bool {
	for _, any := range memberOf {
		if !p.inAnyAgg(any) {
			return false
		}
	}
	return true
}

// matches reports whether provider i alone satisfies f.
func (s *Snapshot) matches(i int32, f *filter) bool {
	p := s.provs.at(i)
	if f.inTree >= 0 && s.idx.root[i] != f.inTree {
		return false
	}
	for _, r := range f.res {
		inv := p.Inventory(r.class)
		if inv == nil || !inv.fits(r.amount) {
			return false
		}
	}
	return hasAllTraits(p, f.required) && !p.hasAnyTrait(f.forbidden) &&
		inAllAggs(p, f.memberOf) && !p.inAnyAgg(f.forbidAggs)
}

// driver picks, for a single-provider filter, the shortest index list that
// every match must be on (all=true: none applies).
func (s *Snapshot) driver(f *filter) (drive []int32, all bool) {
	all = true
	consider := func(l []int32) {
		if all || len(l) < len(drive) {
			drive, all = l, false
		}
	}
	for _, r := range f.res {
		consider(s.idx.byClass[r.class])
	}
	for _, any := range f.required {
		if len(any) == 1 {
			consider(s.idx.byTrait[any[0]])
		}
	}
	for _, any := range f.memberOf {
		if len(any) == 1 {
			consider(s.idx.byAgg[any[0]])
		}
	}
	return drive, all
}

// matching returns, ascending, the providers that alone satisfy f.
func (s *Snapshot) matching(f *filter) []int32 {
	var out []int32
	s.eachMatching(f, func(i int32) bool {
		out = append(out, i)
		return true
	})
	return out
}

// eachMatching calls yield, ascending, with each provider that alone
// satisfies f, until yield returns false. It walks the shortest of the
// index lists that any match must be on (a tree, a class, a single trait,
// a single aggregate) and checks the rest of f on each provider of it.
// It holds no memory per provider unless that list is out of order (a
// tree's members, in depth order), whose matches it then sorts first.
func (s *Snapshot) eachMatching(f *filter, yield func(int32) bool) {
	for _, any := range f.memberOf {
		if len(any) == 0 {
			return
		}
	}
	drive, all := s.driver(f)
	if f.inTree >= 0 && (all || len(s.idx.members.of(f.inTree)) < len(drive)) {
		drive, all = s.idx.members.of(f.inTree), false
	}
	if all {
		for i := range s.provs.len() {
			if s.matches(int32(i), f) && !yield(int32(i)) {
				return
			}
		}
		return
	}
	if slices.IsSorted(drive) {
		for _, i := range drive {
			if s.matches(i, f) && !yield(i) {
				return
			}
		}
		return
	}
	var out []int32
	for _, i := range drive {
		if s.matches(i, f) {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	for _, i := range out {
		if !yield(i) {
			return
		}
	}
}

// ProviderFilter selects providers for GET /resource_providers. Empty
// strings mean "no filter"; Group's Suffix is ignored and its criteria
// apply to each provider alone.
type ProviderFilter struct {
	Name   string
	UUID   string
	InTree string
	Group  RequestGroup
}

// ProvidersMatching lists, in creation order, the providers that satisfy f.
// An unknown trait or resource class is an *UnknownNameError; an unknown
// in_tree provider or aggregate simply matches nothing. The snapshot's
// names must be right for the names f uses (see GroupNames).
func (s *Snapshot) ProvidersMatching(f *ProviderFilter) ([]Provider, error) {
	l, err := s.ProviderList(f)
	if err != nil {
		return nil, err
	}
	return slices.AppendSeq([]Provider{}, l.All()), nil
}

// ProviderList is the answer to a provider listing before it is read: the
// snapshot and the resolved filter. Walking it (All) reads the providers
// from the snapshot one at a time, so a listing of every provider of a
// large cloud holds no memory per provider. The snapshot is immutable, so
// every walk yields the same providers.
type ProviderList struct {
	s    *Snapshot
	flt  filter
	name string
	// one is the only candidate when the filter names a provider by uuid
	// or name (-1: none matches); unused when byKey is false.
	one   int32
	byKey bool
}

// ProviderList resolves f against the snapshot: the same providers, in
// the same order and with the same errors, as ProvidersMatching, read
// when the list is walked.
func (s *Snapshot) ProviderList(f *ProviderFilter) (*ProviderList, error) {
	l := &ProviderList{s: s, flt: filter{inTree: -1}, name: f.Name, one: -1}
	if f.InTree != "" {
		r, ok := s.treeOf(f.InTree)
		if !ok {
			l.byKey = true // nothing
			return l, nil
		}
		l.flt.inTree = r
	}
	flt := &l.flt
	var err error
	// Placement resolves traits before aggregates and classes; keep its
	// order so the same request fails the same way.
	if flt.required, err = s.requiredIDs(f.Group.RequiredTraits); err != nil {
		return nil, err
	}
	if flt.forbidden, err = s.traitIDs(f.Group.ForbiddenTraits); err != nil {
		return nil, err
	}
	flt.memberOf = s.memberOfIDs(f.Group.MemberOf)
	flt.forbidAggs = s.aggIDs(f.Group.ForbiddenAggregates)
	if flt.res, err = s.classIDs(f.Group.Resources); err != nil {
		return nil, err
	}
	switch {
	case f.UUID != "":
		l.byKey = true
		if i, ok := s.providerIndex(f.UUID); ok && s.matches(i, flt) {
			l.one = i
		}
	case f.Name != "":
		l.byKey = true
		if i, ok := s.idx.byName.find(f.Name, func(i int32) string { return s.provs.at(i).Name }); ok && s.matches(i, flt) {
			l.one = i
		}
	}
	return l, nil
}

// All yields the list's providers in creation order. It may be called
// more than once (e.g. once for the newest change, once to write them).
func (l *ProviderList) All() iter.Seq[Provider] {
	return func(yield func(Provider) bool) {
		l.each(func(i int32) bool { return yield(l.s.provider(i)) })
	}
}

// each calls yield with the index of each of the list's providers, in
// creation order, until it returns false.
func (l *ProviderList) each(yield func(int32) bool) {
	emit := func(i int32) bool {
		if l.name != "" && l.s.provs.at(i).Name != l.name {
			return true
		}
		return yield(i)
	}
	if l.byKey {
		if l.one >= 0 {
			emit(l.one)
		}
		return
	}
	l.s.eachMatching(&l.flt, emit)
}

// all reports whether the list is of every provider (no filter).
func (l *ProviderList) all() bool {
	f := &l.flt
	return !l.byKey && l.name == "" && f.inTree < 0 && len(f.res) == 0 && len(f.required) == 0 &&
		len(f.forbidden) == 0 && len(f.memberOf) == 0 && len(f.forbidAggs) == 0
}
