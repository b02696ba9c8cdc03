ALTER TABLE provider_state
    DROP COLUMN uptime, DROP COLUMN total_ram, DROP COLUMN shared_ram, DROP COLUMN buffered_ram,
    DROP COLUMN total_swap, DROP COLUMN free_swap, DROP COLUMN processes, DROP COLUMN logical_cpus,
    DROP COLUMN storage_pools;
DROP TABLE provider_evacuations;
