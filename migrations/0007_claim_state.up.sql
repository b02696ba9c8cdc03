-- Stored claims: one row per consumer that a claim placed (POST /claims,
-- a reschedule, a move), kept exactly as long as the consumer exists (the
-- foreign key deletes it with the consumer: DELETE /allocations, a write
-- that empties the consumer, a lease that runs out). Unlike the retry
-- records of claim_requests, which are purged after an hour, this row is
-- the claim's request for as long as the claim lives: a reschedule and a
-- move redo it. It also holds the claim's lease (ledger/claim_records.go
-- documents every state and who writes it):
--
--   state             provisional: the allocations are released when
--                     lease_expires_at passes, unless confirmed (PATCH
--                     /claims/{c}, or any Placement-API write of the
--                     consumer's allocations) first;
--                     permanent: nothing releases them but a client;
--                     moving: a move is in progress (claim_moves); when
--                     lease_expires_at is set and passes, the move is
--                     reverted.
--   lease_seconds     the lease's length as last asked for (NULL: none);
--   lease_expires_at  when the lease runs out (NULL: no lease), by
--                     PostgreSQL's clock;
--   prior_*           while moving: the request, lease length and expiry
--                     the claim had before the move, restored by a revert
--                     (prior_lease_expires_at NULL: it was permanent).
CREATE TABLE claim_state (
    consumer_uuid          uuid PRIMARY KEY REFERENCES consumers (uuid) ON DELETE CASCADE,
    op                     text NOT NULL,
    request                jsonb NOT NULL,
    root_uuid              uuid,
    state                  text NOT NULL CHECK (state IN ('provisional', 'permanent', 'moving')),
    lease_seconds          integer,
    lease_expires_at       timestamptz,
    prior_request          jsonb,
    prior_lease_seconds    integer,
    prior_lease_expires_at timestamptz,
    created_at             timestamptz NOT NULL DEFAULT now(),
    updated_at             timestamptz NOT NULL DEFAULT now(),
    CHECK (state <> 'provisional' OR lease_expires_at IS NOT NULL),
    CHECK (state <> 'permanent' OR lease_expires_at IS NULL)
);

-- The lease reaper's scan: only rows with a lease are indexed.
CREATE INDEX claim_state_lease_expires_at ON claim_state (lease_expires_at) WHERE lease_expires_at IS NOT NULL;
