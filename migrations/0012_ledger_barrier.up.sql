-- The sequence a read sets to make its transaction's commit wait for
-- the synchronous standby (ledger/replication.go, "Reads that outlive a
-- failover"): setval always writes WAL and gives the transaction an id,
-- so its COMMIT waits as a write's does, and, unlike a row's update,
-- holds no lock that other readers would queue behind.
CREATE SEQUENCE ledger_barrier;
