package client_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/httpapi"
	"github.com/berthd/berth/httpapi/apitest"
	"github.com/berthd/berth/httpapi/client"
	"github.com/berthd/berth/ledger/ledgertest"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

// serve starts Berth's API server over a new database, wired as berthd
// wires it (apitest.Wire), and returns its URL; t ends it.
func serve(t testing.TB) string {
	t.Helper()
	store := ledgertest.NewStore(t)
	log := slog.New(slog.DiscardHandler)
	c, err := apitest.Wire(store, nil, nil, claims.Config{}, log)
	if err != nil {
		t.Fatal(err)
	}
	s, err := httpapi.New(httpapi.Config{Store: store, Authz: c.Authz, Limits: c.Limits, Cloud: c.Cloud,
		Catalog: c.Catalog, Claimer: c.Claimer}, log)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv.URL
}

// host creates a root provider with vcpu VCPU and memMB MEMORY_MB
// through c, and returns its uuid.
func host(t testing.TB, c *client.Client, name string, vcpu, memMB int64) string {
	t.Helper()
	ctx := context.Background()
	p, err := c.CreateProvider(ctx, name, "", "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.SetInventories(ctx, p.UUID, client.Inventories{ResourceProviderGeneration: p.Generation,
		Inventories: map[string]client.Inventory{"VCPU": {Total: vcpu}, "MEMORY_MB": {Total: memMB}}})
	if err != nil {
		t.Fatal(err)
	}
	return p.UUID
}

// exampleTB is the testing.TB of the server an example starts: examples
// get none. It keeps the cleanups for the example's stop and panics on
// a failure, which fails the example. Only the methods below are called
// (by serve, host and ledgertest); the embedded nil TB has the rest.
type exampleTB struct {
	testing.TB
	cleanups []func()
}

func (e *exampleTB) Helper()                   {}
func (e *exampleTB) Cleanup(f func())          { e.cleanups = append(e.cleanups, f) }
func (e *exampleTB) Fatal(a ...any)            { panic(fmt.Sprint(a...)) }
func (e *exampleTB) Fatalf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }
func (e *exampleTB) Errorf(f string, a ...any) { panic(fmt.Sprintf(f, a...)) }

// exampleBerth starts a Berth API server over a new database with two
// hosts, compute-1 (16 VCPU, 64 GiB) and compute-2 (2 VCPU, 4 GiB), and
// returns its URL and the function that stops it.
func exampleBerth() (url string, stop func()) {
	tb := &exampleTB{}
	url = serve(tb)
	c := client.New(client.Config{URL: url, Token: "admin"})
	host(tb, c, "compute-1", 16, 65536)
	host(tb, c, "compute-2", 2, 4096)
	return url, func() {
		for _, f := range slices.Backward(tb.cleanups) {
			f()
		}
	}
}
