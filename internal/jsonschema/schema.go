package jsonschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/berthd/berth/internal/uuid"
)

// Schema is a JSON Schema (the subset Placement's request schemas use),
// compiled from JSON text. Validation errors read exactly like those of
// Python's jsonschema library, because Placement clients and tests match on
// them: "'name' is a required property", "0 is less than the minimum of 1",
// "Additional properties are not allowed ('x' was unexpected)", and the
// "Failed validating 'maxLength' in schema[...]" trailer.
type Schema struct {
	raw      any      // the schema as parsed, for error trailers
	keywords []string // in the order written, which decides which error wins

	types          []string
	properties     map[string]*Schema
	propOrder      []string
	patternProps   []patternProp
	additional     *Schema // nil: anything goes
	noAdditional   bool
	required       []string
	minProps       *int
	maxProps       *int
	items          *Schema
	minItems       *int
	maxItems       *int
	uniqueItems    bool
	minLength      *int
	maxLength      *int
	pattern        *regexp.Regexp
	patternSrc     string
	format         string
	minimum        *float64
	maximum        *float64
	minimumRaw     any
	maximumRaw     any
	enum           []any
	anyOf, oneOf   []*Schema
	notSchema      *Schema
	constValue     any
	hasConst       bool
	exclusiveMin   *float64
	exclusiveMinRw any
}

type patternProp struct {
	src    string
	re     *regexp.Regexp
	schema *Schema
}

// Must compiles a schema written as JSON; it panics on a bad schema,
// since schemas are constants of the program.
func Must(text string) *Schema {
	doc, err := decodeOrdered([]byte(text))
	if err != nil {
		panic(fmt.Sprintf("jsonschema: bad schema: %v\n%s", err, text))
	}
	s, err := compileSchema(doc)
	if err != nil {
		panic(fmt.Sprintf("jsonschema: bad schema: %v\n%s", err, text))
	}
	return s
}

// Doc returns the schema as a decoded JSON value (objects as
// map[string]any, numbers as json.Number): what error messages print.
func (s *Schema) Doc() any { return s.raw }

// orderedObject is a JSON object that remembers the order of its keys.
type orderedObject struct {
	keys   []string
	values map[string]any
}

func decodeOrdered(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return decodeOrderedValue(dec)
}

func decodeOrderedValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := &orderedObject{values: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k := kt.(string)
				v, err := decodeOrderedValue(dec)
				if err != nil {
					return nil, err
				}
				obj.keys = append(obj.keys, k)
				obj.values[k] = v
			}
			_, err := dec.Token()
			return obj, err
		case '[':
			var arr []any
			for dec.More() {
				v, err := decodeOrderedValue(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token()
			return arr, err
		}
	}
	return tok, nil
}

// plain converts ordered objects back to map[string]any.
func plain(v any) any {
	switch t := v.(type) {
	case *orderedObject:
		m := make(map[string]any, len(t.keys))
		for _, k := range t.keys {
			m[k] = plain(t.values[k])
		}
		return m
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = plain(e)
		}
		return out
	}
	return v
}

