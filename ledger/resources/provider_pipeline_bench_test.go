package resources_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/berthd/berth/internal/testing/proctest"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/internal/dbwork"
	"github.com/berthd/berth/ledger/resources"
)

// BenchmarkProviderWrites measures the writes that seed a cloud, as
// berth-load's seeding makes them (docs/performance.md): per compute
// node, POST /resource_providers, PUT inventories (VCPU, MEMORY_MB,
// DISK_GB), PUT aggregates and, on one node in ten, PUT traits, each
// kind in a phase of its own over 200 new nodes, in alternating rounds
// of four modes, on 2,000 seeded providers and one database connection:
//
//   - general: one write at a time, by the general paths only;
//   - fast: one write at a time, by the fast paths (provider_pipeline.go);
//   - alone: 32 writers at once, by the fast paths, each write in a
//     transaction of its own (no group commit);
//   - grouped: 32 writers at once, by the fast paths, group-committed
//     (provider_writers.go).
//
// It reports, per write of each kind, PostgreSQL's CPU (the backend's,
// from /proc/<pid>/stat, in ticks of 10 ms summed over the rounds) and
// the test process's CPU (the ledger and pgx, without HTTP), and for
// grouped the mean group size:
//
//	go test -run '^$' -bench ProviderWrites -benchtime 5x ./ledger/
func BenchmarkProviderWrites(b *testing.B) {
	ctx := context.Background()
	e, pid := newBackendBench(b, ctx)
	const nodes = 200
	kinds := []string{"create", "inventories", "aggregates", "traits"}
	invs := []engine.Inventory{
		{ResourceClass: "VCPU", Total: 64, MinUnit: 1, MaxUnit: 64, StepSize: 1, AllocationRatio: 4},
		{ResourceClass: "MEMORY_MB", Total: 262144, Reserved: 4096, MinUnit: 1, MaxUnit: 262144, StepSize: 1, AllocationRatio: 1},
		{ResourceClass: "DISK_GB", Total: 4000, Reserved: 100, MinUnit: 1, MaxUnit: 4000, StepSize: 1, AllocationRatio: 1},
	}
	seq := 0
	// round seeds nodes new nodes, phase by phase, and adds each phase's
	// CPU (PostgreSQL's in ticks, the process's) to pg[k] and own[k].
	round := func(pg []int64, own []time.Duration, writes []int, writers int) {
		base := seq
		seq += nodes
		uuid := func(i int) string { return dbwork.MD5UUID(fmt.Sprint("bench-node", base+i)) }
		phases := []func(i int) (bool, error){
			func(i int) (bool, error) {
				_, err := e.store.Providers.ProviderCreate(ctx, resources.ProviderCreateParams{UUID: uuid(i), Name: fmt.Sprint("bench-node-", base+i)})
				return true, err
			},
			func(i int) (bool, error) {
				_, err := e.store.Providers.InventoriesReplace(ctx, resources.InventoryParams{ProviderUUID: uuid(i), Generation: new(int64)}, invs)
				return true, err
			},
			func(i int) (bool, error) {
				gen := int64(1)
				_, err := e.store.Providers.ProviderAggregatesReplace(ctx, uuid(i), []string{dbwork.MD5UUID(fmt.Sprint("agg", i%10))},
					resources.AggregatesReplaceParams{Generation: &gen})
				return true, err
			},
			func(i int) (bool, error) {
				if i%10 != 0 {
					return false, nil
				}
				_, _, err := e.store.Providers.ProviderTraitsReplace(ctx, uuid(i), 2, []string{"CUSTOM_BENCH_TRAIT"})
				return true, err
			},
		}
		for k, phase := range phases {
			pgBefore, ownBefore := backendCPU(b, pid), proctest.ProcessCPU(b)
			var wrote atomic.Int64
			var wg sync.WaitGroup
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < nodes; i += writers {
						ok, err := phase(i)
						if err != nil {
							b.Error(err)
							return
						}
						if ok {
							wrote.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			if b.Failed() {
				b.FailNow()
			}
			writes[k] += int(wrote.Load())
			pg[k] += backendCPU(b, pid) - pgBefore
			own[k] += proctest.ProcessCPU(b) - ownBefore
		}
	}
	type mode struct {
		name   string
		pg     []int64
		own    []time.Duration
		writes []int
	}
	modes := []*mode{{name: "fast"}, {name: "general"}, {name: "alone"}, {name: "grouped"}}
	for _, m := range modes {
		m.pg, m.own, m.writes = make([]int64, len(kinds)), make([]time.Duration, len(kinds)), make([]int, len(kinds))
	}
	trips := resources.Writers(e.store.Providers)
	var groups, grouped int64
	run := func(m *mode) {
		resources.SetGeneralWrites(e.store.Providers, m.name == "general")
		resources.SetWriters(e.store.Providers, trips)
		writers := 1
		switch m.name {
		case "alone":
			resources.SetWriters(e.store.Providers, nil)
			writers = 32
		case "grouped":
			writers = 32
		}
		g0, w0 := trips.Groups.Load(), trips.Items.Load()
		round(m.pg, m.own, m.writes, writers)
		if m.name == "grouped" {
			groups += trips.Groups.Load() - g0
			grouped += trips.Items.Load() - w0
		}
	}
	// Warm both up (prepared statements, plans), unmeasured.
	for _, m := range modes {
		run(&mode{name: m.name, pg: make([]int64, len(kinds)), own: make([]time.Duration, len(kinds)), writes: make([]int, len(kinds))})
	}
	b.ResetTimer()
	for i := range b.N {
		for k := range modes {
			run(modes[(i+k)%len(modes)])
		}
	}
	b.StopTimer()
	resources.SetGeneralWrites(e.store.Providers, false)
	resources.SetWriters(e.store.Providers, trips)
	if groups > 0 {
		b.ReportMetric(float64(grouped)/float64(groups), "writes/group")
	}
	for _, m := range modes {
		for k, kind := range kinds {
			n := float64(m.writes[k])
			b.ReportMetric(float64(m.pg[k])*10/n, fmt.Sprintf("pg-ms/%s-%s", kind, m.name))
			b.ReportMetric(float64(m.own[k].Microseconds())/1000/n, fmt.Sprintf("go-ms/%s-%s", kind, m.name))
		}
	}
}
