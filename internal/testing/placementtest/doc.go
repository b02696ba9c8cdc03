// Package placementtest starts the real OpenStack Placement 8.0.0
// (Debian's python3-placement) for tests: uwsgi on a free port of
// 127.0.0.1, with its own placement.conf naming the database (a MySQL or
// PostgreSQL SQLAlchemy URL), the schema created by
// `placement-manage db sync`, and the noauth2 auth strategy (send
// X-Auth-Token: admin).
//
// It lives under internal/testing/ with Berth's other harnesses that start
// real components, apart from the product's packages: only _test.go files
// import it (imports_test.go at the module's root checks).
package placementtest
