package resources

import (
	"context"

	"github.com/berthd/berth/ledger/claimrecords"
	"github.com/berthd/berth/ledger/internal/core"
	"github.com/berthd/berth/ledger/quotas"
	"github.com/jackc/pgx/v5"
)

// FastClaim is a claim the one-round-trip write takes, for the
// benchmarks of its statements.
type FastClaim = fastClaim

// FastClaimOf is fastClaimOf.
func FastClaimOf(ws []ConsumerAllocations) (FastClaim, bool) { return fastClaimOf(ws) }

// Recorded gives fc the retry record of a claim.
func Recorded(fc FastClaim) FastClaim {
	fc.request = &claimrecords.ClaimRequest{ConsumerUUID: fc.consumer, Op: "claim", Fingerprint: []byte{1},
		Request: []byte(`{}`), Result: []byte(`{}`)}
	return fc
}

// SendWrites sends fcs one statement each, in one implicit transaction
// (sendWrites).
func SendWrites(ctx context.Context, a *Allocations, fcs []FastClaim) ([]*core.OwnWrite, error) {
	return a.sendWrites(ctx, fcs)
}

// SendBatchWrite sends fcs as one batch statement (sendBatchWrite).
func SendBatchWrite(ctx context.Context, a *Allocations, fcs []FastClaim) ([]*core.OwnWrite, int, error) {
	return a.sendBatchWrite(ctx, fcs)
}

// BackendPID is the process id of the backend of a's pool's connection
// (a pool of one).
func BackendPID(ctx context.Context, a *Allocations) (int, error) {
	var pid int
	err := a.core.Pool.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid)
	return pid, err
}

// SetGeneralWrites makes p write providers, inventories, aggregates and
// traits by the general path only (on) or fast path first (off), so that
// tests can compare the two. Call it before p is used.
func SetGeneralWrites(p *Providers, on bool) { p.generalWrites = on }

// FastWrites reports how many provider writes p's fast paths committed.
func FastWrites(p *Providers) int64 { return p.fastWrites.Load() }

// Writers returns p's provider writers (nil: every write goes alone), and
// SetWriters replaces them, so that a benchmark can compare the two.
func Writers(p *Providers) *core.GroupWriter[oneTrip, struct{}] { return p.trips }

func SetWriters(p *Providers, w *core.GroupWriter[oneTrip, struct{}]) { p.trips = w }

// ProviderGroups reports how many groups p's provider writers sent and
// how many writes they held.
func ProviderGroups(p *Providers) (groups, writes int64) {
	groups, writes, _ = p.WriterStats()
	return groups, writes
}

// QueuedProviderWrites reports how many provider writes wait for p's
// provider writers.
func QueuedProviderWrites(p *Providers) int {
	_, _, queued := p.WriterStats()
	return queued
}

// WithQuota checks fc against q.
func WithQuota(fc FastClaim, q *quotas.Quota) FastClaim {
	fc.quota = quotaArgsFor(q, fc.project)
	return fc
}

// SendFast sends fc alone (sendFast).
func SendFast(ctx context.Context, a *Allocations, fc FastClaim) (*core.OwnWrite, error) {
	return a.sendFast(ctx, fc)
}

// SendTraitsAgain sends the fast path of a traits write (generation, names)
// on the provider rpUUID first on dead, a connection whose server
// has ended it, where the send fails while pgx prepares its statements,
// and then through p alone, as a write whose group failed as a whole is
// sent again (provider_writers.go). It returns the first send's error,
// and the second's with the generation it answered.
func SendTraitsAgain(ctx context.Context, p *Providers, dead *pgx.Conn, rpUUID string, generation int64, names []string) (first error, next int64, err error) {
	stored, _ := core.StoredUUID(rpUUID)
	var traits []Trait
	w := traitsReplaceTrip(stored, generation, names, &next, &traits)
	first = dead.SendBatch(ctx, w.b).Close()
	err = p.sendAlone(ctx, w)
	return first, next, err
}

// NoStoredLimits is what a's claim writers' last batch statement found:
// no limit stored (Allocations.noStoredLimits).
func NoStoredLimits(a *Allocations) bool { return a.noStoredLimits.Load() }

// WithRecords gives fc the retry record and stored claim of p.
func WithRecords(fc FastClaim, p ClaimWriteParams) FastClaim {
	fc.request, fc.state = p.Request, p.State
	return fc
}

// BatchArgs is the batch statement of fcs and its arguments
// (Allocations.batchArgs, before any batch statement ran), and the
// function that releases them once they are no longer used.
func BatchArgs(fcs []FastClaim) (string, []any, func()) {
	sql, args, b := (&Allocations{}).batchArgs(fcs)
	return sql, args, b.release
}
