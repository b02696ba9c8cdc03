// Package migrations holds Berth's PostgreSQL schema as golang-migrate files,
// embedded so that the berthd binary can apply them on start and with
// `berthd migrate`. The ledger package is the only reader of FS.
package migrations

import "embed"

// FS holds the numbered NNNN_name.up.sql / NNNN_name.down.sql files.
//
//go:embed *.sql
var FS embed.FS