func compileSchema(doc any) (*Schema, error) {
	obj, ok := doc.(*orderedObject)
	if !ok {
		if b, ok := doc.(bool); ok && b {
			return &Schema{raw: true}, nil
		}
		return nil, fmt.Errorf("schema must be an object, got %T", doc)
	}
	s := &Schema{raw: plain(obj), keywords: obj.keys}
	intPtr := func(v any) (*int, error) {
		n, ok := v.(json.Number)
		if !ok {
			return nil, fmt.Errorf("expected a number, got %v", v)
		}
		i, err := strconv.Atoi(n.String())
		return &i, err
	}
	floatPtr := func(v any) (*float64, error) {
		n, ok := v.(json.Number)
		if !ok {
			return nil, fmt.Errorf("expected a number, got %v", v)
		}
		f, err := n.Float64()
		return &f, err
	}
	var err error
	for _, k := range obj.keys {
		v := obj.values[k]
		switch k {
		case "type":
			switch t := v.(type) {
			case string:
				s.types = []string{t}
			case []any:
				for _, e := range t {
					s.types = append(s.types, e.(string))
				}
			}
		case "properties":
			po := v.(*orderedObject)
			s.properties = map[string]*Schema{}
			for _, name := range po.keys {
				if s.properties[name], err = compileSchema(po.values[name]); err != nil {
					return nil, err
				}
				s.propOrder = append(s.propOrder, name)
			}
		case "patternProperties":
			po := v.(*orderedObject)
			for _, src := range po.keys {
				sub, err := compileSchema(po.values[src])
				if err != nil {
					return nil, err
				}
				s.patternProps = append(s.patternProps, patternProp{src: src, re: regexp.MustCompile(src), schema: sub})
			}
		case "additionalProperties":
			if b, ok := v.(bool); ok {
				s.noAdditional = !b
			} else if s.additional, err = compileSchema(v); err != nil {
				return nil, err
			}
		case "required":
			for _, e := range v.([]any) {
				s.required = append(s.required, e.(string))
			}
		case "minProperties":
			s.minProps, err = intPtr(v)
		case "maxProperties":
			s.maxProps, err = intPtr(v)
		case "items":
			s.items, err = compileSchema(v)
		case "minItems":
			s.minItems, err = intPtr(v)
		case "maxItems":
			s.maxItems, err = intPtr(v)
		case "uniqueItems":
			s.uniqueItems = v.(bool)
		case "minLength":
			s.minLength, err = intPtr(v)
		case "maxLength":
			s.maxLength, err = intPtr(v)
		case "pattern":
			s.patternSrc = v.(string)
			s.pattern, err = regexp.Compile(s.patternSrc)
		case "format":
			s.format = v.(string)
		case "minimum":
			s.minimumRaw = v
			s.minimum, err = floatPtr(v)
		case "maximum":
			s.maximumRaw = v
			s.maximum, err = floatPtr(v)
		case "exclusiveMinimum":
			s.exclusiveMinRw = v
			s.exclusiveMin, err = floatPtr(v)
		case "enum":
			s.enum = plain(v).([]any)
		case "const":
			s.constValue, s.hasConst = plain(v), true
		case "anyOf", "oneOf":
			var subs []*Schema
			for _, e := range v.([]any) {
				sub, err := compileSchema(e)
				if err != nil {
					return nil, err
				}
				subs = append(subs, sub)
			}
			if k == "anyOf" {
				s.anyOf = subs
			} else {
				s.oneOf = subs
			}
		case "not":
			s.notSchema, err = compileSchema(v)
		case "$schema", "description", "title", "definitions", "$id", "default":
		default:
			return nil, fmt.Errorf("unsupported schema keyword %q", k)
		}
		if err != nil {
			return nil, fmt.Errorf("keyword %q: %w", k, err)
		}
	}
	return s, nil
}

// ValidationError is one schema violation. Error() renders it the way
// Python's jsonschema renders str(ValidationError).
type ValidationError struct {
	Message    string
	Validator  string
	schemaPath []any // path to the failing keyword, keyword last
	path       []any // path to the failing instance
	schema     any
	instance   any
}

func (e *ValidationError) Error() string {
	var sp strings.Builder
	sp.WriteString("schema")
	for _, p := range e.schemaPath[:max(len(e.schemaPath)-1, 0)] {
		sp.WriteString("[" + pyRepr(p) + "]")
	}
	var ip strings.Builder
	ip.WriteString("instance")
	for _, p := range e.path {
		ip.WriteString("[" + instanceRepr(p) + "]")
	}
	return fmt.Sprintf("%s\n\nFailed validating %s in %s:\n    %s\n\nOn %s:\n    %s",
		e.Message, pyRepr(e.Validator), sp.String(), indentTrailer(PFormat(e.schema, trailerWidth)), ip.String(), trailerInstance(e.instance))
}

// trailerWidth is the width jsonschema (4.10) pformats the schema and the
// instance in, before it indents them by four spaces.
const trailerWidth = 72

// trailerInstance is the instance as str(ValidationError) prints it:
// pformat at width 72. One whose repr is longer than maxInstanceRepr (a
// client's large body) is printed on one line and cut as instanceRepr cuts
// it.
func trailerInstance(v any) string {
	if r := pyRepr(v); len(r) > maxInstanceRepr {
		return shortRepr(r)
	}
	return indentTrailer(PFormat(v, trailerWidth))
}

// indentTrailer indents every line after the first by four spaces, as
// the trailer's layout does.
func indentTrailer(s string) string { return strings.ReplaceAll(s, "\n", "\n    ") }

