package console

import (
	"cmp"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/berthd/berth/authz"
	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/claims/quota"
	"github.com/berthd/berth/httpapi/placement"
	"github.com/berthd/berth/httpapi/wire"
	"github.com/berthd/berth/internal/uuid"
	"github.com/berthd/berth/ledger/audit"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/quotas"
	"github.com/berthd/berth/ledger/resources"
)

// The console's pages (see console.go), each guarded by the rule of the
// API route whose data it shows.
func (k *Console) routes() []consolePage {
	return []consolePage{
		{Path, "placement:resource_providers:list", k.overview},
		{Path + "/hosts", "placement:resource_providers:list", k.hosts},
		{Path + "/providers/:uuid", "placement:resource_providers:show", k.provider},
		{Path + "/fit", "berth:capacity:show", k.fit},
		{Path + "/fragmentation", "placement:resource_providers:list", k.fragmentation},
		{Path + "/refusals", "berth:claims:show", k.refusals},
		{Path + "/gangs", "berth:claims:show", k.gangs},
		{Path + "/preemptions", "berth:preemptions:list", k.preemptions},
		{Path + "/policies", "berth:scheduling_policies:list", k.policies},
		{Path + "/projects", "placement:usages", k.projects},
		{Path + "/audit", "berth:audit:read", k.audit},
	}
}

// Page sizes: defaults and bounds.
const (
	consoleGroups     = 20
	consoleMaxGroups  = 500
	consoleHosts      = 1000
	consoleMaxHosts   = 5000
	consoleRows       = 100
	consoleMaxRows    = 1000
	consoleFitRoots   = 50
	consoleRefusalAge = time.Hour
)

// overview: the totals per class, the roots' utilisation histogram and
// the usage per aggregate or trait.
func (k *Console) overview(c echo.Context, _ authz.Credentials) error {
	snap, err := k.cfg.Store.Snapshots.Snapshot(c.Request().Context(), nil, nil)
	if err != nil {
		return err
	}
	kind, by := engine.ByAggregate, "aggregate"
	switch c.QueryParam("by") {
	case "", "aggregate":
	case "trait":
		kind, by = engine.ByTrait, "trait"
	default:
		return wire.BadRequest("Invalid by %q: want aggregate or trait.", c.QueryParam("by"))
	}
	offset, limit, err := pageParams(c, consoleGroups, consoleMaxGroups)
	if err != nil {
		return err
	}
	u := snap.Utilisation()
	groups, total := snap.UtilisationBy(kind, offset, limit)
	return k.render(c, http.StatusOK, "overview", "Overview", map[string]any{
		"U": u, "Bars": histogramBars(u.Histogram), "Groups": groups, "By": by, "Pager": pager{offset, limit, total},
	})
}

// histBar is one bar of the overview's histogram, in the SVG's units.
type histBar struct {
	X, Y, H, TX int
	F           float64
	N           int
	Label, Tick string
}

// histogramBars lays the histogram out: 22 units a bar, 50 high for the
// largest count.
func histogramBars(h [engine.Buckets]int) []histBar {
	most := max(slices.Max(h[:]), 1)
	out := make([]histBar, len(h))
	for i, n := range h {
		height := 50 * n / most
		if n > 0 {
			height = max(height, 1)
		}
		step := 100 / engine.Buckets
		out[i] = histBar{X: 22*i + 1, Y: 50 - height, H: height, TX: 22*i + 2, N: n,
			F:     (float64(i) + 0.5) / engine.Buckets,
			Label: fmt.Sprintf("%d–%d%%", i*step, (i+1)*step), Tick: fmt.Sprintf("%d%%", i*step)}
	}
	return out
}

