package berthapi

import (
	"encoding/json"
	"strconv"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/httpapi/placement"
	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/uuid"
)

// A claim's body decoded in one pass.
//
// decodeClaimBody reads the body of POST /claims straight into claimBody,
// checking the claim schema (claimSchemaText) as it goes, without the
// generic document, the schema's walk and encoding/json's second parse
// that wire.DecodeJSON takes. It is a fast path that gives up, never
// guesses: on anything it does not decode exactly as the schema and
// encoding/json would (a refusal of any kind, a string with escapes or
// non-ASCII text, a number that is not a plain integer where an integer
// goes, a repeated member, "keys", deep nesting), it reports false and
// the body is decoded by wire.DecodeJSON, which words every refusal as
// before. TestClaimBodyDecodedAsBefore and FuzzClaimBody hold it to
// that.

// maxClaimDepth bounds the nesting decodeClaimBody follows in
// "properties" and "instance"; deeper bodies take wire's path.
const maxClaimDepth = 32

// decodeClaimBody decodes body, as Bodies.Read read it, and reports true
// when it is a valid claim whose every field it decodes exactly as
// wire.DecodeJSON(body, claimSchema, &b) would; otherwise it reports
// false.
func decodeClaimBody(body []byte) (claimBody, bool) {
	var b claimBody
	s := claimScanner{b: body}
	var seen uint32
	ok := s.object(func(key string) bool {
		f, known := claimFields[key]
		if !known || seen&(1<<f) != 0 {
			return false
		}
		seen |= 1 << f
		return s.field(f, &b)
	})
	if !ok || s.space() != len(body) {
		return claimBody{}, false
	}
	const owner = 1<<fieldConsumerUUID | 1<<fieldProjectID | 1<<fieldUserID
	if seen&owner != owner {
		return claimBody{}, false
	}
	return b, true
}

// The members of a claim's body decodeClaimBody reads (a bit each in its
// set of members seen).
const (
	fieldConsumerUUID = iota
	fieldProjectID
	fieldUserID
	fieldName
	fieldConsumerType
	fieldConsumerGeneration
	fieldResources
	fieldRequired
	fieldMemberOf
	fieldInTree
	fieldRootRequired
	fieldSameSubtree
	fieldGroupPolicy
	fieldGroups
	fieldExcludeProviders
	fieldTarget
	fieldPolicy
	fieldReason
	fieldProperties
	fieldInstance
	fieldAlternates
	fieldMaxAttempts
	fieldDryRun
	fieldPriority
	fieldPreemptible
	fieldLeaseSeconds
)

var claimFields = map[string]int{
	"consumer_uuid": fieldConsumerUUID, "project_id": fieldProjectID, "user_id": fieldUserID,
	"name": fieldName, "consumer_type": fieldConsumerType, "consumer_generation": fieldConsumerGeneration,
	"resources": fieldResources, "required": fieldRequired, "member_of": fieldMemberOf, "in_tree": fieldInTree,
	"root_required": fieldRootRequired, "same_subtree": fieldSameSubtree, "group_policy": fieldGroupPolicy,
	"groups": fieldGroups, "exclude_providers": fieldExcludeProviders, "target": fieldTarget, "policy": fieldPolicy,
	"reason": fieldReason, "properties": fieldProperties, "instance": fieldInstance, "alternates": fieldAlternates,
	"max_attempts": fieldMaxAttempts, "dry_run": fieldDryRun, "priority": fieldPriority,
	"preemptible": fieldPreemptible, "lease_seconds": fieldLeaseSeconds,
}

