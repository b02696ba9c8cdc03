package migrate

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/berthd/berth/internal/testing/mariadbtest"
	"github.com/berthd/berth/internal/testing/placementtest"
	"github.com/berthd/berth/ledger/ledgertest"
)

// syncedDB creates a MariaDB database with Placement's schema and returns
// its URL.
func syncedDB(t *testing.T, maria *mariadbtest.Server, name string) string {
	t.Helper()
	ctx := context.Background()
	u, err := maria.CreateDB(ctx, name, "pw-"+name)
	if err != nil {
		t.Fatal(err)
	}
	if err := placementtest.Sync(ctx, u); err != nil {
		t.Fatal(err)
	}
	return u
}

// refused runs berth with args and checks that it exits 4 (a failure
// other than the server's refusal, docs/cli.md) with one line on stderr (after any listed rows, indented) that contains want and no
// password.
func refused(t *testing.T, want string, args ...string) string {
	t.Helper()
	code, out, errs := berth(args...)
	if code != 4 {
		t.Fatalf("berth %s: exit %d, want 4: %s%s", strings.Join(args, " "), code, out, errs)
	}
	lines := strings.Split(strings.TrimRight(errs, "\n"), "\n")
	last := lines[len(lines)-1]
	for _, l := range lines[:len(lines)-1] {
		if !strings.HasPrefix(l, "  ") {
			t.Errorf("more than one line of message: %q", errs)
		}
	}
	if !strings.Contains(last, want) {
		t.Errorf("message %q does not say %q", last, want)
	}
	for _, a := range args {
		if i := strings.Index(a, ":pw"); i >= 0 {
			pw := a[i+1 : strings.Index(a, "@")]
			if strings.Contains(out+errs, pw) {
				t.Errorf("password %q printed: %s", pw, errs)
			}
		}
	}
	t.Logf("refused: %s", last)
	return errs
}

func testImportRefusals(t *testing.T, maria *mariadbtest.Server) {
	ctx := context.Background()
	good := syncedDB(t, maria, "refuse_good")
	berthDB := ledgertest.NewDB(t)
	fp := ledgertest.NewFingerprinter(t, berthDB)
	before := fp.MustTake(t)
	imp := func(src string) []string {
		return []string{"import", "placement", "--source", src, "--database-url", berthDB}
	}

	refused(t, "Access denied", imp(strings.Replace(good, "pw-refuse_good", "pw-wrong", 1))...)
	refused(t, "cannot connect", imp("mysql+pymysql://placement:pw-x@127.0.0.1:1/placement?charset=utf8")...)
	refused(t, "scheme", imp("sqlite:///placement.db")...)

	if _, err := maria.CreateDB(ctx, "refuse_empty", "pw-refuse_empty"); err != nil {
		t.Fatal(err)
	}
	refused(t, "not a Placement database", imp(strings.Replace(good, "refuse_good", "refuse_empty", -1))...)

	old := syncedDB(t, maria, "refuse_old")
	if err := maria.Exec(ctx, "refuse_old", "UPDATE alembic_version SET version_num = 'b5c396305c25'"); err != nil {
		t.Fatal(err)
	}
	refused(t, "older than Placement 8.0.0's 422ece571366", imp(old)...)
	if err := maria.Exec(ctx, "refuse_old", "UPDATE alembic_version SET version_num = 'fedcba987654'"); err != nil {
		t.Fatal(err)
	}
	refused(t, `revision "fedcba987654" is unknown`, imp(old)...)

	half := syncedDB(t, maria, "refuse_half")
	if err := maria.Exec(ctx, "refuse_half", "ALTER TABLE consumers DROP FOREIGN KEY consumers_consumer_type_id_fkey; ALTER TABLE consumers DROP COLUMN consumer_type_id"); err != nil {
		t.Fatal(err)
	}
	refused(t, "half-migrated: missing consumers.consumer_type_id", imp(half)...)

	if diff := before.Diff(fp.MustTake(t)); len(diff) > 0 {
		t.Fatalf("refused imports wrote to %v", diff)
	}

	// A target holding state is refused, unless --replace.
	if err := maria.Exec(ctx, "refuse_good", `
		INSERT INTO resource_providers (id, uuid, name, generation, root_provider_id, created_at) VALUES
			(1, '11111111-2222-4333-8444-555555555555', 'node-1', 3, 1, NOW());
		INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, step_size, allocation_ratio)
			VALUES (1, 0, 8, 0, 1, 8, 1, 1.1)`); err != nil {
		t.Fatal(err)
	}
	if code, out, errs := berth(imp(good)...); code != 0 {
		t.Fatalf("import: %d %s%s", code, out, errs)
	}
	second := fp.MustTake(t)
	refused(t, "not empty", imp(good)...)
	if diff := second.Diff(fp.MustTake(t)); len(diff) > 0 {
		t.Fatalf("a refused import wrote to %v", diff)
	}
	if code, out, errs := berth(append(imp(good), "--replace")...); code != 0 {
		t.Fatalf("import --replace: %d %s%s", code, out, errs)
	}
	d := readBerth(t, berthDB)
	if len(d.Providers) != 1 || d.Providers[0].Generation != 3 || len(d.Inventories) != 1 {
		t.Fatalf("after --replace: %s, want the one provider (generation 3) of the source", d.Counts())
	}
	if ratio := d.Inventories[0].AllocationRatio; ratio != 1.1 {
		t.Errorf("allocation_ratio %v, want 1.1 (MySQL FLOAT read back as float32)", ratio)
	}
}

