-- Back to 0017: the triggers without WHEN, taking the statement's mark off.
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
DROP TRIGGER ledger_changes_ins ON allocations;
CREATE TRIGGER ledger_changes_ins AFTER INSERT ON allocations REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_changes_ins();
DROP TRIGGER ledger_changes_upd ON resource_providers;
CREATE TRIGGER ledger_changes_upd AFTER UPDATE ON resource_providers REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_changes_rp_upd();
