package claims_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/berthd/berth/claims"
	"github.com/berthd/berth/internal/fault"
	"github.com/berthd/berth/ledger"
	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/engine"
	"github.com/berthd/berth/ledger/resources"
)

func lease(n int64) *int64 { return &n }

// expireLease moves consumer's lease into the past, as time would.
func (f *fixture) expireLease(consumer string) {
	f.t.Helper()
	f.sql(`UPDATE claim_state SET lease_expires_at = now() - interval '1 second' WHERE consumer_uuid = $1`, consumer)
}

// state reads consumer's stored claim (nil: none).
func (f *fixture) state(consumer string) *claimrecords.ClaimState {
	f.t.Helper()
	st, err := f.store.Claims.ClaimStateGet(f.ctx, consumer)
	if err != nil {
		f.t.Fatal(err)
	}
	return st
}

// TestLeaseReaperReleasesOnlyExpired: the reaper releases a provisional
// claim whose lease ran out, and nothing else: not a claim confirmed by
// PATCH, one renewed, one written through the Placement API since, one
// without a lease.
func TestLeaseReaperReleasesOnlyExpired(t *testing.T) {
	f := newFixture(t)
	rp := f.provider("cn1", 64)
	c := f.claimer(`{}`, "")
	claim := func(l *int64) string {
		p := params(1)
		p.LeaseSeconds = l
		if _, err := c.Claim(f.ctx, p); err != nil {
			t.Fatal(err)
		}
		return p.ConsumerUUID
	}
	expired, confirmed, renewed, placed, permanent := claim(lease(60)), claim(lease(60)), claim(lease(60)), claim(lease(60)), claim(nil)

	if st, err := c.Lease(f.ctx, confirmed, nil); err != nil || st.Claim.State != claimrecords.ClaimPermanent {
		t.Fatalf("confirm: %+v %v", st, err)
	}
	if st, err := c.Lease(f.ctx, renewed, lease(3600)); err != nil || st.Claim.State != claimrecords.ClaimProvisional ||
		st.Claim.LeaseSeconds != 3600 || len(st.Allocations) != 1 {
		t.Fatalf("renew: %+v %v", st, err)
	}
	f.expireLease(placed)
	put := resources.ConsumerAllocations{ConsumerUUID: placed, ProjectID: "p", UserID: "u", CheckGeneration: true, Generation: gen(1),
		Allocations: []engine.Allocation{{ProviderUUID: rp, Resources: []engine.ResourceAmount{{Class: "VCPU", Amount: 1}}}}}
	if err := f.store.Allocations.AllocationsReplace(f.ctx, []resources.ConsumerAllocations{put}); err != nil {
		t.Fatal(err)
	}
	f.expireLease(expired)
	if _, err := c.Lease(f.ctx, expired, lease(60)); !fault.HasCode(err, fault.ErrConflict, fault.CodeLeaseExpired) {
		t.Fatalf("renewal of an expired lease: %v", err)
	}

	n, err := c.ReapLeases(f.ctx)
	if err != nil || n != 1 {
		t.Fatalf("reaped %d, %v; want 1", n, err)
	}
	if got, _ := f.store.Allocations.AllocationsByConsumer(f.ctx, expired); got.Consumer != nil || f.state(expired) != nil {
		t.Fatalf("expired claim not released: %+v", got)
	}
	for _, kept := range []string{confirmed, renewed, placed, permanent} {
		got, _ := f.store.Allocations.AllocationsByConsumer(f.ctx, kept)
		if len(got.Allocations) != 1 || f.state(kept) == nil {
			t.Errorf("consumer %s lost its allocations or its claim: %+v", kept, got)
		}
	}
	if f.used(rp) != 4 {
		t.Fatalf("usage %d, want 4", f.used(rp))
	}
	if st := f.state(placed); st.State != claimrecords.ClaimPermanent {
		t.Fatalf("a Placement-API write left the claim %s", st.State)
	}
	if n, err := c.ReapLeases(f.ctx); err != nil || n != 0 {
		t.Fatalf("second pass reaped %d, %v", n, err)
	}
	if _, err := c.Stored(f.ctx, expired); !fault.HasCode(err, fault.ErrNotFound, fault.CodeNoClaim) {
		t.Fatalf("stored claim of a released consumer: %v", err)
	}
}

