// Package daemontest serves berthd inside a test's own process, for tests
// that talk to it over HTTP (the CLI's end-to-end tests, the Keystone API
// tests, the Placement migration tests).
//
// It lives under internal/testing/ with Berth's other harnesses that start
// real components, apart from the product's packages: only _test.go files
// import it (imports_test.go at the module's root checks).
package daemontest
