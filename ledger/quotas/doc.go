// Package quotas keeps the limits Berth stores, per project and
// registered for all (limits.go), and reads the projects' usage counters
// (quotas.go, project_usage.go). The limits are checked, and the usage
// counted, in the transaction of every write of allocations
// (ledger/resources, quota_check.go); Limits and Quota are what such a
// write is given.
package quotas
