package keystone

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// BenchmarkAuthenticateCached is what --auth keystone adds to a request
// whose token is in the cache: hashing the token and one LRU lookup. No
// Keystone is needed (the client's login fails and is retried in the
// background, unused).
func BenchmarkAuthenticateCached(b *testing.B) {
	c, err := New(context.Background(), Config{AuthURL: "http://127.0.0.1:1/v3", Username: "u", Password: "p",
		ProjectName: "p", Timeout: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	tok := strings.Repeat("gAAAAABp", 23) // the length of a fernet token
	c.store(cacheKey(tok, false), &Identity{UserID: "u", ProjectID: "p", Roles: []string{"admin"},
		ExpiresAt: time.Now().Add(time.Hour)}, false)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := c.Authenticate(ctx, tok, ""); err != nil {
				b.Fatal(err)
			}
		}
	})
}
