-- Idempotent claims: what POST /claims, reschedule and move need to
-- answer a retry of a request whose outcome the client did not learn (a
-- lost answer, a 503 during a failover). One row per consumer and
-- operation, written in the same transaction as the allocations, so it
-- exists exactly when they were committed. fingerprint is a hash of the
-- request's fields (request holds them, to say what differs when a
-- different request comes for the same consumer); result is the answer
-- given, generation the consumer's generation after the write. Rows are
-- purged after a TTL (ledger.Config.ClaimRequestTTL).
CREATE TABLE claim_requests (
    consumer_uuid uuid NOT NULL,
    op            text NOT NULL,
    fingerprint   bytea NOT NULL,
    request       jsonb NOT NULL,
    result        jsonb NOT NULL,
    generation    bigint NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_uuid, op)
);

CREATE INDEX claim_requests_created_at ON claim_requests (created_at);
