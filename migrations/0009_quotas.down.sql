DROP TRIGGER allocations_not_updated ON allocations;
DROP FUNCTION allocations_not_updated();
DROP TABLE project_usages;
DROP FUNCTION limits_of(text);
DROP TABLE project_limits;
DROP TABLE registered_limits;
