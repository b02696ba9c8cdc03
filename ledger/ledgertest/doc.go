// Package ledgertest gives tests their own freshly migrated PostgreSQL
// database. It owns the test database server: the one named by
// BERTH_TEST_DATABASE_URL, or else one throwaway cluster per test binary
// (started on first use with fsync off, in a temporary directory). The
// schema is migrated once into a template database; each NewDB call then
// copies the template with CREATE DATABASE ... TEMPLATE, which takes a few
// tens of milliseconds, and drops the copy when the test ends.
//
// A package whose tests call NewDB must stop the cluster after its tests:
//
//	func TestMain(m *testing.M) { ledgertest.Main(m) }
//
// ledgertest imports ledger (for Migrate and Open), so tests inside package
// ledger itself, and the tests of the ledger's parts (ledger/resources...),
// which open a Store through ledger, must be written as external test
// packages (ledger_test, resources_test...), reaching internals through an
// export_test.go file.
//
// The ledger packages' tests share one Fixture (fixture.go: a Store and a
// direct connection over a new database, with the helpers that seed and
// inspect it) and AuditCloud, a cloud holding one audit finding of every
// kind; a package adds its own helpers as methods of a type embedding
// *Fixture.
package ledgertest
