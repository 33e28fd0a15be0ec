-- Node lifetimes: one row per node uid, from creationTimestamp to removal.
-- Times are Unix seconds (BIGINT), so the same schema serves SQLite and PostgreSQL.
CREATE TABLE IF NOT EXISTS node_lifetimes (
    uid TEXT PRIMARY KEY,
    cluster TEXT NOT NULL,
    node TEXT NOT NULL,
    pool TEXT,
    instance_type TEXT,
    zone TEXT,
    capacity_type TEXT NOT NULL,
    gpus BIGINT NOT NULL DEFAULT 0,
    started_at BIGINT NOT NULL,
    ended_at BIGINT,
    end_reason TEXT,
    preemption_t0 BIGINT
);
CREATE INDEX IF NOT EXISTS node_lifetimes_started ON node_lifetimes (started_at);
CREATE INDEX IF NOT EXISTS node_lifetimes_open ON node_lifetimes (cluster, ended_at);

-- The recorder's last heartbeat: lifetimes that ended while spotboard was not watching end here.
CREATE TABLE IF NOT EXISTS ledger_meta (
    key TEXT PRIMARY KEY,
    value BIGINT NOT NULL
);