// TestLeaseBadInput: a lease outside 1 s to the maximum, a lease over
// permanent allocations, a PATCH of a consumer no claim placed: each a
// refusal with its code, and nothing written.
func TestLeaseBadInput(t *testing.T) {
	f := newFixture(t)
	a, _ := f.provider("a", 8), f.provider("b", 8)
	c, err := claims.New(claims.Deps{Store: f.store}, claims.Config{LeaseMax: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []int64{0, -1, 3601} {
		p := params(1)
		p.LeaseSeconds = lease(l)
		if _, err := c.Claim(f.ctx, p); !fault.HasCode(err, fault.ErrInvalid, fault.CodeInvalidLease) {
			t.Errorf("claim with lease %d: %v", l, err)
		}
		if got, _ := f.store.Allocations.AllocationsByConsumer(f.ctx, p.ConsumerUUID); got.Consumer != nil {
			t.Errorf("claim with lease %d wrote %+v", l, got)
		}
	}
	if f.used(a) != 0 {
		t.Fatal("refused leases wrote")
	}

	p := params(2)
	if _, err := c.Claim(f.ctx, p); err != nil {
		t.Fatal(err)
	}
	before, _ := f.store.Allocations.AllocationsByConsumer(f.ctx, p.ConsumerUUID)
	again := claims.Params{ConsumerUUID: p.ConsumerUUID, LeaseSeconds: lease(30)}
	if _, err := c.Reschedule(f.ctx, again, ""); !fault.HasCode(err, fault.ErrConflict, fault.CodeLeaseOnPermanent) {
		t.Fatalf("reschedule with a lease of a permanent claim: %v", err)
	}
	replace := params(1)
	replace.ConsumerUUID, replace.ConsumerGeneration, replace.LeaseSeconds = p.ConsumerUUID, gen(before.Consumer.Generation), lease(30)
	if _, err := c.Claim(f.ctx, replace); !fault.HasCode(err, fault.ErrConflict, fault.CodeLeaseOnPermanent) {
		t.Fatalf("claim with a lease over a permanent claim: %v", err)
	}
	after, _ := f.store.Allocations.AllocationsByConsumer(f.ctx, p.ConsumerUUID)
	if after.Consumer.Generation != before.Consumer.Generation || after.Allocations[0].ProviderUUID != before.Allocations[0].ProviderUUID {
		t.Fatalf("refused leases changed the consumer: %+v -> %+v", before, after)
	}
	if st := f.state(p.ConsumerUUID); st.State != claimrecords.ClaimPermanent {
		t.Fatalf("refused leases changed the claim: %+v", st)
	}
	if _, err := c.Lease(f.ctx, p.ConsumerUUID, lease(30)); !fault.HasCode(err, fault.ErrConflict, fault.CodeLeaseOnPermanent) {
		t.Fatalf("renewal of a permanent claim: %v", err)
	}
	if _, err := c.Lease(f.ctx, uuid.NewString(), nil); !fault.HasCode(err, fault.ErrNotFound, fault.CodeNoClaim) {
		t.Fatalf("PATCH of no claim: %v", err)
	}
	if _, err := c.Lease(f.ctx, p.ConsumerUUID, lease(0)); !fault.HasCode(err, fault.ErrInvalid, fault.CodeInvalidLease) {
		t.Fatalf("PATCH with lease 0: %v", err)
	}
}

// TestLeaseThroughRescheduleAndMove: a reschedule keeps a provisional
// claim provisional (its lease starting again); a move's lease, when it
// runs out, reverts the move, and the claim is as before the move.
func TestLeaseThroughRescheduleAndMove(t *testing.T) {
	f := newFixture(t)
	a, b := f.provider("a", 8), f.provider("b", 8)
	c := f.claimer(`{}`, "")
	p := params(3)
	p.LeaseSeconds = lease(60)
	if r, err := c.Claim(f.ctx, p); err != nil || r.Root != a {
		t.Fatalf("claim: %+v %v", r, err)
	}
	f.expireLease(p.ConsumerUUID)
	r, err := c.Reschedule(f.ctx, claims.Params{ConsumerUUID: p.ConsumerUUID}, "")
	if err != nil || r.Root != b {
		t.Fatalf("reschedule: %+v %v", r, err)
	}
	st := f.state(p.ConsumerUUID)
	if st.State != claimrecords.ClaimProvisional || st.Expired || st.LeaseSeconds != 60 || st.RootUUID != b || st.Op != claims.OpReschedule {
		t.Fatalf("after the reschedule: %+v", st)
	}
	if _, err := c.Lease(f.ctx, p.ConsumerUUID, nil); err != nil {
		t.Fatal(err)
	}

	// A move with a lease, from b back to a; the lease runs out.
	mig := uuid.NewString()
	if r, err := c.Move(f.ctx, claims.Params{ConsumerUUID: p.ConsumerUUID, LeaseSeconds: lease(600)}, mig); err != nil || r.Root != a {
		t.Fatalf("move: %+v %v", r, err)
	}
	if st := f.state(p.ConsumerUUID); st.State != claimrecords.ClaimMoving || st.MigrationUUID != mig || st.LeaseSeconds != 600 {
		t.Fatalf("moving: %+v", st)
	}
	if f.used(a) != 3 || f.used(b) != 3 {
		t.Fatalf("during the move a %d b %d", f.used(a), f.used(b))
	}
	f.expireLease(p.ConsumerUUID)
	if n, err := c.ReapLeases(f.ctx); err != nil || n != 1 {
		t.Fatalf("reaped %d, %v", n, err)
	}
	if f.used(a) != 0 || f.used(b) != 3 {
		t.Fatalf("after the move's lease ran out a %d b %d", f.used(a), f.used(b))
	}
	st = f.state(p.ConsumerUUID)
	if st.State != claimrecords.ClaimPermanent || st.RootUUID != b || st.MigrationUUID != "" || st.LeaseExpiresAt != nil {
		t.Fatalf("after the revert: %+v", st)
	}
	if got, _ := f.store.Allocations.AllocationsByConsumer(f.ctx, mig); got.Consumer != nil {
		t.Fatal("the migration consumer survived the revert")
	}
	// A confirm of the reverted move is refused, as after a client's revert.
	if _, err := c.Confirm(f.ctx, p.ConsumerUUID, mig); !errors.Is(err, fault.ErrConflict) {
		t.Fatalf("confirm after the reaper reverted: %v", err)
	}
}

// TestLeaseRace: claims with one-second leases from many goroutines,
// while others confirm some of them (PATCH), write others through the
// Placement API, and three reapers (three processes' stores) reap. At
// the end nothing confirmed was released, nothing provisional is left,
// and usage is exactly what the survivors hold, within capacity. Run
// with -race.
func TestLeaseRace(t *testing.T) {
	const (
		claimsN = 60
		workers = 12
		vcpu    = 40
	)
	f := newFixture(t)
	rps := []string{f.provider("r1", vcpu), f.provider("r2", vcpu)}
	var reapers []*claims.Claimer
	for range 3 {
		store, err := ledger.Open(f.ctx, ledger.Config{DatabaseURL: f.url, MaxConns: 4, SnapshotRefresh: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(store.Close)
		c, err := claims.New(claims.Deps{Store: store}, claims.Config{})
		if err != nil {
			t.Fatal(err)
		}
		reapers = append(reapers, c)
	}
	c := f.claimer(`{}`, "")
	ctx, stop := context.WithCancel(f.ctx)
	var reaping sync.WaitGroup
	for _, r := range reapers {
		reaping.Add(1)
		go func() { defer reaping.Done(); r.RunLeaseReaper(ctx, 50*time.Millisecond) }()
	}

	type outcome struct {
		consumer string
		placed   bool
		kept     bool // confirmed (PATCH or Placement-API write) or without a lease
	}
	out := make([]outcome, claimsN)
	next := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				o := &out[i]
				p := params(int64(1 + i%3))
				o.consumer = p.ConsumerUUID
				if i%5 != 4 {
					p.LeaseSeconds = lease(1)
				}
				r, err := c.Claim(ctx, p)
				var np *claims.NotPlacedError
				if errors.As(err, &np) {
					continue
				}
				if err != nil {
					t.Errorf("claim %d: %v", i, err)
					continue
				}
				o.placed, o.kept = true, p.LeaseSeconds == nil
				switch i % 5 {
				case 0: // confirmed at once
					_, err := c.Lease(ctx, p.ConsumerUUID, nil)
					o.kept = err == nil
					if err != nil && !fault.HasCode(err, fault.ErrConflict, fault.CodeLeaseExpired) && !fault.HasCode(err, fault.ErrNotFound, fault.CodeNoClaim) {
						t.Errorf("confirm %d: %v", i, err)
					}
				case 1: // written through the Placement API, as a compute agent does
					err := f.store.Allocations.AllocationsReplace(ctx, []resources.ConsumerAllocations{{ConsumerUUID: p.ConsumerUUID,
						ProjectID: p.ProjectID, UserID: p.UserID, CheckGeneration: true, Generation: gen(r.ConsumerGeneration),
						Allocations: r.Allocations}})
					o.kept = err == nil
					if err != nil && !fault.HasCode(err, fault.ErrConflict, fault.CodeConcurrentUpdate) {
						t.Errorf("PUT %d: %v", i, err)
					}
				case 2: // renewed, then left to run out
					if _, err := c.Lease(ctx, p.ConsumerUUID, lease(1)); err != nil &&
						!fault.HasCode(err, fault.ErrConflict, fault.CodeLeaseExpired) && !fault.HasCode(err, fault.ErrNotFound, fault.CodeNoClaim) {
						t.Errorf("renew %d: %v", i, err)
					}
				}
			}
		}()
	}
	for i := range claimsN {
		next <- i
	}
	close(next)
	wg.Wait()
	// Every lease has run out by now or soon will; wait until the reapers
	// have left no provisional claim (each pass reaps all that expired).
	deadline := time.Now().Add(time.Minute)
	for {
		provisional := 0
		for _, o := range out {
			if st := f.state(o.consumer); st != nil && st.State == claimrecords.ClaimProvisional {
				provisional++
			}
		}
		if provisional == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d provisional claims left a minute after their leases", provisional)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stop()
	reaping.Wait()

	held := map[string]int64{}
	kept := 0
	for i, o := range out {
		got, err := f.store.Allocations.AllocationsByConsumer(f.ctx, o.consumer)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case o.kept && len(got.Allocations) == 0:
			t.Errorf("claim %d was confirmed (or had no lease) and was released", i)
		case !o.kept && got.Consumer != nil:
			t.Errorf("claim %d was provisional and still holds %+v", i, got.Allocations)
		}
		for _, a := range got.Allocations {
			held[a.ProviderUUID] += a.Used
		}
		if o.kept {
			kept++
		}
	}
	for _, rp := range rps {
		if u := f.used(rp); u != held[rp] || u > vcpu {
			t.Errorf("provider %s: usage %d, held %d, capacity %d", rp, u, held[rp], vcpu)
		}
	}
	t.Logf("%d claims, %d kept", claimsN, kept)
	if kept == 0 || kept == claimsN {
		t.Fatalf("kept %d of %d: the race was not run", kept, claimsN)
	}
}

func gen(n int64) *int64 { return &n }

// TestLeaseReaperTelemetry: a release is traced (claims.leases.reap with
// a claims.lease.expire child naming the consumer), counted
// (berth.claim.leases.expired, action released) and logged, one line
// naming the consumer.
func TestLeaseReaperTelemetry(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	prevTracer, prevMeter := otel.GetTracerProvider(), otel.GetMeterProvider()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
	reader := sdkmetric.NewManualReader()
	otel.SetMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	t.Cleanup(func() { otel.SetTracerProvider(prevTracer); otel.SetMeterProvider(prevMeter) })

	f := newFixture(t)
	f.provider("cn1", 8)
	var logs strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logs.Write(p)
	}), nil))
	c, err := claims.New(claims.Deps{Store: f.store, Logger: log}, claims.Config{})
	if err != nil {
		t.Fatal(err)
	}
	p := params(1)
	p.LeaseSeconds = lease(30)
	if _, err := c.Claim(f.ctx, p); err != nil {
		t.Fatal(err)
	}
	f.expireLease(p.ConsumerUUID)
	if n, err := c.ReapLeases(f.ctx); err != nil || n != 1 {
		t.Fatalf("reaped %d, %v", n, err)
	}

	var reap, expire sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		switch s.Name() {
		case "claims.leases.reap":
			reap = s
		case "claims.lease.expire":
			expire = s
		}
	}
	if reap == nil || expire == nil || expire.Parent().SpanID() != reap.SpanContext().SpanID() {
		t.Fatalf("spans: reap %v, expire %v", reap, expire)
	}
	var consumer string
	for _, a := range expire.Attributes() {
		if a.Key == "berth.consumer_uuid" {
			consumer = a.Value.AsString()
		}
	}
	if consumer != p.ConsumerUUID {
		t.Errorf("claims.lease.expire names consumer %q, want %s", consumer, p.ConsumerUUID)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(f.ctx, &rm); err != nil {
		t.Fatal(err)
	}
	var released int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "berth.claim.leases.expired" {
				for _, dp := range sum.DataPoints {
					if v, _ := dp.Attributes.Value("action"); v.AsString() == "released" {
						released += dp.Value
					}
				}
			}
		}
	}
	if released != 1 {
		t.Errorf("berth.claim.leases.expired{action=released} = %d, want 1", released)
	}
	mu.Lock()
	defer mu.Unlock()
	if n := strings.Count(logs.String(), `msg="claims: lease expired; allocations released" consumer=`+p.ConsumerUUID); n != 1 {
		t.Errorf("%d release lines for the consumer in:\n%s", n, logs.String())
	}
}

