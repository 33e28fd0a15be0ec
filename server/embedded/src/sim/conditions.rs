//! The five NodePool conditions CoreWeave sets, computed from what the controller knows.
//!
//! Sources (URLs in `docs/sources.md`): CoreWeave: Node Pool reference ("Node Pool
//! Conditions": types, statuses, reasons; the healthy `kubectl describe` example for the exact
//! wording of the healthy messages) and CoreWeave's public `coreweave/skills` repository,
//! `cw-create-node-pool` ("quota limit is 0 for instance type …" for `NotSet`). Messages not
//! found in public material are written in the same style and say what a person can do.
//!
//! Pure: no clock, no I/O. [`merge`] keeps `lastTransitionTime` when a condition's status and
//! reason are unchanged, as Kubernetes' `meta.SetStatusCondition` does.

use spotboard_core::nodepool::{
    Condition, ConditionStatus, ConditionType, NodePoolSpec, ScaleDownStrategy,
};

use super::admission::Problem;

/// Everything the conditions of one pool depend on.
#[derive(Clone, Debug)]
pub struct PoolFacts<'a> {
    pub spec: &'a NodePoolSpec,
    pub zone: &'a str,
    /// From the controller's own check ([`super::admission::check`]).
    pub errors: &'a [Problem],
    /// Nodes of the pool present in the cluster.
    pub current: u32,
    /// Nodes assigned and booting.
    pub in_progress: u32,
    /// Nodes requested and waiting for capacity.
    pub queued: u32,
    /// Whether the zone offers the type in the pool's class.
    pub offered: bool,
    /// Free nodes of the type and class in the zone now.
    pub free: u32,
    /// The organization's quota for the type; `None` is `NotSet`.
    pub quota_limit: Option<u32>,
    /// Nodes of the same type held or requested by the zone's other pools.
    pub quota_used_by_others: u32,
    /// Scale-down wants to remove nodes but the strategy finds none it may remove.
    pub scale_down_stalled: bool,
}

fn cond(type_: ConditionType, ok: bool, reason: &str, message: String) -> Condition {
    Condition {
        type_,
        status: if ok {
            ConditionStatus::True
        } else {
            ConditionStatus::False
        },
        reason: Some(reason.to_string()),
        message: Some(message),
        last_transition_time: None,
        observed_generation: None,
    }
}

/// The five conditions, in [`spotboard_core::nodepool::FIVE_CONDITIONS`] order, without transition
/// times or generation (see [`merge`]).
pub fn desired(f: &PoolFacts<'_>) -> Vec<Condition> {
    vec![
        validated(f),
        capacity(f),
        quota(f),
        at_target(f),
        reconfiguration(),
    ]
}

fn validated(f: &PoolFacts<'_>) -> Condition {
    if f.errors.is_empty() {
        return cond(
            ConditionType::Validated,
            true,
            "Valid",
            "NodePool configuration is valid.".into(),
        );
    }
    let list: Vec<String> = f.errors.iter().map(ToString::to_string).collect();
    cond(
        ConditionType::Validated,
        false,
        "Invalid",
        format!("NodePool configuration is invalid: {}", list.join("; ")),
    )
}

/// Capacity: nodes still wanted (target minus current and in progress) against the zone.
/// `Sufficient` when nothing is wanted or the free nodes cover the queue; `NoneAvailable`
/// when the zone does not offer the type in this class; `Partial` when some of the queue can
/// be assigned; `QueuedAwaitingCapacity` when none can.
fn capacity(f: &PoolFacts<'_>) -> Condition {
    let t = &f.spec.instance_type;
    let class = f.spec.compute_class.as_str();
    let wanted = (f.spec.target_nodes.max(0) as u32).saturating_sub(f.current + f.in_progress);
    let sufficient = || {
        cond(
            ConditionType::Capacity,
            true,
            "Sufficient",
            "Sufficient capacity available for the requested instance type.".into(),
        )
    };
    if wanted == 0 {
        return sufficient();
    }
    if !f.offered {
        return cond(
            ConditionType::Capacity,
            false,
            "NoneAvailable",
            format!(
                "No {class} nodes of instance type {t} are available in zone {}.",
                f.zone
            ),
        );
    }
    if f.queued == 0 || f.free >= f.queued {
        return sufficient();
    }
    if f.free > 0 {
        return cond(
            ConditionType::Capacity,
            false,
            "Partial",
            format!(
                "Partial capacity available for instance type {t}: {} of {} queued nodes can be \
                 assigned in zone {}; the rest stay queued.",
                f.free, f.queued, f.zone
            ),
        );
    }
    cond(
        ConditionType::Capacity,
        false,
        "QueuedAwaitingCapacity",
        format!(
            "Request for {} {class} node(s) of instance type {t} is queued awaiting capacity in \
             zone {}.",
            f.queued, f.zone
        ),
    )
}

