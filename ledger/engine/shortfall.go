package engine

import (
	"context"
	"fmt"
	"strings"
)

// Shortfall says, root provider by root provider, why a request found no
// candidate there: the "capacity" step of a claim's explanation. It is
// computed only when asked (a claim that placed nothing, a dry run), so
// the candidate search itself pays nothing for it.
type Shortfall struct {
	// Roots is how many root providers the request was matched against:
	// every root of the snapshot.
	Roots int
	// Fit is how many of them have at least one candidate.
	Fit int
	// Reasons counts the other roots by the first reason found, such as
	// "lacked MEMORY_MB 16384" or "lacked required traits or aggregates".
	Reasons map[string]int
}

// Reasons of a Shortfall besides "lacked <CLASS> <amount>".
const (
	ShortEvacuated      = "evacuated"
	ShortRootRequired   = "lacked root_required traits"
	ShortInTree         = "outside in_tree"
	ShortTraitsOrAggs   = "lacked required traits or aggregates"
	ShortNoCombination  = "no combination of providers fits"
	ShortNoMatchAtAll   = "no provider matches some request group"
	ShortSearchBudget   = "search budget exhausted"
	shortGroupForSuffix = "lacked group %s (%s)"
)

// Shortfall explains p, root by root, as Candidates would see it.
func (s *Snapshot) Shortfall(ctx context.Context, p *CandidatesParams) (*Shortfall, error) {
	out := &Shortfall{Roots: len(s.idx.roots), Reasons: map[string]int{}}
	e, err := s.newSearch(ctx, p)
	if err != nil {
		return nil, err
	}
	if e == nil {
		if out.Roots > 0 {
			out.Reasons[ShortNoMatchAtAll] = out.Roots
		}
		return out, nil
	}
	n := len(e.slots)
	g := &gen{opts: make([][]int32, n), pos: make([]int, n)}
	var buf []int32
	for i, a := range s.idx.roots {
		if i&255 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		var reason string
		if reason, buf = e.rootReason(a, g, buf); reason == "" {
			out.Fit++
			continue
		}
		out.Reasons[reason]++
	}
	return out, nil
}

// rootReason says why anchor a has no candidate in e.snap ("": it has
// one), with g and buf as working memory (buf is returned for reuse). A
// search that ran out of steps says so and is reset for the next root.
func (e *search) rootReason(a int32, g *gen, buf []int32) (string, []int32) {
	s := e.snap
	switch {
	case e.evacuatedTree(a):
		return ShortEvacuated, buf
	case !e.anchorOK(a):
		return ShortRootRequired, buf
	case e.sharedTree >= 0 && a != e.sharedTree:
		return ShortInTree, buf
	case !e.inAnchorSets(a):
		return ShortTraitsOrAggs, buf
	}
	for si := range e.slots {
		sl := &e.slots[si]
		if buf = e.options(sl, a, buf[:0]); len(buf) == 0 {
			return s.lack(e, sl), buf
		}
	}
	var ok bool
	buf, ok = e.open(g, a, buf[:0])
	clear(e.seen)
	switch {
	case ok && e.next(g):
		return "", buf
	case e.stopped:
		e.stopped, e.steps = false, 0
		return ShortSearchBudget, buf
	}
	return ShortNoCombination, buf
}

// lack words why slot sl has no provider under a root.
func (s *Snapshot) lack(e *search, sl *slot) string {
	parts := make([]string, len(sl.res))
	for i, r := range sl.res {
		parts[i] = fmt.Sprintf("%s %d", s.names.className[r.class], r.amount)
	}
	if !sl.granular {
		return "lacked " + strings.Join(parts, ", ")
	}
	if len(parts) == 0 {
		parts = append(parts, "traits or aggregates")
	}
	return fmt.Sprintf(shortGroupForSuffix, e.suffixes[sl.group], strings.Join(parts, ", "))
}