// Validate checks a document decoded with json.Number numbers. It returns
// the most relevant violation (the shallowest, first in schema order, as
// jsonschema's best_match does), or nil.
func (s *Schema) Validate(doc any) error {
	w := &walk{}
	w.path, w.spath = w.pathBuf[:0], w.spathBuf[:0]
	errs := s.validate(doc, w)
	if len(errs) == 0 {
		return nil
	}
	best := errs[0]
	for _, e := range errs[1:] {
		if len(e.path) < len(best.path) {
			best = e
		}
	}
	return best
}

// pathStep is one step of an instance or schema path: a property name
// or keyword, or an array index.
type pathStep struct {
	key     string
	index   int
	isIndex bool
}

// walk holds the paths to where validate is: one stack each, pushed
// before validate descends and popped after, and made into the slices a
// ValidationError keeps only when a violation is recorded (most
// documents have none).
type walk struct {
	path, spath []pathStep
	// The stacks' first arrays, deep enough for Placement's schemas
	// (they grow past them): one allocation per document, not one per
	// step of growth.
	pathBuf  [8]pathStep
	spathBuf [16]pathStep
}

// slice returns steps, then extra, as ValidationError keeps a path (nil
// for an empty one).
func slice(steps []pathStep, extra ...any) []any {
	if len(steps)+len(extra) == 0 {
		return nil
	}
	out := make([]any, len(steps), len(steps)+len(extra))
	for i, st := range steps {
		if st.isIndex {
			out[i] = st.index
		} else {
			out[i] = st.key
		}
	}
	return append(out, extra...)
}

// descend validates inst under sub with path and spath extended by the
// given steps.
func (w *walk) descend(sub *Schema, inst any, path pathStep, spath ...string) []*ValidationError {
	n, sn := len(w.path), len(w.spath)
	w.path = append(w.path, path)
	for _, k := range spath {
		w.spath = append(w.spath, pathStep{key: k})
	}
	errs := sub.validate(inst, w)
	w.path, w.spath = w.path[:n], w.spath[:sn]
	return errs
}

