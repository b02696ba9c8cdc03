ALTER TABLE resource_providers RESET (fillfactor);