// field decodes the value of member f into b, checked as the claim
// schema checks it.
func (s *claimScanner) field(f int, b *claimBody) bool {
	ok := true
	switch f {
	case fieldConsumerUUID:
		b.ConsumerUUID, ok = s.str(0, -1)
		ok = ok && uuid.Valid(b.ConsumerUUID)
	case fieldProjectID:
		b.ProjectID, ok = s.str(1, 255)
	case fieldUserID:
		b.UserID, ok = s.str(1, 255)
	case fieldName:
		b.Name, ok = s.str(0, 255)
	case fieldConsumerType:
		b.ConsumerType, ok = s.str(1, 255)
		ok = ok && consumerTypeName(b.ConsumerType)
	case fieldConsumerGeneration:
		if !s.null() {
			var g int64
			g, ok = s.integer(-1<<63, 1<<63-1)
			b.ConsumerGeneration = &g
		}
	case fieldResources, fieldRequired, fieldMemberOf, fieldInTree:
		ok = s.groupField(f, (*placement.SelectionGroup)(&b.groupBody))
	case fieldRootRequired:
		b.RootRequired, ok = s.strs(1, -1)
	case fieldSameSubtree:
		b.SameSubtree, ok = s.strs(1, -1)
	case fieldGroupPolicy:
		b.GroupPolicy, ok = s.str(0, -1)
		ok = ok && (b.GroupPolicy == "none" || b.GroupPolicy == "isolate")
	case fieldGroups:
		ok = s.groups(&b.Groups)
	case fieldExcludeProviders:
		b.ExcludeProviders, ok = s.strs(1, 255)
	case fieldTarget:
		b.Target, ok = s.str(1, 255)
	case fieldPolicy:
		b.Policy, ok = s.str(1, 255)
	case fieldReason:
		b.Reason, ok = s.str(0, -1)
		ok = ok && claimReason(b.Reason)
	case fieldProperties:
		b.Properties, ok = s.objectValue(0)
	case fieldInstance:
		b.Instance, ok = s.objectValue(0)
		ok = ok && instanceValid(b.Instance)
	case fieldAlternates:
		var n int64
		n, ok = s.integer(0, maxAlternates)
		a := int(n)
		b.Alternates = &a
	case fieldMaxAttempts:
		var n int64
		n, ok = s.integer(1, claims.MaxMaxAttempts)
		b.MaxAttempts = int(n)
	case fieldDryRun:
		b.DryRun, ok = s.boolean()
	case fieldPriority:
		b.Priority, ok = s.integer(claims.MinPriority, claims.MaxPriority)
	case fieldPreemptible:
		b.Preemptible, ok = s.boolean()
	case fieldLeaseSeconds:
		// Any value (parseLease judges it), kept as its bytes.
		start := s.space()
		_, ok = s.value(0)
		b.LeaseSeconds = json.RawMessage(s.b[start:s.i])
	}
	return ok
}

// groupField decodes member f of a request group into g.
func (s *claimScanner) groupField(f int, g *placement.SelectionGroup) bool {
	ok := true
	switch f {
	case fieldResources:
		ok = s.resources(&g.Resources)
	case fieldRequired:
		g.Required, ok = s.strs(1, -1)
	case fieldMemberOf:
		g.MemberOf, ok = s.strs(1, -1)
	case fieldInTree:
		g.InTree, ok = s.str(1, -1)
	}
	return ok
}

// resources decodes a request group's resources: at least one class,
// each with an integer amount, kept as written.
func (s *claimScanner) resources(m *wire.OrderedMap[json.Number]) bool {
	m.Values = map[string]json.Number{}
	m.Keys = make([]string, 0, 4) // (room for a compute node's few classes)
	ok := s.object(func(class string) bool {
		if _, dup := m.Values[class]; dup {
			return false
		}
		start := s.space()
		if _, ok := s.integer(-1<<63, 1<<63-1); !ok {
			return false
		}
		m.Keys = append(m.Keys, class)
		m.Values[class] = json.Number(s.b[start:s.i])
		return true
	})
	return ok && len(m.Keys) > 0
}