// hosts: the heat map, one page of roots, and the provider search.
func (k *Console) hosts(c echo.Context, _ authz.Credentials) error {
	snap, err := k.cfg.Store.Snapshots.Snapshot(c.Request().Context(), nil, nil)
	if err != nil {
		return err
	}
	if q := strings.TrimSpace(c.QueryParam("q")); q != "" {
		f := engine.ProviderFilter{Name: q}
		if uuid.Valid(q) {
			f = engine.ProviderFilter{UUID: q}
		}
		found, err := snap.ProvidersMatching(&f)
		if err != nil {
			return err
		}
		if len(found) == 0 {
			return &wire.Error{Status: http.StatusNotFound, Msg: fmt.Sprintf("No resource provider named %q.", shown(q))}
		}
		return c.Redirect(http.StatusSeeOther, Path+"/providers/"+found[0].UUID)
	}
	offset, limit, err := pageParams(c, consoleHosts, consoleMaxHosts)
	if err != nil {
		return err
	}
	roots, total := snap.RootUses(offset, limit)
	return k.render(c, http.StatusOK, "hosts", "Hosts", map[string]any{"Roots": roots, "Pager": pager{offset, limit, total}})
}

// consoleInventory is one inventory row of the provider page.
type consoleInventory struct {
	engine.InventoryUsage
	Fraction float64
}

// provider: one provider with its tree, inventories and usage, traits,
// aggregates, reported state and the consumers holding allocations.
func (k *Console) provider(c echo.Context, _ authz.Credentials) error {
	ctx := c.Request().Context()
	id := c.Param("uuid")
	if !uuid.Valid(id) {
		return wire.BadRequest("Malformed resource provider uuid: %s", shown(id))
	}
	p, err := k.cfg.Store.Providers.ProviderGet(ctx, id)
	if err != nil {
		return err
	}
	tree, err := k.cfg.Store.Snapshots.ProvidersMatching(ctx, engine.ProviderFilter{InTree: p.UUID})
	if err != nil {
		return err
	}
	invs, err := k.cfg.Store.Providers.InventoryList(ctx, id)
	if err != nil {
		return err
	}
	usages, err := k.cfg.Store.Providers.ProviderUsagesGet(ctx, id)
	if err != nil {
		return err
	}
	rows := make([]consoleInventory, len(invs.Inventories))
	for i, inv := range invs.Inventories {
		r := consoleInventory{InventoryUsage: engine.InventoryUsage{Inventory: inv, Capacity: int64(inv.Capacity()),
			Used: usages.Usages[inv.ResourceClass]}}
		if r.Capacity > 0 {
			r.Fraction = float64(r.Used) / float64(r.Capacity)
		}
		rows[i] = r
	}
	_, traits, err := k.cfg.Store.Providers.ProviderTraits(ctx, id)
	if err != nil {
		return err
	}
	_, aggs, err := k.cfg.Store.Providers.ProviderAggregates(ctx, id)
	if err != nil {
		return err
	}
	data := map[string]any{"P": p, "Tree": tree, "Inventories": rows, "Traits": traits, "Aggregates": aggs}
	if st, err := k.cfg.Store.Cloud.ProviderStateGet(ctx, id); err == nil {
		data["State"] = st
	}
	_, allocs, err := k.cfg.Store.Allocations.AllocationsByProvider(ctx, id)
	if err != nil {
		return err
	}
	data["Consumers"] = consumersOf(allocs)
	return k.render(c, http.StatusOK, "provider", "Provider "+shown(p.Name), data)
}

// consoleConsumer is one consumer's allocations on a provider.
type consoleConsumer struct {
	UUID       string
	Generation int64
	Resources  []engine.ResourceAmount
}

// consumersOf groups a provider's allocations by consumer, in uuid order.
func consumersOf(allocs []resources.AllocationRecord) []consoleConsumer {
	by := map[string]*consoleConsumer{}
	var out []consoleConsumer
	for _, a := range allocs {
		cc := by[a.ConsumerUUID]
		if cc == nil {
			out = append(out, consoleConsumer{UUID: a.ConsumerUUID, Generation: a.ConsumerGeneration})
			cc = &out[len(out)-1]
			by[a.ConsumerUUID] = cc
		}
		cc.Resources = append(cc.Resources, engine.ResourceAmount{Class: a.ResourceClass, Amount: a.Used})
	}
	slices.SortFunc(out, func(a, b consoleConsumer) int { return strings.Compare(a.UUID, b.UUID) })
	return out
}

