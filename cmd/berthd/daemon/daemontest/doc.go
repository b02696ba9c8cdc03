// Package daemontest serves berthd inside a test's own process, for tests
// that talk to it over HTTP (the CLI's and the load tool's end-to-end
// tests, the Keystone tests and the Placement migration tests under
// integration/).
//
// It lives beside the daemon it serves, under cmd/berthd/, because it
// imports it: nothing outside cmd/ and integration/ may. Only _test.go
// files import it (imports_test.go at the module's root checks).
package daemontest
