DROP SEQUENCE ledger_barrier;
