-- Gangs (issue 41): the members of each gang a claim placed whole, one
-- row per member consumer, written in the gang's one transaction with
-- every member's allocations and stored claim, and deleted with the
-- consumer (DELETE /allocations/{member} leaves the rest of the gang
-- as it is). A gang's leases are renewed, confirmed and released
-- together (ledger/claimrecords/gangs.go).
CREATE TABLE gang_members (
    consumer_uuid uuid PRIMARY KEY REFERENCES consumers (uuid) ON DELETE CASCADE,
    gang_id       uuid NOT NULL,
    domain        text NOT NULL DEFAULT '',
    created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX gang_members_gang_id ON gang_members (gang_id);
