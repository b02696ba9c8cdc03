// Package keystone holds the end-to-end tests of berthd with Keystone:
// berthd served in the test's process (cmd/berthd/daemon/daemontest) with
// --auth keystone and --limits-source keystone against a real Keystone
// (internal/testing/keystonetest), reached directly or through a proxy
// that can cut it off; and the official openstack client through
// Keystone's catalogue. It has no code of its own.
package keystone
