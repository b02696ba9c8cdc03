// Package dbwork is the seeded cluster that the ledger's tests and
// benchmarks of database work run on: a throwaway PostgreSQL (with the
// extensions that count a statement's work, when probed), the seed of n
// compute nodes of the benchmark's shape, and the claim they write.
// Tests only import it.
package dbwork

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/berthd/berth/internal/pgcluster"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/resources"
	"github.com/jackc/pgx/v5"
)

// SeedSQL seeds n compute nodes of the benchmark's shape (docs/performance.md)
// with one consumer each, holding part of the node, so that every table a
// write reads grows with n. Provider i has id i and uuid md5('rp'||i).
const SeedSQL = `
INSERT INTO traits (name) VALUES ('CUSTOM_BENCH_TRAIT');
INSERT INTO placement_aggregates (uuid) SELECT md5('agg' || g)::uuid::text FROM generate_series(0, 9) g;
INSERT INTO resource_providers (id, uuid, name, generation, root_provider_id)
SELECT g, md5('rp' || g)::uuid, 'node-' || g, 3, g FROM generate_series(1, %[1]d) g;
SELECT setval(pg_get_serial_sequence('resource_providers', 'id'), %[1]d);
INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, step_size, allocation_ratio)
SELECT g, rc.id, v.total, v.reserved, 1, v.total, 1, v.ratio
FROM generate_series(1, %[1]d) g
CROSS JOIN (VALUES ('VCPU', 64, 0, 4.0), ('MEMORY_MB', 262144, 4096, 1.0), ('DISK_GB', 4000, 100, 1.0)) v(name, total, reserved, ratio)
JOIN resource_classes rc ON rc.name = v.name;
INSERT INTO resource_provider_traits (resource_provider_id, trait_id)
SELECT g, t.id FROM generate_series(10, %[1]d, 10) g, traits t WHERE t.name = 'CUSTOM_BENCH_TRAIT';
INSERT INTO resource_provider_aggregates (resource_provider_id, aggregate_id)
SELECT g, a.id FROM generate_series(1, %[1]d) g JOIN placement_aggregates a ON a.uuid = md5('agg' || g %% 10)::uuid::text;
INSERT INTO provider_placement_keys (resource_provider_id, name, value, sticky)
SELECT g, 'rack', g %% 40, true FROM generate_series(1, %[1]d) g;
INSERT INTO projects (external_id) VALUES ('seed-project');
INSERT INTO users (external_id) VALUES ('seed-user');
INSERT INTO consumers (id, uuid, project_id, user_id, generation, name)
SELECT g, md5('vm' || g)::uuid, p.id, u.id, 1, 'vm-' || g
FROM generate_series(1, %[1]d) g, projects p, users u WHERE p.external_id = 'seed-project' AND u.external_id = 'seed-user';
SELECT setval(pg_get_serial_sequence('consumers', 'id'), %[1]d);
INSERT INTO allocations (consumer_id, resource_provider_id, resource_class_id, used)
SELECT g, g, rc.id, v.used FROM generate_series(1, %[1]d) g
CROSS JOIN (VALUES ('VCPU', 4), ('MEMORY_MB', 16384), ('DISK_GB', 100)) v(name, used)
JOIN resource_classes rc ON rc.name = v.name;
INSERT INTO consumer_placement_keys (consumer_id, name, value) SELECT g, 'rack', g %% 40 FROM generate_series(1, %[1]d) g;
INSERT INTO claim_requests (consumer_uuid, op, fingerprint, request, result, generation)
SELECT md5('vm' || g)::uuid, 'claim', '\x00', '{}', '{}', 1 FROM generate_series(1, %[1]d) g;
INSERT INTO claim_state (consumer_uuid, op, request, root_uuid, state)
SELECT md5('vm' || g)::uuid, 'claim', '{}', md5('rp' || g)::uuid, 'permanent' FROM generate_series(1, %[1]d) g;
ANALYZE;
`

// MD5UUID is PostgreSQL's md5(s)::uuid as text.
func MD5UUID(s string) string {
	h := md5.Sum([]byte(s))
	x := hex.EncodeToString(h[:])
	return x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:]
}

// SeededProvider is the uuid of the i-th seeded provider of n to write
// to: a stride through the ids, so that writes land all over the tables.
func SeededProvider(n, i int) (id int, uuid string) {
	id = 1 + (i*7919)%n
	return id, MD5UUID(fmt.Sprint("rp", id))
}

// StartCluster starts a throwaway cluster for the database-work tests,
// with pg_stat_statements and auto_explain loaded only if probed, and the
// role dbwork_probe, whose statements are not counted.
func StartCluster(t testing.TB, ctx context.Context, probed bool) *pgcluster.Cluster {
	t.Helper()
	dir, err := os.MkdirTemp("", "berth-dbwork-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	socketDir := dir
	if !pgcluster.SocketDirFits(socketDir, pgcluster.DefaultPort) {
		if socketDir, err = os.MkdirTemp("/tmp", "berth-dbwork-"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.RemoveAll(socketDir) })
	}
	settings := map[string]string{
		// Statistics come from the ANALYZE after seeding, and stay.
		"autovacuum": "off",
	}
	if probed {
		settings["shared_preload_libraries"] = "pg_stat_statements,auto_explain"
	}
	c, err := pgcluster.Start(ctx, pgcluster.Options{
		DataDir: filepath.Join(dir, "pg"), SocketDir: socketDir, NoSync: true, LoosenParents: true,
		Settings: settings,
	})
	if err != nil {
		t.Fatalf("start a PostgreSQL with pg_stat_statements and auto_explain: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE ROLE dbwork_probe SUPERUSER`); err != nil {
		t.Fatal(err)
	}
	return c
}

// ClaimAt is the claim the database-work tests write: consumer on
// provider, vcpu VCPU with memory and disk, a retry record and a stored
// claim of the benchmark's size.
func ClaimAt(consumer, provider string, vcpu int64) resources.ClaimWriteParams {
	return resources.ClaimWriteParams{
		Consumers: []resources.ConsumerAllocations{{
			ConsumerUUID: consumer, ProjectID: "claim-project", UserID: "claim-user",
			CheckGeneration: true, Name: "vm", Properties: map[string]any{"group": "g1"}, CopyStickyKeys: true,
			Allocations: []engine.Allocation{{ProviderUUID: provider, Resources: []engine.ResourceAmount{
				{Class: "VCPU", Amount: vcpu}, {Class: "MEMORY_MB", Amount: 2048}, {Class: "DISK_GB", Amount: 20}}}},
		}},
		Request: &claimrecords.ClaimRequest{ConsumerUUID: consumer, Op: "claim", Fingerprint: []byte{1}, Request: []byte(`{}`), Result: []byte(`{}`), Generation: 1},
		// The stored claim every claim writes: a request body of the
		// benchmark's size, no lease.
		State: &claimrecords.ClaimStateWrite{Op: "claim", RootUUID: provider, Request: []byte(`{"consumer_uuid": "` + consumer +
			`", "project_id": "claim-project", "user_id": "claim-user", "name": "vm", "consumer_type": "INSTANCE", ` +
			`"resources": {"VCPU": 4, "MEMORY_MB": 16384, "DISK_GB": 100}, "properties": {"group": "g1"}}`)},
	}
}
