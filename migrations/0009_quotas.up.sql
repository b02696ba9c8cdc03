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
-- allocations. A migration consumer (type MIGRATION, as Nova and Berth's
-- moves make them) counts toward nothing: during a move it holds a copy
-- of the instance's old allocations, and the move counts the instance's
-- new ones.
--
-- Every statement of the ledger that changes allocations, or a consumer's
-- project or type, changes the counters in the same transaction
-- (ledger/quota.go says how, and its tests recount them from the
-- allocations after every kind of write). Counters are locked after the
-- providers' rows, in the order of (project_id, resource), one statement
-- taking all it needs (the global order of ledger/doc.go: projects, users
-- and types by name, consumers, providers, then these counters).
--
-- Triggers would have kept them by themselves, but a statement trigger
-- over the transition table doubled PostgreSQL's CPU per claim
-- (docs/quotas.md, "Cost").
CREATE TABLE project_usages (
    project_id integer NOT NULL REFERENCES projects (id),
    resource   text NOT NULL,
    used       bigint NOT NULL,
    PRIMARY KEY (project_id, resource)
);

-- Allocations are replaced (deleted and inserted), never changed in
-- place: the counters follow inserts and deletes, so an update of what
-- an allocation holds is refused rather than miscounted.
CREATE FUNCTION allocations_not_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'allocations are deleted and inserted, never updated in place (project_usages counts inserts and deletes)';
END $$;
CREATE TRIGGER allocations_not_updated BEFORE UPDATE OF consumer_id, resource_class_id, used ON allocations
    FOR EACH STATEMENT EXECUTE FUNCTION allocations_not_updated();

-- What the allocations written before this migration add up to.
LOCK TABLE allocations, consumers IN SHARE MODE;
INSERT INTO project_usages (project_id, resource, used)
SELECT c.project_id, rc.name, sum(a.used)::bigint
FROM allocations a JOIN consumers c ON c.id = a.consumer_id JOIN resource_classes rc ON rc.id = a.resource_class_id
LEFT JOIN consumer_types t ON t.id = c.consumer_type_id
WHERE t.name IS DISTINCT FROM 'MIGRATION'
GROUP BY c.project_id, rc.name
UNION ALL
SELECT c.project_id, 'consumers', count(*)
FROM consumers c LEFT JOIN consumer_types t ON t.id = c.consumer_type_id
WHERE t.name IS DISTINCT FROM 'MIGRATION' AND EXISTS (SELECT 1 FROM allocations a WHERE a.consumer_id = c.id)
GROUP BY c.project_id;
