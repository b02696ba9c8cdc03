package claims

import "context"

// The claimer's steps as they run inside Claim, Reschedule and Move,
// without the record that makes those safe to retry: the tests of the
// steps' own answers (a reclaim is a generation conflict, a second move
// with the same migration is refused) call these.

func (c *Claimer) ClaimUnrecorded(ctx context.Context, p Params) (*Result, error) {
	return c.claim(ctx, p)
}

func (c *Claimer) RescheduleUnrecorded(ctx context.Context, p Params, failedProvider string) (*Result, error) {
	return c.reschedule(ctx, p, failedProvider)
}

func (c *Claimer) MoveUnrecorded(ctx context.Context, p Params, migrationUUID string) (*Result, error) {
	return c.move(ctx, p, migrationUUID)
}

// PreemptionSearches is how many claims read the preemptible consumers.
func (c *Claimer) PreemptionSearches() int64 { return c.preempted.searches.Load() }
