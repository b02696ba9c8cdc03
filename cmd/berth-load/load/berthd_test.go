package load

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/berthd/berth/cmd/berthd/daemon"
	"github.com/berthd/berth/cmd/berthd/daemon/daemontest"
	"github.com/berthd/berth/ledger/ledgertest"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

// startBerthd serves a real berthd, in process, on a throwaway database
// and returns its URL. It closes connections idle for idleTimeout.
func startBerthd(t *testing.T, idleTimeout time.Duration) string {
	t.Helper()
	cfg := daemon.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.DatabaseURL = ledgertest.NewDB(t)
	cfg.DataDir = ""
	cfg.HTTPIdleTimeout = idleTimeout
	quiet := slog.New(slog.DiscardHandler)
	if err := daemon.Migrate(context.Background(), cfg, quiet); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return daemontest.Serve(t, cfg, quiet)
}

// TestKeepAliveAgainstBerthd: seeding a real berthd through the tool's
// transport reuses a connection per worker, and berthd's streamed
// (chunked) provider list is read whole over a kept-alive connection, and
// connections that berthd closed when they idled are replaced without a
// failed request.
func TestKeepAliveAgainstBerthd(t *testing.T) {
	const idle = time.Second // longer than any pause of the seeding, even under -race
	url := startBerthd(t, idle)
	const nodes, workers = 120, 6
	c := NewClient(ClientConfig{URL: url, Token: "admin", Conns: workers, Timeout: time.Minute})
	tr := keepAliveOf(t, c)
	ctx := context.Background()
	res, err := Seed(ctx, c, SeedParams{Nodes: nodes, Workers: workers}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if res.Providers != nodes || res.Requests < 3*nodes {
		t.Fatalf("seed %+v", res)
	}
	if d := tr.dials.Load(); d < 1 || d > workers {
		t.Errorf("%d requests by %d workers dialled %d connections", res.Requests, workers, d)
	}

	// The list streams: through http.Client to see the framing.
	req, _ := http.NewRequest(http.MethodGet, url+"/resource_providers", nil)
	req.Header.Set("X-Auth-Token", "admin")
	req.Header.Set("OpenStack-API-Version", "placement "+DefaultMicroversion)
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Providers []struct{ UUID string } `json:"resource_providers"`
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || len(list.Providers) != nodes {
		t.Fatalf("provider list: %d providers, %v", len(list.Providers), err)
	}
	t.Logf("provider list framing: %v, Content-Length %d", resp.TransferEncoding, resp.ContentLength)

	dials := tr.dials.Load()
	if v := Verify(ctx, c, 4, nil); !v.OK || v.Providers != nodes {
		t.Errorf("verify %+v", v)
	}
	claims, err := RunClaims(ctx, c, ClaimsParams{Mode: ModeClaims, Clients: 4, Claims: 40, Verify: true, VerifyConns: 4}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if claims.Claims != 40 || claims.Errors != 0 || claims.Verify == nil || !claims.Verify.OK {
		t.Errorf("claims %+v", claims)
	}
	if d := tr.dials.Load(); d != dials {
		t.Errorf("verify and claims dialled %d new connections with %d idle", d-dials, dials)
	}

	// berthd closes the pool's connections once they idle; POSTs (never
	// sent twice) then go on new connections.
	dials = tr.dials.Load()
	time.Sleep(3 * idle)
	res, err = Seed(ctx, c, SeedParams{Nodes: nodes + 10, Workers: workers}, io.Discard)
	if err != nil {
		t.Fatalf("seeding after berthd closed the idle connections: %v", err)
	}
	if d := tr.dials.Load() - dials; d < 1 || d > workers {
		t.Errorf("%d new connections after berthd closed %d idle ones", d, workers)
	}
}
