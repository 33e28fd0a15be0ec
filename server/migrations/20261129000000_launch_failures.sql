-- Karpenter's refused launches: every `InsufficientCapacityError` event seen on a NodeClaim
-- (kubernetes-sigs/karpenter), kept past the hour Kubernetes keeps events, for the 7-day
-- counts beside the capacity grid. One row per event (cluster, event uid); `count` and
-- `last_seen` (seconds since the epoch) grow as the event repeats.
CREATE TABLE IF NOT EXISTS launch_failures (
    cluster TEXT NOT NULL,
    uid TEXT NOT NULL,
    nodeclaim TEXT NOT NULL,
    message TEXT NOT NULL,
    count BIGINT NOT NULL,
    last_seen BIGINT NOT NULL,
    PRIMARY KEY (cluster, uid)
);
CREATE INDEX IF NOT EXISTS launch_failures_by_time ON launch_failures (last_seen);
