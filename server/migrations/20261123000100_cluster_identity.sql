-- Which run of a cluster a lifetime belongs to: '' for a real cluster (its kubeconfig context
-- names it), a per-run id for the embedded cluster, whose clusters have the same names every
-- run. A run closes only its own leftovers, and another run's only once that run's heartbeat
-- (ledger_meta 'heartbeat:<id>') has stopped.
ALTER TABLE node_lifetimes ADD COLUMN cluster_uid TEXT NOT NULL DEFAULT '';
CREATE INDEX IF NOT EXISTS node_lifetimes_identity ON node_lifetimes (cluster, cluster_uid, ended_at);
