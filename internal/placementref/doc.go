// Package placementref starts the real OpenStack Placement (Debian's
// python3-placement 8.0.0 under uwsgi) on a PostgreSQL database for tests
// that compare Berth's answers with Placement's: the recorder of
// integration's request/response corpus. It does what
// ../shared/reference/placement-server does, from Go, with the process
// stopped when the test ends.
package placementref