// groups decodes a claim's suffixed request groups.
func (s *claimScanner) groups(m *wire.OrderedMap[placement.SelectionGroup]) bool {
	m.Values = map[string]placement.SelectionGroup{}
	return s.object(func(suffix string) bool {
		if _, dup := m.Values[suffix]; dup || !groupSuffix(suffix) {
			return false
		}
		var g placement.SelectionGroup
		var seen uint32
		ok := s.object(func(key string) bool {
			f, known := claimFields[key]
			if !known || f < fieldResources || f > fieldInTree || seen&(1<<f) != 0 {
				return false
			}
			seen |= 1 << f
			return s.groupField(f, &g)
		})
		m.Keys = append(m.Keys, suffix)
		m.Values[suffix] = g
		return ok
	})
}

// groupSuffix matches the schema's pattern of a group's name,
// ^[a-zA-Z0-9_-]{1,64}$.
func groupSuffix(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// consumerTypeName matches placement.ConsumerTypePattern, ^[A-Z0-9_]+$,
// for the text str gives (no line break).
func consumerTypeName(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return len(s) > 0
}

// claimReason is the claim schema's enum of reasons.
func claimReason(r string) bool {
	switch r {
	case "new", "evacuation", "relocation", "rebalance", "reschedule":
		return true
	}
	return false
}

// instanceValid checks an instance against instanceSchemaText.
func instanceValid(inst map[string]any) bool {
	for k, v := range inst {
		ok := true
		switch k {
		case "name", "project", "type", "architecture", "description", "instance_type", "restore":
			_, ok = v.(string)
		case "config":
			ok = stringValues(v)
		case "devices":
			var m map[string]any
			if m, ok = v.(map[string]any); ok {
				for _, d := range m {
					ok = ok && stringValues(d)
				}
			}
		case "profiles":
			var a []any
			if a, ok = v.([]any); ok {
				for _, e := range a {
					_, isStr := e.(string)
					ok = ok && isStr
				}
			}
		case "source":
			_, ok = v.(map[string]any)
		case "ephemeral", "stateful", "start":
			_, ok = v.(bool)
		}
		if !ok {
			return false
		}
	}
	return true
}

// stringValues reports whether v is an object of strings.
func stringValues(v any) bool {
	m, ok := v.(map[string]any)
	for _, e := range m {
		if _, isStr := e.(string); !isStr {
			return false
		}
	}
	return ok
}

// claimScanner reads a claim's body; i is the index of the next byte.
type claimScanner struct {
	b []byte
	i int
}

// space skips white space and returns the index after it.
func (s *claimScanner) space() int {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return s.i
		}
	}
	return s.i
}

// object reads an object, calling member for each member's name with the
// scanner at its value; member reads the value.
func (s *claimScanner) object(member func(key string) bool) bool {
	if empty, ok := s.open('{', '}'); !ok || empty {
		return ok
	}
	for {
		k, ok := s.str(0, -1)
		if !ok {
			return false
		}
		if s.space(); s.i >= len(s.b) || s.b[s.i] != ':' {
			return false
		}
		s.i++
		if !member(k) {
			return false
		}
		if done, ok := s.sep('}'); !ok || done {
			return ok
		}
	}
}

// open reads the opening of an object or an array, and its close at
// once if it is empty.
func (s *claimScanner) open(start, end byte) (empty, ok bool) {
	if s.space(); s.i >= len(s.b) || s.b[s.i] != start {
		return false, false
	}
	s.i++
	if s.space(); s.i < len(s.b) && s.b[s.i] == end {
		s.i++
		return true, true
	}
	return false, true
}

// sep reads what follows an object's member or an array's item: end,
// which ends it (done), or a comma.
func (s *claimScanner) sep(end byte) (done, ok bool) {
	if s.space(); s.i >= len(s.b) {
		return false, false
	}
	switch s.b[s.i] {
	case end:
		s.i++
		return true, true
	case ',':
		s.i++
		return false, true
	}
	return false, false
}

// array reads an array, calling item with the scanner at each item.
func (s *claimScanner) array(item func() bool) bool {
	if empty, ok := s.open('[', ']'); !ok || empty {
		return ok
	}
	for {
		if !item() {
			return false
		}
		if done, ok := s.sep(']'); !ok || done {
			return ok
		}
	}
}

