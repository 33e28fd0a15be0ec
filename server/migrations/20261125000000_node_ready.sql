-- When each node's Ready condition first turned True (its lastTransitionTime, seconds since the
-- epoch): a preemption's replacement latency runs from the victim's T=0 to its replacement's
-- ready_at (AWS: "Best practices for handling EC2 Spot Instance interruptions", replacement
-- latency). NULL until the node is seen Ready.
ALTER TABLE node_lifetimes ADD COLUMN ready_at BIGINT;
