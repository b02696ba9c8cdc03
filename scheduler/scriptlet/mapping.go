package scriptlet

import (
	"fmt"
	"strings"

	"go.starlark.net/starlark"

	"github.com/berthd/berth/scheduler"
)

// classMap is a read-only mapping from string keys (resource classes,
// key names) to values computed on lookup. It stands in for a frozen
// dict where a scriptlet typically reads one or two entries of each of
// a thousand members: building real dicts cost more than the scriptlet.
// It supports m[k], k in m, len(m), iteration (keys, sorted) and the
// methods get, keys, values and items.
type classMap struct {
	keys []string // sorted
	kind mapKind
	p    *scheduler.ProviderView // mapUsage, mapInventories
	f    map[string]float64      // mapFloat
	c    *scheduler.Candidate    // mapCandidateKeys
}

// mapKind says what a classMap maps to.
type mapKind int

const (
	mapUsage         mapKind = iota // class -> used
	mapInventories                  // class -> inventory
	mapFloat                        // key -> value of f
	mapCandidateKeys                // key -> c.Key(key)
)

// get is the value of key k, which must be one of m.keys.
func (m *classMap) get(k string) starlark.Value {
	switch m.kind {
	case mapUsage:
		return starlark.MakeInt64(m.p.Resources.Of(k).Used)
	case mapInventories:
		return inventoryOf(m.p, k)
	case mapCandidateKeys:
		v, _ := m.c.Key(k)
		return starlark.Float(v)
	}
	return starlark.Float(m.f[k])
}

var (
	_ starlark.IterableMapping = (*classMap)(nil)
	_ starlark.Sequence        = (*classMap)(nil)
	_ starlark.HasAttrs        = (*classMap)(nil)
)

func (m *classMap) Type() string          { return "mapping" }
func (m *classMap) Freeze()               {}
func (m *classMap) Truth() starlark.Bool  { return len(m.keys) > 0 }
func (m *classMap) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: mapping") }
func (m *classMap) Len() int              { return len(m.keys) }

func (m *classMap) String() string {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range m.keys {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%q: %s", k, m.get(k).String())
	}
	b.WriteByte('}')
	return b.String()
}

// Get implements starlark.Mapping.
func (m *classMap) Get(k starlark.Value) (starlark.Value, bool, error) {
	s, ok := starlark.AsString(k)
	if !ok {
		return nil, false, nil
	}
	if !m.has(s) {
		return nil, false, nil
	}
	return m.get(s), true, nil
}

func (m *classMap) has(k string) bool {
	for _, x := range m.keys {
		if x == k {
			return true
		}
	}
	return false
}

// Iterate implements starlark.Iterable: the keys, sorted.
func (m *classMap) Iterate() starlark.Iterator { return &classMapIter{m: m} }

// Items implements starlark.IterableMapping.
func (m *classMap) Items() []starlark.Tuple {
	out := make([]starlark.Tuple, len(m.keys))
	for i, k := range m.keys {
		out[i] = starlark.Tuple{starlark.String(k), m.get(k)}
	}
	return out
}

var classMapMethods = []string{"get", "items", "keys", "values"}

// AttrNames implements starlark.HasAttrs.
func (m *classMap) AttrNames() []string { return classMapMethods }

// Attr implements starlark.HasAttrs: the dict methods that read.
func (m *classMap) Attr(name string) (starlark.Value, error) {
	switch name {
	case "get":
		return getMethod(m), nil
	case "items", "keys", "values":
		return starlark.NewBuiltin(name, func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 0); err != nil {
				return nil, err
			}
			vs := make([]starlark.Value, len(m.keys))
			for i, k := range m.keys {
				switch name {
				case "keys":
					vs[i] = starlark.String(k)
				case "values":
					vs[i] = m.get(k)
				default:
					vs[i] = starlark.Tuple{starlark.String(k), m.get(k)}
				}
			}
			return frozenList(vs), nil
		}), nil
	}
	return nil, nil
}

type classMapIter struct {
	m *classMap
	i int
}

func (it *classMapIter) Next(p *starlark.Value) bool {
	if it.i >= len(it.m.keys) {
		return false
	}
	*p = starlark.String(it.m.keys[it.i])
	it.i++
	return true
}

func (it *classMapIter) Done() {}

// inventoriesMap is class -> inventory of p's inventories.
func inventoriesMap(p *scheduler.ProviderView) *classMap {
	return &classMap{keys: p.Resources.Classes(), p: p, kind: mapInventories}
}

// floatMap is a read-only mapping over m.
func floatMap(m map[string]float64) *classMap {
	return &classMap{keys: sortedKeys(m), f: m, kind: mapFloat}
}
