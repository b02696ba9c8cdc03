package ledger

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/berthd/berth/internal/telemetry/instrument"
	"github.com/berthd/berth/ledger/snapshot"
)

// ObservePool registers gauges and counters of the database connection
// pool, the claim writers and the provider writers on the global meter provider, read from stats at each collection.
// The returned function unregisters them; call it before the pool closes.
func ObservePool(stats func() PoolStats) (unregister func() error, err error) {
	m := otel.Meter(instrument.ScopeLedger)
	conns, err := m.Int64ObservableGauge("berth.db.pool.connections", metric.WithUnit("{connection}"),
		metric.WithDescription("Database pool connections by state (acquired, idle) and in total (total, max)"))
	if err != nil {
		return nil, err
	}
	acquires, err := m.Int64ObservableCounter("berth.db.pool.acquires", metric.WithUnit("{acquire}"),
		metric.WithDescription("Connections handed out; result=waited had to wait for one, result=canceled gave up waiting"))
	if err != nil {
		return nil, err
	}
	wait, err := m.Float64ObservableCounter("berth.db.pool.acquire_wait", metric.WithUnit("s"),
		metric.WithDescription("Total time spent waiting for a pool connection"))
	if err != nil {
		return nil, err
	}
	batches, err := m.Int64ObservableCounter("berth.db.claim_batches", metric.WithUnit("{transaction}"),
		metric.WithDescription("Transactions sent by the claim writers (group commit of new consumers' allocations)"))
	if err != nil {
		return nil, err
	}
	batched, err := m.Int64ObservableCounter("berth.db.claim_batch_claims", metric.WithUnit("{claim}"),
		metric.WithDescription("Claims sent by the claim writers; divided by berth.db.claim_batches, the mean batch size"))
	if err != nil {
		return nil, err
	}
	groups, err := m.Int64ObservableCounter("berth.db.provider_write_groups", metric.WithUnit("{transaction}"),
		metric.WithDescription("Transactions sent by the provider writers (group commit of provider creates, inventories, aggregates, traits, deletes)"))
	if err != nil {
		return nil, err
	}
	grouped, err := m.Int64ObservableCounter("berth.db.provider_write_group_writes", metric.WithUnit("{write}"),
		metric.WithDescription("Provider writes sent by the provider writers; divided by berth.db.provider_write_groups, the mean group size"))
	if err != nil {
		return nil, err
	}
	switches, err := m.Int64ObservableCounter("berth.db.primary_switches", metric.WithUnit("{switch}"),
		metric.WithDescription("Times new connections of a multi-host database URL landed on another host than before (failovers, switchovers)"))
	if err != nil {
		return nil, err
	}
	state := func(v string) metric.ObserveOption {
		return metric.WithAttributes(attribute.String("state", v))
	}
	result := func(v string) metric.ObserveOption {
		return metric.WithAttributes(attribute.String("result", v))
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := stats()
		o.ObserveInt64(conns, int64(st.AcquiredConns), state("acquired"))
		o.ObserveInt64(conns, int64(st.IdleConns), state("idle"))
		o.ObserveInt64(conns, int64(st.TotalConns), state("total"))
		o.ObserveInt64(conns, int64(st.MaxConns), state("max"))
		o.ObserveInt64(acquires, st.AcquireCount-st.EmptyAcquireCount, result("immediate"))
		o.ObserveInt64(acquires, st.EmptyAcquireCount, result("waited"))
		o.ObserveInt64(acquires, st.CanceledAcquireCount, result("canceled"))
		o.ObserveFloat64(wait, st.AcquireDuration.Seconds())
		o.ObserveInt64(batches, st.ClaimBatches)
		o.ObserveInt64(batched, st.BatchedClaims)
		o.ObserveInt64(groups, st.ProviderWriteGroups)
		o.ObserveInt64(grouped, st.GroupedProviderWrites)
		o.ObserveInt64(switches, st.PrimarySwitches)
		return nil
	}, conns, acquires, wait, batches, batched, groups, grouped, switches)
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}

// ObserveOverCapacity registers the gauge berth.inventory.over_capacity:
// how many provider classes have more allocated than their capacity
// (an inventory lowered below its usage, which Placement accepts), read
// with count at each collection. The returned function unregisters it.
func ObserveOverCapacity(count func(context.Context) (int64, error)) (unregister func() error, err error) {
	m := otel.Meter(instrument.ScopeLedger)
	over, err := m.Int64ObservableGauge("berth.inventory.over_capacity", metric.WithUnit("{class}"),
		metric.WithDescription("Provider resource classes whose usage is above their capacity (inventory lowered below usage); nothing more of them fits until usage falls. GET /capacity lists them."))
	if err != nil {
		return nil, err
	}
	reg, err := m.RegisterCallback(func(ctx context.Context, o metric.Observer) error {
		n, err := count(ctx)
		if err != nil {
			return err
		}
		o.ObserveInt64(over, n)
		return nil
	}, over)
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}

// ObserveSnapshot registers the snapshot's instruments, read with stats
// at each collection: the counter berth.snapshot.reloads (by kind, full
// or partial, and result, ok or failed), the gauge berth.snapshot.age
// (seconds since the last full reload ended; not observed before the
// first) and the gauge berth.snapshot.listening (1 while the change
// listener hears other processes' writes). The returned function
// unregisters them.
func ObserveSnapshot(stats func() snapshot.SnapshotStats) (unregister func() error, err error) {
	m := otel.Meter(instrument.ScopeLedger)
	reloads, err := m.Int64ObservableCounter("berth.snapshot.reloads", metric.WithUnit("{reload}"),
		metric.WithDescription("Reloads of the in-memory snapshot from the database, by kind (full, partial: the changed providers) and result (ok, failed)"))
	if err != nil {
		return nil, err
	}
	age, err := m.Float64ObservableGauge("berth.snapshot.age", metric.WithUnit("s"),
		metric.WithDescription("Seconds since the snapshot was last fully reloaded (the periodic refresh, --snapshot-refresh, repairs anything a lost notification left stale)"))
	if err != nil {
		return nil, err
	}
	listening, err := m.Int64ObservableGauge("berth.snapshot.listening",
		metric.WithDescription("1 while the change listener hears other processes' writes; 0 while it reconnects (readers then reload fully)"))
	if err != nil {
		return nil, err
	}
	attrs := func(kind, result string) metric.ObserveOption {
		return metric.WithAttributes(attribute.String("kind", kind), attribute.String("result", result))
	}
	reg, err := m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		st := stats()
		o.ObserveInt64(reloads, st.FullReloads, attrs("full", "ok"))
		o.ObserveInt64(reloads, st.PartialReloads, attrs("partial", "ok"))
		o.ObserveInt64(reloads, st.FailedReloads, attrs("any", "failed"))
		if !st.LastFullLoad.IsZero() {
			o.ObserveFloat64(age, time.Since(st.LastFullLoad).Seconds())
		}
		up := int64(0)
		if st.Listening {
			up = 1
		}
		o.ObserveInt64(listening, up)
		return nil
	}, reloads, age, listening)
	if err != nil {
		return nil, err
	}
	return reg.Unregister, nil
}
