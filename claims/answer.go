package claims

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/resources"
)

// A claim's answer, encoded once.
//
// A claim's result is encoded once, as the API answers it
// (docs/claims.md): the write records those bytes for the claim's
// retries (idempotent.go), and POST /claims, reschedule and move answer
// with the same bytes (Result.Answer). A retry that is recognised is
// answered with the recorded bytes: the same request gets the same
// answer, byte for byte. A record written by a version that recorded
// claims.Result's own fields is still read (resultOfRecord).

// Answer is r as the API answers it: compact JSON, HTML characters not
// escaped, no trailing newline; the bytes recorded for r's retries when r
// was written or answered from a record.
func (r *Result) Answer() ([]byte, error) {
	if r.answer != nil {
		return r.answer, nil
	}
	return encodeAnswer(r)
}

// encodeAnswer encodes r as Answer gives it.
func encodeAnswer(r *Result) ([]byte, error) {
	e := answerEncoders.Get().(*answerEncoder)
	defer e.release()
	a := e.answerOf(r)
	var ok bool
	if e.b, ok = appendAnswer(e.b[:0], a); ok {
		return bytes.Clone(e.b), nil
	}
	e.buf.Reset()
	if err := e.enc.Encode(a); err != nil {
		return nil, fmt.Errorf("encode claim answer: %w", err)
	}
	return bytes.Clone(bytes.TrimRight(e.buf.Bytes(), "\n")), nil
}

// maxPooledAnswer bounds the buffer an answer encoder keeps: a dry run's
// ranking of a whole cloud is not held for the claims after it.
const maxPooledAnswer = 64 << 10

// release returns e to answerEncoders, unless its buffer grew too large.
func (e *answerEncoder) release() {
	// Nothing of the result is held.
	e.a = claimAnswer{}
	clear(e.alternates[:cap(e.alternates)])
	clear(e.steps[:cap(e.steps)])
	if e.buf.Cap() <= maxPooledAnswer && cap(e.b) <= maxPooledAnswer && cap(e.alternates) <= maxPooledEntries && cap(e.steps) <= maxPooledEntries {
		answerEncoders.Put(e)
	}
}

// maxPooledEntries bounds the alternates and the steps an answer
// encoder keeps room for.
const maxPooledEntries = 64

// answerEncoder is an encoder of answers (HTML characters not escaped)
// into its own buffers (b for appendAnswer, buf for enc), which the
// caller copies out of. a is the answer it encodes, whose alternates and
// steps are cut from its own arrays (answerOf).
type answerEncoder struct {
	b          []byte
	buf        bytes.Buffer
	enc        *json.Encoder
	a          claimAnswer
	alternates []alternateJSON
	steps      []stepJSON
}

