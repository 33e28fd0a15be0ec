-- The pods a preempted node held at T=0 (its blast radius), linked to the node's lifetime.
CREATE TABLE IF NOT EXISTS preemption_pods (
    node_uid TEXT NOT NULL,
    namespace TEXT NOT NULL,
    name TEXT NOT NULL,
    owner_kind TEXT,
    owner_name TEXT,
    grace_s BIGINT NOT NULL,
    eviction_label TEXT,
    PRIMARY KEY (node_uid, namespace, name)
);
