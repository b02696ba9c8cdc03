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
	raw any // the schema as parsed, for error trailers
	// runs are the keywords that check something, in the order written
	// (which decides which error wins), in runs of one family.
	runs []keywordRun

	types          []string // as written, for messages
	typeMask       typeMask // types, for checks
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

// compileSchema compiles a decoded schema: an object of keywords, or
// true. Each keyword is compiled by its family's method and kept for
// validate in the order written, in runs of consecutive keywords of one
// family.
func compileSchema(doc any) (*Schema, error) {
	obj, ok := doc.(*orderedObject)
	if !ok {
		if b, ok := doc.(bool); ok && b {
			return &Schema{raw: true}, nil
		}
		return nil, fmt.Errorf("schema must be an object, got %T", doc)
	}
	s := &Schema{raw: plain(obj)}
	for _, name := range obj.keys {
		kd, ok := kinds[name]
		if !ok {
			return nil, fmt.Errorf("unsupported schema keyword %q", name)
		}
		k := keyword{name: name, kind: kd}
		if err := s.compileKeyword(k, obj.values[name]); err != nil {
			return nil, err
		}
		s.addKeyword(k)
	}
	return s, nil
}

// keyword is one keyword of a schema: its name as written and its kind.
type keyword struct {
	name string
	kind kind
}

// kind is a keyword compileSchema knows, numbered by family (in the
// order of the families).
type kind uint8

const (
	annotation kind = iota // $schema, description, title, definitions, $id, default
	kwType
	kwEnum
	kwConst
	kwProperties
	kwPatternProperties
	kwAdditionalProperties
	kwRequired
	kwMinProperties
	kwMaxProperties
	kwItems
	kwMinItems
	kwMaxItems
	kwUniqueItems
	kwMinLength
	kwMaxLength
	kwPattern
	kwFormat
	kwMinimum
	kwMaximum
	kwExclusiveMinimum
	kwAnyOf
	kwOneOf
	kwNot
)

// kinds are the keywords compileSchema knows, by name.
var kinds = map[string]kind{
	"$schema": annotation, "description": annotation, "title": annotation,
	"definitions": annotation, "$id": annotation, "default": annotation,
	"type": kwType, "enum": kwEnum, "const": kwConst,
	"properties": kwProperties, "patternProperties": kwPatternProperties,
	"additionalProperties": kwAdditionalProperties, "required": kwRequired,
	"minProperties": kwMinProperties, "maxProperties": kwMaxProperties,
	"items": kwItems, "minItems": kwMinItems, "maxItems": kwMaxItems, "uniqueItems": kwUniqueItems,
	"minLength": kwMinLength, "maxLength": kwMaxLength, "pattern": kwPattern, "format": kwFormat,
	"minimum": kwMinimum, "maximum": kwMaximum, "exclusiveMinimum": kwExclusiveMinimum,
	"anyOf": kwAnyOf, "oneOf": kwOneOf, "not": kwNot,
}

// family is a family of keywords: those that apply to one type of
// instance (and look at nothing else), those that apply to any, and
// annotations, which check nothing.
type family uint8

const (
	annotations    family = iota
	valueKeywords         // type, enum, const
	objectKeywords        // properties, patternProperties, additionalProperties, required, min/maxProperties
	arrayKeywords         // items, minItems, maxItems, uniqueItems
	stringKeywords        // minLength, maxLength, pattern, format
	numberKeywords        // minimum, maximum, exclusiveMinimum
	combinators           // anyOf, oneOf, not
)

// family is the family of k.
func (k kind) family() family {
	switch {
	case k == annotation:
		return annotations
	case k <= kwConst:
		return valueKeywords
	case k <= kwMaxProperties:
		return objectKeywords
	case k <= kwUniqueItems:
		return arrayKeywords
	case k <= kwFormat:
		return stringKeywords
	case k <= kwExclusiveMinimum:
		return numberKeywords
	}
	return combinators
}

// keywordRun is consecutive keywords of a schema of one family, in the
// order written.
type keywordRun struct {
	family   family
	keywords []keyword
}

