package claims

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/scheduler"
)

// Idempotent claims.
//
// A client that sent POST /claims, reschedule or move and did not learn
// the outcome (the answer was lost, berthd answered 503 because the
// database failed over during the COMMIT, berthd itself was killed)
// sends the same request again. Without help the retry would meet its
// own first write: a conflict (the consumer exists), a "no valid host"
// (its own claim took the room) or, for a reschedule, a second move.
//
// So every write records, in its own transaction (claimrecords.ClaimRequest),
// the request's fingerprint and the answer. A retry is recognised when:
//
//   - a claim fails (consumer generation conflict, nothing placed) and
//     the consumer's recorded claim has the same fingerprint and the
//     consumer still holds what that claim wrote: the retry gets the
//     original answer (200, the same allocations). A different request
//     for a consumer so placed is a MismatchError (409
//     berth.claim_mismatch) saying which fields differ;
//   - a reschedule or move arrives whose fingerprint is that of the
//     consumer's last one, and the consumer still holds what it wrote:
//     the step already happened and is answered as done, without a
//     second move. (A different reschedule or move is a new step; so is
//     a reschedule naming neither failed_provider nor
//     consumer_generation that comes more than rescheduleRetryWindow
//     after the last: its body means "it failed where it is now".)
//
// A write whose outcome Berth itself did not learn (the connection broke
// during COMMIT) is settled before answering: Berth reads the record
// back, after reconnecting, for up to settleTimeout (bounded by the
// request's deadline), with a read that the synchronous standby
// confirms (claimrecords.Records.ClaimRequestConfirmed). Found: the answer is
// the original result. Not found, or the database still out of reach:
// 503 with Retry-After, and the client's retry converges as above.
// Before answering with a recorded result, Berth always confirms it this
// way, so it never answers 200 for a write a failover could still lose.

// Operations recorded for retries.
const (
	OpClaim      = "claim"
	OpReschedule = "reschedule"
	OpMove       = "move"
	// OpMoveEnd is a move's confirm or revert (move.go, moveEndRecord).
	OpMoveEnd = "move_end"
)

// rescheduleRetryWindow bounds how old the recorded reschedule may be for
// a reschedule that names neither failed_provider nor
// consumer_generation to count as its retry. Such a body ("it failed
// where it is now") means a new step each time the consumer fails again;
// only its own retry comes within moments of it.
const rescheduleRetryWindow = 2 * time.Minute

// settleTimeout bounds how long a request whose write had an unknown
// outcome waits for the database to come back to learn it. A failover
// of the Patroni cluster in the tests takes 2 to 4 seconds.
const settleTimeout = 10 * time.Second

// settlePoll is the pause between attempts to read the outcome.
const settlePoll = 200 * time.Millisecond

// MismatchError is a claim for a consumer that an earlier claim, with a
// different request, placed: not a retry of that claim (409
// berth.claim_mismatch over HTTP). Nothing was written.
type MismatchError struct {
	ConsumerUUID string
	// Fields are the request's fields that differ, by their names in
	// the request body.
	Fields []string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("Consumer %s was already placed by a claim with a different request (differs in: %s); "+
		"a retry must repeat the request exactly, and a new claim needs a new consumer_uuid or its consumer_generation.",
		e.ConsumerUUID, strings.Join(e.Fields, ", "))
}

// retryKey is what identifies a request among its retries (its operation
// and fingerprint), carried in Params to the write, which records it.
type retryKey struct {
	op          string
	fingerprint []byte // fp's bytes
	fp          [sha256.Size]byte
	request     []byte // JSON object of the fields
	// window, when set, is how recent a record must be to make the
	// request its retry (rescheduleRetryWindow).
	window time.Duration
}

