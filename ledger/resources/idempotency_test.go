package resources_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/internal/pgcluster"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/ledgertest"
	"github.com/berthd/berth/ledger/resources"
)

// TestCommitNotReplicated: on a server whose commits wait for a
// synchronous standby that never comes, a cancel of the waiting backend
// (pg_cancel_backend here; a CancelRequest from any client) ends the
// wait and PostgreSQL commits locally with only a WARNING. The store
// must report such a commit as fault.ErrUnavailable, on the claim fast path
// and in a transaction alike, and a confirmed read of a claim record
// cannot succeed either.
func TestCommitNotReplicated(t *testing.T) {
	if _, err := pgcluster.FindBinaries(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	socketDir := dir
	if !pgcluster.SocketDirFits(socketDir, pgcluster.DefaultPort) {
		var err error
		if socketDir, err = os.MkdirTemp("/tmp", "berthsync-"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(socketDir) })
	}
	cluster, err := pgcluster.Start(ctx, pgcluster.Options{
		DataDir: filepath.Join(dir, "pg"), SocketDir: socketDir, NoSync: true, LoosenParents: true,
		Logger:   slog.New(slog.DiscardHandler),
		Settings: map[string]string{"synchronous_commit": "on", "wal_level": "replica", "max_wal_senders": "2"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop(context.Background()) })
	if err := cluster.CreateDatabase(ctx, "berth"); err != nil {
		t.Fatal(err)
	}
	url := cluster.URL("berth")
	// Setting up commits without waiting for the standby, which is asked
	// for once the database exists.
	local := url + "&synchronous_commit=local"
	if err := ledger.Migrate(ctx, local); err != nil {
		t.Fatal(err)
	}
	setup, err := ledger.Open(ctx, ledger.Config{DatabaseURL: local, SnapshotRefresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	rp := ledgertest.Provider(t, setup, "sync", resources.DefaultInventory("VCPU", 8))
	setup.Close()
	// The claims' owner exists, so that the first claim takes the fast
	// path (which writes claims of known names only).
	ledgertest.Exec(t, local, `INSERT INTO projects (external_id) VALUES ('p')`)
	ledgertest.Exec(t, local, `INSERT INTO users (external_id) VALUES ('u')`)

	store, err := ledger.Open(ctx, ledger.Config{DatabaseURL: local, SnapshotRefresh: -1, ClaimWriters: -1})
	if err != nil {
		t.Fatal(err)
	}
	store.Close()
	ledgertest.Exec(t, local, `ALTER SYSTEM SET synchronous_standby_names = 'nobody'`)
	ledgertest.Exec(t, local, `SELECT pg_reload_conf()`)
	time.Sleep(time.Second) // the checkpointer takes the setting in
	// The store under test commits synchronously; its setup (standard
	// classes and traits) is done, so Open writes nothing.
	store, err = ledger.Open(ctx, ledger.Config{DatabaseURL: url, SnapshotRefresh: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	admin, err := pgx.Connect(ctx, local)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	// cancelled runs write, which must wait for the standby, and cancels
	// the wait.
	cancelled := func(write func() error) error {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- write() }()
		for {
			select {
			case err := <-done:
				return err
			case <-time.After(50 * time.Millisecond):
			}
			if _, err := admin.Exec(ctx, `SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE wait_event = 'SyncRep'`); err != nil {
				t.Fatal(err)
			}
		}
	}
	unreplicated := func(what string, err error) {
		t.Helper()
		le, ok := fault.As(err)
		if !ok || !errors.Is(le, fault.ErrUnavailable) || !strings.Contains(le.Msg, "synchronous standby did not confirm") {
			t.Fatalf("%s: %v, want fault.ErrUnavailable for a commit the standby did not confirm", what, err)
		}
	}
	alloc := func(consumer string, gen *int64) []resources.ConsumerAllocations {
		return []resources.ConsumerAllocations{{ConsumerUUID: consumer, ProjectID: "p", UserID: "u", CheckGeneration: true,
			Generation: gen, Allocations: []engine.Allocation{{ProviderUUID: rp, Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 1}}}}}}
	}
	const c1 = "c1000000-0000-4000-8000-000000000001"
	// The fast path (one implicit transaction).
	unreplicated("fast path", cancelled(func() error {
		return store.Allocations.ClaimWrite(ctx, resources.ClaimWriteParams{Consumers: alloc(c1, nil),
			Request: &claimrecords.ClaimRequest{ConsumerUUID: c1, Op: "claim", Fingerprint: []byte{1}, Request: []byte(`{}`), Result: []byte(`{}`), Generation: 1}})
	}))
	// Committed here all the same.
	var allocs, records int
	if err := admin.QueryRow(ctx, `SELECT (SELECT count(*) FROM allocations a JOIN consumers c ON c.id = a.consumer_id WHERE c.uuid = $1),
		(SELECT count(*) FROM claim_requests WHERE consumer_uuid = $1)`, c1).Scan(&allocs, &records); err != nil || allocs != 1 || records != 1 {
		t.Fatalf("the locally committed write: %d allocations, %d records (%v), want 1 and 1", allocs, records, err)
	}
	// No read through the store shows it while the standby may lose it
	// (ledger/internal/core/replication.go, "Reads that outlive a
	// failover"): a statement, a
	// transaction, the snapshot.
	unreplicated("read of the record", cancelled(func() error {
		_, err := store.Claims.ClaimRequestGet(ctx, c1, "claim")
		return err
	}))
	unreplicated("read of the allocations", cancelled(func() error {
		_, err := store.Allocations.AllocationsByConsumer(ctx, c1)
		return err
	}))
	unreplicated("read of the snapshot", cancelled(func() error {
		_, err := store.Snapshots.Snapshot(ctx, nil, nil)
		return err
	}))
	// A confirmed read cannot confirm it.
	unreplicated("confirmed read", cancelled(func() error {
		_, err := store.Claims.ClaimRequestConfirmed(ctx, c1, "claim")
		return err
	}))
	// A transaction (the general path: a consumer generation given).
	one := int64(1)
	unreplicated("transaction", cancelled(func() error { return store.Allocations.AllocationsReplace(ctx, alloc(c1, &one)) }))

	// Once commits are confirmed again (no synchronous standby asked
	// for), the confirmed read answers.
	ledgertest.Exec(t, local, `ALTER SYSTEM SET synchronous_standby_names = ''`)
	ledgertest.Exec(t, local, `SELECT pg_reload_conf()`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := store.Claims.ClaimRequestConfirmed(ctx, c1, "claim")
		if err == nil && r != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("confirmed read after the reset: %+v %v", r, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