func (s *Schema) validate(inst any, w *walk) []*ValidationError {
	var errs []*ValidationError
	fail := func(keyword, format string, args ...any) {
		errs = append(errs, &ValidationError{
			Message:    fmt.Sprintf(format, args...),
			Validator:  keyword,
			schemaPath: slice(w.spath, keyword),
			path:       slice(w.path),
			schema:     s.raw,
			instance:   inst,
		})
	}
	for _, k := range s.keywords {
		switch k {
		case "type":
			if !matchesAnyType(inst, s.types) {
				quoted := make([]string, len(s.types))
				for i, t := range s.types {
					quoted[i] = pyRepr(t)
				}
				fail(k, "%s is not of type %s", instanceRepr(inst), strings.Join(quoted, ", "))
			}
		case "properties":
			obj, ok := inst.(map[string]any)
			if !ok {
				continue
			}
			for _, name := range s.propOrder {
				if v, ok := obj[name]; ok {
					errs = append(errs, w.descend(s.properties[name], v, pathStep{key: name}, k, name)...)
				}
			}
		case "patternProperties":
			obj, ok := inst.(map[string]any)
			if !ok {
				continue
			}
			// The members in map order first; only if one fails are they
			// validated again in sorted order, the order of the errors.
			var perrs []*ValidationError
			for _, pp := range s.patternProps {
				for name, v := range obj {
					if pp.re.MatchString(name) {
						if perrs = w.descend(pp.schema, v, pathStep{key: name}, k, pp.src); len(perrs) > 0 {
							break
						}
					}
				}
				if len(perrs) > 0 {
					break
				}
			}
			if len(perrs) == 0 {
				continue
			}
			for _, pp := range s.patternProps {
				for _, name := range sortedKeys(obj) {
					if pp.re.MatchString(name) {
						errs = append(errs, w.descend(pp.schema, obj[name], pathStep{key: name}, k, pp.src)...)
					}
				}
			}
		case "additionalProperties":
			obj, ok := inst.(map[string]any)
			if !ok {
				continue
			}
			var extras []string
			for name := range obj { // sorted below
				if _, ok := s.properties[name]; ok {
					continue
				}
				matched := false
				for _, pp := range s.patternProps {
					if pp.re.MatchString(name) {
						matched = true
						break
					}
				}
				if !matched {
					extras = append(extras, name)
				}
			}
			if len(extras) == 0 {
				continue
			}
			sort.Strings(extras)
			if s.additional != nil {
				for _, name := range extras {
					errs = append(errs, w.descend(s.additional, obj[name], pathStep{key: name}, k)...)
				}
				continue
			}
			if !s.noAdditional {
				continue
			}
			reprs := make([]string, len(extras))
			for i, x := range extras {
				reprs[i] = instanceRepr(x)
			}
			if len(s.patternProps) > 0 {
				pats := make([]string, len(s.patternProps))
				for i, pp := range s.patternProps {
					pats[i] = pyRepr(pp.src)
				}
				sort.Strings(pats)
				verb := "does"
				if len(extras) > 1 {
					verb = "do"
				}
				fail(k, "%s %s not match any of the regexes: %s", shortRepr(strings.Join(reprs, ", ")), verb, strings.Join(pats, ", "))
			} else {
				verb := "was"
				if len(extras) > 1 {
					verb = "were"
				}
				fail(k, "Additional properties are not allowed (%s %s unexpected)", strings.Join(reprs, ", "), verb)
			}
		case "required":
			obj, ok := inst.(map[string]any)
			if !ok {
				continue
			}
			for _, name := range s.required {
				if _, ok := obj[name]; !ok {
					fail(k, "%s is a required property", pyRepr(name))
				}
			}
		case "minProperties":
			if obj, ok := inst.(map[string]any); ok && len(obj) < *s.minProps {
				fail(k, "%s does not have enough properties", instanceRepr(inst))
			}
		case "maxProperties":
			if obj, ok := inst.(map[string]any); ok && len(obj) > *s.maxProps {
				fail(k, "%s has too many properties", instanceRepr(inst))
			}
		case "items":
			arr, ok := inst.([]any)
			if !ok {
				continue
			}
			for i, e := range arr {
				errs = append(errs, w.descend(s.items, e, pathStep{index: i, isIndex: true}, k)...)
			}
		case "minItems":
			if arr, ok := inst.([]any); ok && len(arr) < *s.minItems {
				fail(k, "%s is too short", instanceRepr(inst))
			}
		case "maxItems":
			if arr, ok := inst.([]any); ok && len(arr) > *s.maxItems {
				fail(k, "%s is too long", instanceRepr(inst))
			}
		case "uniqueItems":
			if arr, ok := inst.([]any); ok && s.uniqueItems && !allUnique(arr) {
				fail(k, "%s has non-unique elements", instanceRepr(inst))
			}
		case "minLength":
			if str, ok := inst.(string); ok && len([]rune(str)) < *s.minLength {
				fail(k, "%s is too short", instanceRepr(inst))
			}
		case "maxLength":
			if str, ok := inst.(string); ok && len([]rune(str)) > *s.maxLength {
				fail(k, "%s is too long", instanceRepr(inst))
			}
		case "pattern":
			if str, ok := inst.(string); ok && !s.pattern.MatchString(str) {
				fail(k, "%s does not match %s", instanceRepr(inst), pyRepr(s.patternSrc))
			}
		case "format":
			if str, ok := inst.(string); ok && !checkFormat(s.format, str) {
				fail(k, "%s is not a %s", instanceRepr(inst), pyRepr(s.format))
			}
		case "minimum":
			if f, ok := number(inst); ok && f < *s.minimum {
				fail(k, "%s is less than the minimum of %s", instanceRepr(inst), pyRepr(s.minimumRaw))
			}
		case "maximum":
			if f, ok := number(inst); ok && f > *s.maximum {
				fail(k, "%s is greater than the maximum of %s", instanceRepr(inst), pyRepr(s.maximumRaw))
			}
		case "exclusiveMinimum":
			if f, ok := number(inst); ok && f <= *s.exclusiveMin {
				fail(k, "%s is less than or equal to the minimum of %s", instanceRepr(inst), pyRepr(s.exclusiveMinRw))
			}
		case "enum":
			found := false
			for _, e := range s.enum {
				if jsonEqual(e, inst) {
					found = true
					break
				}
			}
			if !found {
				fail(k, "%s is not one of %s", instanceRepr(inst), pyRepr(s.enum))
			}
		case "const":
			if !jsonEqual(s.constValue, inst) {
				fail(k, "%s was expected", pyRepr(s.constValue))
			}
		case "anyOf":
			ok := false
			for _, sub := range s.anyOf {
				if len(sub.validate(inst, w)) == 0 {
					ok = true
					break
				}
			}
			if !ok {
				fail(k, "%s is not valid under any of the given schemas", instanceRepr(inst))
			}
		case "oneOf":
			n := 0
			for _, sub := range s.oneOf {
				if len(sub.validate(inst, w)) == 0 {
					n++
				}
			}
			if n == 0 {
				fail(k, "%s is not valid under any of the given schemas", instanceRepr(inst))
			} else if n > 1 {
				fail(k, "%s is valid under each of %s", instanceRepr(inst), "the given schemas")
			}
		case "not":
			if len(s.notSchema.validate(inst, w)) == 0 {
				fail(k, "%s should not be valid under %s", instanceRepr(inst), pyRepr(s.notSchema.raw))
			}
		}
	}
	return errs
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Python's json.loads reads NaN, Infinity and -Infinity as floats; a
// decoder that accepts them stores them as json.Number with that text.
func isNonFinite(s string) bool {
	return s == "NaN" || s == "Infinity" || s == "-Infinity"
}

func isInteger(n json.Number) bool {
	s := n.String()
	if isNonFinite(s) {
		return false
	}
	if !strings.ContainsAny(s, ".eE") {
		return true
	}
	f, err := n.Float64()
	return err == nil && f == math.Trunc(f) && !math.IsInf(f, 0)
}

func matchesAnyType(inst any, types []string) bool {
	for _, t := range types {
		switch t {
		case "object":
			if _, ok := inst.(map[string]any); ok {
				return true
			}
		case "array":
			if _, ok := inst.([]any); ok {
				return true
			}
		case "string":
			if _, ok := inst.(string); ok {
				return true
			}
		case "boolean":
			if _, ok := inst.(bool); ok {
				return true
			}
		case "null":
			if inst == nil {
				return true
			}
		case "number":
			if _, ok := inst.(json.Number); ok {
				return true
			}
		case "integer":
			if n, ok := inst.(json.Number); ok && isInteger(n) {
				return true
			}
		}
	}
	return false
}

func number(inst any) (float64, bool) {
	n, ok := inst.(json.Number)
	if !ok {
		return 0, false
	}
	// A short integer is exactly its float (below 2^53); ParseInt is
	// cheaper. "-0" is left to ParseFloat, whose answer is -0.
	if len(n) <= 15 && n != "-0" {
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return float64(i), true
		}
	}
	f, err := strconv.ParseFloat(n.String(), 64)
	if err != nil && !math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// checkFormat implements the formats Placement's schemas use. "uuid" is
// Placement's own checker (oslo's is_uuid_like), which also accepts the
// dashless, braced and urn:uuid: forms.
func checkFormat(format, s string) bool {
	switch format {
	case "uuid":
		return uuid.Valid(s)
	}
	return true
}

// allUnique reports whether no two elements of arr are equal. It keys each
// element by its canonical form, so a long array costs linear time, not
// one comparison per pair (a 32 MiB body holds millions of elements).
func allUnique(arr []any) bool {
	if len(arr) < 2 {
		return true
	}
	seen := make(map[string]struct{}, len(arr))
	var b strings.Builder
	for _, e := range arr {
		b.Reset()
		writeCanonical(&b, e)
		k := b.String()
		if _, dup := seen[k]; dup {
			return false
		}
		seen[k] = struct{}{}
	}
	return true
}

// jsonEqual compares two decoded JSON values as Python compares the values
// json.loads makes of them: numbers by value (1 == 1.0), objects by keys
// and values.
func jsonEqual(a, b any) bool {
	var ab, bb strings.Builder
	writeCanonical(&ab, a)
	writeCanonical(&bb, b)
	return ab.String() == bb.String()
}

// writeCanonical writes a key for a decoded JSON value such that two
// values get the same key exactly when jsonEqual holds: integers exactly,
// other numbers as float64 (an integral float as its integer), strings
// quoted, object keys sorted.
func writeCanonical(b *strings.Builder, v any) {
	switch t := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(t))
	case json.Number:
		b.WriteString(canonicalNumber(t))
	case string:
		b.WriteString(strconv.Quote(t))
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			writeCanonical(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		for i, k := range sortedKeys(t) {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(k))
			b.WriteByte(':')
			writeCanonical(b, t[k])
		}
		b.WriteByte('}')
	default:
		fmt.Fprintf(b, "%T:%v", v, v)
	}
}

