package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strconv"
	"strings"

	"github.com/berthd/berth/internal/jsonschema"
)

// orderedMap decodes a JSON object keeping the order of its keys, so that
// requests are processed, and their errors reported, in the order the
// client wrote them (as Placement, whose dicts keep insertion order, does).
// A repeated key keeps its first position and its last value.
type orderedMap[V any] struct {
	Keys   []string
	Values map[string]V
}

func (m *orderedMap[V]) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if tok == nil {
		*m = orderedMap[V]{}
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

// pyFloat64 marshals like Python's json.dumps of a float: 1.0, not 1.
type pyFloat64 float64

func (f pyFloat64) MarshalJSON() ([]byte, error) {
	if math.IsInf(float64(f), 0) || math.IsNaN(float64(f)) {
		// inf or nan have no JSON form; never stored, but do not emit junk.
		return nil, errors.New("float out of JSON range")
	}
	return []byte(jsonschema.PyFloat(float64(f))), nil
}

// pyNumber is a JSON number as Python's json module reads and writes it
// back: an integer literal stays that integer; any other number is a float
// and is written as Python's repr of it.
type pyNumber string

func (n pyNumber) MarshalJSON() ([]byte, error) {
	if !strings.ContainsAny(string(n), ".eE") {
		return []byte(n), nil
	}
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return nil, err
	}
	return pyFloat64(f).MarshalJSON()
}
