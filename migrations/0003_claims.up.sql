-- Claims state: the providers a consumer failed on (reschedule avoids
-- them) and the move in progress per consumer (confirm and revert find
-- the migration consumer). Keyed by uuid, not by consumer id: a consumer
-- whose allocations are deleted (DELETE /allocations/{consumer}) stops
-- existing, and its history must outlive it.
CREATE TABLE claim_failures (
    consumer_uuid uuid NOT NULL,
    provider_uuid uuid NOT NULL,
    failed_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (consumer_uuid, provider_uuid)
);

CREATE TABLE claim_moves (
    consumer_uuid  uuid PRIMARY KEY,
    migration_uuid uuid NOT NULL,
    reason         text NOT NULL,
    source_root    uuid,
    created_at     timestamptz NOT NULL DEFAULT now()
);