// addKeyword appends k to s's runs: to the last if it is of k's family,
// to a new one otherwise. Annotations, which check nothing, are left
// out.
func (s *Schema) addKeyword(k keyword) {
	fam := k.kind.family()
	if fam == annotations {
		return
	}
	if n := len(s.runs); n > 0 && s.runs[n-1].family == fam {
		s.runs[n-1].keywords = append(s.runs[n-1].keywords, k)
		return
	}
	s.runs = append(s.runs, keywordRun{family: fam, keywords: []keyword{k}})
}

// compileKeyword compiles keyword k, whose value is v, into s by its
// family's method.
func (s *Schema) compileKeyword(k keyword, v any) error {
	switch k.kind.family() {
	case valueKeywords:
		s.compileValueKeyword(k, v)
	case objectKeywords:
		return s.compileObjectKeyword(k, v)
	case arrayKeywords:
		return s.compileArrayKeyword(k, v)
	case stringKeywords:
		return s.compileStringKeyword(k, v)
	case numberKeywords:
		return s.compileNumberKeyword(k, v)
	case combinators:
		return s.compileCombinator(k, v)
	}
	return nil
}

// keywordError is err, a fault in keyword k's own value, naming k; nil
// for nil. (A fault in a subschema is returned as the subschema's
// compile reports it, except under items and not.)
func keywordError(k keyword, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("keyword %q: %w", k.name, err)
}

func (s *Schema) compileValueKeyword(k keyword, v any) {
	switch k.kind {
	case kwType:
		switch t := v.(type) {
		case string:
			s.types = []string{t}
		case []any:
			for _, e := range t {
				s.types = append(s.types, e.(string))
			}
		}
		for _, t := range s.types {
			s.typeMask |= typeBits[t]
		}
	case kwEnum:
		s.enum = plain(v).([]any)
	case kwConst:
		s.constValue, s.hasConst = plain(v), true
	}
}

func (s *Schema) compileObjectKeyword(k keyword, v any) error {
	var err error
	switch k.kind {
	case kwProperties:
		po := v.(*orderedObject)
		s.properties = map[string]*Schema{}
		for _, name := range po.keys {
			if s.properties[name], err = compileSchema(po.values[name]); err != nil {
				return err
			}
			s.propOrder = append(s.propOrder, name)
		}
	case kwPatternProperties:
		po := v.(*orderedObject)
		for _, src := range po.keys {
			sub, err := compileSchema(po.values[src])
			if err != nil {
				return err
			}
			s.patternProps = append(s.patternProps, patternProp{src: src, re: regexp.MustCompile(src), schema: sub})
		}
	case kwAdditionalProperties:
		if b, ok := v.(bool); ok {
			s.noAdditional = !b
		} else if s.additional, err = compileSchema(v); err != nil {
			return err
		}
	case kwRequired:
		for _, e := range v.([]any) {
			s.required = append(s.required, e.(string))
		}
	case kwMinProperties:
		s.minProps, err = intPtr(v)
	case kwMaxProperties:
		s.maxProps, err = intPtr(v)
	}
	return keywordError(k, err)
}

func (s *Schema) compileArrayKeyword(k keyword, v any) error {
	var err error
	switch k.kind {
	case kwItems:
		s.items, err = compileSchema(v)
	case kwMinItems:
		s.minItems, err = intPtr(v)
	case kwMaxItems:
		s.maxItems, err = intPtr(v)
	case kwUniqueItems:
		s.uniqueItems = v.(bool)
	}
	return keywordError(k, err)
}

func (s *Schema) compileStringKeyword(k keyword, v any) error {
	var err error
	switch k.kind {
	case kwMinLength:
		s.minLength, err = intPtr(v)
	case kwMaxLength:
		s.maxLength, err = intPtr(v)
	case kwPattern:
		s.patternSrc = v.(string)
		s.pattern, err = regexp.Compile(s.patternSrc)
	case kwFormat:
		s.format = v.(string)
	}
	return keywordError(k, err)
}

