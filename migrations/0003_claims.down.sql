DROP TABLE IF EXISTS claim_moves;
DROP TABLE IF EXISTS claim_failures;