// writerFunc is an io.Writer of a function.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestStoredNotTornByADelete: GET /claims/{consumer} (Stored) read
// while the consumer's allocations are deleted answers the claim with
// what it holds, or no claim: never the claim holding nothing (it read
// the stored claim, then the allocations after the delete). Found by the
// history checker (integration, issues 40 and 41).
func TestStoredNotTornByADelete(t *testing.T) {
	f := newFixture(t)
	f.provider("torn", 1000)
	c := f.claimer(`{}`, "")
	torn := 0
	for range 150 {
		p := params(1)
		if _, err := c.Claim(f.ctx, p); err != nil {
			t.Fatal(err)
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		var mu sync.Mutex
		for range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					st, err := c.Stored(f.ctx, p.ConsumerUUID)
					switch {
					case fault.HasCode(err, fault.ErrNotFound, fault.CodeNoClaim):
					case err != nil:
						t.Error(err)
					case st.Claim != nil && (len(st.Allocations) == 0 || st.ConsumerGeneration == 0):
						mu.Lock()
						if torn++; torn == 1 {
							t.Errorf("Stored answered the claim of %s (%s) holding %v at generation %d", p.ConsumerUUID, st.Claim.State, st.Allocations, st.ConsumerGeneration)
						}
						mu.Unlock()
					}
					select {
					case <-stop:
						return
					default:
					}
				}
			}()
		}
		if err := f.store.Allocations.AllocationsDelete(f.ctx, p.ConsumerUUID); err != nil {
			t.Fatal(err)
		}
		close(stop)
		wg.Wait()
	}
	if torn > 0 {
		t.Errorf("%d torn answers", torn)
	}
}
