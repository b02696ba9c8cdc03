-- Placement keeps an aggregate's uuid as the client spelled it (a
-- varchar(36) column compared as a string): 5F..A1 and 5f..a1 are two
-- aggregates, GET .../aggregates echoes the spelling, and member_of
-- matches only the same spelling. A uuid column would canonicalise every
-- spelling into one. Existing rows keep their (canonical) text.
ALTER TABLE placement_aggregates ALTER COLUMN uuid TYPE varchar(36) USING uuid::text;
