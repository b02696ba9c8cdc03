// Package keystonetest starts real OpenStack Keystone servers for tests:
// Debian's python3-keystone (keystone-manage and keystone-wsgi-public)
// under uwsgi on 127.0.0.1, with its own configuration directory, SQLite
// database (WAL) and fernet keys in a temporary directory, bootstrapped with
// the users Berth's tests need (see the User constants).
//
// Starting a Keystone takes tens of seconds, so a test binary sets one up
// once (Shared) and every other server it asks for (New, for a different
// token lifetime, or one to stop and start again) runs over the same
// database and keys: a token issued by one validates on every other.
// Call Main from TestMain so that the servers are stopped and their files
// removed when the tests end.
//
// A Proxy in front of one counts the token validations that reach it and
// can cut it off (proxy.go); LimitsService, ProjectLimit and ChangeLimit
// set up unified limits (limits.go).
//
// A test that needs Keystone and cannot start it fails when the CI
// environment variable is set, and is skipped otherwise.
//
// It lives under internal/testing/ with Berth's other harnesses that start
// real components, apart from the product's packages: only _test.go files
// import it (imports_test.go at the module's root checks).
package keystonetest
