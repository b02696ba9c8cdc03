// Package migrate holds the end-to-end tests of `berth import placement`
// and `berth export placement` against a real OpenStack Placement 8.0.0
// on a real MariaDB, both started by the tests on 127.0.0.1 (see
// internal/testing/mariadbtest and internal/testing/placementtest).
package migrate
