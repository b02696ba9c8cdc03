package engine

import (
	"cmp"
	"slices"
	"strings"
)

// Utilisation: what the operator console shows of the cloud as a whole,
// computed from one snapshot with no database. Every answer is an
// aggregate (totals per class, per aggregate, per trait, a histogram) or
// one page of roots, so its size does not grow with the cloud: one pass
// over the providers, no allocation per provider.

// ClassUse is the capacity and usage of one resource class over some
// providers.
type ClassUse struct {
	Class string
	// Total and Reserved are the inventories' sums; Capacity is the sum
	// of (total - reserved) * allocation_ratio in whole units; Used is
	// what is allocated.
	Total, Reserved, Capacity, Used int64
	// MinRatio and MaxRatio are the smallest and largest allocation
	// ratio of the inventories counted.
	MinRatio, MaxRatio float64
	// Providers is how many providers have an inventory of the class.
	Providers int
}

// Free is Capacity less Used, never below zero.
func (u ClassUse) Free() int64 { return max(u.Capacity-u.Used, 0) }

// Fraction is Used over Capacity (0 when there is no capacity).
func (u ClassUse) Fraction() float64 {
	if u.Capacity <= 0 {
		return 0
	}
	return float64(u.Used) / float64(u.Capacity)
}

// add counts inv in u.
func (u *ClassUse) add(inv *InventoryRecord) {
	if u.Providers == 0 || inv.Ratio < u.MinRatio {
		u.MinRatio = inv.Ratio
	}
	if u.Providers == 0 || inv.Ratio > u.MaxRatio {
		u.MaxRatio = inv.Ratio
	}
	u.Providers++
	u.Total += inv.Total
	u.Reserved += inv.Reserved
	u.Capacity += inv.Capacity()
	u.Used += inv.Used
}

// Buckets is the number of buckets of Utilisation.Histogram.
const Buckets = 10

// Utilisation is the cloud in numbers.
type Utilisation struct {
	Providers, Roots int
	// Classes are the totals per resource class, by class name.
	Classes []ClassUse
	// Histogram counts the roots by the utilisation of their busiest
	// class (RootUse.Fraction): bucket i holds [i/10, (i+1)/10), the
	// last one also everything at or over 100%.
	Histogram [Buckets]int
}

// Utilisation sums the snapshot's inventories per class and counts its
// roots by utilisation.
func (s *Snapshot) Utilisation() *Utilisation {
	out := &Utilisation{Providers: s.provs.len(), Roots: len(s.idx.roots)}
	byClass := map[int32]*ClassUse{}
	for i := range int32(s.provs.len()) {
		for k := range s.provs.at(i).Inventories {
			inv := &s.provs.at(i).Inventories[k]
			u := byClass[inv.Class]
			if u == nil {
				u = &ClassUse{Class: s.names.ClassName(inv.Class)}
				byClass[inv.Class] = u
			}
			u.add(inv)
		}
	}
	for _, u := range byClass {
		out.Classes = append(out.Classes, *u)
	}
	slices.SortFunc(out.Classes, func(a, b ClassUse) int { return strings.Compare(a.Class, b.Class) })
	for _, r := range s.idx.roots {
		out.Histogram[bucket(s.rootFraction(r))]++
	}
	return out
}

// bucket is the Histogram bucket of a utilisation fraction.
func bucket(f float64) int {
	return min(max(int(f*Buckets), 0), Buckets-1)
}

// rootFraction is the utilisation of the busiest class of root r's tree,
// its providers' inventories summed per class.
func (s *Snapshot) rootFraction(r int32) float64 {
	var used, capa [8]int64
	var classes [8]int32
	n := 0
	top := 0.0
	for _, m := range s.idx.members.of(r) {
		for k := range s.provs.at(m).Inventories {
			inv := &s.provs.at(m).Inventories[k]
			j := slices.Index(classes[:n], inv.Class)
			if j < 0 {
				if n == len(classes) {
					// A tree of more than 8 classes: count each
					// inventory on its own.
					if c := inv.Capacity(); c > 0 {
						top = max(top, float64(inv.Used)/float64(c))
					}
					continue
				}
				j, classes[n] = n, inv.Class
				n++
			}
			used[j] += inv.Used
			capa[j] += inv.Capacity()
		}
	}
	for j := range n {
		if capa[j] > 0 {
			top = max(top, float64(used[j])/float64(capa[j]))
		}
	}
	return top
}

// GroupKind says what UtilisationBy groups providers by.
type GroupKind int

// Groupings of UtilisationBy.
const (
	ByAggregate GroupKind = iota
	ByTrait
)

// GroupUse is the usage of the providers of one aggregate (by uuid) or
// with one trait (by name).
type GroupUse struct {
	Key       string
	Providers int
	Classes   []ClassUse
}

// UtilisationBy sums the inventories per class of the providers of each
// aggregate or trait, the groups with the most providers first (then by
// key), and returns the page of limit groups from offset, and how many
// groups there are.
func (s *Snapshot) UtilisationBy(kind GroupKind, offset, limit int) ([]GroupUse, int) {
	index, name := s.idx.byAgg, s.names.AggregateUUID
	if kind == ByTrait {
		index, name = s.idx.byTrait, s.names.TraitName
	}
	keys := make([]int32, 0, len(index))
	for k, members := range index {
		if len(members) > 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b int32) int {
		if d := cmp.Compare(len(index[b]), len(index[a])); d != 0 {
			return d
		}
		return strings.Compare(name(a), name(b))
	})
	total := len(keys)
	keys = page(keys, offset, limit)
	out := make([]GroupUse, len(keys))
	for i, k := range keys {
		byClass := map[int32]*ClassUse{}
		for _, m := range index[k] {
			for j := range s.provs.at(m).Inventories {
				inv := &s.provs.at(m).Inventories[j]
				if byClass[inv.Class] == nil {
					byClass[inv.Class] = &ClassUse{Class: s.names.ClassName(inv.Class)}
				}
				byClass[inv.Class].add(inv)
			}
		}
		g := GroupUse{Key: name(k), Providers: len(index[k])}
		for _, u := range byClass {
			g.Classes = append(g.Classes, *u)
		}
		slices.SortFunc(g.Classes, func(a, b ClassUse) int { return strings.Compare(a.Class, b.Class) })
		out[i] = g
	}
	return out, total
}

