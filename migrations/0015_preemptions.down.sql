DROP TABLE IF EXISTS preemptions;
DROP INDEX IF EXISTS claim_state_preemptible;
