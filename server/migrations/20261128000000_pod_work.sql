-- What a preemption's pods lose: each pod's GPU request (nvidia.com/gpu) and its last start
-- (seconds since the epoch; the newest running container's startedAt, else status.startTime),
-- for the pods running at T=0. The work lost is gpus × (the node's end − started_at), an
-- upper bound. NULL in rows recorded before these were kept.
ALTER TABLE preemption_pods ADD COLUMN gpus BIGINT;
ALTER TABLE preemption_pods ADD COLUMN started_at BIGINT;