// fit: "where does X fit", the flavor form answered by GET /capacity's
// computation, its query read by the same parser (and refused in its
// words).
func (k *Console) fit(c echo.Context, _ authz.Credentials) error {
	form := map[string]string{}
	q := url.Values{}
	for _, name := range []string{"resources", "required", "member_of", "max"} {
		v := strings.TrimSpace(c.QueryParam(name))
		form[name] = v
		if v != "" {
			q.Set(name, v)
		}
	}
	data := map[string]any{"Form": form}
	if form["resources"] == "" {
		return k.render(c, http.StatusOK, "fit", "Where does it fit", data)
	}
	q.Set("limit", strconv.Itoa(consoleFitRoots))
	p, limit, err := k.cfg.Capacity.Params(q, q.Encode())
	if err == nil {
		var capa *engine.Capacity
		if capa, err = k.cfg.Store.Snapshots.Capacity(c.Request().Context(), p); err == nil {
			data["Capacity"] = capa
			data["Roots"] = capa.Roots[:min(limit, len(capa.Roots))]
		}
	}
	if err != nil {
		e := k.cfg.ErrorOf(c, placement.CandidatesError(err))
		if e.Status >= 500 {
			return err
		}
		data["Refusal"] = e
		return k.render(c, e.Status, "fit", "Where does it fit", data)
	}
	return k.render(c, http.StatusOK, "fit", "Where does it fit", data)
}

// defaultFlavors are the fragmentation page's flavors when the form
// names none: Nova's classic m1 sizes.
const defaultFlavors = `m1.small VCPU:1,MEMORY_MB:2048,DISK_GB:20
m1.medium VCPU:2,MEMORY_MB:4096,DISK_GB:40
m1.large VCPU:4,MEMORY_MB:8192,DISK_GB:80
m1.xlarge VCPU:8,MEMORY_MB:16384,DISK_GB:160`

// fragmentation: the hosts with free capacity where none of the common
// flavors fits.
func (k *Console) fragmentation(c echo.Context, _ authz.Credentials) error {
	text := c.QueryParam("flavors")
	if strings.TrimSpace(text) == "" {
		text = defaultFlavors
	}
	flavors, err := parseFlavors(text)
	if err != nil {
		return err
	}
	offset, limit, err := pageParams(c, consoleRows, consoleMaxRows)
	if err != nil {
		return err
	}
	snap, err := k.cfg.Store.Snapshots.Snapshot(c.Request().Context(), nil, nil)
	if err != nil {
		return err
	}
	frags, total := snap.Fragmentation(flavors, offset, limit)
	return k.render(c, http.StatusOK, "fragmentation", "Fragmentation", map[string]any{
		"Flavors": flavors, "Text": text, "Fragments": frags, "Pager": pager{offset, limit, total},
	})
}

// parseFlavors reads one flavor a line: a name, then its resources as in
// GET /allocation_candidates' resources parameter (CLASS:AMOUNT,...).
func parseFlavors(text string) ([]engine.Flavor, error) {
	var out []engine.Flavor
	for i, line := range strings.Split(text, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		if len(fields) != 2 {
			return nil, wire.BadRequest("Invalid flavor on line %d: want a name and CLASS:AMOUNT,... (as resources=), not %q.", i+1, shown(line))
		}
		f := engine.Flavor{Name: fields[0]}
		for _, part := range strings.Split(fields[1], ",") {
			class, amount, ok := strings.Cut(part, ":")
			n, err := strconv.ParseInt(amount, 10, 64)
			if !ok || err != nil || n < 1 || class == "" {
				return nil, wire.BadRequest("Invalid flavor %s: %q is not CLASS:AMOUNT with a positive amount.", shown(f.Name), shown(part))
			}
			f.Resources = append(f.Resources, engine.ResourceAmount{Class: class, Amount: n})
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		return nil, wire.BadRequest("No flavor given.")
	}
	return out, nil
}

// consoleGangs is how many gangs the gangs page lists.
const consoleGangs = 100

// gangs: the latest gangs (docs/gangs.md), with how many of each one's
// members still hold allocations.
func (k *Console) gangs(c echo.Context, _ authz.Credentials) error {
	gs, err := k.cfg.Store.Claims.Gangs(c.Request().Context(), consoleGangs)
	if err != nil {
		return err
	}
	return k.render(c, http.StatusOK, "gangs", "Gangs", map[string]any{"Gangs": gs, "Limit": consoleGangs})
}

// refusalGroup is the refusals that share a cause.
type refusalGroup struct {
	Cause    string
	Count    int
	Refusals []claims.Refusal
}

// refusals: this replica's recent claims that placed nothing, grouped
// by cause (the step that removed the most, with its most frequent
// reason), the largest group first.
func (k *Console) refusals(c echo.Context, _ authz.Credentials) error {
	age := consoleRefusalAge
	if v := c.QueryParam("since"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return wire.BadRequest("Invalid since %q: want a duration such as 15m or 24h.", v)
		}
		age = d
	}
	list := k.recentRefusals(time.Now().Add(-age))
	by := map[string]*refusalGroup{}
	var groups []*refusalGroup
	for _, r := range list {
		cause := refusalCause(r.Err)
		g := by[cause]
		if g == nil {
			g = &refusalGroup{Cause: cause}
			by[cause] = g
			groups = append(groups, g)
		}
		g.Count++
		if len(g.Refusals) < 20 {
			g.Refusals = append(g.Refusals, r)
		}
	}
	slices.SortStableFunc(groups, func(a, b *refusalGroup) int { return cmp.Compare(b.Count, a.Count) })
	return k.render(c, http.StatusOK, "refusals", "Recent refusals", map[string]any{
		"Groups": groups, "Total": len(list), "Since": age.String(), "Kept": claims.RecentRefusalsSize,
	})
}

