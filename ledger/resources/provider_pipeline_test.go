package resources_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// TestProviderWritesFastAsGeneral runs one script of provider writes
// (creating providers, replacing inventories, aggregates and traits: the
// successes and every refusal of each, in the cases that lead a fast path
// back to the general path) against two stores on two databases, one
// taking the fast paths (provider_pipeline.go), one the general paths only,
// and requires the same answers, errors and warnings from both, and the
// same providers read back. Timestamps are compared only for being set.
func TestProviderWritesFastAsGeneral(t *testing.T) {
	fast, fastLog, fastURL := newLoggedStore(t)
	general, generalLog, generalURL := newLoggedStore(t)
	resources.SetGeneralWrites(general.Providers, true)

	fastOut := runProviderScript(t, fast, fastURL)
	generalOut := runProviderScript(t, general, generalURL)
	for i := range max(len(fastOut), len(generalOut)) {
		var f, g string
		if i < len(fastOut) {
			f = fastOut[i]
		}
		if i < len(generalOut) {
			g = generalOut[i]
		}
		if f != g {
			t.Errorf("step %d:\nfast:    %s\ngeneral: %s", i, f, g)
		}
	}
	// Every kind of write took its fast path where it could.
	if n := resources.FastWrites(fast.Providers); n < 20 {
		t.Errorf("%d writes took a fast path, want 20 or more", n)
	}
	if n := resources.FastWrites(general.Providers); n != 0 {
		t.Errorf("%d writes took a fast path on the general store", n)
	}
	if testing.Verbose() {
		for i, line := range fastOut {
			t.Logf("%2d %s", i, line)
		}
	}
	if f, g := warnings(fastLog), warnings(generalLog); f != g || !strings.Contains(f, "inventory set below current usage") {
		t.Errorf("warnings differ or are missing:\nfast:    %s\ngeneral: %s", f, g)
	}
}

