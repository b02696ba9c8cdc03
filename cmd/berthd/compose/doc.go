// Package compose builds the components berthd serves over one ledger
// store: the catalogue of stored scheduling policies, scriptlets and config
// (claims/catalog), the scheduler's view of the cloud read through the
// ledger (claims/cloud), the projects' limits (quota.Source: Berth's own
// unless given Keystone's), the runner of shadows (claims/shadow, shared by
// the catalogue, which loads them, and the claimer, which feeds them), the
// claimer (claims.Claimer) built with them, and the policy enforcer
// (authz.Enforcer). It is berthd's composition root:
// cmd/berthd/daemon calls Build with what its configuration says and hands
// the components to httpapi.New; integration's tests that need an API
// server call Build too (through daemon.NewAPI); httpapi's own tests wire
// the same components in a helper of theirs (nothing below cmd/ imports
// it). It starts nothing: the caller runs the catalogue
// (Components.Catalog.Run) when it wants other replicas' changes and the
// shadows' counts flushed.
package compose
