// Package placementdiff compares what two Placement API endpoints answer
// (OpenStack Placement and Berth after an import, or Berth and a
// Placement after an export), read by read, the way clients read:
// providers, their inventories, usages, traits, aggregates and
// allocations, resource classes, traits, allocations per consumer and
// usages per project and user. It only sends GET requests, through
// the public client (httpapi/client).
package placementdiff

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/berthd/berth/httpapi/client"
)

// Endpoint is one side of a comparison.
type Endpoint struct {
	Name  string // "placement", "berth": how differences name the side
	URL   string // a URL, or "host:port" for http://
	Token string // X-Auth-Token
}

// Params configures Compare.
type Params struct {
	Old, New Endpoint
	// Version is the microversion every request asks for; "" means 1.39,
	// the newest both Placement 8.0.0 and Berth speak.
	Version string
	// Workers is how many requests are in flight per side; 0 means 4.
	// Against uwsgi, keep it at most the number of its processes.
	Workers int
	Timeout time.Duration // per request; 0 means 60s
	// Sample, when positive, reads the per-provider answers (and the
	// consumers and owners found there) of that many providers picked at
	// random instead of all of them; the provider, class and trait lists
	// are still compared whole. For a quick check of a large cloud.
	Sample int
}

// Result is the outcome of a comparison.
type Result struct {
	Reads       int      // requests compared (each sent to both sides)
	Differences []string // one line each, sorted by request
}

// Compare reads everything from both sides and lists every difference.
// An error means a side could not be read at all (unreachable, or its
// provider list failed); answers that differ, statuses included, are
// differences, not errors.
func Compare(ctx context.Context, p Params) (*Result, error) {
	if p.Version == "" {
		p.Version = "1.39"
	}
	if p.Workers <= 0 {
		p.Workers = 4
	}
	if p.Timeout <= 0 {
		p.Timeout = 60 * time.Second
	}
	// As many kept-alive connections as workers: a uwsgi process serving
	// a kept-alive connection waits on it, so a client that opens more
	// connections than the server has processes stalls.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = p.Workers
	defer tr.CloseIdleConnections()
	hc := &http.Client{Timeout: p.Timeout, Transport: tr}
	c := &comparer{p: p,
		old: client.New(client.Config{URL: p.Old.URL, Token: p.Old.Token, Microversion: p.Version, HTTP: hc}),
		new: client.New(client.Config{URL: p.New.URL, Token: p.New.Token, Microversion: p.Version, HTTP: hc}),
	}
	var res Result
	// The lists first: they name what is compared next.
	roots := []string{"/resource_providers", "/resource_classes", "/traits"}
	first := c.compareAll(ctx, roots)
	if first[0].err != nil {
		return nil, first[0].err
	}
	for _, r := range first {
		res.Reads++
		res.Differences = append(res.Differences, r.diffs...)
	}
	providers := union(uuidsOf(first[0].old, "resource_providers"), uuidsOf(first[0].new, "resource_providers"))
	if p.Sample > 0 && p.Sample < len(providers) {
		rand.Shuffle(len(providers), func(i, j int) { providers[i], providers[j] = providers[j], providers[i] })
		providers = providers[:p.Sample]
		sort.Strings(providers)
	}
	var paths []string
	for _, u := range providers {
		base := "/resource_providers/" + u
		paths = append(paths, base, base+"/inventories", base+"/usages", base+"/traits", base+"/aggregates", base+"/allocations")
	}
	second := c.compareAll(ctx, paths)
	consumers := map[string]bool{}
	for _, r := range second {
		res.Reads++
		res.Differences = append(res.Differences, r.diffs...)
		if strings.HasSuffix(r.path, "/allocations") {
			for _, side := range []any{r.old, r.new} {
				if m, ok := dig(side, "allocations").(map[string]any); ok {
					for cu := range m {
						consumers[cu] = true
					}
				}
			}
		}
	}
	paths = paths[:0]
	for _, cu := range sortedKeys(consumers) {
		paths = append(paths, "/allocations/"+cu)
	}
	third := c.compareAll(ctx, paths)
	owners := map[string]bool{} // "project" and "project\x00user"
	for _, r := range third {
		res.Reads++
		res.Differences = append(res.Differences, r.diffs...)
		for _, side := range []any{r.old, r.new} {
			proj, _ := dig(side, "project_id").(string)
			usr, _ := dig(side, "user_id").(string)
			if proj != "" {
				owners[proj] = true
				if usr != "" {
					owners[proj+"\x00"+usr] = true
				}
			}
		}
	}
	paths = paths[:0]
	for _, o := range sortedKeys(owners) {
		proj, usr, both := strings.Cut(o, "\x00")
		q := url.Values{"project_id": {proj}}
		if both {
			q.Set("user_id", usr)
		}
		paths = append(paths, "/usages?"+q.Encode())
	}
	for _, r := range c.compareAll(ctx, paths) {
		res.Reads++
		res.Differences = append(res.Differences, r.diffs...)
	}
	return &res, nil
}

