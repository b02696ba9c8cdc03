// Package audit finds allocations that look orphaned or wrong, page by
// page (Auditor.Audit, audit.go), and applies the few fixes that are safe,
// each in one transaction that finds its finding again first
// (Auditor.AuditFix, fix.go).
package audit
