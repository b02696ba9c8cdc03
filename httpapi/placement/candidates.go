package placement

import (
	"context"
	"io"
	"math"
	"math/big"
	"strconv"
	"sync"
	"time"
	"weak"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/telemetry/instrument"
	"github.com/berthd/berth/ledger/engine"
)

// Candidates serves GET /allocation_candidates.
type Candidates struct {
	Store CandidateStore
	Query CandidateQuery
	// Cache keeps answers for queries asked again of an unchanged
	// cloud; nil: every answer is computed.
	Cache *AnswerCache
}

// CandidateStore is what the allocation candidates route asks of the
// ledger (a *snapshot.Cache): the fresh snapshot a query's candidates
// are computed on.
type CandidateStore interface {
	CandidatesSnapshot(ctx context.Context, p *engine.CandidatesParams) (*engine.Snapshot, error)
}

// List serves GET /allocation_candidates: from the snapshot every read
// takes, the answer h.Cache kept for the query if there is one, else
// the candidates computed (and kept, when they are deterministic).
func (h *Candidates) List(c echo.Context) error {
	v := wire.VersionOf(c)
	if err := wire.ValidateQuery(c, CandidatesSchema(v)); err != nil {
		return err
	}
	q := ParseOrderedQuery(c.Request().URL.RawQuery)
	params, err := h.Query.FromQuery(q, v)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	snap, err := h.Store.CandidatesSnapshot(ctx, &params)
	if err != nil {
		return CandidatesError(err)
	}
	if h.Cache == nil || params.Randomize || params.Sample {
		return h.compute(c, snap, &params, v, nil)
	}
	k := answerKey{queryKey: queryKey{query: c.Request().URL.RawQuery, version: v, max: params.Max}, snap: weak.Make(snap)}
	a, f, lead := h.Cache.take(k)
	if a == nil && !lead {
		select {
		case <-f.done:
			a = f.kept
		case <-ctx.Done():
		}
	}
	instrument.CandidatesCacheLookup(ctx, a != nil)
	switch {
	case a != nil:
		instrument.Candidates(ctx, "allocation_candidates", a.requests)
		wire.SetCacheHeaders(c, time.Now())
		return wire.Stream(c, func(w io.Writer) error {
			_, err := w.Write(a.body)
			return err
		})
	case !lead:
		return h.compute(c, snap, &params, v, nil)
	}
	defer h.Cache.land(ctx, k, f, nil)
	return h.compute(c, snap, &params, v, func(body []byte, requests int) {
		h.Cache.land(ctx, k, f, &answer{key: k, body: body, requests: requests})
	})
}

// compute answers p from snap. With keep set, an answer that fits
// h.Cache's largest is encoded whole, handed to keep (unless p's search
// was cut short by the request's end) and then written; a larger one is
// streamed as without keep.
func (h *Candidates) compute(c echo.Context, snap *engine.Snapshot, p *engine.CandidatesParams, v wire.Version,
	keep func(body []byte, requests int)) error {
	ctx := c.Request().Context()
	cands, err := snap.Candidates(ctx, p)
	if err != nil {
		return CandidatesError(err)
	}
	complete := ctx.Err() == nil
	instrument.Candidates(ctx, "allocation_candidates", len(cands.Requests))
	wire.SetCacheHeaders(c, time.Now())
	buf := jsonBufs.Get().(*[]byte)
	defer jsonBufs.Put(buf)
	return wire.Stream(c, func(w io.Writer) error {
		if keep == nil {
			var err error
			*buf, err = writeCandidates(w, (*buf)[:0], cands, p.Groups, v)
			return err
		}
		kw := &keeper{w: w, max: h.Cache.entryMax}
		var err error
		if *buf, err = writeCandidates(kw, (*buf)[:0], cands, p.Groups, v); err != nil {
			return err
		}
		body := kw.body()
		if body == nil {
			return nil
		}
		if complete {
			keep(body, len(cands.Requests))
		}
		_, err = w.Write(body)
		return err
	})
}

// writeCandidates writes appendCandidates' answer to w, streaming: the
// body goes out in pieces of about wire.StreamFlushBytes, through buf,
// instead of being held whole. It returns buf for reuse.
func writeCandidates(w io.Writer, buf []byte, c *engine.Candidates, groups []engine.RequestGroup, v wire.Version) ([]byte, error) {
	var err error
	spill := func(b []byte) []byte {
		if err == nil {
			_, err = w.Write(b)
		}
		return b[:0]
	}
	buf = encodeCandidates(buf, c, groups, v, spill)
	buf = spill(buf)
	return buf, err
}

// jsonBufs recycles response buffers: a candidates response for thousands
// of providers runs to megabytes.
var jsonBufs = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// appendCandidates writes the response body for microversion v directly as
// JSON: allocation_requests as a list of lists before 1.12 and of dicts
// after, with mappings from 1.34; provider_summaries with traits from 1.17,
// every inventory (not just the requested classes) from 1.27 and the tree
// from 1.29.
func appendCandidates(b []byte, c *engine.Candidates, groups []engine.RequestGroup, v wire.Version) []byte {
	return encodeCandidates(b, c, groups, v, nil)
}