// retryDoc is the request a retryKey fingerprints, as a JSON object whose
// members are in byte order of their names (the order json.Marshal gives a
// map's), so that fingerprints stay those of requests recorded by earlier
// versions, which marshalled a map: keep the fields sorted by JSON name.
// The optional members appear only when given.
type retryDoc struct {
	ConsumerGeneration *int64                  `json:"consumer_generation"`
	ConsumerType       string                  `json:"consumer_type"`
	Exclude            []string                `json:"exclude_providers"`
	FailedProvider     *string                 `json:"failed_provider,omitempty"`
	Instance           *map[string]any         `json:"instance,omitempty"`
	Keys               []scheduler.KeyRequest  `json:"keys"`
	LeaseSeconds       *int64                  `json:"lease_seconds,omitempty"`
	MigrationUUID      *string                 `json:"migration_uuid,omitempty"`
	Name               string                  `json:"name"`
	Policy             string                  `json:"policy"`
	Preemptible        *bool                   `json:"preemptible,omitempty"`
	Priority           *int64                  `json:"priority,omitempty"`
	ProjectID          string                  `json:"project_id"`
	Properties         map[string]any          `json:"properties"`
	Reason             string                  `json:"reason"`
	Resources          engine.CandidatesParams `json:"resources"`
	Target             string                  `json:"target"`
	UserID             string                  `json:"user_id"`
}

// newRetryKey fingerprints p's request for op; failedProvider and migration
// are the reschedule's and the move's own fields.
func newRetryKey(op string, p *Params, failedProvider, migration string) *retryKey {
	e := retryEncoders.Get().(*retryEncoder)
	defer e.release()
	e.doc = retryDoc{
		ConsumerGeneration: p.ConsumerGeneration,
		ConsumerType:       p.ConsumerType,
		Exclude:            p.Exclude,
		Keys:               p.Keys,
		Name:               p.Name,
		Policy:             p.Policy,
		ProjectID:          p.ProjectID,
		Properties:         p.Properties,
		Reason:             p.Reason,
		Resources:          p.Candidates,
		Target:             p.Target,
		UserID:             p.UserID,
	}
	doc := &e.doc
	// Only what the request asks for: not the server's limits.
	g := &doc.Resources
	g.Limit, g.Max, g.MaxSteps = 0, 0, 0
	g.Randomize, g.Sample, g.VersionsOnly = false, false, false
	// The optional members point into e, not into p: p stays where its
	// caller has it.
	if p.Instance != nil {
		// Only when given: the fingerprints of requests without one
		// stay what they were.
		e.instance = p.Instance
		doc.Instance = &e.instance
	}
	if p.Priority != 0 || p.Preemptible {
		// Only when set: the fingerprints of requests without them stay
		// what they were before preemption existed.
		e.priority, e.preemptible = p.Priority, p.Preemptible
		doc.Priority, doc.Preemptible = &e.priority, &e.preemptible
	}
	if op == OpReschedule {
		e.failedProvider = failedProvider
		doc.FailedProvider = &e.failedProvider
	}
	if op == OpMove {
		e.migration = canonicalOr(migration)
		doc.MigrationUUID = &e.migration
	}
	// Only when asked for: the fingerprints of requests without a lease
	// stay what they were before leases existed.
	doc.LeaseSeconds = p.LeaseSeconds
	// op, a zero byte and the fields as json.Marshal writes them: the
	// fingerprint's input, hashed in one piece.
	e.b = append(append(e.b[:0], op...), 0)
	var ok bool
	if e.b, ok = doc.appendTo(e.b); !ok {
		// Properties that do not marshal are refused later by the
		// write itself; a request that cannot be recorded is simply
		// not recognised as a retry.
		return nil
	}
	k := &retryKey{op: op, fp: sha256.Sum256(e.b), request: bytes.Clone(e.b[len(op)+1:])}
	k.fingerprint = k.fp[:]
	return k
}

// retryEncoder encodes retry keys' requests (doc) into its own buffer.
type retryEncoder struct {
	doc retryDoc
	// What doc's optional members point to.
	instance       map[string]any
	priority       int64
	preemptible    bool
	failedProvider string
	migration      string
	b              []byte
}

// retryEncoders are the retry encoders not in use.
var retryEncoders = sync.Pool{New: func() any { return new(retryEncoder) }}

// release returns e to retryEncoders, unless its buffer grew past what
// a request's fields usually take.
func (e *retryEncoder) release() {
	// Nothing of the request is held.
	e.doc, e.instance, e.failedProvider, e.migration = retryDoc{}, nil, "", ""
	if cap(e.b) <= maxPooledAnswer {
		retryEncoders.Put(e)
	}
}