// canonicalNumber renders a JSON number so that equal values read the
// same: an integer literal exactly, any other number as the float64 Python
// would make of it, written as an integer when it is integral.
func canonicalNumber(n json.Number) string {
	s := n.String()
	if !strings.ContainsAny(s, ".eE") {
		if i, ok := new(big.Int).SetString(s, 10); ok {
			return i.String()
		}
		return s
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !math.IsInf(f, 0) {
		return s
	}
	if math.IsInf(f, 0) || f != math.Trunc(f) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	i, _ := big.NewFloat(f).Int(nil)
	return i.String()
}

// maxInstanceRepr is how much of a client's value an error message
// repeats, in bytes of its repr (jsonschema repeats all of it: megabytes
// for a large body). Values up to this size read exactly as in Placement.
const maxInstanceRepr = 2048

// instanceRepr is pyRepr for a value that came from the client: at most
// maxInstanceRepr bytes of it (see shortRepr).
func instanceRepr(v any) string { return shortRepr(pyRepr(v)) }

// shortRepr cuts r to maxInstanceRepr bytes (on a UTF-8 boundary) and
// marks the cut with "...".
func shortRepr(r string) string {
	if len(r) <= maxInstanceRepr {
		return r
	}
	cut := maxInstanceRepr
	for cut > 0 && !utf8.RuneStart(r[cut]) {
		cut--
	}
	return r[:cut] + "..."
}

// pyRepr renders a decoded JSON value the way Python's repr() renders the
// value json.loads would have produced.
func pyRepr(v any) string {
	switch t := v.(type) {
	case []any, map[string]any:
		// Containers are written into one builder: joining the reprs of
		// their elements would copy a deeply nested value once per level.
		var b strings.Builder
		writePyRepr(&b, t)
		return b.String()
	case nil:
		return "None"
	case bool:
		if t {
			return "True"
		}
		return "False"
	case json.Number:
		s := t.String()
		if isNonFinite(s) {
			f, _ := strconv.ParseFloat(s, 64)
			return PyFloat(f)
		}
		if !strings.ContainsAny(s, ".eE") {
			return s
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			if math.IsInf(f, 0) {
				return PyFloat(f)
			}
			return s
		}
		return PyFloat(f)
	case float64:
		return PyFloat(t)
	case int:
		return strconv.Itoa(t)
	case string:
		return pyString(t)
	}
	return fmt.Sprint(v)
}

// writePyRepr writes pyRepr(v) to b.
func writePyRepr(b *strings.Builder, v any) {
	switch t := v.(type) {
	case []any:
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteString(", ")
			}
			writePyRepr(b, e)
		}
		b.WriteByte(']')
	case map[string]any:
		b.WriteByte('{')
		for i, k := range sortedKeys(t) {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(pyString(k))
			b.WriteString(": ")
			writePyRepr(b, t[k])
		}
		b.WriteByte('}')
	default:
		b.WriteString(pyRepr(v))
	}
}

