package keystone

import (
	"context"
	"testing"
	"time"

	"github.com/berthd/berth/internal/testing/keystonetest"
)

// One Keystone serves every test of the package.
func TestMain(m *testing.M) { keystonetest.Main(m) }

// serviceConfig is Berth's service user on the Keystone at authURL.
func serviceConfig(authURL string) Config {
	return Config{
		AuthURL:  authURL,
		Username: keystonetest.Placement, Password: keystonetest.Password(keystonetest.Placement),
		ProjectName: keystonetest.ServiceProject,
		// Far above a validation's time, even on a loaded machine.
		Timeout: time.Minute,
	}
}

// newClient makes a Client of cfg, closed when t ends.
func newClient(t testing.TB, cfg Config) *Client {
	t.Helper()
	c, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatalf("keystone.New: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}