// page is the part of list from offset, at most limit long (no limit
// when limit <= 0).
func page[T any](list []T, offset, limit int) []T {
	if offset >= len(list) {
		return nil
	}
	list = list[max(offset, 0):]
	if limit > 0 && len(list) > limit {
		list = list[:limit]
	}
	return list
}

// RootUse is one tree's utilisation: Fraction is that of its busiest
// class (used over capacity, summed over the tree's providers).
type RootUse struct {
	UUID, Name string
	Fraction   float64
}

// RootUses returns the page of limit roots from offset, in the engine's
// root order (creation order), with their utilisation, and how many
// roots there are: the console's heat map.
func (s *Snapshot) RootUses(offset, limit int) ([]RootUse, int) {
	roots := page(s.idx.roots, offset, limit)
	out := make([]RootUse, len(roots))
	for i, r := range roots {
		p := s.provs.at(r)
		out[i] = RootUse{UUID: p.UUID, Name: p.Name, Fraction: s.rootFraction(r)}
	}
	return out, len(s.idx.roots)
}

// Flavor is one instance size: the amounts of an unsuffixed request
// group, as a Nova flavor asks them.
type Flavor struct {
	Name      string
	Resources []ResourceAmount
}

// Fragment is a tree with free capacity where none of the flavors fits:
// capacity stranded by fragmentation.
type Fragment struct {
	UUID, Name string
	// Free is the tree's free capacity per class (sum over its
	// providers), by class name.
	Free []ResourceAmount
}

// Fragmentation lists the trees where none of flavors fits although
// each class some flavor asks for has free capacity in the tree (the
// trees that are merely full are not listed), the page of limit from
// offset in the engine's root order, and how many there are. A flavor
// fits a tree when each of its classes fits one inventory of the tree
// (min_unit, max_unit, step_size, capacity), as an unsuffixed request
// group without traits is placed; a class no provider has makes the
// flavor fit nowhere and is ignored.
func (s *Snapshot) Fragmentation(flavors []Flavor, offset, limit int) ([]Fragment, int) {
	wants := s.flavorIDs(flavors)
	if len(wants) == 0 {
		return nil, 0
	}
	asked := map[int32]bool{}
	for _, w := range wants {
		for _, a := range w {
			asked[a.class] = true
		}
	}
	var hits []int32
	for _, r := range s.idx.roots {
		if s.stranded(r, asked) && !slices.ContainsFunc(wants, func(w []resAmount) bool { return s.treeFits(r, w) }) {
			hits = append(hits, r)
		}
	}
	total := len(hits)
	hits = page(hits, offset, limit)
	out := make([]Fragment, len(hits))
	for i, r := range hits {
		p := s.provs.at(r)
		out[i] = Fragment{UUID: p.UUID, Name: p.Name, Free: s.treeFree(r)}
	}
	return out, total
}

// flavorIDs resolves the flavors' classes, dropping the flavors that
// name a class the snapshot does not know.
func (s *Snapshot) flavorIDs(flavors []Flavor) [][]resAmount {
	var out [][]resAmount
	for _, f := range flavors {
		ids, err := s.classIDs(f.Resources)
		if err == nil && len(ids) > 0 {
			out = append(out, ids)
		}
	}
	return out
}

// stranded reports whether tree r has free capacity in every class of
// asked that it has at all (and has some class of asked).
func (s *Snapshot) stranded(r int32, asked map[int32]bool) bool {
	some := false
	for _, m := range s.idx.members.of(r) {
		for k := range s.provs.at(m).Inventories {
			inv := &s.provs.at(m).Inventories[k]
			if !asked[inv.Class] {
				continue
			}
			if float64(inv.Used) >= inv.capacity() {
				return false
			}
			some = true
		}
	}
	return some
}

// treeFits reports whether each amount of want fits some inventory of
// tree r.
func (s *Snapshot) treeFits(r int32, want []resAmount) bool {
	for _, a := range want {
		ok := false
		for _, m := range s.idx.members.of(r) {
			if inv := s.provs.at(m).Inventory(a.class); inv != nil && inv.fits(a.amount) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

// treeFree is tree r's free capacity per class, by class name.
func (s *Snapshot) treeFree(r int32) []ResourceAmount {
	free := map[string]int64{}
	for _, m := range s.idx.members.of(r) {
		for k := range s.provs.at(m).Inventories {
			inv := &s.provs.at(m).Inventories[k]
			free[s.names.ClassName(inv.Class)] += max(inv.Capacity()-inv.Used, 0)
		}
	}
	out := make([]ResourceAmount, 0, len(free))
	for c, n := range free {
		out = append(out, ResourceAmount{Class: c, Amount: n})
	}
	slices.SortFunc(out, func(a, b ResourceAmount) int { return strings.Compare(a.Class, b.Class) })
	return out
}