// PyRepr renders a decoded JSON value (as Validate takes it, or a Go
// string) the way Python's repr() renders the value json.loads would have
// produced: 'abc', None, True, [1, 2].
func PyRepr(v any) string { return pyRepr(v) }

// PyFloat formats f as Python's repr of a float does: the shortest digits
// that read back as f, in positional notation ("1.0", "1084856.25",
// "0.0001") unless the decimal exponent is below -4 or at least 16
// ("1e+16", "1.5e-05"), and "inf" or "-inf".
func PyFloat(f float64) string {
	if math.IsInf(f, 1) {
		return "inf"
	}
	if math.IsInf(f, -1) {
		return "-inf"
	}
	if math.IsNaN(f) {
		return "nan"
	}
	s := strconv.FormatFloat(f, 'e', -1, 64)
	e := strings.IndexByte(s, 'e')
	exp, _ := strconv.Atoi(s[e+1:])
	if exp < -4 || exp >= 16 {
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		return fmt.Sprintf("%se%s%02d", s[:e], sign, exp)
	}
	s = strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

func pyString(s string) string {
	quote := byte('\'')
	if strings.Contains(s, "'") && !strings.Contains(s, `"`) {
		quote = '"'
	}
	var b strings.Builder
	b.WriteByte(quote)
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == rune(quote):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f || (r != ' ' && !unicode.IsPrint(r)):
			// Python escapes what str.isprintable says is not printable:
			// controls, format characters, separators other than ' '.
			switch {
			case r < 0x100:
				fmt.Fprintf(&b, `\x%02x`, r)
			case r < 0x10000:
				fmt.Fprintf(&b, `\u%04x`, r)
			default:
				fmt.Fprintf(&b, `\U%08x`, r)
			}
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(quote)
	return b.String()
}