func (s *Schema) compileNumberKeyword(k keyword, v any) error {
	var err error
	switch k.kind {
	case kwMinimum:
		s.minimumRaw = v
		s.minimum, err = floatPtr(v)
	case kwMaximum:
		s.maximumRaw = v
		s.maximum, err = floatPtr(v)
	case kwExclusiveMinimum:
		s.exclusiveMinRw = v
		s.exclusiveMin, err = floatPtr(v)
	}
	return keywordError(k, err)
}

func (s *Schema) compileCombinator(k keyword, v any) error {
	if k.kind == kwNot {
		var err error
		s.notSchema, err = compileSchema(v)
		return keywordError(k, err)
	}
	var subs []*Schema
	for _, e := range v.([]any) {
		sub, err := compileSchema(e)
		if err != nil {
			return err
		}
		subs = append(subs, sub)
	}
	if k.kind == kwAnyOf {
		s.anyOf = subs
	} else {
		s.oneOf = subs
	}
	return nil
}

// intPtr reads a keyword's integer value.
func intPtr(v any) (*int, error) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, fmt.Errorf("expected a number, got %v", v)
	}
	i, err := strconv.Atoi(n.String())
	return &i, err
}

// floatPtr reads a keyword's number value.
func floatPtr(v any) (*float64, error) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, fmt.Errorf("expected a number, got %v", v)
	}
	f, err := n.Float64()
	return &f, err
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

// validate checks inst against s's keywords in the order written, which
// is the order of the violations it returns, a run of one family at a
// time. A family that applies to one type of instance is checked only
// on that type.
func (s *Schema) validate(inst any, w *walk) []*ValidationError {
	c := check{s: s, inst: inst, w: w}
	for i := range s.runs {
		kws := s.runs[i].keywords
		switch s.runs[i].family {
		case valueKeywords:
			if len(kws) == 1 && kws[0].kind == kwType && matchesAnyType(inst, s.typeMask) {
				continue // the usual run, a "type" the instance has, without a call
			}
			c.values(kws)
		case objectKeywords:
			if obj, ok := inst.(map[string]any); ok {
				c.object(kws, obj)
			}
		case arrayKeywords:
			if arr, ok := inst.([]any); ok {
				c.array(kws, arr)
			}
		case stringKeywords:
			if str, ok := inst.(string); ok {
				c.string(kws, str)
			}
		case numberKeywords:
			if f, ok := number(inst); ok {
				c.number(kws, f)
			}
		case combinators:
			c.combinators(kws)
		}
	}
	return c.errs
}

// check is one validate call: the schema, the instance, the paths to
// where they are, and the violations found so far.
type check struct {
	s    *Schema
	inst any
	w    *walk
	errs []*ValidationError
}

// fail records the instance's violation of keyword k, its message
// format and args as for fmt.Sprintf.
func (c *check) fail(k keyword, format string, args ...any) {
	c.errs = append(c.errs, &ValidationError{
		Message:    fmt.Sprintf(format, args...),
		Validator:  k.name,
		schemaPath: slice(c.w.spath, k.name),
		path:       slice(c.w.path),
		schema:     c.s.raw,
		instance:   c.inst,
	})
}

// values checks type, enum and const, which apply to any instance.
func (c *check) values(kws []keyword) {
	s, inst := c.s, c.inst
	for _, k := range kws {
		switch k.kind {
		case kwType:
			if !matchesAnyType(inst, s.typeMask) {
				quoted := make([]string, len(s.types))
				for i, t := range s.types {
					quoted[i] = pyRepr(t)
				}
				c.fail(k, "%s is not of type %s", instanceRepr(inst), strings.Join(quoted, ", "))
			}
		case kwEnum:
			found := false
			for _, e := range s.enum {
				if jsonEqual(e, inst) {
					found = true
					break
				}
			}
			if !found {
				c.fail(k, "%s is not one of %s", instanceRepr(inst), pyRepr(s.enum))
			}
		case kwConst:
			if !jsonEqual(s.constValue, inst) {
				c.fail(k, "%s was expected", pyRepr(s.constValue))
			}
		}
	}
}

