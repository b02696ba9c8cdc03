ALTER TABLE scheduling_shadows
    DROP COLUMN IF EXISTS would_preempt,
    DROP COLUMN IF EXISTS would_preempt_victims;