func testOrphans(t *testing.T, maria *mariadbtest.Server) {
	ctx := context.Background()
	src := syncedDB(t, maria, "orphans")
	// Placement's allocations table has no foreign keys: rows for a
	// consumer or provider that is gone exist in real databases.
	if err := maria.Exec(ctx, "orphans", `
		INSERT INTO projects (id, external_id) VALUES (1, 'p');
		INSERT INTO users (id, external_id) VALUES (1, 'u');
		INSERT INTO resource_providers (id, uuid, name, generation, root_provider_id) VALUES
			(1, '11111111-2222-4333-8444-555555555555', 'node-1', 1, 1);
		INSERT INTO inventories (resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, step_size, allocation_ratio)
			VALUES (1, 0, 8, 0, 1, 8, 1, 1.0);
		INSERT INTO consumers (id, uuid, project_id, user_id, generation) VALUES
			(1, 'c0000000-0000-4000-8000-000000000001', 1, 1, 1);
		INSERT INTO allocations (id, resource_provider_id, consumer_id, resource_class_id, used) VALUES
			(1, 1, 'c0000000-0000-4000-8000-000000000001', 0, 2),
			(2, 1, 'deadbeef-0000-4000-8000-000000000000', 0, 1),
			(3, 99, 'c0000000-0000-4000-8000-000000000001', 0, 1)`); err != nil {
		t.Fatal(err)
	}
	berthDB := ledgertest.NewDB(t)
	fp := ledgertest.NewFingerprinter(t, berthDB)
	before := fp.MustTake(t)
	args := []string{"import", "placement", "--source", src, "--database-url", berthDB}
	errs := refused(t, "2 orphaned rows", args...)
	for _, want := range []string{"allocation id 2: consumer deadbeef-0000-4000-8000-000000000000 does not exist", "allocation id 3 of consumer c0000000-0000-4000-8000-000000000001: provider id 99 does not exist"} {
		if !strings.Contains(errs, want) {
			t.Errorf("orphans not listed: want %q in %s", want, errs)
		}
	}
	if diff := before.Diff(fp.MustTake(t)); len(diff) > 0 {
		t.Fatalf("a refused import wrote to %v", diff)
	}
	code, out, errs := berth(append(args, "--skip-orphans")...)
	if code != 0 || !strings.Contains(errs, "2 orphaned rows") {
		t.Fatalf("--skip-orphans: %d %s%s", code, out, errs)
	}
	if n := len(readBerth(t, berthDB).Allocations); n != 1 {
		t.Fatalf("%d allocations imported, want 1", n)
	}
}

func testExportRefusals(t *testing.T, maria *mariadbtest.Server) {
	berthDB := ledgertest.NewDB(t)
	// Names Berth keeps apart and utf8mb3_general_ci does not, and one
	// it cannot store.
	for i, name := range []string{"Node-A", "node-a", "node-b", "node-b ", "rack-🚀", "plain"} {
		ledgertest.Exec(t, berthDB, `INSERT INTO resource_providers (id, uuid, name, root_provider_id) VALUES ($1, $2, $3, $1)`,
			int64(i+1), fmt.Sprintf("%08x-0000-4000-8000-000000000000", i+1), name)
	}
	dst := syncedDB(t, maria, "export_refused")
	args := []string{"export", "placement", "--target", dst, "--database-url", berthDB}
	errs := refused(t, "cannot hold 3 of Berth's names", args...)
	for _, want := range []string{`"Node-A", "node-a"`, `"node-b", "node-b "`, `"rack-🚀": a 4-byte character`} {
		if !strings.Contains(errs, want) {
			t.Errorf("want %q listed in %s", want, errs)
		}
	}
	ledgertest.Exec(t, berthDB, `DELETE FROM resource_providers WHERE name <> 'plain'`)
	if code, out, errs := berth(args...); code != 0 {
		t.Fatalf("export: %d %s%s", code, out, errs)
	}
	refused(t, "not empty", args...)
}
