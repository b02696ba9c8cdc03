-- The capacity re-check of every claim (chk in ledger/resources'
-- batchWriteSQL and fastWriteSQL) sums the allocations of each provider
-- and class the claim writes to. The index on (provider, class) found
-- those rows, and each was then read from its heap page: one page per
-- allocation, as a provider's allocations are written by claims far
-- apart in time. With used in the index, the sum is an index-only scan:
-- the heap is read only for rows on pages that vacuum has not yet marked
-- all-visible. The index replaces the one it extends.
CREATE INDEX allocations_provider_class_used_idx ON allocations (resource_provider_id, resource_class_id) INCLUDE (used);
DROP INDEX allocations_provider_class_idx;
