-- A claim's retry record (claim_requests, 0004) keeps its request and its
-- result as json, not jsonb: they are only ever read back whole, never
-- looked into by SQL, and json keeps the text as given where jsonb
-- converts it on every write (issue 39: about 4% of PostgreSQL's CPU per
-- claim). Rows live for an hour (ClaimRequestTTL): the rewrite is small.
ALTER TABLE claim_requests
    ALTER COLUMN request TYPE json USING request::json,
    ALTER COLUMN result TYPE json USING result::json;
