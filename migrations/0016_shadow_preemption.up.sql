-- Shadows count what a candidate policy would preempt (docs/policies.md,
-- "Shadows"; issue 40): beside a claim that preempted, or found nothing
-- and had consumers it could preempt, a shadow ranks the claim's
-- preemption plans with its own policy.
--
--   would_preempt          claims for which the shadow would preempt;
--   would_preempt_victims  the consumers it would displace for them, in all.
ALTER TABLE scheduling_shadows
    ADD COLUMN would_preempt         bigint NOT NULL DEFAULT 0,
    ADD COLUMN would_preempt_victims bigint NOT NULL DEFAULT 0;
