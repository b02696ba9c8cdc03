package scriptlet

import (
	"fmt"
	"slices"
	"time"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/scheduler"
)

// memberValue is a cluster member (a root provider) or a candidate member
// as Starlark sees it. Its attributes are built when first read and kept:
// a scriptlet looping over 1,000 candidates reading two fields does not
// pay for converting every inventory. It is immutable to Starlark and
// used by one Rank (one goroutine) only.
type memberValue struct {
	kind string                  // "cluster_member" or "candidate_member"
	p    *scheduler.ProviderView // never nil
	c    *scheduler.Candidate    // nil for a cluster member
	// run, for a candidate member, loads the states of the Rank's
	// candidates when LXD's status is read and the policy did not fetch
	// them (stateOf); nil for a cluster member, whose State is filled.
	run     *scriptRun
	ranked  bool // rank, score and weights are set
	rank    int
	score   float64
	weights map[string]float64
	attrs   memberAttrCache
}

// memberAttrCache holds the attributes built so far.
type memberAttrCache struct {
	traits, aggregates, inventories, state, usage, keys, allocations, preemptible starlark.Value
	classes                                                                       []string // sorted, of p.Resources
}

var (
	_ starlark.HasAttrs   = (*memberValue)(nil)
	_ starlark.Mapping    = (*memberValue)(nil)
	_ starlark.HasAttrs   = inventoryValue{}
	_ starlark.Comparable = inventoryValue{}
	_ starlark.HasAttrs   = (*stateStruct)(nil)
)

// A member's attributes: Berth's, LXD's api.ClusterMember's
// (lxdMemberAttrs), and get.
var (
	memberAttrs    = fieldNames(append([]string{"aggregates", "consumers", "get", "inventories", "keys", "name", "preemptible", "state", "traits", "usage", "uuid"}, lxdMemberAttrs...)...)
	candidateAttrs = fieldNames(append(slices.Clone(memberAttrs), "allocations")...)
	rankedAttrs    = fieldNames(append(slices.Clone(candidateAttrs), "rank", "score", "weights")...)
)

func clusterMember(p *scheduler.ProviderView) *memberValue {
	return &memberValue{kind: "cluster_member", p: p}
}

// candidateMember is c as a member: its root provider's fields, keys
// with #RAM, #CPU and #LOAD as c would leave them, and allocations.
func candidateMember(c *scheduler.Candidate) *memberValue {
	p := c.RootProvider()
	if p == nil {
		p = &scheduler.ProviderView{Provider: engine.Provider{UUID: c.Root()}}
	}
	return &memberValue{kind: "candidate_member", p: p, c: c}
}

// setRank gives m its place in the ranking, in place: instance_placement
// is the last use of a Rank's members, after every filter and weigher.
func (m *memberValue) setRank(rank int, s scheduler.Scored) *memberValue {
	m.ranked, m.rank, m.score, m.weights = true, rank, s.Score, s.Weights()
	return m
}

func (m *memberValue) String() string        { return fmt.Sprintf("%s(%q)", m.kind, m.p.Name) }
func (m *memberValue) Type() string          { return m.kind }
func (m *memberValue) Freeze()               {}
func (m *memberValue) Truth() starlark.Bool  { return true }
func (m *memberValue) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: %s", m.kind) }

// AttrNames implements starlark.HasAttrs.
func (m *memberValue) AttrNames() []string {
	switch {
	case m.ranked:
		return rankedAttrs
	case m.c != nil:
		return candidateAttrs
	}
	return memberAttrs
}

// Get implements starlark.Mapping: m["server_name"] is m.server_name.
func (m *memberValue) Get(k starlark.Value) (starlark.Value, bool, error) {
	s, ok := starlark.AsString(k)
	if !ok || s == "get" {
		return nil, false, nil
	}
	v, err := m.Attr(s)
	return v, v != nil && err == nil, err
}

