package resources_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// TestRefusedWritesChangeNothing makes every kind of refusal happen, each
// in a write that would also have changed other things first, and checks
// that the ledger is byte for byte as before.
func TestRefusedWritesChangeNothing(t *testing.T) {
	f := newFixture(t)
	disk := ledgertest.Inv("DISK_GB", 100)
	disk.StepSize = 10
	disk.MinUnit = 10
	disk.MaxUnit = 50
	rp1 := f.Provider("rp1", ledgertest.Inv("VCPU", 8), disk)
	rp2 := f.Provider("rp2", ledgertest.Inv("VCPU", 4))
	c1, c2, c3 := uuid.NewString(), uuid.NewString(), uuid.NewString()
	if err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{
		ledgertest.Alloc(c1, rp1, ledgertest.Res("VCPU", 4), ledgertest.Res("DISK_GB", 50)),
		ledgertest.Alloc(c2, rp2, ledgertest.Res("VCPU", 2)),
	}); err != nil {
		t.Fatal(err)
	}
	two := func(a, b resources.ConsumerAllocations) []resources.ConsumerAllocations {
		return []resources.ConsumerAllocations{a, b}
	}
	withGen := func(w resources.ConsumerAllocations, g *int64) resources.ConsumerAllocations {
		w.CheckGeneration, w.Generation = true, g
		return w
	}
	typed := func(w resources.ConsumerAllocations) resources.ConsumerAllocations {
		w.ConsumerType, w.ProjectID, w.UserID = "NEWTYPE", "newproject", "newuser"
		return w
	}
	tests := []struct {
		name   string
		write  func() error
		kind   error
		code   string
		detail string
	}{
		{"over capacity after a move", func() error {
			return f.Store.Allocations.AllocationsReplace(f.Ctx, two(
				ledgertest.Alloc(c2, rp1, ledgertest.Res("VCPU", 1)), // would free rp2, take rp1
				typed(ledgertest.Alloc(c3, rp1, ledgertest.Res("VCPU", 4))),
			))
		}, fault.ErrConflict, "", "would exceed the capacity"},
		{"max_unit", func() error {
			return f.Store.Allocations.AllocationsReplace(f.Ctx, two(typed(ledgertest.Alloc(c3, rp2, ledgertest.Res("VCPU", 1))), ledgertest.Alloc(c1, rp1, ledgertest.Res("DISK_GB", 60))))
		}, fault.ErrConflict, "", "violate inventory constraints"},
		{"step_size", func() error {
			return f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{ledgertest.Alloc(c1, rp1, ledgertest.Res("DISK_GB", 15))})
		}, fault.ErrConflict, "", "violate inventory constraints"},
		{"class without inventory", func() error {
			return f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{ledgertest.Alloc(c1, rp2, ledgertest.Res("VCPU", 1), ledgertest.Res("DISK_GB", 10))})
		}, fault.ErrConflict, "", "Inventory for 'DISK_GB' on resource provider '" + rp2 + "' invalid"},
		{"unknown class", func() error {
			return f.Store.Allocations.AllocationsReplace(f.Ctx, two(typed(ledgertest.Alloc(c3, rp2, ledgertest.Res("VCPU", 1))), ledgertest.Alloc(c1, rp1, ledgertest.Res("CUSTOM_NOPE", 1))))
		}, fault.ErrInvalid, "", "No such resource class CUSTOM_NOPE"},
		{"unknown provider", func() error {
			return f.Store.Allocations.AllocationsReplace(f.Ctx, two(typed(ledgertest.Alloc(c3, rp2, ledgertest.Res("VCPU", 1))), ledgertest.Alloc(c1, uuid.NewString(), ledgertest.Res("VCPU", 1))))
		}, fault.ErrInvalid, "", "that does not exist"},
		{"stale consumer generation", func() error {
			return f.Store.Allocations.AllocationsReplace(f.Ctx, two(
				withGen(typed(ledgertest.Alloc(c3, rp2, ledgertest.Res("VCPU", 1))), nil),
				withGen(ledgertest.Alloc(c1, rp1, ledgertest.Res("VCPU", 1)), ledgertest.Gen(0)),
			))
		}, fault.ErrConflict, fault.CodeConcurrentUpdate, "expected 1 but got 0"},
		{"new consumer with a generation", func() error {
			return f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{withGen(ledgertest.Alloc(c3, rp2, ledgertest.Res("VCPU", 1)), ledgertest.Gen(3))})
		}, fault.ErrConflict, fault.CodeConcurrentUpdate, "expected null but got 3"},
		{"existing consumer without a generation", func() error {
			return f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{withGen(ledgertest.Alloc(c1, rp1, ledgertest.Res("VCPU", 1)), nil)})
		}, fault.ErrConflict, fault.CodeConcurrentUpdate, "expected 1 but got None"},
		{"replace removes a class in use", func() error {
			_, err := f.Store.Providers.InventoriesReplace(f.Ctx, resources.InventoryParams{ProviderUUID: rp1, Generation: ledgertest.Gen(2)},
				[]engine.Inventory{ledgertest.Inv("VCPU", 100), ledgertest.Inv("MEMORY_MB", 10)})
			return err
		}, fault.ErrConflict, fault.CodeInventoryInUse, "Inventory for 'DISK_GB' on resource provider '" + rp1 + "' in use"},
		{"replace with a stale generation", func() error {
			_, err := f.Store.Providers.InventoriesReplace(f.Ctx, resources.InventoryParams{ProviderUUID: rp1, Generation: ledgertest.Gen(1)},
				[]engine.Inventory{ledgertest.Inv("VCPU", 100), disk})
			return err
		}, fault.ErrConflict, fault.CodeConcurrentUpdate, "generation conflict"},
		{"replace with an unknown class", func() error {
			_, err := f.Store.Providers.InventoriesReplace(f.Ctx, resources.InventoryParams{ProviderUUID: rp1, Generation: ledgertest.Gen(2)},
				[]engine.Inventory{ledgertest.Inv("VCPU", 100), disk, ledgertest.Inv("CUSTOM_NOPE", 1)})
			return err
		}, fault.ErrInvalid, "", "No such resource class CUSTOM_NOPE"},
		{"reserved above total", func() error {
			bad := ledgertest.Inv("VCPU", 8)
			bad.Reserved = 9
			_, err := f.Store.Providers.InventoryUpdate(f.Ctx, resources.InventoryParams{ProviderUUID: rp1, ZeroCapacityOK: true}, bad)
			return err
		}, fault.ErrInvalid, "", "reserved value is greater than total"},
		{"delete inventory in use", func() error {
			return f.Store.Providers.InventoryDelete(f.Ctx, rp2, "VCPU")
		}, fault.ErrConflict, fault.CodeConcurrentUpdate, "in use"},
		{"delete all inventory in use", func() error {
			return f.Store.Providers.InventoriesDelete(f.Ctx, rp1)
		}, fault.ErrConflict, fault.CodeInventoryInUse, "Inventory for 'VCPU, DISK_GB'"},
		{"reshape with a stale provider generation", func() error {
			return f.Store.Allocations.Reshape(f.Ctx, resources.ReshapeParams{
				Inventories: []resources.ProviderInventoryWrite{{ProviderUUID: rp2, Generation: 1, Inventories: []engine.Inventory{ledgertest.Inv("VCPU", 10)}}},
				Allocations: []resources.ConsumerAllocations{withGen(typed(ledgertest.Alloc(c3, rp1, ledgertest.Res("VCPU", 1))), nil)},
			})
		}, fault.ErrConflict, fault.CodeConcurrentUpdate, "actual: 2, given: 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := f.Dump()
			le := ledgertest.Rejection(t, tt.write(), tt.kind)
			if le.Code != tt.code {
				t.Errorf("code %q, want %q", le.Code, tt.code)
			}
			if !strings.Contains(le.Msg, tt.detail) {
				t.Errorf("message %q lacks %q", le.Msg, tt.detail)
			}
			if after := f.Dump(); after != before {
				t.Errorf("refused write changed the ledger:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// TestAllocationGenerations checks the generation rules tests and clients
// rely on: a write bumps each provider it names and each consumer once;
// emptying a consumer counts its old providers and deletes it; DELETE
// bumps nothing.
func TestAllocationGenerations(t *testing.T) {
	f := newFixture(t)
	rp1 := f.Provider("rp1", ledgertest.Inv("VCPU", 8))
	rp2 := f.Provider("rp2", ledgertest.Inv("VCPU", 8))
	c1, c2 := uuid.NewString(), uuid.NewString()
	put := func(ws ...resources.ConsumerAllocations) {
		t.Helper()
		if err := f.Store.Allocations.AllocationsReplace(f.Ctx, ws); err != nil {
			t.Fatal(err)
		}
	}
	gens := func() (int64, int64) {
		return f.Usages(rp1).Generation, f.Usages(rp2).Generation
	}
	put(ledgertest.Alloc(c1, rp1, ledgertest.Res("VCPU", 2)))
	if g1, g2 := gens(); g1 != 2 || g2 != 1 {
		t.Fatalf("after first write: %d %d", g1, g2)
	}
	// A move: rp2 is named, rp1 (left behind) is not bumped, as in Placement.
	put(ledgertest.Alloc(c1, rp2, ledgertest.Res("VCPU", 2)))
	if g1, g2 := gens(); g1 != 2 || g2 != 2 {
		t.Fatalf("after move: %d %d", g1, g2)
	}
	got, _ := f.Store.Allocations.AllocationsByConsumer(f.Ctx, c1)
	if got.Consumer.Generation != 2 {
		t.Fatalf("consumer generation %d", got.Consumer.Generation)
	}
	// Emptying c1 (while c2 takes rp1) bumps rp2 through c1's old
	// allocations, rp1 through c2's new one, and deletes c1.
	put(resources.ConsumerAllocations{ConsumerUUID: c1}, ledgertest.Alloc(c2, rp1, ledgertest.Res("VCPU", 8)))
	if g1, g2 := gens(); g1 != 3 || g2 != 3 {
		t.Fatalf("after emptying: %d %d", g1, g2)
	}
	if got, _ := f.Store.Allocations.AllocationsByConsumer(f.Ctx, c1); got.Consumer != nil {
		t.Fatalf("emptied consumer still exists: %+v", got.Consumer)
	}
	if err := f.Store.Allocations.AllocationsDelete(f.Ctx, c2); err != nil {
		t.Fatal(err)
	}
	if g1, g2 := gens(); g1 != 3 || g2 != 3 {
		t.Fatalf("after delete: %d %d", g1, g2)
	}
	ledgertest.Rejection(t, f.Store.Allocations.AllocationsDelete(f.Ctx, c2), fault.ErrNotFound)
	if u := f.Usages(rp1); u.Usages["VCPU"] != 0 {
		t.Fatalf("usage after delete: %v", u.Usages)
	}
}

// TestUsagesByConsumerType covers GET /usages at 1.38, which upstream
// Placement cannot answer on PostgreSQL.
func TestUsagesByConsumerType(t *testing.T) {
	f := newFixture(t)
	rp := f.Provider("rp", ledgertest.Inv("VCPU", 64), ledgertest.Inv("DISK_GB", 1000))
	typed := func(w resources.ConsumerAllocations, typ string) resources.ConsumerAllocations {
		w.ConsumerType = typ
		return w
	}
	other := ledgertest.Alloc(uuid.NewString(), rp, ledgertest.Res("VCPU", 5))
	other.ProjectID = "other"
	if err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{
		typed(ledgertest.Alloc(uuid.NewString(), rp, ledgertest.Res("VCPU", 1), ledgertest.Res("DISK_GB", 10)), "INSTANCE"),
		typed(ledgertest.Alloc(uuid.NewString(), rp, ledgertest.Res("VCPU", 2)), "INSTANCE"),
		typed(ledgertest.Alloc(uuid.NewString(), rp, ledgertest.Res("DISK_GB", 20)), "MIGRATION"),
		ledgertest.Alloc(uuid.NewString(), rp, ledgertest.Res("VCPU", 4)),
		other,
	}); err != nil {
		t.Fatal(err)
	}
	render := func(gs []resources.UsageGroup) string {
		var parts []string
		for _, g := range gs {
			parts = append(parts, g.ConsumerType+":"+itoa(g.ConsumerCount)+":"+
				"VCPU="+itoa(g.Usages["VCPU"])+",DISK_GB="+itoa(g.Usages["DISK_GB"]))
		}
		return strings.Join(parts, " ")
	}
	tests := []struct {
		p    resources.UsagesParams
		want string
	}{
		{resources.UsagesParams{ProjectID: "proj"}, ":4:VCPU=7,DISK_GB=30"},
		{resources.UsagesParams{ProjectID: "proj", UserID: "nobody"}, ":0:VCPU=0,DISK_GB=0"},
		{resources.UsagesParams{ProjectID: "proj", ByType: true}, "INSTANCE:2:VCPU=3,DISK_GB=10 MIGRATION:1:VCPU=0,DISK_GB=20 unknown:1:VCPU=4,DISK_GB=0"},
		{resources.UsagesParams{ProjectID: "proj", ByType: true, ConsumerType: "all"}, "all:4:VCPU=7,DISK_GB=30"},
		{resources.UsagesParams{ProjectID: "proj", ByType: true, ConsumerType: "unknown"}, "unknown:1:VCPU=4,DISK_GB=0"},
		{resources.UsagesParams{ProjectID: "proj", ByType: true, ConsumerType: "INSTANCE"}, "INSTANCE:2:VCPU=3,DISK_GB=10"},
		{resources.UsagesParams{ProjectID: "proj", ByType: true, ConsumerType: "ALL"}, ""},
		{resources.UsagesParams{ProjectID: "other", ByType: true}, "unknown:1:VCPU=5,DISK_GB=0"},
	}
	for _, tt := range tests {
		gs, err := f.Store.Providers.Usages(f.Ctx, tt.p)
		if err != nil {
			t.Fatal(err)
		}
		if got := render(gs); got != tt.want {
			t.Errorf("%+v: got %q, want %q", tt.p, got, tt.want)
		}
	}
}

// TestReshapeMovesToChild moves inventory and allocations from a root to a
// child in one reshape, as a virt driver does when it starts modelling
// NUMA nodes.
func TestReshapeMovesToChild(t *testing.T) {
	f := newFixture(t)
	root := f.Provider("root", ledgertest.Inv("VCPU", 8), ledgertest.Inv("DISK_GB", 100))
	child := f.Provider("child")
	c1 := uuid.NewString()
	w := ledgertest.Alloc(c1, root, ledgertest.Res("VCPU", 6), ledgertest.Res("DISK_GB", 10))
	if err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{w}); err != nil {
		t.Fatal(err)
	}
	moved := resources.ConsumerAllocations{
		ConsumerUUID: c1, ProjectID: "proj", UserID: "user", CheckGeneration: true, Generation: ledgertest.Gen(1),
		Allocations: []engine.Allocation{
			{ProviderUUID: root, Resources: []engine.ResourceAmount{ledgertest.Res("DISK_GB", 10)}},
			{ProviderUUID: child, Resources: []engine.ResourceAmount{ledgertest.Res("VCPU", 6)}},
		},
	}
	if err := f.Store.Allocations.Reshape(f.Ctx, resources.ReshapeParams{
		Inventories: []resources.ProviderInventoryWrite{
			{ProviderUUID: root, Generation: 2, Inventories: []engine.Inventory{ledgertest.Inv("DISK_GB", 100)}},
			{ProviderUUID: child, Generation: 0, Inventories: []engine.Inventory{ledgertest.Inv("VCPU", 8)}},
		},
		Allocations: []resources.ConsumerAllocations{moved},
	}); err != nil {
		t.Fatal(err)
	}
	ur, uc := f.Usages(root), f.Usages(child)
	if len(ur.Usages) != 1 || ur.Usages["DISK_GB"] != 10 || ur.Generation != 5 {
		t.Errorf("root: %+v", ur)
	}
	if len(uc.Usages) != 1 || uc.Usages["VCPU"] != 6 || uc.Generation != 3 {
		t.Errorf("child: %+v", uc)
	}
	got, _ := f.Store.Allocations.AllocationsByConsumer(f.Ctx, c1)
	if got.Consumer.Generation != 2 || len(got.Allocations) != 2 {
		t.Errorf("consumer after reshape: %+v %+v", got.Consumer, got.Allocations)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestOwnerRowsAreNeverDeleted: consumers hold their project, user and
// type, and allocations their consumer, without foreign keys
// (migrations/0020). That is sound only while no statement deletes a
// project, a user or a consumer type, and consumers are deleted only by
// allocation.go's statements (TestConsumerDeletesLeaveNoAllocations).
// Every SQL the module runs is in its non-test Go files and its
// migrations: none may delete from those tables elsewhere, or truncate
// them without what refers to them.
func TestOwnerRowsAreNeverDeleted(t *testing.T) {
	deletes := regexp.MustCompile(`(?i)\bDELETE\s+FROM\s+(ONLY\s+)?(projects|users|consumer_types|consumers)\b`)
	truncates := regexp.MustCompile(`(?is)\bTRUNCATE\s+(TABLE\s+)?([^;'"` + "`" + `]*)`)
	owners := regexp.MustCompile(`\b(projects|users|consumer_types)\b`)
	consumers := regexp.MustCompile(`\bconsumers\b`)
	allocations := regexp.MustCompile(`\ballocations\b`)
	root := filepath.Join("..", "..")
	files, consumerDeletes := 0, 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && path != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !(strings.HasSuffix(path, ".go") && !strings.HasSuffix(path, "_test.go") || strings.HasSuffix(path, ".sql")) {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, m := range deletes.FindAllSubmatch(b, -1) {
			if string(m[2]) == "consumers" && path == filepath.Join(root, "ledger", "resources", "allocation.go") {
				consumerDeletes++
				continue
			}
			t.Errorf("%s: %s", path, m[0])
		}
		for _, m := range truncates.FindAllSubmatch(b, -1) {
			if owners.Match(m[2]) && !consumers.Match(m[2]) || consumers.Match(m[2]) && !allocations.Match(m[2]) {
				t.Errorf("%s: TRUNCATE %s without what refers to them", path, m[2])
			}
		}
		return nil
	})
	if err != nil || files < 100 || consumerDeletes != 2 {
		t.Fatalf("read %d files, %d deletes of consumers in allocation.go: %v", files, consumerDeletes, err)
	}
}

// TestConsumerDeletesLeaveNoAllocations: allocations have no foreign key
// to their consumer (migrations/0020), so every delete of a consumer
// must take its allocations with it: DELETE /allocations, the audit's
// DeleteConsumer, a write that leaves a consumer with nothing; and
// writers of the same consumers racing deletes of them leave no
// allocation whose consumer is gone.
func TestConsumerDeletesLeaveNoAllocations(t *testing.T) {
	f := newFixture(t)
	f.Known([]string{"proj"}, []string{"user"}, []string{"INSTANCE"})
	rps := []string{f.Provider("rp1", ledgertest.Inv("VCPU", 1000)), f.Provider("rp2", ledgertest.Inv("VCPU", 1000))}
	orphans := func() {
		t.Helper()
		var n int
		if err := f.DB.QueryRow(f.Ctx, `SELECT count(*) FROM allocations a
			WHERE NOT EXISTS (SELECT 1 FROM consumers c WHERE c.id = a.consumer_id)`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("%d allocations without their consumer (%v)", n, err)
		}
	}
	two := func(consumer string) resources.ConsumerAllocations {
		w := ledgertest.Alloc(consumer, rps[0], ledgertest.Res("VCPU", 1))
		w.Allocations = append(w.Allocations, engine.Allocation{ProviderUUID: rps[1],
			Resources: []engine.ResourceAmount{ledgertest.Res("VCPU", 2)}})
		return w
	}
	write := func(ws ...resources.ConsumerAllocations) {
		t.Helper()
		if err := f.Store.Allocations.AllocationsReplace(f.Ctx, ws); err != nil {
			t.Fatal(err)
		}
	}

	a, b, c := uuid.NewString(), uuid.NewString(), uuid.NewString()
	write(two(a))
	write(two(b))
	write(two(c))
	if err := f.Store.Allocations.AllocationsDelete(f.Ctx, a); err != nil {
		t.Fatal(err)
	}
	orphans()
	write(resources.ConsumerAllocations{ConsumerUUID: b, ProjectID: "proj", UserID: "user"})
	orphans()
	tx, err := f.DB.Begin(f.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	txn := &core.Txn{Tx: tx}
	locked, err := resources.LockConsumers(f.Ctx, txn, []string{c})
	if err != nil || locked[c] == nil {
		t.Fatalf("lock %s: %v, %v", c, locked, err)
	}
	if err := resources.DeleteConsumer(f.Ctx, txn, locked[c].ID); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(f.Ctx); err != nil {
		t.Fatal(err)
	}
	orphans()
	var left int
	if err := f.DB.QueryRow(f.Ctx, `SELECT (SELECT count(*) FROM consumers) + (SELECT count(*) FROM allocations)`).Scan(&left); err != nil || left != 0 {
		t.Fatalf("%d consumers and allocations left (%v)", left, err)
	}

	// Writers replace (or empty) the allocations of their consumer and
	// claim new ones, while deleters delete any of those consumers. (One
	// writer per consumer: two writers creating the same consumer while
	// it is deleted is TestConsumerCreatedWhileDeletedElsewhere.)
	const workers, rounds = 4, 25
	shared := make([]string, workers)
	for i := range shared {
		shared[i] = uuid.NewString()
	}
	var wg sync.WaitGroup
	errs := make(chan error, 3*workers*rounds)
	for w := range workers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range rounds {
				write := two(shared[w])
				if i%4 == 3 {
					write.Allocations = nil // leaves the consumer with nothing
				}
				ws := []resources.ConsumerAllocations{write}
				if i%2 == 0 { // and a claim: a new consumer, the fast path
					ws = append(ws, ledgertest.NewClaim(uuid.NewString(), rps[i/2%2], ledgertest.Res("VCPU", 1)))
				}
				var le *fault.Error
				for _, one := range ws {
					if err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{one}); err != nil && !errors.As(err, &le) {
						errs <- err
					}
				}
			}
		}()
		go func() {
			defer wg.Done()
			f.deleteRounds(shared, w, rounds, errs)
		}()
	}
	wg.Wait()
	reportErrs(t, errs)
	orphans()
}

