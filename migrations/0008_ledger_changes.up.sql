-- The change log: every transaction that changes what the in-memory
-- snapshot holds of providers (the providers, their inventories, usage,
-- traits, aggregates, a resource class's name) writes, in that same
-- transaction, a row with its transaction id and the ids of the
-- providers it changed (NULL: any provider may have changed). Every
-- berthd follows it to catch its snapshot up with the database
-- (ledger/changelog.go, docs/architecture.md "Reads across replicas"):
-- a commit is never lost to a peer, whatever happens to the writer
-- after its commit. The rows are written by statement-level triggers,
-- so that no write path, Berth's or an operator's SQL, can forget them,
-- and no write pays a round trip for them.
CREATE TABLE ledger_changes (
    xid       xid8 NOT NULL,
    providers bigint[],
    at        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ledger_changes_xid_idx ON ledger_changes (xid);

-- Rows with an xid below horizon may have been trimmed: a follower whose
-- snapshot is older than that reloads everything.
CREATE TABLE ledger_changes_horizon (
    one     boolean PRIMARY KEY DEFAULT true CHECK (one),
    horizon xid8 NOT NULL
);
INSERT INTO ledger_changes_horizon (horizon) VALUES ('0');

-- Each function inserts at most one row: the distinct providers its
-- statement changed, or NULL (everything) for more than 5,000 of them, as
-- a bulk import changes (a follower then reloads everything rather than
-- that many providers one by one); none if the statement changed no row.
-- The INSERTs are written out in each function, not shared through a
-- helper: PL/pgSQL keeps their plans, a SQL helper would be planned at
-- every call.

-- The tables keyed by resource_provider_id: inventories, allocations,
-- resource_provider_traits, resource_provider_aggregates.
CREATE FUNCTION ledger_changes_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO ledger_changes (xid, providers)
    SELECT pg_current_xact_id(), CASE WHEN count(*) > 5000 THEN NULL ELSE array_agg(id) END
    FROM (SELECT DISTINCT resource_provider_id AS id FROM new_rows) c HAVING count(*) > 0;
    RETURN NULL;
END $$;
CREATE FUNCTION ledger_changes_upd() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO ledger_changes (xid, providers)
    SELECT pg_current_xact_id(), CASE WHEN count(*) > 5000 THEN NULL ELSE array_agg(id) END
    FROM (SELECT resource_provider_id AS id FROM new_rows UNION SELECT resource_provider_id FROM old_rows) c
    HAVING count(*) > 0;
    RETURN NULL;
END $$;
CREATE FUNCTION ledger_changes_del() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO ledger_changes (xid, providers)
    SELECT pg_current_xact_id(), CASE WHEN count(*) > 5000 THEN NULL ELSE array_agg(id) END
    FROM (SELECT DISTINCT resource_provider_id AS id FROM old_rows) c HAVING count(*) > 0;
    RETURN NULL;
END $$;

-- resource_providers: the provider, and a parent that gains or loses a
-- child (the snapshot keeps each provider's children).
CREATE FUNCTION ledger_changes_rp_ins() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO ledger_changes (xid, providers)
    SELECT pg_current_xact_id(), CASE WHEN count(*) > 5000 THEN NULL ELSE array_agg(id) END
    FROM (SELECT id FROM new_rows
          UNION SELECT parent_provider_id FROM new_rows WHERE parent_provider_id IS NOT NULL) c
    HAVING count(*) > 0;
    RETURN NULL;
END $$;
CREATE FUNCTION ledger_changes_rp_upd() RETURNS trigger LANGUAGE plpgsql AS $$
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
CREATE FUNCTION ledger_changes_rp_del() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO ledger_changes (xid, providers)
    SELECT pg_current_xact_id(), CASE WHEN count(*) > 5000 THEN NULL ELSE array_agg(id) END
    FROM (SELECT id FROM old_rows
          UNION SELECT parent_provider_id FROM old_rows WHERE parent_provider_id IS NOT NULL) c
    HAVING count(*) > 0;
    RETURN NULL;
END $$;

-- Everything: a truncated table, a renamed resource class (the snapshot
-- holds classes by name).
CREATE FUNCTION ledger_changes_all() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO ledger_changes (xid, providers) VALUES (pg_current_xact_id(), NULL);
    RETURN NULL;
END $$;

-- A trigger with transition tables serves one event, hence three per table.
CREATE TRIGGER ledger_changes_ins AFTER INSERT ON inventories REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_changes_ins();
CREATE TRIGGER ledger_changes_upd AFTER UPDATE ON inventories REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_changes_upd();
CREATE TRIGGER ledger_changes_del AFTER DELETE ON inventories REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_changes_del();
CREATE TRIGGER ledger_changes_ins AFTER INSERT ON allocations REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_changes_ins();
CREATE TRIGGER ledger_changes_upd AFTER UPDATE ON allocations REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_changes_upd();
CREATE TRIGGER ledger_changes_del AFTER DELETE ON allocations REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_changes_del();
CREATE TRIGGER ledger_changes_ins AFTER INSERT ON resource_provider_traits REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_changes_ins();
CREATE TRIGGER ledger_changes_upd AFTER UPDATE ON resource_provider_traits REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_changes_upd();
CREATE TRIGGER ledger_changes_del AFTER DELETE ON resource_provider_traits REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_changes_del();
CREATE TRIGGER ledger_changes_ins AFTER INSERT ON resource_provider_aggregates REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_changes_ins();
CREATE TRIGGER ledger_changes_upd AFTER UPDATE ON resource_provider_aggregates REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_changes_upd();
CREATE TRIGGER ledger_changes_del AFTER DELETE ON resource_provider_aggregates REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_changes_del();
CREATE TRIGGER ledger_changes_ins AFTER INSERT ON resource_providers REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_changes_rp_ins();
CREATE TRIGGER ledger_changes_upd AFTER UPDATE ON resource_providers REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_changes_rp_upd();
CREATE TRIGGER ledger_changes_del AFTER DELETE ON resource_providers REFERENCING OLD TABLE AS old_rows
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_changes_rp_del();
CREATE TRIGGER ledger_changes_upd AFTER UPDATE ON resource_classes
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_changes_all();
CREATE TRIGGER ledger_changes_truncate AFTER TRUNCATE ON resource_providers
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_changes_all();
CREATE TRIGGER ledger_changes_truncate AFTER TRUNCATE ON inventories
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_changes_all();
CREATE TRIGGER ledger_changes_truncate AFTER TRUNCATE ON allocations
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_changes_all();
CREATE TRIGGER ledger_changes_truncate AFTER TRUNCATE ON resource_provider_traits
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_changes_all();
CREATE TRIGGER ledger_changes_truncate AFTER TRUNCATE ON resource_provider_aggregates
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_changes_all();
CREATE TRIGGER ledger_changes_truncate AFTER TRUNCATE ON placement_aggregates
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_changes_all();
