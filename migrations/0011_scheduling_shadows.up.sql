-- Shadows: a stored scriptlet or scheduling policy run beside every real
-- claim ranked by the default policy, on the same candidates, without
-- affecting it (docs/policies.md, "Shadows"). A row is an active shadow;
-- every replica loads them with the rest of the scheduling catalogue
-- (claims/catalog) and runs them. Exactly one of scriptlet and policy is
-- set; deleting what a shadow runs stops it (the foreign keys cascade).
--
-- The counters are since the shadow started, summed over every replica:
-- each adds what it counted in memory in one batched flush (claims/shadow),
-- not one write per claim.
--
--   claims_seen      claims the shadow ran beside;
--   agreed           its first choice was on the claim's first choice's
--                    root provider;
--   disagreed        it chose another root (or placed what the claim
--                    refused);
--   would_refuse     it would have refused the claim (the messages are
--                    counted in scheduling_shadow_refusals);
--   failed_*         it failed: its step budget, memory budget or
--                    deadline ran out, or a runtime error;
--   dropped          claims it did not run beside: the queue was full;
--   shadow_ns        the time its runs took, in nanoseconds.
CREATE TABLE scheduling_shadows (
    id              bigserial PRIMARY KEY,
    scriptlet       text UNIQUE REFERENCES scriptlets (name) ON DELETE CASCADE,
    policy          text UNIQUE REFERENCES scheduling_policies (name) ON DELETE CASCADE,
    started_at      timestamptz NOT NULL DEFAULT now(),
    claims_seen     bigint NOT NULL DEFAULT 0,
    agreed          bigint NOT NULL DEFAULT 0,
    disagreed       bigint NOT NULL DEFAULT 0,
    would_refuse    bigint NOT NULL DEFAULT 0,
    failed_steps    bigint NOT NULL DEFAULT 0,
    failed_memory   bigint NOT NULL DEFAULT 0,
    failed_deadline bigint NOT NULL DEFAULT 0,
    failed_error    bigint NOT NULL DEFAULT 0,
    dropped         bigint NOT NULL DEFAULT 0,
    shadow_ns       bigint NOT NULL DEFAULT 0,
    CHECK ((scriptlet IS NULL) <> (policy IS NULL))
);

-- What a shadow would have refused claims with, counted by message: at
-- most a bounded number of messages per shadow, the rest counted under
-- one placeholder (ledger/shadow.go).
CREATE TABLE scheduling_shadow_refusals (
    shadow_id bigint NOT NULL REFERENCES scheduling_shadows (id) ON DELETE CASCADE,
    message   text NOT NULL,
    count     bigint NOT NULL,
    PRIMARY KEY (shadow_id, message)
);

-- The last disagreements of a shadow (trimmed to a bounded number on every
-- flush): the claim's request and both choices.
CREATE TABLE scheduling_shadow_disagreements (
    id                bigserial PRIMARY KEY,
    shadow_id         bigint NOT NULL REFERENCES scheduling_shadows (id) ON DELETE CASCADE,
    seen_at           timestamptz NOT NULL,
    consumer_uuid     text NOT NULL,
    name              text NOT NULL,
    project_id        text NOT NULL,
    claim_root        text NOT NULL,
    claim_root_name   text NOT NULL,
    claim_refusal     text NOT NULL,
    shadow_root       text NOT NULL,
    shadow_root_name  text NOT NULL
);
CREATE INDEX scheduling_shadow_disagreements_shadow ON scheduling_shadow_disagreements (shadow_id, id);
