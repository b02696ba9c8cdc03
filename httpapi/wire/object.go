package wire

import (
	"bytes"
	"encoding/json"
)

// Object is a JSON object written with its members in the order they
// were set. Placement's clients iterate the objects keyed by data
// (a consumer's allocations by provider, resources and inventories by
// class) in document order, and osc-placement prints its rows so; a Go map
// would come out sorted by key.
type Object struct {
	keys []string
	vals map[string]any
}

// NewObject is an empty Object.
func NewObject() *Object { return &Object{vals: map[string]any{}} }

// Set adds or replaces a member; a new member goes last.
func (o *Object) Set(k string, v any) {
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// Get returns the member k, and whether it is set.
func (o *Object) Get(k string) (any, bool) {
	v, ok := o.vals[k]
	return v, ok
}

func (o *Object) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteString(", ")
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		vb, err := json.Marshal(o.vals[k])
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteString(": ")
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// OrderedInt64s renders m with its members in the order of keys (keys
// missing from m are skipped; members of m missing from keys go last, in
// no particular order).
func OrderedInt64s(m map[string]int64, keys []string) *Object {
	o := NewObject()
	for _, k := range keys {
		if v, ok := m[k]; ok {
			o.Set(k, v)
		}
	}
	for k, v := range m {
		if _, ok := o.vals[k]; !ok {
			o.Set(k, v)
		}
	}
	return o
}
