package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/httpapi/apitest"
	"github.com/berthd/berth/internal/testing/proctest"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/ledgertest"
)

func TestHealthz(t *testing.T) {
	s, err := build(Config{Auth: AuthTokens}, nil, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	// No token, no microversion header, no database: still alive.
	if code, body := apitest.Get(t, s, "/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Errorf("GET /healthz = %d %q", code, body)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/healthz", nil))
	apitest.CheckPlacementError(t, rec.Result(), rec.Body.Bytes(), http.StatusMethodNotAllowed, "method specified is not allowed")
	if allow := rec.Header().Get("Allow"); allow != "GET, HEAD" {
		t.Errorf("POST /healthz: Allow %q", allow)
	}
	// Without a metrics handler /metrics is an ordinary unknown path:
	// the API's 401 before routing.
	if code, _ := apitest.Get(t, s, "/metrics"); code == http.StatusOK {
		t.Errorf("GET /metrics without a handler = %d", code)
	}
}

func TestReadyz(t *testing.T) {
	dbURL := ledgertest.NewDB(t)
	store := openStore(t, dbURL)
	s, err := build(Config{Auth: AuthTokens}, store, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	latest, err := ledger.LatestMigration()
	if err != nil || latest == 0 {
		t.Fatalf("LatestMigration = %d, %v", latest, err)
	}
	check := func(wantCode int, wantBody string) {
		t.Helper()
		code, body := apitest.Get(t, s, "/readyz")
		if code != wantCode || !strings.Contains(body, wantBody) {
			t.Errorf("GET /readyz = %d %q, want %d with %q", code, body, wantCode, wantBody)
		}
	}
	check(http.StatusOK, "ok")

	ledgertest.Exec(t, dbURL, `UPDATE schema_migrations SET version = version - 1`)
	check(http.StatusServiceUnavailable, "berthd needs")
	ledgertest.Exec(t, dbURL, `UPDATE schema_migrations SET version = version + 1, dirty = true`)
	check(http.StatusServiceUnavailable, "dirty")
	// A schema ahead of the binary (a newer release migrated) is usable.
	ledgertest.Exec(t, dbURL, `UPDATE schema_migrations SET version = version + 1, dirty = false`)
	check(http.StatusOK, "ahead")
	ledgertest.Exec(t, dbURL, `UPDATE schema_migrations SET version = version - 1`)
	check(http.StatusOK, "ok")

	s.Drain()
	check(http.StatusServiceUnavailable, "shutting down")
	if code, _ := apitest.Get(t, s, "/healthz"); code != http.StatusOK {
		t.Errorf("GET /healthz while draining = %d", code)
	}
}

func TestReadyzDatabaseUnreachable(t *testing.T) {
	dbURL := ledgertest.NewDB(t)
	proxy, proxyURL := startDBProxy(t, dbURL)
	store := openStore(t, proxyURL)
	var logs proctest.Buffer
	s, err := build(Config{}, store, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if code, body := apitest.Get(t, s, "/readyz"); code != http.StatusOK {
		t.Fatalf("GET /readyz through the proxy = %d %q", code, body)
	}
	proxy.cut()
	// The first probe loses its connection; the next one fails to open a
	// new one, whose error names the user, database and address.
	apitest.Get(t, s, "/readyz")
	code, body := apitest.Get(t, s, "/readyz")
	if code != http.StatusServiceUnavailable || strings.TrimSpace(body) != "database unreachable" {
		t.Errorf("GET /readyz with the database cut off = %d %q", code, body)
	}
	// The probe needs no credentials: it must not tell who berthd
	// connects as, to which database, where. The log does.
	u, err := url.Parse(proxyURL)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{u.User.Username(), strings.TrimPrefix(u.Path, "/"), u.Host, u.Port()} {
		if secret != "" && strings.Contains(body, secret) {
			t.Errorf("GET /readyz answers %q, which tells %q", body, secret)
		}
	}
	if !strings.Contains(logs.String(), "readiness probe: database unreachable") {
		t.Errorf("the log lacks the probe's failure: %s", logs.String())
	}
	if code, _ := apitest.Get(t, s, "/healthz"); code != http.StatusOK {
		t.Errorf("GET /healthz with the database cut off = %d", code)
	}
}

func openStore(t *testing.T, dbURL string) *ledger.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := ledger.Open(ctx, ledger.Config{DatabaseURL: dbURL, MaxConns: 4,
		ConnectTimeout: 5 * time.Second, SnapshotRefresh: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(store.Close)
	return store
}
