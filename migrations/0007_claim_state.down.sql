DROP TABLE IF EXISTS claim_state;
