// Package patronitest starts throwaway Patroni clusters for tests: one
// etcd member and two PostgreSQL nodes managed by Patroni, all on
// 127.0.0.1 with free ports, in synchronous mode, so that tests can kill
// the primary (kill -9 of its postmaster) or switch over and watch Berth
// fail over. PostgreSQL and Patroni run as the postgres system user when
// the test runs as root (PostgreSQL refuses root). It needs the Debian
// packages patroni, etcd-server and python3-etcd, and PostgreSQL's
// server binaries; Start reports what is missing. It is a test helper: it
// never touches anything but its own temporary directory and processes.
//
// It lives under internal/testing/ with Berth's other harnesses that start
// real components, apart from the product's packages: only _test.go files
// import it, and the failover soak (cmd/berth-soak/soak), a program whose job is
// to run a Patroni cluster and fail it over (imports_test.go at the
// module's root checks, and names that one exception).
package patronitest
