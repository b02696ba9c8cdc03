package migrate

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/berthd/berth/cmd/berth/cli"
	"github.com/berthd/berth/cmd/berthd/daemon"
	"github.com/berthd/berth/cmd/berthd/daemon/daemontest"
	"github.com/berthd/berth/internal/placementdiff"
	"github.com/berthd/berth/internal/testing/mariadbtest"
	"github.com/berthd/berth/internal/testing/placementtest"
	"github.com/berthd/berth/ledger/ledgertest"
)

func TestMain(m *testing.M) { ledgertest.Main(m) }

// unavailable fails the test when CI is set (CI must run these tests) and
// skips it otherwise.
func unavailable(t *testing.T, err error) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set and a real component cannot start: %v", err)
	}
	t.Skipf("skipped (set CI to make this fail): %v", err)
}

// startMariaDB starts the test's MariaDB, stopped when the test ends.
func startMariaDB(t *testing.T) *mariadbtest.Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m, err := mariadbtest.Start(ctx)
	if err != nil {
		unavailable(t, err)
	}
	t.Cleanup(func() { t0 := time.Now(); m.Stop(); t.Logf("mariadb stopped in %s", time.Since(t0)) })
	return m
}

// startPlacement syncs the schema of dbURL and serves Placement on it
// until the test ends.
func startPlacement(t *testing.T, dbURL string) *placementtest.Server {
	t.Helper()
	if err := placementtest.Available(); err != nil {
		unavailable(t, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, err := placementtest.Start(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { t0 := time.Now(); p.Stop(); t.Logf("placement stopped in %s", time.Since(t0)) })
	return p
}

// startBerthd serves berthd on dbURL in this process and returns its URL.
func startBerthd(t *testing.T, dbURL string) string { return startBerthdB(t, dbURL) }

func startBerthdB(t testing.TB, dbURL string) string {
	t.Helper()
	cfg := daemon.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.DatabaseURL = dbURL
	cfg.DataDir = ""
	cfg.ShutdownGrace = time.Second
	return daemontest.Serve(t, cfg, slog.New(slog.DiscardHandler))
}

// berth runs the berth command line and returns its exit status, stdout
// and stderr.
func berth(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := cli.Main(context.Background(), args, cli.IO{Stdout: &out, Stderr: &errb, Getenv: func(string) string { return "" }})
	return code, out.String(), errb.String()
}

func compare(t *testing.T, oldName, oldURL, newName, newURL string) *placementdiff.Result {
	t.Helper()
	res, err := placementdiff.Compare(context.Background(), placementdiff.Params{
		Old: placementdiff.Endpoint{Name: oldName, URL: oldURL, Token: "admin"},
		New: placementdiff.Endpoint{Name: newName, URL: newURL, Token: "admin"},
		// placementtest's uwsgi runs two processes.
		Workers: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestMigration shares one MariaDB (slow to start) among its subtests,
// each with its own databases.
func TestMigration(t *testing.T) {
	maria := startMariaDB(t)
	t.Run("RoundTrip", func(t *testing.T) { testRoundTrip(t, maria) })
	t.Run("ImportRefusals", func(t *testing.T) { testImportRefusals(t, maria) })
	t.Run("Orphans", func(t *testing.T) { testOrphans(t, maria) })
	t.Run("ExportRefusals", func(t *testing.T) { testExportRefusals(t, maria) })
	t.Run("Postgres", testPostgres)
}

// testRoundTrip moves a Placement on MariaDB, populated through its own
// API, to Berth; checks that every read answers the same; continues
// writing against Berth with the generations clients held; exports
// Berth's state into a fresh Placement database and checks that the new
// Placement answers what Berth does.
func testRoundTrip(t *testing.T, maria *mariadbtest.Server) {
	start := time.Now()
	step := func(what string) { t.Logf("%6.1fs %s", time.Since(start).Seconds(), what) }
	ctx := context.Background()
	srcURL, err := maria.CreateDB(ctx, "placement", "s3cret-pw")
	if err != nil {
		t.Fatal(err)
	}
	old := startPlacement(t, srcURL)
	pa := api{t: t, base: old.URL}
	step("placement started")
	populate(pa)
	step("placement populated")

	// What clients hold at the cutover: a compute agent's provider
	// generation, an instance's consumer generation.
	heldProvider := pa.generation(numa(1, 0))
	var held struct {
		Generation int `json:"consumer_generation"`
	}
	pa.must(200, "GET", "/allocations/"+instance(3), nil, &held)

	// Writes are frozen (the test sends none to Placement from here on).
	berthDB := ledgertest.NewDB(t)
	code, out, errs := berth("import", "placement", "--source", srcURL, "--database-url", berthDB)
	if code != 0 {
		t.Fatalf("import: exit %d: %s%s", code, out, errs)
	}
	if strings.Contains(out+errs, "s3cret-pw") {
		t.Errorf("the password was printed: %s%s", out, errs)
	}
	t.Log(strings.TrimSpace(out))

	step("imported")
	berthURL := startBerthd(t, berthDB)
	step("berthd started")
	code, out, errs = berth("import", "placement", "--verify", "--source-api", old.URL, "--url", berthURL, "--workers", "2")
	if code != 0 {
		t.Fatalf("verify: exit %d:\n%s%s", code, out, errs)
	}
	t.Log(strings.TrimSpace(out))

	step("verified")
	// Writes continue against Berth with what clients hold.
	ba := api{t: t, base: berthURL}
	ba.must(200, "PUT", "/resource_providers/"+numa(1, 0)+"/inventories/VCPU", map[string]any{
		"resource_provider_generation": heldProvider, "total": 24, "reserved": 2, "allocation_ratio": 4.0,
	}, nil)
	ba.must(204, "PUT", "/allocations/"+instance(3), map[string]any{
		"allocations": map[string]any{
			numa(3, 1):  map[string]any{"resources": map[string]int{"VCPU": 4, "MEMORY_MB": 8192}},
			storageUUID: map[string]any{"resources": map[string]int{"DISK_GB": 80}},
		},
		"project_id": projectA, "user_id": userA, "consumer_generation": held.Generation, "consumer_type": "INSTANCE",
	}, nil)
	// A stale generation is still refused.
	if st, b := ba.do("PUT", "/resource_providers/"+numa(1, 0)+"/inventories/VCPU", "1.39", map[string]any{
		"resource_provider_generation": heldProvider, "total": 8,
	}); st != 409 {
		t.Fatalf("stale generation: %d %s", st, b)
	}
	// The migration is confirmed, new instances arrive.
	ba.must(204, "DELETE", "/allocations/"+migration1, nil, nil)
	for k := 20; k < 24; k++ {
		ba.must(204, "PUT", "/allocations/"+instance(k), map[string]any{
			"allocations": map[string]any{
				numa(k%nodes+1, 0): map[string]any{"resources": map[string]int{"VCPU": 1, "MEMORY_MB": 1024}},
				storageUUID:        map[string]any{"resources": map[string]int{"DISK_GB": 10}},
			},
			"project_id": projectB, "user_id": userB, "consumer_generation": nil, "consumer_type": "INSTANCE",
		}, nil)
	}
	ba.must(201, "PUT", "/traits/CUSTOM_AFTER_CUTOVER", nil, nil)

	// Roll back: a fresh Placement database, schema by placement-manage,
	// receives Berth's state; a Placement on it answers what Berth does.
	dstURL, err := maria.CreateDB(ctx, "placement_back", "an0ther-pw")
	if err != nil {
		t.Fatal(err)
	}
	if err := placementtest.Sync(ctx, dstURL); err != nil {
		t.Fatal(err)
	}
	code, out, errs = berth("export", "placement", "--target", dstURL, "--database-url", berthDB)
	if code != 0 {
		t.Fatalf("export: exit %d: %s%s", code, out, errs)
	}
	t.Log(strings.TrimSpace(out + errs))
	step("exported")
	back := startPlacement(t, dstURL)
	step("second placement started")
	if res := compare(t, "berth", berthURL, "placement", back.URL); len(res.Differences) > 0 {
		t.Fatalf("after export, %d differences in %d reads:\n%s", len(res.Differences), res.Reads, strings.Join(res.Differences, "\n"))
	} else {
		t.Logf("after export: no differences in %d reads", res.Reads)
	}
	step("compared")
	// And the old Placement no longer matches Berth: the verifier sees
	// writes made after the cutover.
	if res := compare(t, "placement", old.URL, "berth", berthURL); len(res.Differences) == 0 {
		t.Fatal("the verifier found no difference after writes to Berth alone")
	}
}
