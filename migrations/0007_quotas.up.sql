-- Quotas (docs/quotas.md): the limits of Berth's own source
-- (--limits-source berth), and every project's usage, counted as
-- allocations are written, so that a write checks a limit in its own
-- transaction under the lock of the counter it adds to
-- (ledger/quota.go).
--
-- A resource is a resource class's name, or "consumers": how many
-- consumers of the project hold allocations.

-- A project's own limits, by the project's external id (a project need
-- not have written anything yet), and the registered limits: the
-- defaults of every project without a limit of its own of that resource.
CREATE TABLE registered_limits (
    resource       text PRIMARY KEY,
    resource_limit bigint NOT NULL CHECK (resource_limit >= 0)
);
CREATE TABLE project_limits (
    project        text NOT NULL,
    resource       text NOT NULL,
    resource_limit bigint NOT NULL CHECK (resource_limit >= 0),
    PRIMARY KEY (project, resource)
);

-- limits_of(project): the project's limits, resource by resource its own
-- or else the registered one.
CREATE FUNCTION limits_of(text) RETURNS TABLE (resource text, resource_limit bigint)
LANGUAGE sql STABLE AS $$
    SELECT p.resource, p.resource_limit FROM project_limits p WHERE p.project = $1
    UNION ALL
    SELECT r.resource, r.resource_limit FROM registered_limits r
    WHERE NOT EXISTS (SELECT 1 FROM project_limits p WHERE p.project = $1 AND p.resource = r.resource)
$$;

-- Every project's usage: per resource class the sum of its consumers'
-- allocations, and under "consumers" how many of its consumers hold
-- allocations. The triggers below keep it; nothing else writes it but the
-- writes that lock a counter (an update that changes nothing, which
-- creates the counter at 0 when it is missing) before they check it.
--
-- Locks: every writer of allocations takes its providers' row locks
-- before it changes an allocation, so the counters' row locks come after
-- the providers' in every transaction (the global order of ledger/doc.go:
-- projects, users and types by name, consumers, providers, then these
-- counters by project id and resource), and one statement locks its
-- counters in that order.
CREATE TABLE project_usages (
    project_id integer NOT NULL REFERENCES projects (id),
    resource   text NOT NULL,
    used       bigint NOT NULL,
    PRIMARY KEY (project_id, resource)
);

-- usage_counts(consumer type id): whether a consumer of that type counts
-- toward its project's usage. A migration consumer (type MIGRATION, as
-- Nova and Berth's moves make them) does not: during a move it holds a
-- copy of the instance's old allocations, and the move counts the
-- instance's new ones.
CREATE FUNCTION usage_counts(integer) RETURNS boolean
LANGUAGE sql STABLE AS $$
    SELECT $1 IS NULL OR NOT EXISTS (SELECT 1 FROM consumer_types WHERE id = $1 AND name = 'MIGRATION')
$$;

-- Allocations inserted: what they add, and one consumer for each consumer
-- whose allocations are all new (it held none before the statement).
CREATE FUNCTION project_usages_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO project_usages AS u (project_id, resource, used)
    SELECT d.project_id, d.resource, sum(d.used)::bigint FROM (
        SELECT c.project_id, rc.name AS resource, n.used
        FROM added n JOIN consumers c ON c.id = n.consumer_id JOIN resource_classes rc ON rc.id = n.resource_class_id
        WHERE usage_counts(c.consumer_type_id)
        UNION ALL
        SELECT c.project_id, 'consumers', 1
        FROM (SELECT DISTINCT consumer_id FROM added) k JOIN consumers c ON c.id = k.consumer_id
        WHERE usage_counts(c.consumer_type_id)
          AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = k.consumer_id
                          AND NOT EXISTS (SELECT 1 FROM added x WHERE x.id = a.id))
    ) d
    GROUP BY d.project_id, d.resource
    ORDER BY d.project_id, d.resource
    ON CONFLICT (project_id, resource) DO UPDATE SET used = u.used + EXCLUDED.used;
    RETURN NULL;
END $$;

-- Allocations deleted: what they held, and one consumer for each consumer
-- left with none. A consumer deleted with its allocations (ON DELETE
-- CASCADE) is gone by the time this runs: project_usages_consumer_delete
-- counted it.
CREATE FUNCTION project_usages_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO project_usages AS u (project_id, resource, used)
    SELECT d.project_id, d.resource, -sum(d.used)::bigint FROM (
        SELECT c.project_id, rc.name AS resource, o.used
        FROM removed o JOIN consumers c ON c.id = o.consumer_id JOIN resource_classes rc ON rc.id = o.resource_class_id
        WHERE usage_counts(c.consumer_type_id)
        UNION ALL
        SELECT c.project_id, 'consumers', 1
        FROM (SELECT DISTINCT consumer_id FROM removed) k JOIN consumers c ON c.id = k.consumer_id
        WHERE usage_counts(c.consumer_type_id)
          AND NOT EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = k.consumer_id)
    ) d
    GROUP BY d.project_id, d.resource
    ORDER BY d.project_id, d.resource
    ON CONFLICT (project_id, resource) DO UPDATE SET used = u.used + EXCLUDED.used;
    RETURN NULL;
