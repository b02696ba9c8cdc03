-- Foreign keys whose guarantee the ledger's code keeps, dropped: each
-- cost every claim a trigger and a `SELECT ... FOR KEY SHARE` per row it
-- wrote, and the key shares all fell on the same few class, project and
-- user rows, from every writer at once.
--
-- consumers' project, user and type: no statement deletes a project, a
-- user or a consumer type, and a consumer is written only with the ids
-- of rows the writer read or created (ledger/resources/consumer.go,
-- claim_write.go, claim_writers.go); only `berthd import --replace`
-- empties those tables, in one TRUNCATE with consumers. Guarded by
-- TestOwnerRowsAreNeverDeleted.
--
-- allocations' provider: every writer of allocations holds the
-- provider's row lock until it commits and writes only where the
-- provider has an inventory (which goes with the provider, ON DELETE
-- CASCADE), checked after the lock; a provider is deleted only under its
-- row lock, by a statement after the lock that finds no allocation of it
-- (ledger/resources/provider.go, provider_pipeline.go). Guarded by
-- TestProviderDeleteRacesClaims and
-- TestProviderDeleteSeesAllocationsCommittedWhileItWaits.
--
-- allocations' class: an allocation is written only where its provider
-- has an inventory of its class, checked under the provider's row lock;
-- that inventory is deleted only while the provider has no allocation of
-- the class, checked under the same lock, and a provider with
-- allocations is not deleted (above); the inventory's own key keeps its
-- class (ledger/resources/resourceclass.go). So an allocation's class has
-- an inventory, and the class exists, for as long as the allocation
-- does. Guarded by TestAllocatedClassKeepsItsInventory.
--
-- allocations' consumer (and its ON DELETE CASCADE): allocations are
-- written only for a consumer the writer holds the row lock of
-- (ledger/resources/consumer.go) or creates in the same statement (the
-- claims' statements, which write none for a consumer that exists); a
-- consumer is deleted only under its row lock, with its allocations in
-- the same statement, or when a statement after the lock finds it has
-- none (ledger/resources/allocation.go); only `berthd import --replace`
-- empties consumers otherwise, in one TRUNCATE with allocations. Guarded
-- by TestConsumerDeletesLeaveNoAllocations and TestOwnerRowsAreNeverDeleted.
ALTER TABLE consumers DROP CONSTRAINT consumers_project_id_fkey;
ALTER TABLE consumers DROP CONSTRAINT consumers_user_id_fkey;
ALTER TABLE consumers DROP CONSTRAINT consumers_consumer_type_id_fkey;
ALTER TABLE allocations DROP CONSTRAINT allocations_consumer_id_fkey;
ALTER TABLE allocations DROP CONSTRAINT allocations_resource_provider_id_fkey;
ALTER TABLE allocations DROP CONSTRAINT allocations_resource_class_id_fkey;