// encodeCandidates is appendCandidates; between elements, when spill is
// not nil and b holds wire.StreamFlushBytes or more, it hands b to spill and
// goes on with what spill returns.
func encodeCandidates(b []byte, c *engine.Candidates, groups []engine.RequestGroup, v wire.Version, spill func([]byte) []byte) []byte {
	b = append(b, `{"allocation_requests": [`...)
	for i := range c.Requests {
		if spill != nil && len(b) >= wire.StreamFlushBytes {
			b = spill(b)
		}
		if i > 0 {
			b = append(b, ", "...)
		}
		if v.AtLeast(12) {
			b = appendRequestDict(b, c, i, v)
		} else {
			b = appendRequestList(b, c, i)
		}
	}
	b = append(b, `], "provider_summaries": {`...)
	requested := requestedClasses(groups, v)
	for i := range c.Summaries {
		if spill != nil && len(b) >= wire.StreamFlushBytes {
			b = spill(b)
		}
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendSummary(b, c, i, requested, v)
	}
	return append(b, "}}"...)
}

// appendRequestDict writes c's allocation request i as a dict (1.12
// on): allocations by provider uuid, and from 1.34 the mappings.
func appendRequestDict(b []byte, c *engine.Candidates, i int, v wire.Version) []byte {
	ar := &c.Requests[i]
	b = append(b, `{"allocations": {`...)
	for j, a := range ar.Allocations {
		if j > 0 {
			b = append(b, ", "...)
		}
		b = wire.AppendGoString(b, a.ProviderUUID)
		b = append(b, `: {"resources": `...)
		b = appendAmounts(b, a.Resources)
		b = append(b, '}')
	}
	b = append(b, '}')
	if v.AtLeast(34) {
		b = append(b, `, "mappings": {`...)
		for j, m := range ar.Mappings {
			if j > 0 {
				b = append(b, ", "...)
			}
			b = wire.AppendGoString(b, m.Suffix)
			b = append(b, ": ["...)
			for k, u := range m.ProviderUUIDs {
				if k > 0 {
					b = append(b, ", "...)
				}
				b = wire.AppendGoString(b, u)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendRequestList writes c's allocation request i as a list of
// allocations (before 1.12).
func appendRequestList(b []byte, c *engine.Candidates, i int) []byte {
	ar := &c.Requests[i]
	b = append(b, `{"allocations": [`...)
	for j, a := range ar.Allocations {
		if j > 0 {
			b = append(b, ", "...)
		}
		b = append(b, `{"resource_provider": {"uuid": `...)
		b = wire.AppendGoString(b, a.ProviderUUID)
		b = append(b, `}, "resources": `...)
		b = appendAmounts(b, a.Resources)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// requestedClasses are the classes groups request, which are all a
// summary lists before 1.27; nil (every class) from 1.27.
func requestedClasses(groups []engine.RequestGroup, v wire.Version) map[string]bool {
	if v.AtLeast(27) {
		return nil
	}
	requested := map[string]bool{}
	for _, g := range groups {
		for _, r := range g.Resources {
			requested[r.Class] = true
		}
	}
	return requested
}

// appendSummary writes c's provider summary i, its key included: the
// resources (only those in requested unless it is nil), from 1.17 the
// traits and from 1.29 the tree.
func appendSummary(b []byte, c *engine.Candidates, i int, requested map[string]bool, v wire.Version) []byte {
	ps := &c.Summaries[i]
	b = wire.AppendGoString(b, ps.UUID)
	b = append(b, `: {"resources": {`...)
	n := 0
	for _, r := range ps.Resources {
		if requested != nil && !requested[r.ResourceClass] {
			continue
		}
		if n > 0 {
			b = append(b, ", "...)
		}
		n++
		b = wire.AppendGoString(b, r.ResourceClass)
		b = append(b, `: {"capacity": `...)
		b = appendCapacity(b, r.Total, r.Reserved, r.AllocationRatio)
		b = append(b, `, "used": `...)
		b = strconv.AppendInt(b, r.Used, 10)
		b = append(b, '}')
	}
	b = append(b, '}')
	if v.AtLeast(17) {
		b = append(b, `, "traits": [`...)
		for k, t := range ps.Traits {
			if k > 0 {
				b = append(b, ", "...)
			}
			b = wire.AppendGoString(b, t)
		}
		b = append(b, ']')
	}
	if v.AtLeast(29) {
		b = append(b, `, "parent_provider_uuid": `...)
		if ps.ParentUUID == "" {
			b = append(b, "null"...)
		} else {
			b = wire.AppendGoString(b, ps.ParentUUID)
		}
		b = append(b, `, "root_provider_uuid": `...)
		b = wire.AppendGoString(b, ps.RootUUID)
	}
	return append(b, '}')
}

// appendCapacity writes a provider summary's capacity as Placement
// computes it, int((total - reserved) * allocation_ratio): the float
// product truncated, in full however large (a Python int has no bounds;
// ratios go up to 3.4e38).
func appendCapacity(b []byte, total, reserved int64, ratio float64) []byte {
	c := math.Trunc(float64(total-reserved) * ratio)
	if math.Abs(c) < 1<<62 {
		return strconv.AppendInt(b, int64(c), 10)
	}
	i, _ := new(big.Float).SetFloat64(c).Int(nil)
	return i.Append(b, 10)
}

// appendAmounts writes {"CLASS": n, ...}.
func appendAmounts(b []byte, rs []engine.ResourceAmount) []byte {
	b = append(b, '{')
	for i, r := range rs {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = wire.AppendGoString(b, r.Class)
		b = append(b, ": "...)
		b = strconv.AppendInt(b, r.Amount, 10)
	}
	return append(b, '}')
}
