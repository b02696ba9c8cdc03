-- Every claim bumps the generation of the providers it writes to. With
-- room left on the row's page, PostgreSQL writes the new row version
-- there (a HOT update) and leaves the provider's five indexes alone; on a
-- full page it writes the row elsewhere and a new entry into each index:
-- about 12 more buffers per claim (TestDatabaseWorkPerWrite), and index
-- bloat until vacuum. Pages filled to 80% keep that room. Rows written
-- before this migration keep their pages until they move.
ALTER TABLE resource_providers SET (fillfactor = 80);