// str reads a string of printable ASCII without escapes (its bytes are
// its characters, as Python counts them) of min to max characters (max
// -1: any).
func (s *claimScanner) str(min, max int) (string, bool) {
	if s.space(); s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", false
	}
	start := s.i + 1
	j := start
	for ; j < len(s.b); j++ {
		c := s.b[j]
		if c == '"' {
			break
		}
		if c < 0x20 || c == '\\' || c >= 0x7f {
			return "", false
		}
	}
	n := j - start
	if j >= len(s.b) || n < min || max >= 0 && n > max {
		return "", false
	}
	s.i = j + 1
	if k, ok := claimWords[string(s.b[start:j])]; ok {
		return k, true
	}
	return string(s.b[start:j]), true
}

// claimWords are the usual names in a claim, given without allocating.
var claimWords = func() map[string]string {
	m := map[string]string{}
	for k := range claimFields {
		m[k] = k
	}
	for _, w := range []string{"VCPU", "MEMORY_MB", "DISK_GB", "PCPU", "SRIOV_NET_VF", "INSTANCE"} {
		m[w] = w
	}
	return m
}()

// strs reads an array of strings of min to max characters each. An
// empty array is a non-nil empty slice, as encoding/json decodes it.
func (s *claimScanner) strs(min, max int) ([]string, bool) {
	out := []string{}
	ok := s.array(func() bool {
		v, ok := s.str(min, max)
		out = append(out, v)
		return ok
	})
	return out, ok
}

// null reads null if it is next.
func (s *claimScanner) null() bool {
	if s.space(); len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// boolean reads true or false.
func (s *claimScanner) boolean() (bool, bool) {
	s.space()
	for _, lit := range [...]string{"true", "false"} {
		if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
			s.i += len(lit)
			return lit == "true", true
		}
	}
	return false, false
}

// integer reads an integer written without fraction or exponent, of at
// most 18 digits, from min to max.
func (s *claimScanner) integer(min, max int64) (int64, bool) {
	s.space()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	n := s.i - digits
	if n == 0 || n > 18 || n > 1 && s.b[digits] == '0' {
		return 0, false
	}
	if s.i < len(s.b) && (s.b[s.i] == '.' || s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		return 0, false
	}
	v, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	return v, err == nil && v >= min && v <= max
}

// value reads any value as encoding/json decodes it into an any: objects
// as map[string]any, arrays as []any, numbers as float64.
func (s *claimScanner) value(depth int) (any, bool) {
	if s.space(); s.i >= len(s.b) || depth > maxClaimDepth {
		return nil, false
	}
	switch c := s.b[s.i]; {
	case c == '"':
		return s.str(0, -1)
	case c == '{':
		return s.objectValue(depth)
	case c == '[':
		a := []any{}
		ok := s.array(func() bool {
			v, ok := s.value(depth + 1)
			a = append(a, v)
			return ok
		})
		return a, ok
	case c == 't' || c == 'f':
		return s.boolean()
	case c == 'n':
		return nil, s.null()
	}
	return s.number()
}

// objectValue reads an object as map[string]any (a member named twice:
// false).
func (s *claimScanner) objectValue(depth int) (map[string]any, bool) {
	m := map[string]any{}
	ok := s.object(func(k string) bool {
		if _, dup := m[k]; dup {
			return false
		}
		v, ok := s.value(depth + 1)
		m[k] = v
		return ok
	})
	return m, ok
}

// number reads a number in JSON's grammar as a finite float64.
func (s *claimScanner) number() (float64, bool) {
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	digits := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	if n := s.i - digits; n == 0 || n > 1 && s.b[digits] == '0' {
		return 0, false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !s.digits() {
			return 0, false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return 0, false
		}
	}
	f, err := strconv.ParseFloat(string(s.b[start:s.i]), 64)
	return f, err == nil
}

// digits reads one or more digits.
func (s *claimScanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}