// appendTo appends d as json.Marshal writes it (HTML characters
// escaped, members in the struct's order, optional ones left out when
// nil); ok is false where json.Marshal fails (a property or key value
// that JSON cannot carry). Properties and Instance, of any shape, are
// marshalled as they are.
func (d *retryDoc) appendTo(b []byte) (_ []byte, ok bool) {
	b = append(b, `{"consumer_generation":`...)
	b = appendInt64Ptr(b, d.ConsumerGeneration)
	b = append(b, `,"consumer_type":`...)
	b = appendHTMLString(b, d.ConsumerType)
	b = append(b, `,"exclude_providers":`...)
	b = appendHTMLStrings(b, d.Exclude)
	if d.FailedProvider != nil {
		b = append(b, `,"failed_provider":`...)
		b = appendHTMLString(b, *d.FailedProvider)
	}
	if d.Instance != nil {
		b = append(b, `,"instance":`...)
		if b, ok = appendMarshalled(b, *d.Instance); !ok {
			return b, false
		}
	}
	b = append(b, `,"keys":`...)
	if b, ok = appendKeyRequests(b, d.Keys); !ok {
		return b, false
	}
	if d.LeaseSeconds != nil {
		b = append(b, `,"lease_seconds":`...)
		b = strconv.AppendInt(b, *d.LeaseSeconds, 10)
	}
	if d.MigrationUUID != nil {
		b = append(b, `,"migration_uuid":`...)
		b = appendHTMLString(b, *d.MigrationUUID)
	}
	b = append(b, `,"name":`...)
	b = appendHTMLString(b, d.Name)
	b = append(b, `,"policy":`...)
	b = appendHTMLString(b, d.Policy)
	if d.Preemptible != nil {
		b = append(b, `,"preemptible":`...)
		b = strconv.AppendBool(b, *d.Preemptible)
	}
	if d.Priority != nil {
		b = append(b, `,"priority":`...)
		b = strconv.AppendInt(b, *d.Priority, 10)
	}
	b = append(b, `,"project_id":`...)
	b = appendHTMLString(b, d.ProjectID)
	b = append(b, `,"properties":`...)
	if d.Properties == nil {
		b = append(b, "null"...)
	} else if b, ok = appendMarshalled(b, d.Properties); !ok {
		return b, false
	}
	b = append(b, `,"reason":`...)
	b = appendHTMLString(b, d.Reason)
	b = append(b, `,"resources":`...)
	b = appendCandidatesParams(b, &d.Resources)
	b = append(b, `,"target":`...)
	b = appendHTMLString(b, d.Target)
	b = append(b, `,"user_id":`...)
	b = appendHTMLString(b, d.UserID)
	return append(b, '}'), true
}

// appendCandidatesParams appends p as json.Marshal writes it: its
// fields by their Go names, in order, but those tagged "-".
func appendCandidatesParams(b []byte, p *engine.CandidatesParams) []byte {
	b = append(b, `{"Groups":`...)
	if p.Groups == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range p.Groups {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendRequestGroup(b, &p.Groups[i])
		}
		b = append(b, ']')
	}
	b = append(b, `,"Isolate":`...)
	b = strconv.AppendBool(b, p.Isolate)
	b = append(b, `,"RootRequired":`...)
	b = appendHTMLStrings(b, p.RootRequired)
	b = append(b, `,"RootForbidden":`...)
	b = appendHTMLStrings(b, p.RootForbidden)
	b = append(b, `,"SameSubtrees":`...)
	b = appendHTMLStringLists(b, p.SameSubtrees)
	b = append(b, `,"Limit":`...)
	b = strconv.AppendInt(b, int64(p.Limit), 10)
	b = append(b, `,"Max":`...)
	b = strconv.AppendInt(b, int64(p.Max), 10)
	b = append(b, `,"MaxSteps":`...)
	b = strconv.AppendInt(b, int64(p.MaxSteps), 10)
	b = append(b, `,"NestedAware":`...)
	b = strconv.AppendBool(b, p.NestedAware)
	b = append(b, `,"Randomize":`...)
	b = strconv.AppendBool(b, p.Randomize)
	b = append(b, `,"Sample":`...)
	b = strconv.AppendBool(b, p.Sample)
	b = append(b, `,"VersionsOnly":`...)
	b = strconv.AppendBool(b, p.VersionsOnly)
	return append(b, '}')
}

