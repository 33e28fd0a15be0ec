-- T=0 of a preemption drill on the node (seconds since the epoch): spotboard's drill annotation
-- (drill.spotboard.dev/started-at) seen with the provider's notice. A drill never sets
-- preemption_t0, so preemption rates, survival curves and savings leave it out. NULL for a
-- node never drilled.
ALTER TABLE node_lifetimes ADD COLUMN drill_t0 BIGINT;
