-- Each cluster's last known state: its pool and node rows as JSON (`hub::last_known`), and
-- when they were current (seconds since the epoch). One row per cluster, replaced about once
-- a minute by the writer; read at start so a restarted spotboard shows its fleet before the
-- watches have listed it.
CREATE TABLE IF NOT EXISTS last_known (
    cluster TEXT PRIMARY KEY,
    as_of BIGINT NOT NULL,
    body TEXT NOT NULL
);
