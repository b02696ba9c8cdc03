package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
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
		return errors.New("expected a JSON object")
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
	return []byte(pyFloatRepr(float64(f))), nil
}

// pyFloatRepr is Python's repr of a finite float: the shortest digits
// that read back the same, in positional notation when the decimal point
// falls within 16 digits of them (1e16 and 0.00001 are the first to get
// an exponent), always with a fractional part or an exponent of at least
// two digits: 1.0, 100000000.5, 1e+20, 2.5e-05.
func pyFloatRepr(f float64) string {
	s := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	sign := ""
	if s[0] == '-' {
		sign, s = "-", s[1:]
	}
	mant, exp, _ := strings.Cut(s, "e")
	digits := strings.Replace(mant, ".", "", 1)
	e, _ := strconv.Atoi(exp)
	decpt := e + 1 // digits before the decimal point
	switch {
	case decpt > 16 || decpt <= -4:
		m := digits[:1]
		if len(digits) > 1 {
			m += "." + digits[1:]
		}
		esign := "+"
		if e < 0 {
			esign, e = "-", -e
		}
		return fmt.Sprintf("%s%se%s%02d", sign, m, esign, e)
	case decpt <= 0:
		return sign + "0." + strings.Repeat("0", -decpt) + digits
	case decpt >= len(digits):
		return sign + digits + strings.Repeat("0", decpt-len(digits)) + ".0"
	default:
		return sign + digits[:decpt] + "." + digits[decpt:]
	}
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