// Attr implements starlark.HasAttrs.
func (m *memberValue) Attr(name string) (starlark.Value, error) {
	if v, ok, err := m.lxdAttr(name); ok {
		return v, err
	}
	switch name {
	case "name":
		return starlark.String(m.p.Name), nil
	case "uuid":
		return starlark.String(m.p.UUID), nil
	case "consumers":
		return starlark.MakeInt(m.p.Consumers), nil
	case "rank", "score", "weights":
		if !m.ranked {
			return nil, nil
		}
		switch name {
		case "rank":
			return starlark.MakeInt(m.rank), nil
		case "score":
			return starlark.Float(m.score), nil
		}
		d := starlark.NewDict(len(m.weights))
		for _, k := range sortedKeys(m.weights) {
			_ = d.SetKey(starlark.String(k), starlark.Float(m.weights[k]))
		}
		d.Freeze()
		return d, nil
	case "allocations":
		if m.c == nil {
			return nil, nil
		}
	case "preemptible":
		if m.attrs.preemptible == nil {
			v, err := m.preemptibleValue()
			if err != nil {
				return nil, err
			}
			m.attrs.preemptible = v
		}
		return m.attrs.preemptible, nil
	}
	var slot *starlark.Value
	switch name {
	case "traits":
		slot = &m.attrs.traits
	case "aggregates":
		slot = &m.attrs.aggregates
	case "inventories":
		slot = &m.attrs.inventories
	case "state":
		slot = &m.attrs.state
	case "usage":
		slot = &m.attrs.usage
	case "keys":
		slot = &m.attrs.keys
	case "allocations":
		slot = &m.attrs.allocations
	default:
		return nil, nil // Starlark reports "has no .x field"
	}
	if *slot == nil {
		*slot = m.build(name)
	}
	return *slot, nil
}

// lxdAttr is LXD's attribute name (and get), ok false for another name.
func (m *memberValue) lxdAttr(name string) (starlark.Value, bool, error) {
	switch name {
	case "get":
		return getMethod(m), true, nil
	case "status", "message":
		st, err := m.state()
		if err != nil {
			return nil, true, err
		}
		return lxdMemberField(m.p, st, name), true, nil
	case "server_name", "url", "database", "architecture", "roles", "failure_domain", "description", "config", "groups":
		return lxdMemberField(m.p, nil, name), true, nil
	}
	return nil, false, nil
}

// state is the member's last report, nil if none: its own, or the one
// the Rank loads for its candidates when the policy did not.
func (m *memberValue) state() (*engine.ProviderState, error) {
	if m.p.State != nil || m.run == nil {
		return m.p.State, nil
	}
	return m.run.stateOf(m.p.UUID)
}

// preemptibleValue is the member's preemptible usage as Starlark sees
// it: a frozen dict from resource class (in name order) to an object
// with used and lowest_priority; empty when preemptible consumers hold
// nothing there. A cluster member's is filled with it (CloudData.Members);
// a candidate's is loaded for every candidate's root on the first read
// when the policy did not fetch it.
func (m *memberValue) preemptibleValue() (starlark.Value, error) {
	usage := m.p.Preemptible
	if m.run != nil {
		var err error
		if usage, err = m.run.preemptibleOf(m.p); err != nil {
			return nil, err
		}
	}
	d := starlark.NewDict(len(usage))
	for _, u := range usage {
		_ = d.SetKey(starlark.String(u.ResourceClass), newObject("preemptible_usage", starlark.StringDict{
			"used": starlark.MakeInt64(u.Used), "lowest_priority": starlark.MakeInt64(u.LowestPriority)}))
	}
	d.Freeze()
	return d, nil
}

// classes are p's resource classes, sorted, computed once.
func (m *memberValue) classes() []string {
	if m.attrs.classes == nil {
		m.attrs.classes = m.p.Resources.Classes()
	}
	return m.attrs.classes
}

// build makes attribute name.
func (m *memberValue) build(name string) starlark.Value {
	switch name {
	case "traits":
		return stringList(m.p.Traits)
	case "aggregates":
		return stringList(m.p.Aggregates)
	case "inventories":
		return &classMap{keys: m.classes(), p: m.p, kind: mapInventories}
	case "state":
		return stateValue(m.p.State)
	case "usage":
		return &classMap{keys: m.classes(), p: m.p, kind: mapUsage}
	case "keys":
		if m.c != nil {
			names := make([]string, 0, len(m.p.Keys)+3)
			for _, k := range m.p.Keys {
				names = append(names, k.Name)
			}
			for _, n := range [...]string{scheduler.KeyRAM, scheduler.KeyCPU, scheduler.KeyLOAD} {
				if _, ok := m.c.Key(n); ok && !slices.Contains(names, n) {
					names = append(names, n)
				}
			}
			slices.Sort(names)
			return &classMap{keys: slices.Compact(names), c: m.c, kind: mapCandidateKeys}
		}
		keys := make(map[string]float64, len(m.p.Keys))
		for _, k := range m.p.Keys {
			keys[k.Name] = k.Value
		}
		return floatMap(keys)
	}
	// allocations
	d := starlark.NewDict(len(m.c.Allocations))
	for _, a := range m.c.Allocations {
		_ = d.SetKey(starlark.String(a.ProviderUUID), amountsDict(a.Resources))
	}
	d.Freeze()
	return d
}

// inventoryValue is an inventory as Starlark sees it: total, reserved,
// allocation_ratio, capacity, used, free, min_unit, max_unit, step_size.
// It reads the provider view's inventory in place (views do not change
// while a Rank runs), and, one pointer, is a Starlark value without an
// allocation of its own.
type inventoryValue struct{ inv *engine.InventoryUsage }

