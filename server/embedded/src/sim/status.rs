//! A NodePool's status as the operator writes it (CoreWeave: Node Pool reference,
//! "NodePoolStatus"; CoreWeave: Node Pool status), and the CW* events that condition changes
//! fire (CoreWeave: Node Pool reference, "Events").

use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use spotboard_core::nodepool::{
    Condition, ConditionType, NodeConfigurationRevision, NodePool, NodePoolStatus,
};

use super::Ctx;
use super::conditions::changed;
use super::events::{Component, Involved, Severity};
use super::nodes::KUBELET_VERSION;
use super::random::{hash, mix};

/// The active node configuration of a pool: a stable identifier derived from what a
/// configuration is made of (instance type, image, GPU driver).
pub fn node_profile(pool: &NodePool) -> String {
    let s = &pool.spec;
    let key = format!(
        "{}|{:?}|{:?}",
        s.instance_type,
        s.image.as_ref().and_then(|i| i.name.clone()),
        s.gpu.as_ref().and_then(|g| g.version.clone())
    );
    format!("{:012x}", mix(hash(&key), 5) & 0xffff_ffff_ffff)
}

fn summary(pool: &NodePool) -> Vec<String> {
    let gpu = spotboard_core::catalog::instance_type(&pool.spec.instance_type)
        .is_some_and(|t| t.gpus > 0);
    let mut out = vec!["ncore-image v2.10.0".to_string()];
    if gpu {
        let driver = pool
            .spec
            .gpu
            .as_ref()
            .and_then(|g| g.version.clone())
            .unwrap_or_else(|| "570".into());
        out.push(format!("NVIDIA driver {driver}"));
    }
    out.push(format!("Kubernetes {KUBELET_VERSION}"));
    out
}

/// The `CWNodePoolCreated` message.
pub fn created_message(name: &str, spec: &spotboard_core::nodepool::NodePoolSpec) -> String {
    format!(
        "NodePool {name} created: {} {} node(s) of instance type {}.",
        spec.target_nodes, spec.compute_class, spec.instance_type
    )
}

/// The status to write: counts, profile, one revision (the active one) and `conditions`.
pub fn build(
    pool: &NodePool,
    current: u32,
    in_progress: u32,
    queued: u32,
    conditions: Vec<Condition>,
) -> NodePoolStatus {
    let profile = node_profile(pool);
    let created = pool
        .metadata
        .creation_timestamp
        .as_ref()
        .map(|t| t.0.to_string());
    NodePoolStatus {
        queued_nodes: Some(queued as i32),
        in_progress: Some(in_progress as i32),
        current_nodes: Some(current as i32),
        node_profile: Some(profile.clone()),
        pending_node_configuration: None,
        node_configuration_revisions: vec![NodeConfigurationRevision {
            active_nodes: Some(current as i32),
            created_at: created,
            node_profile: Some(profile),
            disabled: Some(false),
            summary: summary(pool),
        }],
        conditions,
        extra: Default::default(),
    }
}

/// The last status the operator wrote for a pool, with the pool's `resourceVersion` it was
/// written over. While the cache still shows that version, the write is not in it yet.
#[derive(Clone, Debug, Default)]
pub struct Written {
    base_rv: Option<String>,
    status: NodePoolStatus,
}

/// The freshest status known for `pool`: the cached one, or the one just written if the cache
/// has not caught up with it.
pub fn freshest<'a>(
    pool: &'a NodePool,
    written: &'a Option<Written>,
) -> Option<&'a NodePoolStatus> {
    match written {
        Some(w) if w.base_rv == pool.metadata.resource_version => Some(&w.status),
        _ => pool.status.as_ref(),
    }
}

