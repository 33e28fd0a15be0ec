-- Why each node went away: the evidence that decided its end_reason (one line, e.g.
-- "Karpenter DisruptionTerminating: Disrupting Node: Underutilized/Delete"); NULL for rows
-- recorded before it was kept. The taxonomy spells a scale-down `scaled-down`: rows written
-- before say `scaled down`.
ALTER TABLE node_lifetimes ADD COLUMN end_evidence TEXT;
UPDATE node_lifetimes SET end_reason = 'scaled-down' WHERE end_reason = 'scaled down';