// object checks keywords of the object family on the instance, obj.
func (c *check) object(kws []keyword, obj map[string]any) {
	s := c.s
	for _, k := range kws {
		switch k.kind {
		case kwProperties:
			for _, name := range s.propOrder {
				if v, ok := obj[name]; ok {
					c.errs = append(c.errs, c.w.descend(s.properties[name], v, pathStep{key: name}, k.name, name)...)
				}
			}
		case kwPatternProperties:
			c.patternProperties(k, obj)
		case kwAdditionalProperties:
			c.additionalProperties(k, obj)
		case kwRequired:
			for _, name := range s.required {
				if _, ok := obj[name]; !ok {
					c.fail(k, "%s is a required property", pyRepr(name))
				}
			}
		case kwMinProperties:
			if len(obj) < *s.minProps {
				c.fail(k, "%s does not have enough properties", instanceRepr(c.inst))
			}
		case kwMaxProperties:
			if len(obj) > *s.maxProps {
				c.fail(k, "%s has too many properties", instanceRepr(c.inst))
			}
		}
	}
}

// patternProperties checks obj's members whose names match a pattern of
// patternProperties (k) against its schema.
func (c *check) patternProperties(k keyword, obj map[string]any) {
	s, w := c.s, c.w
	// The members in map order first; only if one fails are they
	// validated again in sorted order, the order of the errors.
	var perrs []*ValidationError
	for _, pp := range s.patternProps {
		for name, v := range obj {
			if pp.re.MatchString(name) {
				if perrs = w.descend(pp.schema, v, pathStep{key: name}, k.name, pp.src); len(perrs) > 0 {
					break
				}
			}
		}
		if len(perrs) > 0 {
			break
		}
	}
	if len(perrs) == 0 {
		return
	}
	for _, pp := range s.patternProps {
		for _, name := range sortedKeys(obj) {
			if pp.re.MatchString(name) {
				c.errs = append(c.errs, w.descend(pp.schema, obj[name], pathStep{key: name}, k.name, pp.src)...)
			}
		}
	}
}

// additionalProperties checks obj's members that neither properties
// nor patternProperties name: against the additional schema, or refused
// when additionalProperties (k) is false.
func (c *check) additionalProperties(k keyword, obj map[string]any) {
	s := c.s
	// (A local, appended here: the compiler keeps its first elements
	// on the stack.)
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
		return
	}
	sort.Strings(extras)
	if s.additional != nil {
		for _, name := range extras {
			c.errs = append(c.errs, c.w.descend(s.additional, obj[name], pathStep{key: name}, k.name)...)
		}
		return
	}
	if s.noAdditional {
		c.additionalRefused(k, extras)
	}
}

// additionalRefused records the violation of "additionalProperties":
// false (k) by the members extras (sorted), worded as jsonschema words
// it with and without patternProperties.
func (c *check) additionalRefused(k keyword, extras []string) {
	reprs := make([]string, len(extras))
	for i, x := range extras {
		reprs[i] = instanceRepr(x)
	}
	if len(c.s.patternProps) > 0 {
		pats := make([]string, len(c.s.patternProps))
		for i, pp := range c.s.patternProps {
			pats[i] = pyRepr(pp.src)
		}
		sort.Strings(pats)
		verb := "does"
		if len(extras) > 1 {
			verb = "do"
		}
		c.fail(k, "%s %s not match any of the regexes: %s", shortRepr(strings.Join(reprs, ", ")), verb, strings.Join(pats, ", "))
		return
	}
	verb := "was"
	if len(extras) > 1 {
		verb = "were"
	}
	c.fail(k, "Additional properties are not allowed (%s %s unexpected)", strings.Join(reprs, ", "), verb)
}

// array checks keywords of the array family on the instance, whose
// elements are arr.
func (c *check) array(kws []keyword, arr []any) {
	s := c.s
	for _, k := range kws {
		switch k.kind {
		case kwItems:
			for i, e := range arr {
				c.errs = append(c.errs, c.w.descend(s.items, e, pathStep{index: i, isIndex: true}, k.name)...)
			}
		case kwMinItems:
			if len(arr) < *s.minItems {
				c.fail(k, "%s is too short", instanceRepr(c.inst))
			}
		case kwMaxItems:
			if len(arr) > *s.maxItems {
				c.fail(k, "%s is too long", instanceRepr(c.inst))
			}
		case kwUniqueItems:
			if s.uniqueItems && !allUnique(arr) {
				c.fail(k, "%s has non-unique elements", instanceRepr(c.inst))
			}
		}
	}
}