fn quota(f: &PoolFacts<'_>) -> Condition {
    let t = &f.spec.instance_type;
    let Some(limit) = f.quota_limit else {
        return cond(
            ConditionType::Quota,
            false,
            "NotSet",
            format!("quota limit is 0 for instance type {t}"),
        );
    };
    let target = f.spec.target_nodes.max(0) as u32;
    if f.quota_used_by_others + target > limit {
        return cond(
            ConditionType::Quota,
            false,
            "Over",
            format!(
                "NodePool is over instance type quota: targetNodes {target}{} exceeds the quota \
                 limit of {limit} for instance type {t}.",
                if f.quota_used_by_others > 0 {
                    format!(
                        " plus {} node(s) of other NodePools",
                        f.quota_used_by_others
                    )
                } else {
                    String::new()
                }
            ),
        );
    }
    cond(
        ConditionType::Quota,
        true,
        "Under",
        "NodePool is within instance type quota.".into(),
    )
}

fn at_target(f: &PoolFacts<'_>) -> Condition {
    let target = f.spec.target_nodes.max(0) as u32;
    match f.current.cmp(&target) {
        std::cmp::Ordering::Equal => cond(
            ConditionType::AtTarget,
            true,
            "TargetMet",
            "NodePool has reached its target node count.".into(),
        ),
        std::cmp::Ordering::Less => cond(
            ConditionType::AtTarget,
            false,
            "UnderTarget",
            format!(
                "NodePool has {} of {target} target nodes ({} in progress, {} queued).",
                f.current, f.in_progress, f.queued
            ),
        ),
        std::cmp::Ordering::Greater => {
            let strategy = f
                .spec
                .lifecycle
                .as_ref()
                .and_then(|l| l.scale_down_strategy.clone())
                .unwrap_or(ScaleDownStrategy::IdleOnly);
            let stalled = if f.scale_down_stalled {
                " Scale-down is waiting: no node is idle."
            } else {
                ""
            };
            cond(
                ConditionType::AtTarget,
                false,
                "OverTarget",
                format!(
                    "NodePool has {} node(s), above its target of {target}; extra nodes are \
                     removed using the {strategy} scale-down strategy.{stalled}",
                    f.current
                ),
            )
        }
    }
}

fn reconfiguration() -> Condition {
    cond(
        ConditionType::NodeReconfigurationRequired,
        false,
        "AllNodesUpToDate",
        "All nodes are on the current configuration.".into(),
    )
}

/// `new` with `lastTransitionTime` carried over from `old` where status and reason are
/// unchanged (else `now`, RFC 3339) and `observedGeneration` set to `generation`.
pub fn merge(
    old: &[Condition],
    new: Vec<Condition>,
    now: &str,
    generation: Option<i64>,
) -> Vec<Condition> {
    new.into_iter()
        .map(|mut c| {
            let prev = old.iter().find(|o| o.type_ == c.type_);
            c.last_transition_time = match prev {
                Some(p) if p.status == c.status && p.reason == c.reason => p
                    .last_transition_time
                    .clone()
                    .or_else(|| Some(now.to_string())),
                _ => Some(now.to_string()),
            };
            c.observed_generation = generation;
            c
        })
        .collect()
}

/// The conditions of `new` whose reason differs from `old` (or that are new), for the
/// edge-triggered CW* events.
pub fn changed<'a>(old: &[Condition], new: &'a [Condition]) -> Vec<&'a Condition> {
    new.iter()
        .filter(|c| {
            old.iter()
                .find(|o| o.type_ == c.type_)
                .is_none_or(|o| o.reason != c.reason || o.status != c.status)
        })
        .collect()
}

/// The reason of condition `t`, or `""`.
pub fn reason_of(conditions: &[Condition], t: &ConditionType) -> String {
    conditions
        .iter()
        .find(|c| &c.type_ == t)
        .and_then(|c| c.reason.clone())
        .unwrap_or_default()
}

#[cfg(test)]
#[path = "conditions_tests.rs"]
mod tests;
