package keystone

import "testing"

// For the API tests (package keystone_test), which run berthd and so
// cannot be in package keystone.
type TestProxy = proxy

const ProxyDown = down

func NewTestProxy(t testing.TB, keystoneURL string) *TestProxy { return newProxy(t, keystoneURL) }