// string checks keywords of the string family on the instance, str.
func (c *check) string(kws []keyword, str string) {
	s := c.s
	for _, k := range kws {
		switch k.kind {
		case kwMinLength:
			if len([]rune(str)) < *s.minLength {
				c.fail(k, "%s is too short", instanceRepr(c.inst))
			}
		case kwMaxLength:
			if len([]rune(str)) > *s.maxLength {
				c.fail(k, "%s is too long", instanceRepr(c.inst))
			}
		case kwPattern:
			if !s.pattern.MatchString(str) {
				c.fail(k, "%s does not match %s", instanceRepr(c.inst), pyRepr(s.patternSrc))
			}
		case kwFormat:
			if !checkFormat(s.format, str) {
				c.fail(k, "%s is not a %s", instanceRepr(c.inst), pyRepr(s.format))
			}
		}
	}
}

// number checks keywords of the number family on the instance, whose
// value is f.
func (c *check) number(kws []keyword, f float64) {
	s := c.s
	for _, k := range kws {
		switch k.kind {
		case kwMinimum:
			if f < *s.minimum {
				c.fail(k, "%s is less than the minimum of %s", instanceRepr(c.inst), pyRepr(s.minimumRaw))
			}
		case kwMaximum:
			if f > *s.maximum {
				c.fail(k, "%s is greater than the maximum of %s", instanceRepr(c.inst), pyRepr(s.maximumRaw))
			}
		case kwExclusiveMinimum:
			if f <= *s.exclusiveMin {
				c.fail(k, "%s is less than or equal to the minimum of %s", instanceRepr(c.inst), pyRepr(s.exclusiveMinRw))
			}
		}
	}
}

// combinators checks anyOf, oneOf and not, which apply to any instance.
func (c *check) combinators(kws []keyword) {
	s, inst, w := c.s, c.inst, c.w
	for _, k := range kws {
		switch k.kind {
		case kwAnyOf:
			ok := false
			for _, sub := range s.anyOf {
				if len(sub.validate(inst, w)) == 0 {
					ok = true
					break
				}
			}
			if !ok {
				c.fail(k, "%s is not valid under any of the given schemas", instanceRepr(inst))
			}
		case kwOneOf:
			n := 0
			for _, sub := range s.oneOf {
				if len(sub.validate(inst, w)) == 0 {
					n++
				}
			}
			if n == 0 {
				c.fail(k, "%s is not valid under any of the given schemas", instanceRepr(inst))
			} else if n > 1 {
				c.fail(k, "%s is valid under each of %s", instanceRepr(inst), "the given schemas")
			}
		case kwNot:
			if len(s.notSchema.validate(inst, w)) == 0 {
				c.fail(k, "%s should not be valid under %s", instanceRepr(inst), pyRepr(s.notSchema.raw))
			}
		}
	}
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

// typeMask is a set of the JSON types "type" names, one bit each.
type typeMask uint8

const (
	objectType typeMask = 1 << iota
	arrayType
	stringType
	booleanType
	nullType
	numberType
	integerType
)

// typeBits are the types "type" may name; other names match nothing.
var typeBits = map[string]typeMask{
	"object": objectType, "array": arrayType, "string": stringType, "boolean": booleanType,
	"null": nullType, "number": numberType, "integer": integerType,
}

// matchesAnyType reports whether inst is of one of the types in mask.
func matchesAnyType(inst any, mask typeMask) bool {
	switch v := inst.(type) {
	case map[string]any:
		return mask&objectType != 0
	case []any:
		return mask&arrayType != 0
	case string:
		return mask&stringType != 0
	case bool:
		return mask&booleanType != 0
	case nil:
		return mask&nullType != 0
	case json.Number:
		return mask&numberType != 0 || (mask&integerType != 0 && isInteger(v))
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