END $$;

-- A consumer deleted: what it holds leaves its project's usage, before
-- its allocations go (cascade).
CREATE FUNCTION project_usages_consumer_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF usage_counts(OLD.consumer_type_id) THEN
        INSERT INTO project_usages AS u (project_id, resource, used)
        SELECT OLD.project_id, d.resource, -d.used FROM (
            SELECT rc.name AS resource, sum(a.used)::bigint AS used
            FROM allocations a JOIN resource_classes rc ON rc.id = a.resource_class_id
            WHERE a.consumer_id = OLD.id GROUP BY rc.name
            UNION ALL
            SELECT 'consumers', 1 WHERE EXISTS (SELECT 1 FROM allocations WHERE consumer_id = OLD.id)
        ) d
        ORDER BY d.resource
        ON CONFLICT (project_id, resource) DO UPDATE SET used = u.used + EXCLUDED.used;
    END IF;
    RETURN OLD;
END $$;

-- A consumer that changes project or type: what it holds moves from what
-- it counted toward to what it counts toward now.
CREATE FUNCTION project_usages_consumer_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO project_usages AS u (project_id, resource, used)
    SELECT d.project_id, d.resource, sum(d.used)::bigint FROM (
        SELECT OLD.project_id AS project_id, rc.name AS resource, -a.used AS used
        FROM allocations a JOIN resource_classes rc ON rc.id = a.resource_class_id
        WHERE a.consumer_id = OLD.id AND usage_counts(OLD.consumer_type_id)
        UNION ALL
        SELECT NEW.project_id, rc.name, a.used
        FROM allocations a JOIN resource_classes rc ON rc.id = a.resource_class_id
        WHERE a.consumer_id = NEW.id AND usage_counts(NEW.consumer_type_id)
        UNION ALL
        SELECT OLD.project_id, 'consumers', -1
        WHERE usage_counts(OLD.consumer_type_id) AND EXISTS (SELECT 1 FROM allocations WHERE consumer_id = OLD.id)
        UNION ALL
        SELECT NEW.project_id, 'consumers', 1
        WHERE usage_counts(NEW.consumer_type_id) AND EXISTS (SELECT 1 FROM allocations WHERE consumer_id = NEW.id)
    ) d
    GROUP BY d.project_id, d.resource
    HAVING sum(d.used) <> 0
    ORDER BY d.project_id, d.resource
    ON CONFLICT (project_id, resource) DO UPDATE SET used = u.used + EXCLUDED.used;
    RETURN NULL;
END $$;

-- Allocations are replaced (deleted and inserted), never changed in
-- place: the counters follow inserts and deletes, so an update of what
-- an allocation holds is refused rather than miscounted.
CREATE FUNCTION allocations_not_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'allocations are deleted and inserted, never updated in place (project_usages counts inserts and deletes)';
END $$;

CREATE TRIGGER project_usages_insert AFTER INSERT ON allocations
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION project_usages_insert();
CREATE TRIGGER project_usages_delete AFTER DELETE ON allocations
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION project_usages_delete();
CREATE TRIGGER allocations_not_updated BEFORE UPDATE OF consumer_id, resource_class_id, used ON allocations
    FOR EACH STATEMENT EXECUTE FUNCTION allocations_not_updated();
CREATE TRIGGER project_usages_consumer_delete BEFORE DELETE ON consumers
    FOR EACH ROW EXECUTE FUNCTION project_usages_consumer_delete();
CREATE TRIGGER project_usages_consumer_update AFTER UPDATE OF project_id, consumer_type_id ON consumers
    FOR EACH ROW WHEN (OLD.project_id IS DISTINCT FROM NEW.project_id OR OLD.consumer_type_id IS DISTINCT FROM NEW.consumer_type_id)
    EXECUTE FUNCTION project_usages_consumer_update();

-- What the allocations written before this migration add up to (the
-- triggers above hold the tables' locks until it commits).
INSERT INTO project_usages (project_id, resource, used)
SELECT c.project_id, rc.name, sum(a.used)::bigint
FROM allocations a JOIN consumers c ON c.id = a.consumer_id JOIN resource_classes rc ON rc.id = a.resource_class_id
WHERE usage_counts(c.consumer_type_id)
GROUP BY c.project_id, rc.name
UNION ALL
SELECT c.project_id, 'consumers', count(*)
FROM consumers c
WHERE usage_counts(c.consumer_type_id) AND EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = c.id)
GROUP BY c.project_id;
