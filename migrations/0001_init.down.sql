DROP TABLE IF EXISTS allocations, consumers, consumer_types, users, projects,
    resource_provider_aggregates, placement_aggregates, resource_provider_traits,
    inventories, resource_providers, traits, resource_classes CASCADE;
DROP SEQUENCE IF EXISTS resource_classes_custom_id_seq;
