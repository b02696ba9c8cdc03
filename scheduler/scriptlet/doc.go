// Package scriptlet is the scheduler's Starlark runtime: it compiles
// scriptlets (Compile, and Check, what storing one checks), runs them in
// a sandbox under step, memory and time budgets (Limits), and shows them
// Berth's object model and LXD's and Incus's, so that their scriptlets
// run unchanged. A Runtime is the scheduler.Scriptlets a policy is built
// with: it builds the "starlark:<name>" filters and weighers and runs the
// policy's instance_placement in each Rank (gang_placement in each
// RankGang of a gang's placements). It imports package
// scheduler, for the request, candidates and ranking it reads and
// writes, and nothing of the database.
//
// Scriptlets are looked up through a Resolver at every Rank, so a
// changed scriptlet is used by the next claim. Compiled programs are
// rewritten (rewrite.go) so that every operator and call whose work
// grows with its operands is charged to the budgets before it runs
// (sandbox.go); a scriptlet that fails refuses the claim unless
// Limits.OnError says to ignore it.
//
// The files: program.go (a compiled scriptlet, the Resolver), limits.go,
// errors.go, runtime.go (the Runtime: the units and one Rank's start),
// units.go (the starlark: filters and weighers), run.go (one Rank's
// scriptlet work: calls, refusals, the log, instance_placement),
// gang.go (gang_placement, one RankGang's scriptlet),
// builtins.go (the functions a scriptlet may call), check.go, metrics.go,
// and the object model: object.go (objects read as o.x or o["x"]),
// request.go (the request with LXD's instance placement fields),
// resources.go (get_instance_resources computed as LXD does),
// member.go and mapping.go (members, their inventories, usage and keys),
// lxd.go (members, member state and resources as LXD's api types). See
// docs/scheduling.md and docs/security.md.
package scriptlet
