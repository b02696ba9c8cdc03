// Package scheduler decides where a claim goes. It owns the policy units
// (filters and weighers, each with a name, a kind, a description and a
// typed parameter list, in one Registry), scheduling policies built from
// them (NewPolicy, Policy.Rank), Starlark scriptlets (CompileScriptlet;
// instance_placement and scriptlet units), affinity placement keys (the
// affinity_keys weigher) and the balancer (Balance). It is pure: it never
// touches the database and works only on the Candidates and Providers it
// is handed, plus what it asks of Request.Data (CloudData), which the
// caller backs with the ledger.
//
// Policy.Rank runs as Nomad's feasibility stack does: filters cheapest
// first (by declared cost; pin and exclude, then capacity, then usage
// ratios, then traits and aggregates, then enriched fields, then group
// lookups, then Starlark), each over the candidates the previous ones kept, counting
// how many it removed and why; then every weigher's raw values are
// normalised to [0, 1] across the survivors and multiplied by its factor;
// then the scriptlet's instance_placement sees the ranked candidates and
// may choose one (set_target) or refuse the claim. Scriptlets are looked
// up through a ScriptletResolver at every Rank, so a changed scriptlet is
// used by the next claim; each run has a step budget and a memory budget,
// and the Rank's Starlark work a deadline. Scriptlets run in a sandbox
// (scriptlet_rewrite.go, scriptlet_sandbox.go): compiled programs are
// rewritten so that every operator and call whose work grows with its
// operands is charged to those budgets before it runs; a scriptlet that
// fails refuses the claim unless ScriptletLimits.OnError says ignore;
// CheckScriptlet is the check of a scriptlet about to be stored.
//
// Scriptlets see LXD's and Incus's object model beside Berth's
// (scriptlet_object.go: objects read as o.x or o["x"];
// scriptlet_request.go: the request with LXD's instance placement
// fields; scriptlet_resources.go: get_instance_resources computed as LXD
// does; scriptlet_lxd.go: members, member state and resources as LXD's
// api types), so that their scriptlets run unchanged. See
// docs/scheduling.md and docs/security.md.
package scheduler