// consolePreemptions bounds the preemptions page.
const consolePreemptions = 500

// preemptions: the consumers claims preempted (docs/preemption.md) in the
// last day (or since=DURATION), newest first, up to consolePreemptions.
func (k *Console) preemptions(c echo.Context, _ authz.Credentials) error {
	age := 24 * time.Hour
	if v := c.QueryParam("since"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return wire.BadRequest("Invalid since %q: want a duration such as 15m or 24h.", v)
		}
		age = d
	}
	list, more, err := k.cfg.Store.Preemptions.Preemptions(c.Request().Context(),
		claimrecords.PreemptionsParams{Since: time.Now().Add(-age), Limit: consolePreemptions})
	if err != nil {
		return err
	}
	slices.Reverse(list)
	return k.render(c, http.StatusOK, "preemptions", "Preemptions", map[string]any{
		"Preemptions": list, "More": more, "Since": age.String(), "Max": consolePreemptions,
	})
}

// refusalCause words what refused a claim most: a scriptlet's refusal,
// lost races, or the step that removed the most candidates with its
// most frequent reason.
func refusalCause(np *claims.NotPlacedError) string {
	switch np.Reason {
	case claims.Refused:
		return "scriptlet refused: " + np.Refusal
	case claims.ConflictsExhausted:
		return "every attempt lost to concurrent claims"
	}
	best := -1
	for i, st := range np.Steps {
		if st.Removed > 0 && (best < 0 || st.Removed > np.Steps[best].Removed) {
			best = i
		}
	}
	if best < 0 {
		return "no candidates"
	}
	st := np.Steps[best]
	reason, n := "", -1
	for r, c := range st.Reasons {
		if c > n || (c == n && r < reason) {
			reason, n = r, c
		}
	}
	if reason == "" {
		return st.Unit
	}
	return st.Unit + ": " + reason
}

// policies: the stored scheduling policies and scriptlets, and the
// scriptlet test form.
func (k *Console) policies(c echo.Context, _ authz.Credentials) error {
	return k.policiesPage(c, http.StatusOK, nil)
}

// policiesPage renders the policies page, with a scriptlet test's result
// when there is one.
func (k *Console) policiesPage(c echo.Context, status int, test map[string]any) error {
	ctx := c.Request().Context()
	ps, err := k.cfg.Store.Catalogue.SchedulingPolicies(ctx)
	if err != nil {
		return err
	}
	scs, err := k.cfg.Store.Catalogue.Scriptlets(ctx)
	if err != nil {
		return err
	}
	// The shadows' counts as the replicas last flushed them (every few
	// seconds); GET .../shadow flushes this replica's first.
	shadows, err := k.cfg.Store.Catalogue.Shadows(ctx)
	if err != nil {
		return err
	}
	return k.render(c, status, "policies", "Policies and scriptlets", map[string]any{
		"Policies": ps, "Scriptlets": scs, "Test": test, "Example": scriptletTestExample,
		"Shadows": shadows,
	})
}

