// Package daemon assembles berthd from its Config: the database (an
// external server, or the embedded PostgreSQL cluster it starts in the
// data directory), migrations, the ledger store, the components the API
// serves (built by the compose subpackage, the one composition root: the
// claimer, the scheduling sources, the cluster data, the policy
// enforcer, the projects' limits: Berth's, or Keystone's with
// --limits-source keystone, limits.go), the HTTP API, logging and
// telemetry, and it tears them down in order on shutdown. It also reads
// what applies of OpenStack Placement's own placement.conf onto a Config
// (ApplyPlacementConf). cmd/berthd only maps flags, environment variables
// and that file onto a Config and calls New and Run (or Migrate); tests
// call the same functions, and NewAPI for an API server over a store of
// their own.
package daemon
