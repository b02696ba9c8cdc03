// Package scheduler ranks allocation candidates. It owns the plugin
// interfaces (Filter, Weigher), their registry, the policy that chains
// them, and the operator's Starlark scriptlet. It is pure: it never
// touches the database and works only on the Candidates it is handed,
// which package claims builds from a ledger answer.
//
// A Policy runs in the order Nomad's feasibility stack does: the request's
// own exclusions first (cheapest, and they explain themselves), then the
// configured filters in the order the operator listed them, then weighers,
// then the scriptlet's choose. Every filter rejection is counted with its
// reason, so "why was nothing placed" is answered with numbers.
package scheduler
