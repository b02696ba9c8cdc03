// Package proctest holds what the test harnesses that run real servers
// (MariaDB, OpenStack Placement, Keystone, Patroni and etcd) share: free
// loopback ports and stopping a server's whole process group; and the
// process's CPU time, which benchmarks report per operation.
//
// It lives under internal/testing/ with Berth's other harnesses that start
// real components, apart from the product's packages: only _test.go files
// and those harnesses import it (imports_test.go at the module's root
// checks).
package proctest
