// Package mariadbtest starts a throwaway MariaDB server for tests: its own
// data directory in a temporary directory, listening on 127.0.0.1 on a free
// port and on a unix socket, run as the unprivileged mysql user when the
// tests run as root. Its character set is utf8mb3 with utf8mb3_general_ci,
// what OpenStack deployments create Placement's database with (names
// compare case- and trailing-space-insensitively, no 4-byte characters).
//
// Debian's MariaDB ships an empty AppArmor profile; a machine that still
// enforces an old mysqld profile denies a data directory under /tmp, and
// Start's error then quotes the server log saying so.
//
// It lives under internal/testing/ with Berth's other harnesses that start
// real components, apart from the product's packages: only _test.go files
// import it (imports_test.go at the module's root checks). It is the one
// package outside ledger/ that imports a database driver
// (go-sql-driver/mysql, to see the server answer and to run the tests'
// statements, Exec), which those rules name as their exception.
package mariadbtest
