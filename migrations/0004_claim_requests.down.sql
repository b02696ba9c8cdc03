DROP TABLE IF EXISTS claim_requests;
