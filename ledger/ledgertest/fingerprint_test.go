package ledgertest_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/ledger/ledgertest"
)

func TestFingerprintSeesWritesNotReads(t *testing.T) {
	ctx := context.Background()
	u := ledgertest.NewDB(t)
	fp := ledgertest.NewFingerprinter(t, u)
	before := fp.MustTake(t)
	if len(before) == 0 {
		t.Fatal("empty fingerprint")
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// A rolled-back write and a read change nothing.
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO traits (name) VALUES ('CUSTOM_ROLLED_BACK')`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `SELECT count(*) FROM traits`); err != nil {
		t.Fatal(err)
	}
	if diff := before.Diff(fp.MustTake(t)); len(diff) != 0 {
		t.Fatalf("fingerprint changed without a write: %v", diff)
	}
	if _, err := conn.Exec(ctx, `UPDATE traits SET updated_at = updated_at + interval '1 second' WHERE name = 'HW_CPU_X86_AVX'`); err != nil {
		t.Fatal(err)
	}
	if diff := before.Diff(fp.MustTake(t)); !slices.Equal(diff, []string{"traits"}) {
		t.Fatalf("diff after a timestamp update = %v, want [traits]", diff)
	}
}

func TestSaveRestoreRows(t *testing.T) {
	ctx := context.Background()
	u := ledgertest.NewDB(t)
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	exec := func(sql string) {
		t.Helper()
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	exec(`INSERT INTO resource_providers (id, uuid, name, root_provider_id) VALUES (1, gen_random_uuid(), 'root', 1)`)
	exec(`INSERT INTO resource_providers (id, uuid, name, root_provider_id, parent_provider_id) VALUES (2, gen_random_uuid(), 'child', 1, 1)`)
	exec(`INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, step_size, allocation_ratio)
		VALUES (2, 0, 8, 0, 1, 8, 1, 1)`)
	// An allocation, which the usage counters' triggers count: restored,
	// it must not be counted twice.
	exec(`INSERT INTO projects (id, external_id) VALUES (1, 'p')`)
	exec(`INSERT INTO users (id, external_id) VALUES (1, 'u')`)
	exec(`INSERT INTO consumers (id, uuid, project_id, user_id) VALUES (1, gen_random_uuid(), 1, 1)`)
	exec(`INSERT INTO allocations (consumer_id, resource_provider_id, resource_class_id, used) VALUES (1, 2, 0, 3)`)
	fp := ledgertest.NewFingerprinter(t, u)
	saved := fp.MustTake(t)
	saver, err := ledgertest.SaveRows(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer saver.Close()
	exec(`DELETE FROM consumers`)
	exec(`DELETE FROM inventories`)
	exec(`DELETE FROM resource_providers WHERE id = 2`)
	exec(`UPDATE resource_providers SET generation = 7`)
	exec(`INSERT INTO traits (name) VALUES ('CUSTOM_LATER')`)
	if diff := saved.Diff(fp.MustTake(t)); len(diff) == 0 {
		t.Fatal("the changes did not change the fingerprint")
	}
	for range 2 {
		if err := saver.Restore(ctx); err != nil {
			t.Fatal(err)
		}
		if diff := saved.Diff(fp.MustTake(t)); len(diff) != 0 {
			t.Fatalf("restored rows differ in %v", diff)
		}
	}
}
