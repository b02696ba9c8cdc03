ALTER TABLE allocations ADD CONSTRAINT allocations_consumer_id_fkey
    FOREIGN KEY (consumer_id) REFERENCES consumers (id) ON DELETE CASCADE;
ALTER TABLE allocations ADD CONSTRAINT allocations_resource_provider_id_fkey
    FOREIGN KEY (resource_provider_id) REFERENCES resource_providers (id);
ALTER TABLE allocations ADD CONSTRAINT allocations_resource_class_id_fkey
    FOREIGN KEY (resource_class_id) REFERENCES resource_classes (id);
ALTER TABLE consumers ADD CONSTRAINT consumers_consumer_type_id_fkey
    FOREIGN KEY (consumer_type_id) REFERENCES consumer_types (id);
ALTER TABLE consumers ADD CONSTRAINT consumers_user_id_fkey
    FOREIGN KEY (user_id) REFERENCES users (id);
ALTER TABLE consumers ADD CONSTRAINT consumers_project_id_fkey
    FOREIGN KEY (project_id) REFERENCES projects (id);
