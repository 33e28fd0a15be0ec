-- The blast radius also records each pod's owner replicas, covering PodDisruptionBudget, and
-- how the pod ended once its node was gone (e.g. `Failed: Terminated` on GKE).
ALTER TABLE preemption_pods ADD COLUMN replicas BIGINT;
ALTER TABLE preemption_pods ADD COLUMN pdb TEXT;
ALTER TABLE preemption_pods ADD COLUMN outcome TEXT;