// inventoryOf is p's inventory of class as Starlark sees it (a zero
// inventory when p has none).
func inventoryOf(p *scheduler.ProviderView, class string) inventoryValue {
	for i := range p.Resources {
		if p.Resources[i].ResourceClass == class {
			return inventoryValue{&p.Resources[i]}
		}
	}
	return inventoryValue{&engine.InventoryUsage{}}
}

var inventoryAttrs = []string{"allocation_ratio", "capacity", "free", "max_unit", "min_unit", "reserved", "step_size", "total", "used"}

func (v inventoryValue) String() string {
	return fmt.Sprintf("inventory(total = %d, capacity = %d, used = %d)", v.inv.Total, v.inv.Capacity, v.inv.Used)
}
func (v inventoryValue) Type() string          { return "inventory" }
func (v inventoryValue) Freeze()               {}
func (v inventoryValue) Truth() starlark.Bool  { return true }
func (v inventoryValue) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: inventory") }
func (v inventoryValue) AttrNames() []string   { return inventoryAttrs }

// CompareSameType implements starlark.Comparable: two inventories are
// equal when their figures are, whichever class and provider they are
// read from; no other comparison is defined.
func (v inventoryValue) CompareSameType(op syntax.Token, y starlark.Value, _ int) (bool, error) {
	a, b := *v.inv, *y.(inventoryValue).inv
	a.ResourceClass, b.ResourceClass = "", ""
	switch op {
	case syntax.EQL:
		return a == b, nil
	case syntax.NEQ:
		return a != b, nil
	}
	return false, fmt.Errorf("%s %s %s not implemented", v.Type(), op, y.Type())
}

// Attr implements starlark.HasAttrs.
func (v inventoryValue) Attr(name string) (starlark.Value, error) {
	switch name {
	case "total":
		return starlark.MakeInt64(v.inv.Total), nil
	case "reserved":
		return starlark.MakeInt64(v.inv.Reserved), nil
	case "allocation_ratio":
		return starlark.Float(v.inv.AllocationRatio), nil
	case "capacity":
		return starlark.MakeInt64(v.inv.Capacity), nil
	case "used":
		return starlark.MakeInt64(v.inv.Used), nil
	case "free":
		return starlark.MakeInt64(v.inv.Capacity - v.inv.Used), nil
	case "min_unit":
		return starlark.MakeInt64(v.inv.MinUnit), nil
	case "max_unit":
		return starlark.MakeInt64(v.inv.MaxUnit), nil
	case "step_size":
		return starlark.MakeInt64(v.inv.StepSize), nil
	}
	return nil, nil
}

// stateStruct is a provider's reported state as Starlark sees it.
type stateStruct engine.ProviderState

var stateAttrs = []string{"cpu_utilization", "load_1", "load_15", "load_5", "memory_free_mb", "reported_at"}

func (s *stateStruct) String() string {
	return fmt.Sprintf("state(load_1 = %g, reported_at = %q)", s.Load1, s.ReportedAt.UTC().Format(time.RFC3339))
}
func (s *stateStruct) Type() string          { return "state" }
func (s *stateStruct) Freeze()               {}
func (s *stateStruct) Truth() starlark.Bool  { return true }
func (s *stateStruct) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: state") }
func (s *stateStruct) AttrNames() []string   { return stateAttrs }

// Attr implements starlark.HasAttrs.
func (s *stateStruct) Attr(name string) (starlark.Value, error) {
	switch name {
	case "load_1":
		return starlark.Float(s.Load1), nil
	case "load_5":
		return starlark.Float(s.Load5), nil
	case "load_15":
		return starlark.Float(s.Load15), nil
	case "memory_free_mb":
		return starlark.MakeInt64(s.MemoryFreeMB), nil
	case "cpu_utilization":
		return starlark.Float(s.CPUUtilization), nil
	case "reported_at":
		return starlark.String(s.ReportedAt.UTC().Format(time.RFC3339)), nil
	}
	return nil, nil
}

// attrIndex is x[k] for a value whose keys are its attributes.
func attrIndex(x starlark.HasAttrs, k starlark.Value) (starlark.Value, bool, error) {
	s, ok := starlark.AsString(k)
	if !ok {
		return nil, false, nil
	}
	v, err := x.Attr(s)
	return v, v != nil && err == nil, err
}

// Get implements starlark.Mapping: inv["free"] is inv.free.
func (v inventoryValue) Get(k starlark.Value) (starlark.Value, bool, error) { return attrIndex(v, k) }

// Get implements starlark.Mapping: state["load_1"] is state.load_1.
func (s *stateStruct) Get(k starlark.Value) (starlark.Value, bool, error) { return attrIndex(s, k) }
