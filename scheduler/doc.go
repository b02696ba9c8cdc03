// Package scheduler decides where a claim goes. It owns the policy units
// (filters and weighers, each with a name, a kind, a description and a
// typed parameter list, in one Registry), scheduling policies built from
// them (NewPolicy, Policy.Rank), affinity placement keys (the
// affinity_keys weigher) and the balancer (Balance). It is pure: it never
// touches the database and works only on the Candidates and ProviderViews
// it is handed, plus what it asks of Request.Data (CloudData), which the
// caller backs with the ledger.
//
// Policy.Rank runs as Nomad's feasibility stack does: filters cheapest
// first (by declared cost; pin and exclude, then capacity, then usage
// ratios, then traits and aggregates, then enriched fields, then group
// lookups, then Starlark), each over the candidates the previous ones
// kept, counting how many it removed and why; then every weigher's raw
// values are normalised to [0, 1] across the survivors and multiplied by
// its factor; then the scriptlet's instance_placement sees the ranked
// candidates and may choose one (set_target) or refuse the claim.
// Policy.RankGang ranks a gang's placements, one per domain that holds
// every member, by the mean of its weighers over each placement's hosts,
// then the scriptlet's gang_placement (gang.go).
//
// A policy that reads nothing of a candidate but what it takes and the
// inventories it takes it from (Policy.Direct: the capacity filter, the
// spread and pack weighers, no scriptlet) ranks an engine answer on the
// snapshot's records instead (Policy.RankDirect, score.go), with the
// same functions its units run on views, in the same order, and hands
// its caller the first few candidates only, whose views the caller
// builds (all of them, or those it reads): a claim's sample.
//
// Starlark scriptlets (the "starlark:<name>" units and instance_placement)
// run in package scheduler/scriptlet, which imports this one: a policy
// reaches them only through the Scriptlets interface it is built with
// (scriptlets.go), so this package holds no Starlark.
//
// The files: request.go (the request, and CloudData, what units may ask
// of the cloud), candidate.go (the candidates and the views of their
// providers), plugin.go (the unit interfaces and the
// Registry), policy.go (a policy and its Rank, in stages), score.go
// (what a candidate takes, and RankDirect on the engine's records),
// gang.go (a gang's placements ranked whole), status.go (a
// unit's answer and Rank's errors), scriptlets.go (the boundary with the
// scriptlet runtime), telemetry.go (Rank's spans), one file per unit
// (capacity.go, pin.go, exclude.go, traits.go, aggregates.go,
// max_usage_ratio.go, max_consumers.go, state_freshness.go, affinity.go,
// resource_weighers.go, consumer_weighers.go, load.go, affinity_keys.go,
// prefer_traits.go) and balance.go. See docs/scheduling.md.
package scheduler