type comparer struct {
	p        Params
	old, new *client.Client // p.Old's and p.New's
}

type compared struct {
	path     string
	old, new any
	diffs    []string
	err      error // a side could not be reached
}

// compareAll reads each path from both sides, p.Workers at a time, and
// returns the results in the order of paths.
func (c *comparer) compareAll(ctx context.Context, paths []string) []compared {
	out := make([]compared, len(paths))
	next := make(chan int)
	var wg sync.WaitGroup
	for range c.p.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				out[i] = c.compare(ctx, paths[i])
			}
		}()
	}
	for i := range paths {
		next <- i
	}
	close(next)
	wg.Wait()
	return out
}

func (c *comparer) compare(ctx context.Context, path string) compared {
	r := compared{path: path}
	os, ob, err := c.get(ctx, c.old, c.p.Old, path)
	if err != nil {
		r.err = err
		r.diffs = []string{fmt.Sprintf("GET %s: %v", path, err)}
		return r
	}
	ns, nb, err := c.get(ctx, c.new, c.p.New, path)
	if err != nil {
		r.err = err
		r.diffs = []string{fmt.Sprintf("GET %s: %v", path, err)}
		return r
	}
	if os != ns {
		r.diffs = append(r.diffs, fmt.Sprintf("GET %s: status %s %d, %s %d", path, c.p.Old.Name, os, c.p.New.Name, ns))
	}
	if os/100 != 2 || ns/100 != 2 {
		// Error bodies carry request ids and wording; the status is the answer.
		return r
	}
	if err := json.Unmarshal(ob, &r.old); err != nil {
		r.diffs = append(r.diffs, fmt.Sprintf("GET %s: %s answered no JSON: %v", path, c.p.Old.Name, err))
		return r
	}
	if err := json.Unmarshal(nb, &r.new); err != nil {
		r.diffs = append(r.diffs, fmt.Sprintf("GET %s: %s answered no JSON: %v", path, c.p.New.Name, err))
		return r
	}
	var d []string
	diff("$", normalize(r.old), normalize(r.new), func(where string, a, b any) {
		d = append(d, fmt.Sprintf("GET %s: %s: %s %s, %s %s", path, where, c.p.Old.Name, show(a), c.p.New.Name, show(b)))
	})
	r.diffs = append(r.diffs, d...)
	return r
}

// get reads path from one side: the status and the body without the
// white space around it.
func (c *comparer) get(ctx context.Context, api *client.Client, e Endpoint, path string) (int, []byte, error) {
	r, err := api.Do(ctx, http.MethodGet, path, nil, "")
	if err != nil {
		return 0, nil, fmt.Errorf("%s: %v", e.Name, err)
	}
	return r.Status, bytes.TrimSpace(r.Body), nil
}

// normalize orders what the API leaves unordered: lists of strings
// (traits, aggregates) are sorted, lists of objects are sorted by their
// uuid or name.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
		sort.SliceStable(x, func(i, j int) bool { return sortKey(x[i]) < sortKey(x[j]) })
		return x
	}
	return v
}

func sortKey(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		for _, k := range []string{"uuid", "name", "rel"} {
			if s, ok := x[k].(string); ok {
				return s
			}
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// diff reports every place a and b differ, by JSON path.
func diff(where string, a, b any, report func(where string, a, b any)) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		for _, k := range sortedKeys(keys) {
			av, ain := am[k]
			bv, bin := bm[k]
			switch {
			case !ain:
				report(where+"."+k, missing{}, bv)
			case !bin:
				report(where+"."+k, av, missing{})
			default:
				diff(where+"."+k, av, bv, report)
			}
		}
		return
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		for i := range al {
			diff(fmt.Sprintf("%s[%s]", where, label(al[i], i)), al[i], bl[i], report)
		}
		return
	}
	if !reflect.DeepEqual(a, b) {
		report(where, a, b)
	}
}

func label(v any, i int) string {
	if m, ok := v.(map[string]any); ok {
		for _, k := range []string{"uuid", "name", "rel"} {
			if s, ok := m[k].(string); ok {
				return s
			}
		}
	}
	return fmt.Sprint(i)
}

type missing struct{}

func show(v any) string {
	if _, ok := v.(missing); ok {
		return "(absent)"
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

func dig(v any, key string) any {
	if m, ok := v.(map[string]any); ok {
		return m[key]
	}
	return nil
}

func uuidsOf(v any, key string) []string {
	var out []string
	if l, ok := dig(v, key).([]any); ok {
		for _, e := range l {
			if s, ok := dig(e, "uuid").(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

func union(a, b []string) []string {
	m := map[string]bool{}
	for _, s := range a {
		m[s] = true
	}
	for _, s := range b {
		m[s] = true
	}
	return sortedKeys(m)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
