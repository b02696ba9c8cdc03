package migrate

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/berthd/berth/internal/testing/mariadbtest"
	"github.com/berthd/berth/internal/testing/placementtest"
	"github.com/berthd/berth/ledger/ledgertest"
)

// BenchmarkImportPlacement times `berth import placement` from a MariaDB
// Placement database generated straight into its tables (not through
// Placement's API, which would take hours at this size): providers with
// VCPU, MEMORY_MB and DISK_GB inventories, a custom trait and an
// aggregate each, and consumers holding three allocations each on one
// provider. Sizes come from the environment:
//
//	BERTH_IMPORT_PROVIDERS=100000 BERTH_IMPORT_ALLOCATIONS=1000000 \
//	    go test ./integration/migrate -run '^$' -bench ImportPlacement -benchtime 1x -timeout 30m
//
// (defaults 1,000 and 10,000). It then times `berth export placement`
// into a fresh database. With BERTH_IMPORT_VERIFY=1 it also serves
// the source with Placement and Berth and times `--verify`. It is not
// part of `go test ./...`: benchmarks run only with -bench.
func BenchmarkImportPlacement(b *testing.B) {
	providers := envInt(b, "BERTH_IMPORT_PROVIDERS", 1000)
	allocations := envInt(b, "BERTH_IMPORT_ALLOCATIONS", 10*providers)
	consumers := max(1, allocations/3)
	ctx := context.Background()
	maria, err := mariadbtest.Start(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer maria.Stop()
	src, err := maria.CreateDB(ctx, "placement", "bench-pw")
	if err != nil {
		b.Fatal(err)
	}
	if err := placementtest.Sync(ctx, src); err != nil {
		b.Fatal(err)
	}
	t0 := time.Now()
	if err := generate(ctx, maria, providers, consumers); err != nil {
		b.Fatal(err)
	}
	b.Logf("generated %d providers, %d consumers, %d allocations in %s", providers, consumers, 3*consumers, time.Since(t0).Round(time.Millisecond))
	var berthDB string
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		berthDB = ledgertest.NewDB(b)
		b.StartTimer()
		t0 := time.Now()
		code, out, errs := berth("import", "placement", "--source", src, "--database-url", berthDB)
		if code != 0 {
			b.Fatalf("import: %d %s%s", code, out, errs)
		}
		b.Logf("%s", out)
		b.ReportMetric(time.Since(t0).Seconds(), "s/import")
		if m := regexp.MustCompile(`read ([0-9.]+m?s), write ([0-9.]+m?s)`).FindStringSubmatch(out); m != nil {
			b.Logf("read %s, write %s", m[1], m[2])
		}
	}
	b.StopTimer()
	// The way back: export into a fresh Placement database.
	dst, err := maria.CreateDB(ctx, "placement_back", "bench-pw")
	if err != nil {
		b.Fatal(err)
	}
	if err := placementtest.Sync(ctx, dst); err != nil {
		b.Fatal(err)
	}
	t0 = time.Now()
	code, out, errs := berth("export", "placement", "--target", dst, "--database-url", berthDB)
	if code != 0 {
		b.Fatalf("export: %d %s%s", code, out, errs)
	}
	b.Logf("%s(export took %s)", out, time.Since(t0).Round(10*time.Millisecond))
	if os.Getenv("BERTH_IMPORT_VERIFY") == "" {
		return
	}
	p, err := placementtest.Start(ctx, src)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Stop()
	berthURL := startBerthdB(b, berthDB)
	t0 = time.Now()
	code, out, errs = berth("import", "placement", "--verify", "--source-api", p.URL, "--url", berthURL, "--workers", "2")
	if code != 0 {
		b.Fatalf("verify: %d %.2000s%.2000s", code, out, errs)
	}
	b.Logf("verify: %s in %s", out, time.Since(t0).Round(time.Second))
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		b.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// generate fills the synced Placement database with MariaDB's sequence
// engine (seq_1_to_N tables), a few statements in all.
func generate(ctx context.Context, maria *mariadbtest.Server, providers, consumers int) error {
	n, c := strconv.Itoa(providers), strconv.Itoa(consumers)
	stmts := []string{
		`INSERT INTO traits (id, name, created_at) SELECT seq, CONCAT('CUSTOM_BENCH_', seq), NOW() FROM seq_1_to_10`,
		`INSERT INTO placement_aggregates (id, uuid, created_at) SELECT seq, CONCAT(LPAD(LOWER(HEX(seq)), 8, '0'), '-0000-4000-8000-00000000a99a'), NOW() FROM seq_1_to_100`,
		`INSERT INTO projects (id, external_id, created_at) SELECT seq, CONCAT('project-', seq), NOW() FROM seq_1_to_100`,
		`INSERT INTO users (id, external_id, created_at) SELECT seq, CONCAT('user-', seq), NOW() FROM seq_1_to_1000`,
		`INSERT INTO consumer_types (id, name, created_at) VALUES (1, 'INSTANCE', NOW())`,
		`INSERT INTO resource_providers (id, uuid, name, generation, root_provider_id, created_at, updated_at)
			SELECT seq, CONCAT(LPAD(LOWER(HEX(seq)), 8, '0'), '-0000-4000-8000-0000000000c0'), CONCAT('compute-', seq), 5, seq, NOW(), NOW() FROM seq_1_to_` + n,
		`INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, step_size, allocation_ratio, created_at)
			SELECT p.seq, k.seq, ELT(k.seq + 1, 64, 262144, 2000), ELT(k.seq + 1, 0, 2048, 10), 1, ELT(k.seq + 1, 64, 262144, 2000), 1, ELT(k.seq + 1, 4.0, 1.1, 1.0), NOW()
			FROM seq_1_to_` + n + ` p CROSS JOIN seq_0_to_2 k`,
		`INSERT INTO resource_provider_traits (resource_provider_id, trait_id, created_at) SELECT seq, seq % 10 + 1, NOW() FROM seq_1_to_` + n,
		`INSERT INTO resource_provider_aggregates (resource_provider_id, aggregate_id, created_at) SELECT seq, seq % 100 + 1, NOW() FROM seq_1_to_` + n,
		`INSERT INTO consumers (id, uuid, project_id, user_id, generation, consumer_type_id, created_at, updated_at)
			SELECT seq, CONCAT(LPAD(LOWER(HEX(seq)), 8, '0'), '-0000-4000-8000-00000000c0c0'), seq % 100 + 1, seq % 1000 + 1, 1, 1, NOW(), NOW() FROM seq_1_to_` + c,
		`INSERT INTO allocations (resource_provider_id, consumer_id, resource_class_id, used, created_at, updated_at)
			SELECT (s.seq - 1) % ` + n + ` + 1, CONCAT(LPAD(LOWER(HEX(s.seq)), 8, '0'), '-0000-4000-8000-00000000c0c0'), k.seq, ELT(k.seq + 1, 2, 4096, 20), NOW(), NOW()
			FROM seq_1_to_` + c + ` s CROSS JOIN seq_0_to_2 k`,
	}
	for _, s := range stmts {
		if err := maria.Exec(ctx, "placement", s); err != nil {
			return fmt.Errorf("generate: %w", err)
		}
	}
	return nil
}
