-- Preemption (docs/preemption.md): a claim of higher priority displaces
-- preemptible consumers of strictly lower priority in its own
-- transaction. A claim's priority and whether it is preemptible are
-- fields of its stored request (claim_state.request: "priority", an
-- integer, default 0; "preemptible", a boolean, default false), so a
-- reschedule or move that reuses the request keeps them.
--
-- The victims' search reads only the preemptible stored claims.
CREATE INDEX claim_state_preemptible ON claim_state (consumer_uuid)
    WHERE request @> '{"preemptible": true}';

-- One row per displaced consumer, written in the preemptor's transaction
-- (ledger/claimrecords/preemptions.go). The victim's consumer, its
-- allocations and its stored claim are gone by then; this row is what
-- GET /claims/{victim} and GET /preemptions answer from; rows are kept.
--
--   consumer_uuid       the displaced consumer;
--   preempted_by        the claim's consumer that displaced it;
--   root_provider_uuid  the root provider it was displaced from;
--   priority            its priority; preemptor_priority the claim's;
--   project_id, user_id its owner (external ids);
--   allocations         what it held: {provider uuid: {"resources": {class: amount}}};
--   request             its stored claim's request.
CREATE TABLE preemptions (
    id                 bigserial PRIMARY KEY,
    consumer_uuid      uuid NOT NULL,
    preempted_by       uuid NOT NULL,
    root_provider_uuid uuid NOT NULL,
    priority           bigint NOT NULL,
    preemptor_priority bigint NOT NULL,
    project_id         text NOT NULL,
    user_id            text NOT NULL,
    allocations        jsonb NOT NULL,
    request            jsonb NOT NULL,
    preempted_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX preemptions_consumer ON preemptions (consumer_uuid, id);
CREATE INDEX preemptions_at ON preemptions (preempted_at, id);
