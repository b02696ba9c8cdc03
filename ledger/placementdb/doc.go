// Package placementdb moves state between an OpenStack Placement database
// and Berth's: `berth import placement` reads Placement's schema (as
// Placement 8.0.0's `placement-manage db sync` creates it, alembic revision
// 422ece571366) from MySQL/MariaDB or PostgreSQL and writes Berth's tables
// in one transaction; `berth export placement` does the reverse into an
// empty Placement database, for a roll back.
//
// Both directions go through a Dump: every row of the state the Placement
// API exposes (providers, inventories, classes, traits, aggregates,
// projects, users, consumer types, consumers, allocations and their
// timestamps), with ids in the source's numbering. Readers check the
// source before returning anything and writers check the target before
// writing anything, so every refusal happens with nothing written; a
// failure midway rolls the one transaction back.
//
// It is the only place outside ledger's own files that holds SQL, and it
// lives under ledger for that reason: pgx for Berth's side and for a
// PostgreSQL-backed Placement, go-sql-driver/mysql for MySQL and MariaDB.
package placementdb
