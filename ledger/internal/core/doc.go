// Package core is the plumbing every part of the ledger shares, one of
// each: the connection pool, the one transaction helper (Core.WithTx,
// Core.ReadTx and TxBeginner.WithTx: tx.go), the reads outside
// transactions (DB: db.go), the driver-error boundary (DBError:
// errors.go), the commits the synchronous standby did not confirm and the
// primary of a multi-host database URL (replication.go), the group writer
// that sends queued writes together (group_writer.go), the spellings of
// uuids (uuid.go), the claim pipelines sent over pgconn with buffers
// each connection keeps (SendBatch: core.go), and what runs after every
// commit that changed providers (Core.Notify: the snapshot's follower,
// then the change hooks).
// Only the packages under ledger/ import it.
package core