/// Writes `status` unless it is what the pool has (or was just given).
pub async fn write(
    ctx: &Ctx,
    pool: &NodePool,
    status: &NodePoolStatus,
    written: &mut Option<Written>,
) {
    if freshest(pool, written) == Some(status) || pool.status.as_ref() == Some(status) {
        return;
    }
    let api: Api<NodePool> = Api::all(ctx.client.clone());
    let patch = serde_json::json!({ "status": status });
    match api
        .patch_status(
            &pool.name_any(),
            &PatchParams::default(),
            &Patch::Merge(&patch),
        )
        .await
    {
        Ok(_) => {
            *written = Some(Written {
                base_rv: pool.metadata.resource_version.clone(),
                status: status.clone(),
            });
        }
        Err(e) => tracing::warn!(zone = %ctx.zone, pool = %pool.name_any(), "status: {e}"),
    }
}

/// The events of condition changes from `old` to `new`: insufficient capacity, a type not in
/// the zone, over quota, an invalid instance type, and reaching the target after scaling.
pub async fn transition_events(ctx: &Ctx, pool: &NodePool, old: &[Condition], new: &[Condition]) {
    let about = Involved::of(pool);
    let was = |t: ConditionType| super::conditions::reason_of(old, &t);
    for c in changed(old, new) {
        let reason = c.reason.as_deref().unwrap_or_default();
        let message = c.message.clone().unwrap_or_default();
        let event = match (&c.type_, reason) {
            (ConditionType::Capacity, "QueuedAwaitingCapacity" | "Partial") => {
                Some((Severity::Warning, "CWInsufficientCapacity", message))
            }
            (ConditionType::Capacity, "NoneAvailable") => {
                Some((Severity::Warning, "CWInstanceTypeNotInZone", message))
            }
            (ConditionType::Quota, "Over" | "NotSet") => {
                Some((Severity::Warning, "CWOverQuota", message))
            }
            (ConditionType::Validated, "Invalid")
                if message.contains("spec.instanceType")
                    || message.contains("spec.computeClass") =>
            {
                Some((Severity::Warning, "CWInvalidInstanceType", message))
            }
            (ConditionType::AtTarget, "TargetMet") => match was(ConditionType::AtTarget).as_str() {
                "UnderTarget" => Some((
                    Severity::Normal,
                    "CWNodePoolScaledUp",
                    format!("NodePool scaled up to {} node(s).", pool.spec.target_nodes),
                )),
                "OverTarget" => Some((
                    Severity::Normal,
                    "CWNodePoolScaledDown",
                    format!(
                        "NodePool scaled down to {} node(s).",
                        pool.spec.target_nodes
                    ),
                )),
                _ => None,
            },
            _ => None,
        };
        if let Some((severity, reason, message)) = event {
            ctx.events
                .record(
                    &about,
                    severity,
                    reason,
                    &message,
                    Component::NodePoolOperator,
                )
                .await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_is_stable_and_follows_configuration() {
        let a = NodePool::new(
            "a",
            spotboard_core::nodepool::NodePoolSpec {
                instance_type: "gd-8xh100ib-i128".into(),
                target_nodes: 1,
                ..Default::default()
            },
        );
        let mut b = a.clone();
        b.metadata.name = Some("b".into());
        assert_eq!(
            node_profile(&a),
            node_profile(&b),
            "same configuration, same profile"
        );
        assert_eq!(node_profile(&a).len(), 12);
        b.spec.gpu = Some(spotboard_core::nodepool::Gpu {
            version: Some("575".into()),
        });
        assert_ne!(node_profile(&a), node_profile(&b));
        assert!(summary(&b).contains(&"NVIDIA driver 575".to_string()));
    }

    #[test]
    fn status_counts_and_revision() {
        let pool = NodePool::new(
            "p",
            spotboard_core::nodepool::NodePoolSpec {
                instance_type: "turin-gp".into(),
                target_nodes: 3,
                ..Default::default()
            },
        );
        let s = build(&pool, 2, 1, 0, vec![]);
        assert_eq!(
            (s.current_nodes, s.in_progress, s.queued_nodes),
            (Some(2), Some(1), Some(0))
        );
        assert_eq!(s.node_configuration_revisions[0].active_nodes, Some(2));
        assert_eq!(
            s.node_configuration_revisions[0].summary,
            ["ncore-image v2.10.0", "Kubernetes v1.33.1"]
        );
    }
}
