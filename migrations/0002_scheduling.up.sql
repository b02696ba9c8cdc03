-- Scheduling: policies, scriptlets, server-wide configuration, what agents
-- report about their providers, affinity placement keys, and the name and
-- properties claims give consumers.

-- A scheduling policy: its filters, weighers, balancer and scriptlet as the
-- JSON the API takes (validated by berthd on write), and the names of the
-- stored scriptlets it uses (its scriptlet and its starlark: units), which
-- cannot be deleted while it does. At most one is the default, which the
-- partial unique index enforces.
CREATE TABLE scheduling_policies (
    name        text PRIMARY KEY,
    description text NOT NULL DEFAULT '',
    is_default  boolean NOT NULL DEFAULT false,
    spec        jsonb NOT NULL,
    scriptlets  text[] NOT NULL DEFAULT '{}',
    generation  integer NOT NULL DEFAULT 1,
    created_at  timestamptz NOT NULL DEFAULT now(),
    updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX scheduling_policies_one_default ON scheduling_policies (is_default) WHERE is_default;

-- Starlark scriptlets by name, compiled by berthd on write.
CREATE TABLE scriptlets (
    name       text PRIMARY KEY,
    source     text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- Server-wide settings (GET/PATCH /config); a key absent means its default.
CREATE TABLE config (
    key        text PRIMARY KEY,
    value      jsonb NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);

-- The last report of a provider's agent.
CREATE TABLE provider_state (
    resource_provider_id bigint PRIMARY KEY REFERENCES resource_providers (id) ON DELETE CASCADE,
    load_1               double precision NOT NULL,
    load_5               double precision NOT NULL,
    load_15              double precision NOT NULL,
    memory_free_mb       bigint NOT NULL,
    cpu_utilization      double precision NOT NULL,
    reported_at          timestamptz NOT NULL
);

-- Affinity placement keys a provider carries; sticky ones are copied to the
-- consumers placed on it.
CREATE TABLE provider_placement_keys (
    resource_provider_id bigint NOT NULL REFERENCES resource_providers (id) ON DELETE CASCADE,
    name                 text NOT NULL,
    value                double precision NOT NULL,
    sticky               boolean NOT NULL DEFAULT false,
    PRIMARY KEY (resource_provider_id, name)
);

-- Keys a consumer keeps from the sticky keys of the providers it was
-- placed on.
CREATE TABLE consumer_placement_keys (
    consumer_id bigint NOT NULL REFERENCES consumers (id) ON DELETE CASCADE,
    name        text NOT NULL,
    value       double precision NOT NULL,
    PRIMARY KEY (consumer_id, name)
);

-- What claims say about a consumer: the instance's name and free-form
-- properties (consumer groups for affinity are read from them). Both are
-- NULL for consumers written through the Placement API.
ALTER TABLE consumers ADD COLUMN name text, ADD COLUMN properties jsonb;
CREATE INDEX consumers_properties_idx ON consumers USING gin (properties jsonb_path_ops)
    WHERE properties IS NOT NULL;
