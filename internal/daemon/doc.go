// Package daemon assembles berthd from its Config: the database (an
// external server, or the embedded PostgreSQL cluster it starts in the
// data directory), migrations, the ledger store, the policy enforcer, the
// HTTP API, logging
// and telemetry, and it tears them down in order on shutdown. cmd/berthd
// only maps flags and environment variables onto a Config and calls New
// and Run (or Migrate); tests call the same functions.
package daemon
