-- Every NodePool condition transition seen (CoreWeave: Node Pool reference, status.conditions):
-- one row per pool, condition type and lastTransitionTime (seconds since the epoch; when the pool
-- gave none, when spotboard first saw the condition).
CREATE TABLE IF NOT EXISTS pool_conditions (
    cluster TEXT NOT NULL,
    pool TEXT NOT NULL,
    condition_type TEXT NOT NULL,
    since BIGINT NOT NULL,
    status TEXT NOT NULL,
    reason TEXT NOT NULL,
    message TEXT NOT NULL,
    PRIMARY KEY (cluster, pool, condition_type, since, status, reason)
);
CREATE INDEX IF NOT EXISTS pool_conditions_by_pool ON pool_conditions (cluster, pool, since);
