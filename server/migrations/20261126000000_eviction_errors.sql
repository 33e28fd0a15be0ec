-- How many evictions were refused (by a PodDisruptionBudget) while a preempted node drained:
-- the count of its refusal events (CoreWeave: `CWNodeDrainingPDBViolation`; Karpenter:
-- `FailedDraining`). NULL until one is seen. Pods killed at removal and pods past their grace
-- period are read from preemption_pods.outcome.
ALTER TABLE node_lifetimes ADD COLUMN evictions_refused BIGINT;
