// Package pythontest runs the system's Python 3 for tests that check
// Berth's emulation of a Python behaviour (pprint's layout, json's error
// messages) against the real thing.
//
// It lives under internal/testing/ with Berth's other harnesses that start
// real components, apart from the product's packages: only _test.go files
// import it (imports_test.go at the module's root checks).
package pythontest
