package load

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

// WideParams describes the wide tree: one root with Children children, each
// with one unit of one custom class, and the query with Groups granular
// groups each asking one unit. Placement enumerates every combination of
// providers across groups (Children^Groups with policy none) before it
// filters, which is what makes it run for minutes.
type WideParams struct {
	Children    int    // default 21
	Groups      int    // default 8
	Classes     int    // child i has CUSTOM_WIDE_<i % Classes>; group g asks CUSTOM_WIDE_<g % Classes>; default 1
	GroupPolicy string // "none" (default) or "isolate"
	Limit       int    // limit parameter; 0 for none
}

func (p *WideParams) defaults() error {
	if p.Children <= 0 {
		p.Children = 21
	}
	if p.Groups <= 0 {
		p.Groups = 8
	}
	if p.Classes <= 0 {
		p.Classes = 1
	}
	if p.GroupPolicy == "" {
		p.GroupPolicy = "none"
	}
	if p.GroupPolicy != "none" && p.GroupPolicy != "isolate" {
		return fmt.Errorf("wide: --group-policy must be none or isolate")
	}
	return nil
}

// WideClass is the custom resource class number k of the wide tree.
func WideClass(k int) string { return "CUSTOM_WIDE_" + strconv.Itoa(k) }

// wideRoot names the root of the wide tree with the given shape, so that
// trees of different shapes can live side by side.
func wideRoot(p WideParams) string {
	return fmt.Sprintf("bench-wide-c%d-k%d", p.Children, p.Classes)
}

// SeedWide creates the wide tree (idempotently) and returns its root UUID.
func SeedWide(ctx context.Context, c *Client, p WideParams) (string, *SeedResult, error) {
	if err := p.defaults(); err != nil {
		return "", nil, err
	}
	start, sent := time.Now(), c.Requests()
	for k := 0; k < p.Classes; k++ {
		if err := c.EnsureResourceClass(ctx, WideClass(k)); err != nil {
			return "", nil, err
		}
	}
	rootName := wideRoot(p)
	root := NameUUID(rootName)
	if _, err := c.EnsureProvider(ctx, ProviderBody{UUID: root, Name: rootName}); err != nil {
		return "", nil, err
	}
	err := forEach(ctx, p.Children, 8, func(ctx context.Context, i int) error {
		name := fmt.Sprintf("%s-%02d", rootName, i)
		rp := NameUUID(name)
		gen, err := c.EnsureProvider(ctx, ProviderBody{UUID: rp, Name: name, ParentUUID: root})
		if err != nil {
			return err
		}
		_, err = c.PutInventories(ctx, rp, gen, map[string]InventoryBody{WideClass(i % p.Classes): NewInventory(1, 0, 1)})
		return err
	}, nil)
	if err != nil {
		return "", nil, fmt.Errorf("wide: %w", err)
	}
	return root, newSeedResult(p.Children+1, c.Requests()-sent, time.Since(start)), nil
}

// WideQuery is the granular query over the wide tree.
func WideQuery(p WideParams) Query {
	_ = p.defaults()
	q := CandidatesQuery{GroupPolicy: p.GroupPolicy, Limit: p.Limit}
	for g := 0; g < p.Groups; g++ {
		q.Groups = append(q.Groups, Group{Suffix: strconv.Itoa(g + 1), Resources: []Amount{{WideClass(g % p.Classes), 1}}})
	}
	return Query{Name: fmt.Sprintf("wide-%dx%d-%s", p.Children, p.Groups, p.GroupPolicy), Path: q.Path()}
}
