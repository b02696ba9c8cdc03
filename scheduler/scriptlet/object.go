package scriptlet

import (
	"fmt"
	"slices"
	"strings"

	"go.starlark.net/starlark"
)

// objectValue is a read-only object that a scriptlet reads both ways, as
// LXD's and Incus's scriptlets have over the years (plain dicts first,
// objects with attributes later): o.field and o["field"], "field" in o,
// o.get("field", default), len(o) and iteration over the field names.
// Fields are built when first read and kept (build is called at most
// once per name); an unknown field is Starlark's usual error ("has no
// .x field", or a missing key for o["x"]).
//
// With entries set it is also Berth's mapping that the builtin answered
// before (get_instance_resources: class -> amount;
// get_cluster_member_resources: class -> inventory): iteration, len,
// keys(), values(), items() and get() are the entries', and o[k] looks
// in the entries first. Entries are resource classes (upper case) and
// fields LXD's names (lower case), so neither hides the other.
//
// An objectValue is used by one Rank (one goroutine) only.
type objectValue struct {
	typ   string
	names []string // sorted
	build func(name string) starlark.Value
	cache map[string]starlark.Value
	// entries, when set, is Berth's mapping (see above).
	entries entryMapping
	// falsy makes the object false in a condition (a state never
	// reported).
	falsy bool
}

// entryMapping is what objectValue needs of its entries: a frozen
// *starlark.Dict or a *classMap.
type entryMapping interface {
	starlark.IterableMapping
	starlark.Sequence
	starlark.HasAttrs
}

var (
	_ starlark.HasAttrs = (*objectValue)(nil)
	_ starlark.Mapping  = (*objectValue)(nil)
	_ starlark.Sequence = (*objectValue)(nil)
)

// newObject is an object whose fields are fields (names sorted here).
func newObject(typ string, fields starlark.StringDict) *objectValue {
	return &objectValue{typ: typ, names: fields.Keys(), cache: fields, build: func(string) starlark.Value { return nil }}
}

// lazyObject is an object of the fields names (sorted), each built by
// build when first read.
func lazyObject(typ string, names []string, build func(string) starlark.Value) *objectValue {
	return &objectValue{typ: typ, names: names, build: build, cache: make(starlark.StringDict, 4)}
}

// field returns field name, nil when the object has none.
func (o *objectValue) field(name string) starlark.Value {
	if v, ok := o.cache[name]; ok {
		return v
	}
	if _, ok := slices.BinarySearch(o.names, name); !ok {
		return nil
	}
	v := o.build(name)
	o.cache[name] = v
	return v
}

func (o *objectValue) Type() string          { return o.typ }
func (o *objectValue) Freeze()               {}
func (o *objectValue) Truth() starlark.Bool  { return !starlark.Bool(o.falsy) }
func (o *objectValue) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable: %s", o.typ) }

// maxObjectString bounds what printing an object writes (log_info of a
// request prints its fields, as LXD's log does).
const maxObjectString = 4096

// String prints the fields as Starlark prints a struct, cut after
// maxObjectString bytes.
func (o *objectValue) String() string {
	var b strings.Builder
	b.WriteString(o.typ)
	b.WriteByte('(')
	for i, name := range o.names {
		if b.Len() > maxObjectString {
			b.WriteString(", …")
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(name)
		b.WriteString(" = ")
		b.WriteString(o.field(name).String())
	}
	b.WriteByte(')')
	return b.String()
}

// AttrNames implements starlark.HasAttrs: the fields, and get (with the
// dict methods of the entries when there are entries).
func (o *objectValue) AttrNames() []string {
	extra := []string{"get"}
	if o.entries != nil {
		extra = classMapMethods
	}
	out := slices.Concat(o.names, extra)
	slices.Sort(out)
	return slices.Compact(out)
}

// Attr implements starlark.HasAttrs.
func (o *objectValue) Attr(name string) (starlark.Value, error) {
	if v := o.field(name); v != nil {
		return v, nil
	}
	if o.entries != nil {
		return o.entries.Attr(name)
	}
	if name == "get" {
		return getMethod(o), nil
	}
	return nil, nil
}

// getMethod is m.get(key, default=None), as a dict's: m[key], default
// when m has no such key, an error when the key cannot be one (an
// unhashable key).
func getMethod(m starlark.Mapping) *starlark.Builtin {
	return starlark.NewBuiltin("get", func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var k, dflt starlark.Value = nil, starlark.None
		if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 1, &k, &dflt); err != nil {
			return nil, err
		}
		if v, ok, err := m.Get(k); ok || err != nil {
			return v, err
		}
		return dflt, nil
	})
}

// Get implements starlark.Mapping: the entry, else the field, of key k.
func (o *objectValue) Get(k starlark.Value) (starlark.Value, bool, error) {
	if o.entries != nil {
		if v, ok, err := o.entries.Get(k); ok || err != nil {
			return v, ok, err
		}
	}
	s, ok := starlark.AsString(k)
	if !ok {
		return nil, false, nil
	}
	v := o.field(s)
	return v, v != nil, nil
}

// Len implements starlark.Sequence: the entries', else the fields'.
func (o *objectValue) Len() int {
	if o.entries != nil {
		return o.entries.Len()
	}
	return len(o.names)
}

// Iterate implements starlark.Iterable: the entries' keys, else the
// field names, sorted.
func (o *objectValue) Iterate() starlark.Iterator {
	if o.entries != nil {
		return o.entries.Iterate()
	}
	return &classMapIter{m: &classMap{keys: o.names}}
}

// fieldNames returns the keys of a struct-like set of fields, sorted.
func fieldNames(names ...string) []string {
	out := slices.Clone(names)
	slices.Sort(out)
	return out
}
