-- A claim's write statement writes its own row of the change log (0008):
-- the providers its claims changed, in a CTE (ledger/resources/claim_writers.go,
-- batchWriteSQL). It then marks, for its transaction, the two tables whose
-- statement triggers would log those same providers again, allocations
-- (the claims' rows) and resource_providers (their generations): a setting
-- berth.logged_<table> holding the transaction's id. The trigger of a
-- marked table takes the mark off and writes nothing.
--
-- A statement-level AFTER trigger fires once per statement and table, after
-- the whole statement, whether it changed rows or not; so the mark a
-- statement sets is taken off by that statement's own trigger, and a later
-- statement of the same transaction logs as before. The mark is local to the
-- transaction (set_config(..., true)): a rollback takes it away with the
-- rows. What the change log's readers see is unchanged: the transaction's
-- id and every provider it changed, in one row instead of two.
CREATE OR REPLACE FUNCTION ledger_changes_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('berth.logged_' || TG_TABLE_NAME, true) = pg_current_xact_id()::text THEN
        PERFORM set_config('berth.logged_' || TG_TABLE_NAME, '', true);
        RETURN NULL;
    END IF;
    INSERT INTO ledger_changes (xid, providers)
    SELECT pg_current_xact_id(), CASE WHEN count(*) > 5000 THEN NULL ELSE array_agg(id) END
    FROM (SELECT DISTINCT resource_provider_id AS id FROM new_rows) c HAVING count(*) > 0;
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION ledger_changes_rp_upd() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('berth.logged_' || TG_TABLE_NAME, true) = pg_current_xact_id()::text THEN
        PERFORM set_config('berth.logged_' || TG_TABLE_NAME, '', true);
        RETURN NULL;
    END IF;
    INSERT INTO ledger_changes (xid, providers)
    SELECT pg_current_xact_id(), CASE WHEN count(*) > 5000 THEN NULL ELSE array_agg(id) END
    FROM (SELECT id FROM new_rows
          UNION SELECT p FROM old_rows o JOIN new_rows n ON n.id = o.id,
                              unnest(ARRAY[o.parent_provider_id, n.parent_provider_id]) p
                WHERE o.parent_provider_id IS DISTINCT FROM n.parent_provider_id AND p IS NOT NULL) c
    HAVING count(*) > 0;
    RETURN NULL;
END $$;