// newLoggedStore opens a Store over a fresh database, logging into the
// buffer returned.
func newLoggedStore(t *testing.T) (*ledger.Store, *bytes.Buffer, string) {
	t.Helper()
	var log bytes.Buffer
	url := ledgertest.NewDB(t)
	s, err := ledger.Open(context.Background(), ledger.Config{DatabaseURL: url, MaxConns: 4,
		AcquireTimeout: ledgertest.AcquireTimeout, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, &log, url
}

var logTime = regexp.MustCompile(`time=\S+ `)

// warnings are the WARN lines of log, without their times.
func warnings(log *bytes.Buffer) string {
	var out []string
	for _, line := range strings.Split(log.String(), "\n") {
		if strings.Contains(line, "level=WARN") {
			out = append(out, logTime.ReplaceAllString(line, ""))
		}
	}
	return strings.Join(out, "\n")
}

// runProviderScript makes the script's writes and reads on s and returns
// what each answered, rendered without timestamps. dbURL is s's database.
func runProviderScript(t *testing.T, s *ledger.Store, dbURL string) []string {
	t.Helper()
	ctx := context.Background()
	db, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	const (
		a       = "a0000000-0000-4000-8000-00000000000a"
		b       = "b0000000-0000-4000-8000-00000000000b"
		child   = "c0000000-0000-4000-8000-00000000000c"
		missing = "f0000000-0000-4000-8000-00000000000f"
		agg1    = "1a000000-0000-4000-8000-000000000001"
		agg2    = "2a000000-0000-4000-8000-000000000002"
	)
	var out []string
	add := func(v any, err error) {
		if err != nil {
			le, ok := fault.As(err)
			if !ok {
				t.Fatalf("step %d: not a ledger error: %v", len(out), err)
			}
			out = append(out, fmt.Sprintf("error %v %q %q", le.Kind, le.Code, le.Msg))
			return
		}
		if p, ok := v.(engine.Provider); ok {
			// Row ids are not answers; a fast path that falls back
			// consumes one more value of the sequence.
			p.ID = 0
			v = p
		}
		out = append(out, render(v))
	}
	generation := func(rp string) *int64 {
		p, err := s.Providers.ProviderGet(ctx, rp)
		if err != nil {
			t.Fatal(err)
		}
		return &p.Generation
	}
	create := func(rp, name, parent string) {
		add(s.Providers.ProviderCreate(ctx, resources.ProviderCreateParams{UUID: rp, Name: name, ParentUUID: parent}))
	}
	putInv := func(rp string, gen *int64, zeroOK bool, invs ...engine.Inventory) {
		add(s.Providers.InventoriesReplace(ctx, resources.InventoryParams{ProviderUUID: rp, Generation: gen, ZeroCapacityOK: zeroOK}, invs))
	}
	putAggs := func(rp string, gen *int64, aggs ...string) {
		add(s.Providers.ProviderAggregatesReplace(ctx, rp, aggs, resources.AggregatesReplaceParams{Generation: gen}))
	}
	putTraits := func(rp string, gen int64, names ...string) {
		next, traits, err := s.Providers.ProviderTraitsReplace(ctx, rp, gen, names)
		add(fmt.Sprint(next, render(traits)), err)
	}
	reads := func(rp string) {
		add(s.Providers.ProviderGet(ctx, rp))
		add(s.Providers.InventoryList(ctx, rp))
		gen, aggs, err := s.Providers.ProviderAggregates(ctx, rp)
		add(fmt.Sprint(gen, aggs), err)
		gen, traits, err := s.Providers.ProviderTraits(ctx, rp)
		add(fmt.Sprint(gen, render(traits)), err)
	}
	if _, _, err := s.Providers.TraitEnsure(ctx, "CUSTOM_FAST"); err != nil {
		t.Fatal(err)
	}

	// Providers.
	create(a, "a", "")
	create("", "a", "")                                               // name taken
	create(a, "a-again", "")                                          // uuid taken
	create(a, "a", "")                                                // both: the name first
	create(strings.ReplaceAll(strings.ToUpper(b), "-", ""), "b", "")  // another spelling of b
	create(child, "child", a)                                         // a child: the general path on both
	create("d0000000-0000-4000-8000-00000000000d", "orphan", missing) // no such parent
	create("not-a-uuid", "bad", "")

	// Inventories.
	vcpu := func(total int64) engine.Inventory { return resources.DefaultInventory("VCPU", total) }
	mem := engine.Inventory{ResourceClass: "MEMORY_MB", Total: 4096, Reserved: 512, MinUnit: 16, MaxUnit: 2048, StepSize: 16, AllocationRatio: 1.5}
	disk := resources.DefaultInventory("DISK_GB", 100)
	putInv(a, ledgertest.Gen(0), false, vcpu(8), mem, disk)
	putInv(a, ledgertest.Gen(0), false, vcpu(8))                                           // stale generation
	putInv(a, generation(a), false, vcpu(8), resources.DefaultInventory("CUSTOM_NOPE", 1)) // no such class
	putInv(a, generation(a), false, engine.Inventory{ResourceClass: "VCPU", Total: 4, Reserved: 4, MinUnit: 1, MaxUnit: 4, StepSize: 1, AllocationRatio: 1})
	putInv(a, generation(a), true, engine.Inventory{ResourceClass: "VCPU", Total: 4, Reserved: 4, MinUnit: 1, MaxUnit: 4, StepSize: 1, AllocationRatio: 1}, mem, disk)
	putInv(missing, ledgertest.Gen(0), false, vcpu(1))
	putInv(strings.ToUpper(a), generation(a), false, vcpu(8), mem, disk) // not the stored spelling: not found, as in Placement
	putInv(a, generation(a), false, vcpu(8), mem, disk)
	putInv("not-a-uuid", ledgertest.Gen(0), false, vcpu(1))
	putInv(b, nil, false, disk, vcpu(2)) // no generation to check
	if err := s.Allocations.AllocationsReplace(ctx, []resources.ConsumerAllocations{{
		ConsumerUUID: "e0000000-0000-4000-8000-00000000000e", ProjectID: "p", UserID: "u",
		Allocations: []engine.Allocation{{ProviderUUID: a, Resources: []engine.ResourceAmount{
			{Class: "VCPU", Amount: 6}, {Class: "MEMORY_MB", Amount: 1024}}}},
	}}); err != nil {
		t.Fatal(err)
	}
	putInv(a, generation(a), false, mem, disk)           // VCPU in use
	putInv(a, generation(a), false)                      // everything, some in use
	putInv(a, generation(a), false, vcpu(2), mem, disk)  // below usage: a warning
	putInv(a, generation(a), false, vcpu(16), disk, mem) // another order
	putInv(b, generation(b), false)                      // remove everything
	putInv(b, generation(b), false)                      // nothing to remove
	reads(a)
	reads(b)

	// Aggregates.
	putAggs(a, generation(a), agg1, agg2)
	putAggs(a, ledgertest.Gen(0), agg1)    // stale generation
	putAggs(a, nil, strings.ToUpper(agg2)) // before 1.19: no generation
	putAggs(a, generation(a))              // none
	putAggs(a, generation(a), agg2, agg1)
	putAggs(missing, ledgertest.Gen(0), agg1)
	putAggs(strings.ToUpper(a), generation(a), agg1) // not the stored spelling
	putAggs(a, generation(a), "not-a-uuid")
	putAggs(missing, ledgertest.Gen(0), "not-a-uuid")
	putAggs(b, generation(b), agg2)
	// Aggregates the fast path's Store has seen written, gone since (as
	// after berth import --replace): they are created again.
	if _, err := db.Exec(ctx, `DELETE FROM resource_provider_aggregates; DELETE FROM placement_aggregates`); err != nil {
		t.Fatal(err)
	}
	putAggs(b, generation(b), agg1, agg2)

	// Traits.
	putTraits(a, *generation(a), "CUSTOM_FAST", "HW_CPU_X86_AVX2")
	putTraits(a, *generation(a), "HW_CPU_X86_AVX2", "CUSTOM_FAST") // the same set: no new generation
	putTraits(a, 0, "CUSTOM_FAST")                                 // stale generation
	putTraits(a, *generation(a), "CUSTOM_FAST", "CUSTOM_NOPE", "CUSTOM_ALSO_NOPE")
	putTraits(a, *generation(a), "CUSTOM_FAST", "CUSTOM_FAST")
	putTraits(a, *generation(a))
	putTraits(a, *generation(a))
	putTraits(missing, 0, "CUSTOM_FAST")
	putTraits(strings.ToUpper(a), *generation(a), "CUSTOM_FAST")
	putTraits(b, *generation(b), "HW_CPU_X86_SSE", "CUSTOM_FAST")
	putTraits(a, 1<<40, "CUSTOM_FAST") // a generation no provider has
	reads(a)
	reads(b)
	reads(child)

	// Deletes.
	delInv := func(rp string) { add(nil, s.Providers.InventoriesDelete(ctx, rp)) }
	delInv(a) // some in use
	delInv(child)
	delInv(strings.ToUpper(child)) // not the stored spelling: not found
	delInv(missing)
	add(s.Providers.InventoryList(ctx, child))
	del := func(rp string) { add(nil, s.Providers.ProviderDelete(ctx, rp)) }
	del(a)                      // children first
	del(strings.ToUpper(child)) // not the stored spelling
	del(child)
	del(a) // allocations
	del(b)
	del(b)
	del(missing)
	del("not-a-uuid")
	reads(a)
	return out
}

// render prints v with its timestamps replaced by whether they are set.
func render(v any) string {
	return stamp.ReplaceAllStringFunc(fmt.Sprintf("%+v", v), func(s string) string {
		if strings.HasPrefix(s, "0001-01-01") {
			return "<zero time>"
		}
		return "<time>"
	})
}

var stamp = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d+)? [+-]\d{4} \w+( m=[+-][\d.]+)?`)

// TestInventoriesReplaceRacesClaims: while claims of VCPU and DISK_GB come
// and go on a provider, another writer replaces its inventory over and
// over, with and without DISK_GB, by the fast path (no generation, as
// InventoriesReplace allows). The removal of DISK_GB must be refused
// while any of it is allocated, and a claim of DISK_GB refused while the
// provider has none: at no moment may an allocation lack its inventory,
// nor usage exceed capacity.
func TestInventoriesReplaceRacesClaims(t *testing.T) {
	f := newFixture(t)
	rp := f.Provider("racy", ledgertest.Inv("VCPU", 64), ledgertest.Inv("DISK_GB", 64))
	ctx, cancel := context.WithTimeout(f.Ctx, 10*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	var removed, refused, claimed atomic.Int64
	stop := make(chan struct{})
	wg.Add(1)
	go func() { // the inventory writer
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			invs := []engine.Inventory{ledgertest.Inv("VCPU", 64)}
			if i%2 == 1 {
				invs = append(invs, ledgertest.Inv("DISK_GB", 64))
			}
			_, err := f.Store.Providers.InventoriesReplace(ctx, resources.InventoryParams{ProviderUUID: rp}, invs)
			switch {
			case err == nil && len(invs) == 1:
				removed.Add(1)
			case err != nil:
				if le, ok := fault.As(err); !ok || le.Code != fault.CodeInventoryInUse {
					t.Errorf("replace: %v", err)
					return
				}
				refused.Add(1)
			}
		}
	}()
	for w := range 4 { // claimers
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				consumer := md5Text(fmt.Sprint("racer", w, "-", i))
				err := f.Store.Allocations.AllocationsReplace(ctx, []resources.ConsumerAllocations{
					ledgertest.Alloc(consumer, rp, ledgertest.Res("VCPU", 1), ledgertest.Res("DISK_GB", 1))})
				if err != nil {
					continue // no DISK_GB at the moment
				}
				claimed.Add(1)
				if err := f.Store.Allocations.AllocationsDelete(ctx, consumer); err != nil {
					t.Errorf("delete: %v", err)
					return
				}
			}
		}()
	}
	deadline := time.Now().Add(3 * time.Second)
	var broken error
	for time.Now().Before(deadline) && broken == nil && !t.Failed() {
		var orphans, over int
		if err := f.DB.QueryRow(f.Ctx, `
			SELECT
			  (SELECT count(*) FROM allocations a WHERE NOT EXISTS (
			     SELECT 1 FROM inventories i
			     WHERE i.resource_provider_id = a.resource_provider_id AND i.resource_class_id = a.resource_class_id)),
			  (SELECT count(*) FROM inventories i WHERE (SELECT COALESCE(sum(used), 0) FROM allocations a
			     WHERE a.resource_provider_id = i.resource_provider_id AND a.resource_class_id = i.resource_class_id)
			     > (i.total - i.reserved) * i.allocation_ratio)`).Scan(&orphans, &over); err != nil {
			broken = err
		} else if orphans != 0 || over != 0 {
			broken = fmt.Errorf("%d allocations without inventory, %d classes over capacity", orphans, over)
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if broken != nil {
		t.Fatal(broken)
	}
	t.Logf("%d removals of DISK_GB, %d refused as in use, %d claims", removed.Load(), refused.Load(), claimed.Load())
	if removed.Load() == 0 || refused.Load() == 0 || claimed.Load() == 0 {
		t.Errorf("the race did not happen: %d removals, %d refusals, %d claims", removed.Load(), refused.Load(), claimed.Load())
	}
}

// md5Text is a name-derived uuid for tests.
func md5Text(s string) string {
	h := md5.Sum([]byte(s))
	x := hex.EncodeToString(h[:])
	return x[0:8] + "-" + x[8:12] + "-4" + x[13:16] + "-8" + x[17:20] + "-" + x[20:32]
}