// TestConsumerCreatedWhileDeletedElsewhere has writers create the same
// consumers while deleters delete them: a writer that finds its consumer
// created by another and then deleted before it could lock it tries
// again, and every refusal is a fault (a 4xx), never an internal error.
func TestConsumerCreatedWhileDeletedElsewhere(t *testing.T) {
	f := newFixture(t)
	f.Known([]string{"proj"}, []string{"user"}, []string{"INSTANCE"})
	rp := f.Provider("rp1", ledgertest.Inv("VCPU", 100000))
	const consumers, writers, rounds = 2, 4, 60
	shared := make([]string, consumers)
	for i := range shared {
		shared[i] = uuid.NewString()
	}
	var wg sync.WaitGroup
	errs := make(chan error, (writers+2)*rounds)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				write := ledgertest.Alloc(shared[(w+i)%consumers], rp, ledgertest.Res("VCPU", 1))
				var fe *fault.Error
				if err := f.Store.Allocations.AllocationsReplace(f.Ctx, []resources.ConsumerAllocations{write}); err != nil && !errors.As(err, &fe) {
					errs <- err
				}
			}
		}()
	}
	for d := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.deleteRounds(shared, d, rounds, errs)
		}()
	}
	wg.Wait()
	reportErrs(t, errs)
	var n int
	if err := f.DB.QueryRow(f.Ctx, `SELECT count(*) FROM allocations a
		WHERE NOT EXISTS (SELECT 1 FROM consumers c WHERE c.id = a.consumer_id)`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d allocations without their consumer (%v)", n, err)
	}
}

// deleteRounds deletes the allocations of consumers rounds times, from
// the one at from on, round robin; a consumer already gone is no error.
func (f *fixture) deleteRounds(consumers []string, from, rounds int, errs chan<- error) {
	for i := range rounds {
		err := f.Store.Allocations.AllocationsDelete(f.Ctx, consumers[(from+i)%len(consumers)])
		if err != nil && !errors.Is(err, fault.ErrNotFound) {
			errs <- err
		}
	}
}

// reportErrs closes errs and fails the test on each error sent to it.
func reportErrs(t *testing.T, errs chan error) {
	t.Helper()
	close(errs)
	for err := range errs {
		t.Errorf("write or delete: %v", err)
	}
}
