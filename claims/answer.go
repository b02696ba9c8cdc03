package claims

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
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
	e.buf.Reset()
	if err := e.enc.Encode(answerOf(r)); err != nil {
		return nil, fmt.Errorf("encode claim answer: %w", err)
	}
	return bytes.Clone(bytes.TrimRight(e.buf.Bytes(), "\n")), nil
}

// maxPooledAnswer bounds the buffer an answer encoder keeps: a dry run's
// ranking of a whole cloud is not held for the claims after it.
const maxPooledAnswer = 64 << 10

// release returns e to answerEncoders, unless its buffer grew too large.
func (e *answerEncoder) release() {
	if e.buf.Cap() <= maxPooledAnswer {
		answerEncoders.Put(e)
	}
}

// answerEncoder is an encoder of answers (HTML characters not escaped)
// into its own buffer, which the caller copies out of.
type answerEncoder struct {
	buf bytes.Buffer
	enc *json.Encoder
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

// answerOf is r's answer.
func answerOf(r *Result) *claimAnswer {
	alternates := make([]alternateJSON, len(r.Alternates))
	for i, o := range r.Alternates {
		alternates[i] = alternateJSON{
			RootProviderUUID: o.Root,
			RootProviderName: o.RootName,
			Score:            o.Score,
			Allocations:      o.Allocations,
			Mappings:         o.Mappings,
		}
	}
	out := &claimAnswer{
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
		Steps:              stepsAnswer(r.Steps),
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

func stepsAnswer(steps []Step) []stepJSON {
	out := make([]stepJSON, len(steps))
	for i, st := range steps {
		reasons := st.Reasons
		if reasons == nil {
			reasons = map[string]int{}
		}
		out[i] = stepJSON{Unit: st.Unit, Kind: st.Kind, Removed: st.Removed, Remaining: st.Remaining, Reasons: reasons}
	}
	return out
}

// allocationsAnswer is allocations as a claim's answer gives them, as PUT
// /allocations takes them: provider uuid -> {"resources": {class:
// amount}}, providers, then classes, in byte order (the order
// encoding/json gives a map's keys), appended without building maps.
type allocationsAnswer []engine.Allocation

// MarshalJSON appends the object; a provider, or a class of one, given
// twice (the map would keep the last) takes the map.
func (a allocationsAnswer) MarshalJSON() ([]byte, error) {
	order := make([]int, len(a))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(i, j int) int { return strings.Compare(a[i].ProviderUUID, a[j].ProviderUUID) })
	b := make([]byte, 0, 32+96*len(a))
	b = append(b, '{')
	var classArr [8]engine.ResourceAmount
	for n, i := range order {
		if n > 0 {
			if a[order[n-1]].ProviderUUID == a[i].ProviderUUID {
				return a.asMap()
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
					return a.asMap()
				}
				b = append(b, ',')
			}
			b = appendString(b, r.Class)
			b = append(b, ':')
			b = strconv.AppendInt(b, r.Amount, 10)
		}
		b = append(b, "}}"...)
	}
	return append(b, '}'), nil
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
