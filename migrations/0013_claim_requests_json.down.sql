ALTER TABLE claim_requests
    ALTER COLUMN request TYPE jsonb USING request::jsonb,
    ALTER COLUMN result TYPE jsonb USING result::jsonb;
