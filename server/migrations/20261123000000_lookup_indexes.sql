-- "Why did my pod stop?" looks pods up by namespace and name prefix; range reads select the
-- lifetimes that end inside or after a range's start.
CREATE INDEX IF NOT EXISTS preemption_pods_by_name ON preemption_pods (namespace, name);
CREATE INDEX IF NOT EXISTS node_lifetimes_ended ON node_lifetimes (ended_at);