// scriptletTestExample prefills the scriptlet test's request.
const scriptletTestExample = `{"resources": {"VCPU": 1, "MEMORY_MB": 512}}`

// scriptletTest runs POST /scriptlets/{name}/test's dry run (read-only)
// from the form: the scriptlet's decision, ranking and log lines, or the
// API's refusal.
func (k *Console) scriptletTest(c echo.Context, _ authz.Credentials) error {
	name, body := c.FormValue("scriptlet"), c.FormValue("request")
	test := map[string]any{"Name": name, "Request": body}
	ex, err := k.runScriptletTest(c, name, body)
	if err != nil {
		e := k.cfg.ErrorOf(c, placement.CandidatesError(err))
		if e.Status >= 500 {
			return err
		}
		test["Refusal"] = e
		return k.policiesPage(c, e.Status, test)
	}
	test["Result"] = ex
	return k.policiesPage(c, http.StatusOK, test)
}

// runScriptletTest is scriptletTest's dry run: the body is read as the
// API reads it.
func (k *Console) runScriptletTest(c echo.Context, name, body string) (*claims.Explanation, error) {
	p, err := k.cfg.Claims.SampleParams([]byte(body))
	if err != nil {
		return nil, err
	}
	ctx := c.Request().Context()
	if p.PolicyOverride, err = k.cfg.Catalog.PolicyWithScriptlet(ctx, p.Policy, name); err != nil {
		return nil, err
	}
	return k.cfg.Claims.Claimer.Explain(ctx, p)
}

// projects: usage per project, page by page, with each project's
// effective limits (GET /limits/{project_id}'s): its own, else the
// registered ones. A project whose limits cannot be read (Keystone out
// and never read) says so in its row.
func (k *Console) projects(c echo.Context, _ authz.Credentials) error {
	_, limit, err := pageParams(c, consoleRows, consoleMaxRows)
	if err != nil {
		return err
	}
	after := c.QueryParam("after")
	list, err := k.cfg.Store.Quotas.ProjectUsages(c.Request().Context(), quotas.ProjectUsagesParams{After: after, Limit: limit})
	if err != nil {
		return err
	}
	next := ""
	if len(list) == limit {
		next = list[len(list)-1].ProjectID
	}
	limits := make(map[string][]consoleLimit, len(list))
	unread := map[string]string{}
	for _, p := range list {
		own, registered, err := k.cfg.Limits.Limits(c.Request().Context(), p.ProjectID)
		if err != nil {
			unread[p.ProjectID] = k.cfg.ErrorOf(c, err).Msg
			continue
		}
		eff := quota.Effective(own, registered)
		for _, r := range slices.Sorted(maps.Keys(eff)) {
			used := p.Usages[r]
			if r == quotas.ResourceConsumers {
				used = p.ConsumerCount
			}
			_, isOwn := own[r]
			limits[p.ProjectID] = append(limits[p.ProjectID], consoleLimit{Resource: r, Used: used, Limit: eff[r], Default: !isOwn})
		}
	}
	return k.render(c, http.StatusOK, "projects", "Projects", map[string]any{
		"Projects": list, "After": after, "Next": next, "Limit": limit,
		"Limits": limits, "Unread": unread,
	})
}

// consoleLimit is one limit of a project as the projects page shows it.
type consoleLimit struct {
	Resource    string
	Used, Limit int64
	// Default is set for a registered limit (the project has none of its
	// own for the resource).
	Default bool
}

// audit: one page of the allocation audit's findings.
func (k *Console) audit(c echo.Context, _ authz.Credentials) error {
	p := audit.AuditParams{Marker: c.QueryParam("marker"), Thresholds: k.cfg.AuditThresholds, Limit: 50}
	if v := c.QueryParam("kind"); v != "" {
		p.Kinds = []string{v}
	}
	page, err := k.cfg.Store.Auditor.Audit(c.Request().Context(), p)
	if err != nil {
		return err
	}
	return k.render(c, http.StatusOK, "audit", "Audit", map[string]any{
		"Page": page, "Kind": c.QueryParam("kind"), "Kinds": audit.AuditKinds(),
	})
}
