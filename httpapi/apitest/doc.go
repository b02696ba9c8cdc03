// Package apitest is the harness of the API server's tests: the
// components berthd serves, wired over a store as cmd/berthd/compose
// wires them (which the tests below cmd/ may not import), and helpers
// that call a server and read Placement's error bodies. It imports no
// package of httpapi, so that every package's tests may use it, httpapi's
// own included; each wraps Wire and httpapi.New in its own build. Only
// tests import it.
package apitest