func appendRequestGroup(b []byte, g *engine.RequestGroup) []byte {
	b = append(b, `{"Suffix":`...)
	b = appendHTMLString(b, g.Suffix)
	b = append(b, `,"Resources":`...)
	if g.Resources == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, r := range g.Resources {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"Class":`...)
			b = appendHTMLString(b, r.Class)
			b = append(b, `,"Amount":`...)
			b = strconv.AppendInt(b, r.Amount, 10)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"RequiredTraits":`...)
	b = appendHTMLStringLists(b, g.RequiredTraits)
	b = append(b, `,"ForbiddenTraits":`...)
	b = appendHTMLStrings(b, g.ForbiddenTraits)
	b = append(b, `,"MemberOf":`...)
	b = appendHTMLStringLists(b, g.MemberOf)
	b = append(b, `,"ForbiddenAggregates":`...)
	b = appendHTMLStrings(b, g.ForbiddenAggregates)
	b = append(b, `,"InTree":`...)
	b = appendHTMLString(b, g.InTree)
	return append(b, '}')
}

func appendKeyRequests(b []byte, keys []scheduler.KeyRequest) (_ []byte, ok bool) {
	if keys == nil {
		return append(b, "null"...), true
	}
	b = append(b, '[')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = appendHTMLString(b, k.Name)
		b = append(b, `,"value":`...)
		if b, ok = appendFloat(b, k.Value); !ok {
			return b, false
		}
		b = append(b, `,"weight":`...)
		if b, ok = appendFloat(b, k.Weight); !ok {
			return b, false
		}
		b = append(b, `,"system":`...)
		b = strconv.AppendBool(b, k.System)
		b = append(b, '}')
	}
	return append(b, ']'), true
}

func appendInt64Ptr(b []byte, v *int64) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	return strconv.AppendInt(b, *v, 10)
}

// appendHTMLStringLists appends lists as json.Marshal writes a
// [][]string: null for nil.
func appendHTMLStringLists(b []byte, lists [][]string) []byte {
	return appendList(b, lists, appendHTMLStrings)
}

// appendHTMLStrings appends ss as json.Marshal writes a slice: null for
// nil.
func appendHTMLStrings(b []byte, ss []string) []byte {
	return appendList(b, ss, appendHTMLString)
}

