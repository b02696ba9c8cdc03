DROP TABLE IF EXISTS scheduling_shadow_disagreements;
DROP TABLE IF EXISTS scheduling_shadow_refusals;
DROP TABLE IF EXISTS scheduling_shadows;
