-- The blast radius also records each pod's owner replicas and covering PodDisruptionBudget.
ALTER TABLE preemption_pods ADD COLUMN replicas BIGINT;
ALTER TABLE preemption_pods ADD COLUMN pdb TEXT;
