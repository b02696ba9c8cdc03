-- Back to a uuid column: the spellings of one uuid become one aggregate
-- again, the one created first; the providers of the others join it.
CREATE TEMPORARY TABLE aggregate_merge AS
    SELECT id, first_value(id) OVER (PARTITION BY uuid::uuid ORDER BY id) AS keep
    FROM placement_aggregates;
DELETE FROM aggregate_merge WHERE id = keep;
INSERT INTO resource_provider_aggregates (resource_provider_id, aggregate_id)
    SELECT rpa.resource_provider_id, m.keep
    FROM resource_provider_aggregates rpa JOIN aggregate_merge m ON m.id = rpa.aggregate_id
    ON CONFLICT DO NOTHING;
DELETE FROM resource_provider_aggregates WHERE aggregate_id IN (SELECT id FROM aggregate_merge);
DELETE FROM placement_aggregates WHERE id IN (SELECT id FROM aggregate_merge);
ALTER TABLE placement_aggregates ALTER COLUMN uuid TYPE uuid USING uuid::uuid;
DROP TABLE aggregate_merge;
