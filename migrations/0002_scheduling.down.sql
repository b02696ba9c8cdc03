DROP INDEX consumers_properties_idx;
ALTER TABLE consumers DROP COLUMN properties, DROP COLUMN name;
DROP TABLE consumer_placement_keys;
DROP TABLE provider_placement_keys;
DROP TABLE provider_state;
DROP TABLE config;
DROP TABLE scriptlets;
DROP TABLE scheduling_policies;