// answerEncoders are the answer encoders not in use.
var answerEncoders = sync.Pool{New: func() any {
	e := new(answerEncoder)
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// resultOfRecord is the result recorded as raw: an answer (Answer's
// bytes, which it keeps), or claims.Result's own fields as versions
// before recorded them.
func resultOfRecord(raw []byte) (*Result, error) {
	var probe struct {
		ConsumerUUID string `json:"consumer_uuid"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, err
	}
	if probe.ConsumerUUID == "" {
		var res Result
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, err
		}
		return &res, nil
	}
	var a claimAnswer
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, err
	}
	res := a.result()
	res.answer = raw
	return res, nil
}

// claimAnswer is the answer to a claim. Its fields are in name order, the
// order encoding/json gives a map's keys, so the answer reads as it did
// when it was built from maps; structs cost fewer allocations.
type claimAnswer struct {
	Allocations        allocationsAnswer   `json:"allocations"`
	Alternates         []alternateJSON     `json:"alternates"`
	Attempts           int                 `json:"attempts"`
	ConsumerGeneration int64               `json:"consumer_generation"`
	ConsumerUUID       string              `json:"consumer_uuid"`
	DryRun             bool                `json:"dry_run"`
	Mappings           map[string][]string `json:"mappings"`
	Migration          *migrationJSON      `json:"migration,omitempty"`
	// Preempted are the consumers the claim displaced (a dry run: would
	// displace), left out when none (preempt.go).
	Preempted []victimJSON `json:"preempted,omitempty"`
	// Quota is a dry run's quota check (docs/quotas.md).
	Quota *QuotaJSON `json:"quota,omitempty"`
	// Ranking and ScriptletLog are set (possibly to empty slices) for dry
	// runs only, which are not recorded.
	Ranking any `json:"ranking,omitempty"`
	// Reused is set for reschedules and moves: what their request took
	// from the consumer's stored claim or allocations.
	Reused           *reusedJSON `json:"reused,omitempty"`
	RootProviderName string      `json:"root_provider_name"`
	RootProviderUUID string      `json:"root_provider_uuid"`
	Score            float64     `json:"score"`
	ScriptletLog     any         `json:"scriptlet_log,omitempty"`
	Steps            []stepJSON  `json:"steps"`
}

type alternateJSON struct {
	Allocations      allocationsAnswer   `json:"allocations"`
	Mappings         map[string][]string `json:"mappings"`
	RootProviderName string              `json:"root_provider_name"`
	RootProviderUUID string              `json:"root_provider_uuid"`
	Score            float64             `json:"score"`
}

type rankedJSON struct {
	Allocations      allocationsAnswer  `json:"allocations"`
	Rank             int                `json:"rank"`
	RootProviderName string             `json:"root_provider_name"`
	RootProviderUUID string             `json:"root_provider_uuid"`
	Score            float64            `json:"score"`
	Weights          map[string]float64 `json:"weights"`
}

type logLineJSON struct {
	Level   string `json:"level"`
	Message string `json:"message"`
}

// QuotaJSON is a dry run's quota check as the API answers it, for a
// claim and for a gang: whether it would pass, and per limited resource
// of its project what it would add, what the project holds and the
// limit.
type QuotaJSON struct {
	Fits      bool                         `json:"fits"`
	ProjectID string                       `json:"project_id"`
	Resources map[string]quotaResourceJSON `json:"resources"`
}

type quotaResourceJSON struct {
	Limit     int64 `json:"limit"`
	Requested int64 `json:"requested"`
	Used      int64 `json:"used"`
}

// QuotaAnswer is q as the API answers it (nil for nil).
func QuotaAnswer(q *QuotaReport) *QuotaJSON {
	if q == nil {
		return nil
	}
	out := &QuotaJSON{Fits: q.Fits, ProjectID: q.ProjectID, Resources: make(map[string]quotaResourceJSON, len(q.Resources))}
	for name, rq := range q.Resources {
		out.Resources[name] = quotaResourceJSON{Limit: rq.Limit, Requested: rq.Requested, Used: rq.Used}
	}
	return out
}

type reusedJSON struct {
	Fields []string `json:"fields"`
	From   string   `json:"from"`
}

type migrationJSON struct {
	Allocations  allocationsAnswer `json:"allocations"`
	ConsumerUUID string            `json:"consumer_uuid"`
}

// victimJSON is one consumer a claim displaced, as its answer names it.
type victimJSON struct {
	Allocations      allocationsAnswer `json:"allocations"`
	ConsumerUUID     string            `json:"consumer_uuid"`
	Priority         int64             `json:"priority"`
	ProjectID        string            `json:"project_id"`
	RootProviderUUID string            `json:"root_provider_uuid"`
	UserID           string            `json:"user_id"`
}

type stepJSON struct {
	Kind      string         `json:"kind"`
	Reasons   map[string]int `json:"reasons"`
	Remaining int            `json:"remaining"`
	Removed   int            `json:"removed"`
	Unit      string         `json:"unit"`
}

// answerOf is r's answer, in e's own answer until e is released.
func (e *answerEncoder) answerOf(r *Result) *claimAnswer {
	// (Never nil, as make's: an answer has "alternates": [] and "steps": []
	// when there are none.)
	alternates := grownFrom(e.alternates, len(r.Alternates))
	e.alternates = alternates
	for i, o := range r.Alternates {
		alternates[i] = alternateJSON{
			RootProviderUUID: o.Root,
			RootProviderName: o.RootName,
			Score:            o.Score,
			Allocations:      o.Allocations,
			Mappings:         o.Mappings,
		}
	}
	e.steps = stepsInto(e.steps, r.Steps)
	out := &e.a
	*out = claimAnswer{
		ConsumerUUID:       r.ConsumerUUID,
		ConsumerGeneration: r.ConsumerGeneration,
		Allocations:        r.Allocations,
		Mappings:           r.Mappings,
		RootProviderUUID:   r.Root,
		RootProviderName:   r.RootName,
		Score:              r.Score,
		Alternates:         alternates,
		Attempts:           r.Attempts,
		DryRun:             r.DryRun,
		Steps:              e.steps,
	}
	if len(r.Preempted) > 0 {
		out.Preempted = make([]victimJSON, len(r.Preempted))
		for i, v := range r.Preempted {
			out.Preempted[i] = victimJSON{Allocations: v.Allocations, ConsumerUUID: v.ConsumerUUID, Priority: v.Priority,
				ProjectID: v.ProjectID, RootProviderUUID: v.Root, UserID: v.UserID}
		}
	}
	if r.DryRun {
		ranking := make([]rankedJSON, len(r.Ranking))
		for i, o := range r.Ranking {
			ranking[i] = rankedJSON{
				Rank:             i + 1,
				RootProviderUUID: o.Root,
				RootProviderName: o.RootName,
				Score:            o.Score,
				Weights:          o.Weights,
				Allocations:      o.Allocations,
			}
		}
		log := make([]logLineJSON, len(r.ScriptletLog))
		for i, l := range r.ScriptletLog {
			log[i] = logLineJSON{Level: l.Level, Message: l.Message}
		}
		out.Ranking, out.ScriptletLog = ranking, log
	}
	out.Quota = QuotaAnswer(r.Quota)
	if r.Reused != nil {
		out.Reused = &reusedJSON{From: r.Reused.From, Fields: r.Reused.Fields}
	}
	if r.Migration != nil {
		out.Migration = &migrationJSON{ConsumerUUID: r.Migration.ConsumerUUID, Allocations: r.Migration.Allocations}
	}
	return out
}

// result is the Result a recorded answer a says (a written claim's: no
// ranking, no scriptlet log).
func (a *claimAnswer) result() *Result {
	r := &Result{
		ConsumerUUID:       a.ConsumerUUID,
		ConsumerGeneration: a.ConsumerGeneration,
		Allocations:        a.Allocations,
		Mappings:           a.Mappings,
		Root:               a.RootProviderUUID,
		RootName:           a.RootProviderName,
		Score:              a.Score,
		Attempts:           a.Attempts,
		DryRun:             a.DryRun,
	}
	if a.Alternates != nil {
		r.Alternates = make([]Option, len(a.Alternates))
		for i, o := range a.Alternates {
			r.Alternates[i] = Option{Root: o.RootProviderUUID, RootName: o.RootProviderName, Score: o.Score,
				Allocations: o.Allocations, Mappings: o.Mappings}
		}
	}
	if a.Steps != nil {
		r.Steps = make([]Step, len(a.Steps))
		for i, st := range a.Steps {
			r.Steps[i] = Step{Unit: st.Unit, Kind: st.Kind, Removed: st.Removed, Remaining: st.Remaining, Reasons: st.Reasons}
		}
	}
	for _, v := range a.Preempted {
		r.Preempted = append(r.Preempted, Victim{ConsumerUUID: v.ConsumerUUID, Root: v.RootProviderUUID, Priority: v.Priority,
			ProjectID: v.ProjectID, UserID: v.UserID, Allocations: v.Allocations})
	}
	if q := a.Quota; q != nil {
		r.Quota = &QuotaReport{ProjectID: q.ProjectID, Fits: q.Fits, Resources: map[string]QuotaResource{}}
		for name, rq := range q.Resources {
			r.Quota.Resources[name] = QuotaResource{Requested: rq.Requested, Used: rq.Used, Limit: rq.Limit}
		}
	}
	if a.Reused != nil {
		r.Reused = &Reused{From: a.Reused.From, Fields: a.Reused.Fields}
	}
	if a.Migration != nil {
		r.Migration = &resources.ConsumerAllocations{ConsumerUUID: a.Migration.ConsumerUUID, Allocations: a.Migration.Allocations}
	}
	return r
}

// StepsJSON is the selection steps of a claim as its answer, and the
// error of a claim that placed nothing, write them.
func StepsJSON(steps []Step) any { return stepsAnswer(steps) }

func stepsAnswer(steps []Step) []stepJSON { return stepsInto(nil, steps) }

// stepsInto is stepsAnswer(steps) cut from buf when it has room.
func stepsInto(buf []stepJSON, steps []Step) []stepJSON {
	out := grownFrom(buf, len(steps))
	for i, st := range steps {
		reasons := st.Reasons
		if reasons == nil {
			reasons = map[string]int{}
		}
		out[i] = stepJSON{Unit: st.Unit, Kind: st.Kind, Removed: st.Removed, Remaining: st.Remaining, Reasons: reasons}
	}
	return out
}

// grownFrom is buf resliced to n elements, or a new slice of n when buf
// has less room or is nil; never nil.
func grownFrom[T any](buf []T, n int) []T {
	if buf == nil || cap(buf) < n {
		return make([]T, n, max(n, 4))
	}
	return buf[:n]
}

// appendAnswer appends a as encodeAnswer's encoder writes it (without
// its newline), for the answer of a written claim: ok is false, and b is
// then to be dropped, for any other (a dry run's ranking or scriptlet
// log, a quota check, preempted consumers, what a reschedule or move
// reused, a migration) and for a score that is not finite, which the
// encoder writes or refuses.
func appendAnswer(b []byte, a *claimAnswer) (_ []byte, ok bool) {
	if a.Migration != nil || a.Preempted != nil || a.Quota != nil || a.Ranking != nil || a.Reused != nil || a.ScriptletLog != nil {
		return b, false
	}
	if b, ok = appendMember(b, '{', "allocations"); ok {
		b, ok = appendAllocations(b, a.Allocations)
	}
	if !ok {
		return b, false
	}
	b, _ = appendMember(b, ',', "alternates")
	if a.Alternates == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range a.Alternates {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendAlternate(b, &a.Alternates[i]); !ok {
				return b, false
			}
		}
		b = append(b, ']')
	}
	b, _ = appendMember(b, ',', "attempts")
	b = strconv.AppendInt(b, int64(a.Attempts), 10)
	b, _ = appendMember(b, ',', "consumer_generation")
	b = strconv.AppendInt(b, a.ConsumerGeneration, 10)
	b, _ = appendMember(b, ',', "consumer_uuid")
	b = appendString(b, a.ConsumerUUID)
	b, _ = appendMember(b, ',', "dry_run")
	b = strconv.AppendBool(b, a.DryRun)
	if b, ok = appendPlacement(b, a.Mappings, a.RootProviderName, a.RootProviderUUID, a.Score); !ok {
		return b, false
	}
	b, _ = appendMember(b, ',', "steps")
	b = appendSteps(b, a.Steps)
	return append(b, '}'), true
}

// appendPlacement appends the members a claim's answer and each of its
// alternates end their placement with, in the encoder's order: the
// mappings, the root provider's name and uuid, and the score (ok false,
// as appendFloat, for a score that is not finite).
func appendPlacement(b []byte, mappings map[string][]string, rootName, rootUUID string, score float64) ([]byte, bool) {
	b, _ = appendMember(b, ',', "mappings")
	b = appendMappings(b, mappings)
	b, _ = appendMember(b, ',', "root_provider_name")
	b = appendString(b, rootName)
	b, _ = appendMember(b, ',', "root_provider_uuid")
	b = appendString(b, rootUUID)
	b, _ = appendMember(b, ',', "score")
	return appendFloat(b, score)
}

// appendMember appends sep and the member name (plain ASCII) with its
// colon.
func appendMember(b []byte, sep byte, name string) ([]byte, bool) {
	b = append(b, sep, '"')
	b = append(b, name...)
	return append(b, '"', ':'), true
}

// appendAllocations appends a as encoding/json writes it (through its
// MarshalJSON, compacted), or through the map MarshalJSON falls back to.
func appendAllocations(b []byte, a allocationsAnswer) ([]byte, bool) {
	n := len(b)
	if b, ok := a.appendTo(b); ok {
		return b, true
	}
	raw, err := a.asMap()
	if err != nil {
		return b[:n], false
	}
	return append(b[:n], raw...), true
}

func appendAlternate(b []byte, o *alternateJSON) ([]byte, bool) {
	b, _ = appendMember(b, '{', "allocations")
	b, ok := appendAllocations(b, o.Allocations)
	if !ok {
		return b, false
	}
	if b, ok = appendPlacement(b, o.Mappings, o.RootProviderName, o.RootProviderUUID, o.Score); !ok {
		return b, false
	}
	return append(b, '}'), true
}

// appendMappings appends m as encoding/json writes a map: null for nil,
// keys in byte order.
func appendMappings(b []byte, m map[string][]string) []byte {
	return appendMap(b, m, appendStrings)
}

// appendStrings appends ss as encoding/json writes a slice: null for nil.
func appendStrings(b []byte, ss []string) []byte {
	return appendList(b, ss, appendString)
}

// appendList appends list as encoding/json writes a slice (null for nil),
// each element by one.
func appendList[T any](b []byte, list []T, one func([]byte, T) []byte) []byte {
	if list == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, v := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = one(b, v)
	}
	return append(b, ']')
}

// appendMap appends m as encoding/json writes a map of string keys (null
// for nil, keys in byte order), each value by one.
func appendMap[V any](b []byte, m map[string]V, one func([]byte, V) []byte) []byte {
	if m == nil {
		return append(b, "null"...)
	}
	var keyArr [8]string
	keys := keyArr[:0]
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = one(b, m[k])
	}
	return append(b, '}')
}

func appendSteps(b []byte, steps []stepJSON) []byte {
	if steps == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range steps {
		st := &steps[i]
		if i > 0 {
			b = append(b, ',')
		}
		b, _ = appendMember(b, '{', "kind")
		b = appendString(b, st.Kind)
		b, _ = appendMember(b, ',', "reasons")
		b = appendCounts(b, st.Reasons)
		b, _ = appendMember(b, ',', "remaining")
		b = strconv.AppendInt(b, int64(st.Remaining), 10)
		b, _ = appendMember(b, ',', "removed")
		b = strconv.AppendInt(b, int64(st.Removed), 10)
		b, _ = appendMember(b, ',', "unit")
		b = appendString(b, st.Unit)
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendCounts appends m as encoding/json writes a map: null for nil,
// keys in byte order.
func appendCounts(b []byte, m map[string]int) []byte {
	return appendMap(b, m, func(b []byte, n int) []byte { return strconv.AppendInt(b, int64(n), 10) })
}

// appendFloat appends f as encoding/json writes a float64; ok is false
// for NaN and the infinities, which it refuses.
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 as e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// allocationsAnswer is allocations as a claim's answer gives them, as PUT
// /allocations takes them: provider uuid -> {"resources": {class:
// amount}}, providers, then classes, in byte order (the order
// encoding/json gives a map's keys), appended without building maps.
type allocationsAnswer []engine.Allocation

// MarshalJSON appends the object; a provider, or a class of one, given
// twice (the map would keep the last) takes the map.
func (a allocationsAnswer) MarshalJSON() ([]byte, error) {
	if b, ok := a.appendTo(make([]byte, 0, 32+96*len(a))); ok {
		return b, nil
	}
	return a.asMap()
}

// appendTo appends the object to b, as MarshalJSON gives it; ok is false
// (and b to be dropped) for a provider, or a class of one, given twice.
func (a allocationsAnswer) appendTo(b []byte) (_ []byte, ok bool) {
	var orderArr [4]int
	order := orderArr[:0]
	for i := range a {
		order = append(order, i)
	}
	slices.SortFunc(order, func(i, j int) int { return strings.Compare(a[i].ProviderUUID, a[j].ProviderUUID) })
	b = append(b, '{')
	var classArr [8]engine.ResourceAmount
	for n, i := range order {
		if n > 0 {
			if a[order[n-1]].ProviderUUID == a[i].ProviderUUID {
				return b, false
			}
			b = append(b, ',')
		}
		b = appendString(b, a[i].ProviderUUID)
		b = append(b, `:{"resources":{`...)
		res := append(classArr[:0], a[i].Resources...)
		slices.SortFunc(res, func(x, y engine.ResourceAmount) int { return strings.Compare(x.Class, y.Class) })
		for k, r := range res {
			if k > 0 {
				if res[k-1].Class == r.Class {
					return b, false
				}
				b = append(b, ',')
			}
			b = appendString(b, r.Class)
			b = append(b, ':')
			b = strconv.AppendInt(b, r.Amount, 10)
		}
		b = append(b, "}}"...)
	}
	return append(b, '}'), true
}

// UnmarshalJSON reads the object back: providers, then each one's
// classes, in byte order.
func (a *allocationsAnswer) UnmarshalJSON(b []byte) error {
	var m map[string]struct {
		Resources map[string]int64 `json:"resources"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	if m == nil {
		*a = nil
		return nil
	}
	out := make(allocationsAnswer, 0, len(m))
	for _, p := range slices.Sorted(maps.Keys(m)) {
		al := engine.Allocation{ProviderUUID: p}
		for _, class := range slices.Sorted(maps.Keys(m[p].Resources)) {
			al.Resources = append(al.Resources, engine.ResourceAmount{Class: class, Amount: m[p].Resources[class]})
		}
		out = append(out, al)
	}
	*a = out
	return nil
}

// appendString appends s as encoding/json encodes a string with HTML
// escaping off: printable ASCII without quotes or backslashes as it is,
// anything else through encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(s) // a string always encodes
			return append(b, bytes.TrimRight(buf.Bytes(), "\n")...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// asMap marshals a as the map it stands for, HTML characters left as they
// are (the answer's encoder escapes them or not).
func (a allocationsAnswer) asMap() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(AllocationsMap(a)); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// AllocationsMap is allocs as PUT /allocations takes them: provider uuid
// -> {"resources": {class: amount}}.
func AllocationsMap(allocs []engine.Allocation) map[string]any {
	out := make(map[string]any, len(allocs))
	for _, pr := range allocs {
		res := make(map[string]int64, len(pr.Resources))
		for _, r := range pr.Resources {
			res[r.Class] = r.Amount
		}
		out[pr.ProviderUUID] = map[string]any{"resources": res}
	}
	return out
}
