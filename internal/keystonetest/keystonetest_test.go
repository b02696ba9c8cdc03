package keystonetest

import (
	"testing"
	"time"
)

func TestMain(m *testing.M) { Main(m) }

// TestUsers logs in as every user, and a second server over the same
// database issues tokens of its own lifetime that the first accepts.
func TestUsers(t *testing.T) {
	k := Shared(t)
	for _, u := range []string{Admin, Placement, Member, Reader, SystemReader} {
		if tok := k.Token(t, u); tok == "" {
			t.Errorf("%s: empty token", u)
		}
	}
	short := New(t, Options{TokenExpiration: 30 * time.Second})
	_, exp := short.TokenExpiry(t, Reader)
	if d := time.Until(exp); d > 31*time.Second || d < 0 {
		t.Errorf("token of the short-lived server expires in %v", d)
	}
	short.Stop()
	if err := short.Start(); err != nil {
		t.Fatalf("restart: %v", err)
	}
	short.Token(t, Member)
}