// appendHTMLString appends s as json.Marshal writes a string, HTML
// characters escaped: printable ASCII but quotes, backslashes and <, >
// and & as it is, anything else through json.Marshal.
func appendHTMLString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			raw, _ := json.Marshal(s) // a string always marshals
			return append(b, raw...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendMarshalled appends json.Marshal's v; ok is false where it fails.
func appendMarshalled(b []byte, v any) (_ []byte, ok bool) {
	raw, err := json.Marshal(v)
	if err != nil {
		return b, false
	}
	return append(b, raw...), true
}

// fingerprint identifies the request raw (its fields as JSON) for op.
// It is the SHA-256 of op, a zero byte and raw (newRetryKey hashes them
// as it writes them).
func fingerprint(op string, raw []byte) []byte {
	h := sha256.New()
	h.Write([]byte(op))
	h.Write([]byte{0})
	h.Write(raw)
	return h.Sum(make([]byte, 0, sha256.Size))
}

// record is what the write of p's result res records, nil if p is not
// recorded.
func (o *retryKey) record(p *Params, res *Result) *claimrecords.ClaimRequest {
	if o == nil {
		return nil
	}
	// The answer, encoded once: recorded, and answered (Result.Answer).
	raw, err := encodeAnswer(res)
	if err == nil {
		res.answer = raw
	} else {
		// A score that JSON cannot carry (NaN, an infinity): the
		// answer is kept without scores.
		c := *res
		c.Score, c.Alternates = 0, nil
		if raw, err = encodeAnswer(&c); err != nil {
			return nil
		}
	}
	return &claimrecords.ClaimRequest{ConsumerUUID: canonicalOr(p.ConsumerUUID), Op: o.op, Fingerprint: o.fingerprint,
		Request: o.request, Result: raw, Generation: res.ConsumerGeneration}
}

// recent reports whether rec is recent enough to answer o (window).
func (o *retryKey) recent(rec *claimrecords.ClaimRequest) bool {
	return o.window == 0 || time.Since(rec.CreatedAt) < o.window
}

// diff names the fields of o's request that differ from recorded.
func (o *retryKey) diff(recorded []byte) []string {
	var a, b map[string]json.RawMessage
	if json.Unmarshal(o.request, &a) != nil || json.Unmarshal(recorded, &b) != nil {
		return []string{"request"}
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(a)) {
		if !bytes.Equal(a[k], b[k]) {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		out = []string{"request"}
	}
	return out
}

// Reschedule claims again for a consumer that failed to start on
// failedProvider (see reschedule), safe to retry: a retry of the
// consumer's last reschedule that already happened is answered as done.
func (c *Claimer) Reschedule(ctx context.Context, p Params, failedProvider string) (*Result, error) {
	if err := c.checkLease(p.LeaseSeconds); err != nil {
		return nil, err
	}
	if p.DryRun {
		return c.reschedule(ctx, p, failedProvider)
	}
	o := newRetryKey(OpReschedule, &p, failedProvider, "")
	if o != nil && failedProvider == "" && p.ConsumerGeneration == nil {
		o.window = rescheduleRetryWindow
	}
	return c.idempotentStep(ctx, o, &p, func() (*Result, error) { return c.reschedule(ctx, p, failedProvider) })
}

// Move moves a consumer as Nova migrates it (see move), safe to retry: a
// retry of a move that already happened (same migration_uuid) is
// answered as done.
func (c *Claimer) Move(ctx context.Context, p Params, migrationUUID string) (*Result, error) {
	if err := c.checkLease(p.LeaseSeconds); err != nil {
		return nil, err
	}
	if p.DryRun {
		return c.move(ctx, p, migrationUUID)
	}
	o := newRetryKey(OpMove, &p, "", migrationUUID)
	return c.idempotentStep(ctx, o, &p, func() (*Result, error) { return c.move(ctx, p, migrationUUID) })
}

// idempotentStep answers a retried step that already happened from its
// record, or runs it (recording it) and settles an unknown outcome.
func (c *Claimer) idempotentStep(ctx context.Context, o *retryKey, p *Params, run func() (*Result, error)) (*Result, error) {
	if o == nil {
		return run()
	}
	rec, err := c.store.Claims.ClaimRequestGet(ctx, p.ConsumerUUID, o.op)
	if err != nil {
		return nil, err
	}
	if rec != nil && bytes.Equal(rec.Fingerprint, o.fingerprint) && o.recent(rec) {
		held, err := c.stillHeld(ctx, rec)
		if err != nil {
			return nil, err
		}
		if held {
			return c.replay(ctx, o, p.ConsumerUUID)
		}
	}
	p.retryKey = o // run's closure holds p by reference through its caller
	res, err := run()
	if err == nil {
		return res, nil
	}
	return c.settle(ctx, o, p.ConsumerUUID, err)
}

// settle turns err, the failure of o's write, into the original answer
// when the write was in fact done (by this request, or by the one it
// retries), or returns it. See the comment at the top of this file.
func (c *Claimer) settle(ctx context.Context, o *retryKey, consumer string, err error) (*Result, error) {
	var np *NotPlacedError
	switch {
	case unavailable(err) && !ledger.RolledBack(err):
		return settleUnknown(ctx, c, consumer, o.op, err, func(ctx context.Context) (*Result, error) {
			return c.replay(ctx, o, consumer)
		})
	case unavailable(err):
		return nil, err // refused by the server: nothing was written
	case errors.As(err, &np) || generationConflict(err):
	default:
		return nil, err
	}
	rec, gerr := c.store.Claims.ClaimRequestGet(ctx, consumer, o.op)
	if gerr != nil || rec == nil || !o.recent(rec) {
		return nil, err
	}
	held, herr := c.stillHeld(ctx, rec)
	if herr != nil || !held {
		return nil, err
	}
	if !bytes.Equal(rec.Fingerprint, o.fingerprint) {
		fields := o.diff(rec.Request)
		if o.op != OpClaim || slices.Contains(fields, "consumer_generation") {
			// Not the same step asked again: its own answer stands.
			return nil, err
		}
		return nil, &MismatchError{ConsumerUUID: canonicalOr(consumer), Fields: fields}
	}
	res, rerr := c.replay(ctx, o, consumer)
	if rerr != nil && !unavailable(rerr) {
		return nil, err
	}
	return res, rerr
}

// settleUnknown learns whether the write of op for consumer, whose
// connection broke (err), was committed: it reads the record back with
// replay, waiting for the database to come back, until settleTimeout or
// shortly before ctx's deadline.
func settleUnknown[T any](ctx context.Context, c *Claimer, consumer, op string, err error,
	replay func(context.Context) (*T, error)) (*T, error) {
	deadline := time.Now().Add(settleTimeout)
	if d, ok := ctx.Deadline(); ok && d.Add(-time.Second).Before(deadline) {
		deadline = d.Add(-time.Second)
	}
	sctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for {
		res, rerr := replay(sctx)
		switch {
		case rerr == nil:
			c.log.InfoContext(ctx, "claims: a write whose outcome was unknown had committed; answering its result",
				"consumer", consumer, "op", op, "error", err)
			return res, nil
		case errors.Is(rerr, errNotRecorded):
			// Not committed (or not yet visible): the client's retry
			// converges.
			return nil, err
		case !unavailable(rerr):
			return nil, err
		}
		select {
		case <-sctx.Done():
			return nil, err
		case <-time.After(settlePoll):
		}
	}
}

// errNotRecorded: the database, asked with confirmation, holds no record
// of the request.
var errNotRecorded = errors.New("claims: request not recorded")

// replay returns the recorded answer to o, read with confirmation from
// the synchronous standby; errNotRecorded if there is none with o's
// fingerprint; an ErrUnavailable error if the database cannot say.
func (c *Claimer) replay(ctx context.Context, o *retryKey, consumer string) (*Result, error) {
	rec, err := c.store.Claims.ClaimRequestConfirmed(ctx, consumer, o.op)
	if err != nil {
		return nil, err
	}
	if rec == nil || !bytes.Equal(rec.Fingerprint, o.fingerprint) {
		return nil, errNotRecorded
	}
	res, err := resultOfRecord(rec.Result)
	if err != nil {
		return nil, fmt.Errorf("claims: recorded result of %s: %w", consumer, err)
	}
	return res, nil
}

// stillHeld reports whether rec's consumer holds what rec's write left:
// the same generation and allocations. A consumer deleted or changed
// since makes the record history, not an answer.
func (c *Claimer) stillHeld(ctx context.Context, rec *claimrecords.ClaimRequest) (bool, error) {
	res, err := resultOfRecord(rec.Result)
	if err != nil {
		return false, nil
	}
	return c.holds(ctx, rec.ConsumerUUID, rec.Generation, res.Allocations)
}

// holds reports whether consumer is at generation and holds allocs.
func (c *Claimer) holds(ctx context.Context, consumer string, generation int64, allocs []engine.Allocation) (bool, error) {
	cur, err := c.store.Allocations.AllocationsByConsumer(ctx, consumer)
	if err != nil {
		return false, err
	}
	if cur.Consumer == nil || cur.Consumer.Generation != generation {
		return false, nil
	}
	return sameResources(byProvider(cur.Allocations), allocs), nil
}

// sameResources compares two sets of allocations, whatever their order.
func sameResources(a, b []engine.Allocation) bool {
	flat := func(prs []engine.Allocation) map[string]int64 {
		m := map[string]int64{}
		for _, pr := range prs {
			for _, r := range pr.Resources {
				m[strings.ToLower(pr.ProviderUUID)+" "+r.Class] += r.Amount
			}
		}
		return m
	}
	return maps.Equal(flat(a), flat(b))
}

// unavailable reports whether err says the database was out of reach
// (the outcome of a write may then be unknown).
func unavailable(err error) bool { return errors.Is(err, fault.ErrUnavailable) }

// generationConflict reports whether err is a consumer generation
// conflict: what a retried claim meets when its first write committed.
func generationConflict(err error) bool {
	return fault.HasCode(err, fault.ErrConflict, fault.CodeConcurrentUpdate)
}
