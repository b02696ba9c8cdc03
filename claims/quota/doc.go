// Package quota says which limits a project is held to (docs/quotas.md):
// the limits Berth keeps itself (Stored: `--limits-source berth`, read by
// the ledger in each write's own transaction, so a change applies to the
// next write in every process) or Keystone's unified limits (Keystone:
// `--limits-source keystone`, read as oslo.limit reads them and cached per
// process for a TTL). Either way a Source hands writes a *quotas.Quota,
// which the ledger checks under the lock of the project's usage
// counters (ledger/resources/quota_check.go), and answers what the
// limits API shows.
//
// Keystone's resource names are Nova's: "class:VCPU", "class:MEMORY_MB",
// ... become the resource classes VCPU, MEMORY_MB, ..., and "servers"
// becomes quotas.ResourceConsumers; other names (Nova's
// server_metadata_items, server_groups, ...) are not Berth's and are left
// out, as is a limit of -1 (unlimited).
//
// Files: source.go (Source, Stored), keystone.go (Keystone: the cache,
// the names).
package quota
