-- A claim's write statement writes its own row of the change log: a
-- batch's (batchWriteSQL, since 0017) and now a lone claim's
-- (fastWriteSQL), each the providers its claims changed, those whose
-- generations it bumps. The triggers that would log the same providers
-- again, of allocations' insert and resource_providers' update, no longer
-- run for them at all: each is skipped by its WHEN when the statement
-- being run begins with the claim statements' mark, the comment
-- /* berth: claim write, logs its own change */ (ledger/resources,
-- claimWriteMark). Neither is called, as under 0017, only to take a mark
-- off.
--
-- current_query() is the text of the statement the client sent, the
-- same for every trigger its data-modifying CTEs fire, whatever order
-- they end in; so the mark covers that one statement, and any other
-- statement of the same transaction logs as before. Sent in one
-- simple-protocol query with other statements (pgx's simple_protocol
-- mode sends a pipeline so), the query no longer begins with the mark
-- and the triggers log as well: more rows, the same providers.
CREATE OR REPLACE FUNCTION ledger_changes_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO ledger_changes (xid, providers)
    SELECT pg_current_xact_id(), CASE WHEN count(*) > 5000 THEN NULL ELSE array_agg(id) END
    FROM (SELECT DISTINCT resource_provider_id AS id FROM new_rows) c HAVING count(*) > 0;
    RETURN NULL;
END $$;
CREATE OR REPLACE FUNCTION ledger_changes_rp_upd() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO ledger_changes (xid, providers)
    SELECT pg_current_xact_id(), CASE WHEN count(*) > 5000 THEN NULL ELSE array_agg(id) END
    FROM (SELECT id FROM new_rows
          UNION SELECT p FROM old_rows o JOIN new_rows n ON n.id = o.id,
                              unnest(ARRAY[o.parent_provider_id, n.parent_provider_id]) p
                WHERE o.parent_provider_id IS DISTINCT FROM n.parent_provider_id AND p IS NOT NULL) c
    HAVING count(*) > 0;
    RETURN NULL;
END $$;
DROP TRIGGER ledger_changes_ins ON allocations;
CREATE TRIGGER ledger_changes_ins AFTER INSERT ON allocations REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT
    WHEN (NOT starts_with(current_query(), '/* berth: claim write, logs its own change */'))
    EXECUTE FUNCTION ledger_changes_ins();
DROP TRIGGER ledger_changes_upd ON resource_providers;
CREATE TRIGGER ledger_changes_upd AFTER UPDATE ON resource_providers REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT
    WHEN (NOT starts_with(current_query(), '/* berth: claim write, logs its own change */'))
    EXECUTE FUNCTION ledger_changes_rp_upd();
