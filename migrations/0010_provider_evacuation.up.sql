-- Evacuated root providers (POST /resource_providers/{uuid}/evacuate):
-- claims do not place on them until they are restored. A table of its
-- own rather than a column of resource_providers, whose rows every
-- claim rewrites (the generation): an evacuation is rare, and the
-- snapshot reads this table with the providers.
CREATE TABLE provider_evacuations (
    resource_provider_id bigint PRIMARY KEY REFERENCES resource_providers (id) ON DELETE CASCADE,
    evacuated_at         timestamptz NOT NULL DEFAULT now()
);

-- The rest of LXD's ClusterMemberState an agent may report with its
-- state (sizes in bytes, uptime in seconds; 0 when not reported), and
-- its storage pools: {"name": {"space": {"used": n, "total": n},
-- "inodes": {"used": n, "total": n}}}.
ALTER TABLE provider_state
    ADD COLUMN uptime        bigint NOT NULL DEFAULT 0,
    ADD COLUMN total_ram     bigint NOT NULL DEFAULT 0,
    ADD COLUMN shared_ram    bigint NOT NULL DEFAULT 0,
    ADD COLUMN buffered_ram  bigint NOT NULL DEFAULT 0,
    ADD COLUMN total_swap    bigint NOT NULL DEFAULT 0,
    ADD COLUMN free_swap     bigint NOT NULL DEFAULT 0,
    ADD COLUMN processes     bigint NOT NULL DEFAULT 0,
    ADD COLUMN logical_cpus  bigint NOT NULL DEFAULT 0,
    ADD COLUMN storage_pools jsonb NOT NULL DEFAULT '{}';
