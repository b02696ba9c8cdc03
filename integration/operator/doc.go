// Package operator tests what operators look at, against a real berthd
// (in process, on a throwaway database, seeded over HTTP): the console
// at /ui in headless Chromium (every page opened, its content checked, a
// screenshot taken, no JavaScript error, no broken link), and that every
// metric the Grafana dashboard (deploy/grafana) and the alert rules
// (deploy/prometheus) name is one berthd's /metrics exports; the rules
// are checked and unit-tested with promtool. It has no code of its own.
// Chromium (/usr/bin/chromium) and promtool must be installed: a test
// that cannot start them fails.
package operator
