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

func TestCopyDB(t *testing.T) {
	ctx := context.Background()
	src := ledgertest.NewDB(t)
	conn, err := pgx.Connect(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO traits (name) VALUES ('CUSTOM_COPIED')`); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	dst, err := ledgertest.CopyDB(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if dst == src {
		t.Fatal("copy has the source's url")
	}
	a, b := ledgertest.NewFingerprinter(t, src).MustTake(t), ledgertest.NewFingerprinter(t, dst).MustTake(t)
	if diff := a.Diff(b); len(diff) != 0 {
		t.Errorf("copy differs in %v", diff)
	}
	if err := ledgertest.DropDB(ctx, dst); err != nil {
		t.Fatal(err)
	}
	if err := ledgertest.DropDB(ctx, "postgres://localhost/postgres"); err == nil {
		t.Error("DropDB accepted a database that is not a test database")
	}
}
