package wire

import (
	"bytes"
	"encoding/json"
	"reflect"
)

// OrderedMap decodes a JSON object keeping the order of its keys, so that
// requests are processed, and their errors reported, in the order the
// client wrote them (as Placement, whose dicts keep insertion order, does).
// A repeated key keeps its first position and its last value.
type OrderedMap[V any] struct {
	Keys   []string
	Values map[string]V
}

func (m *OrderedMap[V]) UnmarshalJSON(b []byte) error {
	// The usual object, its names unescaped: its values decoded as a map
	// in one pass, its names' order read by the key scanner. Anything
	// else, a value that does not decode included, takes the token path,
	// whose result and errors are the reference.
	if keys, ok := ObjectKeys(b); ok {
		var values map[string]V
		if json.Unmarshal(b, &values) == nil {
			*m = OrderedMap[V]{Keys: keys, Values: values}
			return nil
		}
	}
	return m.unmarshalTokens(b)
}

// unmarshalTokens is UnmarshalJSON, reading b token by token.
func (m *OrderedMap[V]) unmarshalTokens(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		*m = OrderedMap[V]{}
		return nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return &json.UnmarshalTypeError{Value: jsonTokenKind(tok), Type: reflect.TypeFor[map[string]V]()}
	}
	m.Keys, m.Values = nil, map[string]V{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return err
		}
		k := kt.(string)
		var v V
		if err := dec.Decode(&v); err != nil {
			return err
		}
		if _, seen := m.Values[k]; !seen {
			m.Keys = append(m.Keys, k)
		}
		m.Values[k] = v
	}
	_, err = dec.Token()
	return err
}

// jsonTokenKind describes a token of json.Decoder as
// UnmarshalTypeError.Value does.
func jsonTokenKind(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			return "array"
		}
		return "object"
	case string:
		return "string"
	case bool:
		return "bool"
	case float64, json.Number:
		return "number"
	}
	return ""
}
