-- Showback's pod intervals: one row per pod × node × (requests, team label), from when
-- spotboard first saw the pod running there so to when it last did (seconds since the epoch;
-- NULL while it runs). A pod whose team label or requests change gets a new row from then.
-- The node's GPUs and allocatable CPU and memory are kept beside the requests: its share is
-- computed from both.
CREATE TABLE IF NOT EXISTS pod_intervals (
    pod_uid TEXT NOT NULL,
    started_at BIGINT NOT NULL,
    ended_at BIGINT,
    cluster TEXT NOT NULL,
    node_uid TEXT NOT NULL,
    namespace TEXT NOT NULL,
    workload TEXT NOT NULL,
    team TEXT,
    gpus BIGINT NOT NULL,
    cpu_m BIGINT NOT NULL,
    memory_b BIGINT NOT NULL,
    node_gpus BIGINT NOT NULL,
    node_cpu_m BIGINT,
    node_memory_b BIGINT,
    PRIMARY KEY (pod_uid, started_at)
);
-- "Intervals overlapping [from, to)": ended_at IS NULL (the open ones) or ended_at > from,
-- both served by this index on SQLite and PostgreSQL (docs/operations.md shows the plans).
CREATE INDEX IF NOT EXISTS pod_intervals_by_end ON pod_intervals (ended_at);
