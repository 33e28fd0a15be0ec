use chrono::{DateTime, Utc};
use spotboard_core::{
    CapacityType, catalog,
    domain::conditions::{problems, severity},
    model::{ConditionView, PoolDetail, PoolRow},
    nodepool::{Condition, FIVE_CONDITIONS, NodePoolSpec, NodePoolStatus},
};

use crate::watch::records::PoolRecord;

/// What the pool's nodes add to its row.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeAggregate {
    /// Nodes of the pool that are cordoned.
    pub cordoned: u32,
    /// Nodes of the pool with `qos.coreweave.cloud/pending-preemption=true`.
    pub preempting: u32,
    /// The zone label most of the pool's nodes carry, when the cluster's zone is not known.
    pub zone: Option<String>,
    /// GPUs on the pool's nodes, and GPUs their running pods request.
    pub gpus_allocatable: u32,
    pub gpus_requested: u32,
}

/// A NodePool's row.
///
/// `zone` is the cluster's zone when known (CKS clusters are zonal); otherwise the zone its
/// nodes report. A malformed record still yields a row (name, age, and the reason), so the
/// pool stays visible.
pub fn pool_row(
    cluster: &str,
    zone: Option<&str>,
    rec: &PoolRecord,
    nodes: &NodeAggregate,
) -> PoolRow {
    let mut row = PoolRow {
        key: rec.uid.clone(),
        provider: spotboard_core::Provider::Cks,
        cluster: cluster.to_string(),
        zone: zone.map(str::to_string).or_else(|| nodes.zone.clone()),
        name: rec.name.clone(),
        fallback_for: rec.fallback_for.clone(),
        created: rec.created,
        nodes_cordoned: nodes.cordoned,
        nodes_preempting: nodes.preempting,
        gpus_allocatable: nodes.gpus_allocatable,
        gpus_requested: nodes.gpus_requested,
        ..Default::default()
    };
    match &rec.parsed {
        Err(reason) => {
            row.malformed = Some(reason.clone());
            row.conditions = conditions(&[]);
        }
        Ok((spec, status)) => fill(&mut row, spec, status, rec.generation),
    }
    row
}

fn fill(row: &mut PoolRow, spec: &NodePoolSpec, status: &NodePoolStatus, generation: Option<i64>) {
    row.compute_class = Some(spec.compute_class.clone());
    row.capacity_type = CapacityType::of_compute_class(&spec.compute_class);
    row.instance_type = spec.instance_type.clone();
    row.gpus_per_node = catalog::instance_type(&spec.instance_type).map(|t| t.gpus);
    row.target_nodes = spec.target_nodes;
    row.min_nodes = spec.min_nodes;
    row.max_nodes = spec.max_nodes;
    row.autoscaling = spec.autoscaling;
    row.queued_nodes = status.queued_nodes;
    row.in_progress = status.in_progress;
    row.current_nodes = status.current_nodes;
    row.conditions = conditions(&status.conditions);
    row.problems = problems(&row.conditions);
    if !spec.compute_class.is_known() {
        row.problems.push(format!(
            "Unknown computeClass \"{}\" (this build knows {})",
            spec.compute_class,
            spotboard_core::nodepool::ComputeClass::known().join(", ")
        ));
    }
    row.detail = detail(spec, status, generation);
}

/// One reported condition as shown: the same view for CKS and Karpenter NodePools.
pub fn condition_view(c: &Condition) -> ConditionView {
    let reason = c.reason.clone().unwrap_or_default();
    ConditionView {
        type_: c.type_.clone(),
        status: c.status.as_str().to_string(),
        severity: severity(c.type_.as_str(), c.status.as_str(), &reason),
        reason,
        message: c.message.clone().unwrap_or_default(),
        last_transition: c
            .last_transition_time
            .as_deref()
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc)),
    }
}

/// The five CoreWeave conditions in fixed order (a missing one shows as not reported), then
/// any other condition the pool carries, in the order it came.
pub fn conditions(reported: &[Condition]) -> Vec<ConditionView> {
    let view = condition_view;
    let mut out: Vec<ConditionView> = FIVE_CONDITIONS
        .iter()
        .map(|t| {
            reported
                .iter()
                .find(|c| &c.type_ == t)
                .map(view)
                .unwrap_or_else(|| ConditionView {
                    type_: t.clone(),
                    ..Default::default()
                })
        })
        .collect();
    out.extend(
        reported
            .iter()
            .filter(|c| !FIVE_CONDITIONS.contains(&c.type_))
            .map(view),
    );
    out
}

fn detail(spec: &NodePoolSpec, status: &NodePoolStatus, generation: Option<i64>) -> PoolDetail {
    let image = spec.image.as_ref().map(|i| {
        [
            i.name.as_ref().map(|n| format!("name {n}")),
            i.kernel.as_ref().map(|k| format!("kernel {k}")),
            i.release_train
                .as_ref()
                .map(|r| format!("releaseTrain {r}")),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(", ")
    });
    let unknown_fields = spec
        .extra
        .iter()
        .map(|(k, v)| format!("spec.{k} = {v}"))
        .chain(
            status
                .extra
                .iter()
                .map(|(k, v)| format!("status.{k} = {v}")),
        )
        .collect();
    PoolDetail {
        node_labels: spec.node_labels.clone(),
        // A CKS NodePool says its nodes' labels in `nodeLabels`.
        node_label_values: Default::default(),
        node_annotations: spec.node_annotations.clone(),
        node_taints: spec
            .node_taints
            .iter()
            .map(|t| match &t.value {
                Some(v) => format!("{}={}:{}", t.key, v, t.effect),
                None => format!("{}:{}", t.key, t.effect),
            })
            .collect(),
        image,
        gpu_version: spec.gpu.as_ref().and_then(|g| g.version.clone()),
        scale_down_strategy: spec
            .lifecycle
            .as_ref()
            .and_then(|l| l.scale_down_strategy.as_ref())
            .map(|s| s.to_string()),
        update_strategy: spec
            .node_configuration_update_strategy
            .as_ref()
            .and_then(|s| s.type_.as_ref())
            .map(|s| s.to_string()),
        node_profile: status.node_profile.clone(),
        pending_configuration: status
            .pending_node_configuration
            .as_ref()
            .map(|p| p.summary.clone())
            .unwrap_or_default(),
        unknown_fields,
        generation,
        provider_spec: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spotboard_core::model::Severity;

    fn record(spec: serde_json::Value, status: serde_json::Value) -> PoolRecord {
        PoolRecord {
            uid: "u".into(),
            name: "p".into(),
            generation: Some(1),
            created: None,
            fallback_for: Vec::new(),
            parsed: Ok((
                serde_json::from_value(spec).unwrap(),
                serde_json::from_value(status).unwrap(),
            )),
        }
    }

    #[test]
    fn five_conditions_in_order_with_unknown_extra_last() {
        let rec = record(
            serde_json::json!({"instanceType": "gd-8xa100-i128", "targetNodes": 1, "computeClass": "spot"}),
            serde_json::json!({"currentNodes": 1, "conditions": [
                {"type": "Quota", "status": "False", "reason": "NotSet", "message": "quota limit is 0"},
                {"type": "Validated", "status": "True", "reason": "Valid", "lastTransitionTime": "2025-05-30T17:36:00Z"},
                {"type": "FancyNewThing", "status": "True", "reason": "Yes"}
            ]}),
        );
        let row = pool_row("c", Some("US-EAST-04A"), &rec, &NodeAggregate::default());
        let types: Vec<_> = row.conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(
            types,
            [
                "Validated",
                "Capacity",
                "Quota",
                "AtTarget",
                "NodeReconfigurationRequired",
                "FancyNewThing"
            ]
        );
        assert_eq!(row.conditions[0].severity, Severity::Ok);
        assert!(row.conditions[0].last_transition.is_some());
        assert_eq!(row.conditions[1].status, "", "Capacity not reported");
        assert_eq!(row.conditions[2].severity, Severity::Error);
        assert_eq!(row.conditions[5].severity, Severity::Unknown);
        assert_eq!(row.problems.len(), 1, "{:?}", row.problems);
        assert_eq!(row.gpus_per_node, Some(8));
        assert_eq!(row.current_nodes, Some(1));
        assert_eq!(row.queued_nodes, None);
    }

    #[test]
    fn malformed_pool_keeps_its_name_and_reason() {
        let rec = PoolRecord {
            uid: "u".into(),
            name: "broken".into(),
            generation: None,
            created: None,
            fallback_for: Vec::new(),
            parsed: Err("spec.targetNodes: invalid type".into()),
        };
        let row = pool_row(
            "c",
            None,
            &rec,
            &NodeAggregate {
                zone: Some("RNO2A".into()),
                ..Default::default()
            },
        );
        assert_eq!(row.name, "broken");
        assert!(row.has_problem());
        assert_eq!(row.zone.as_deref(), Some("RNO2A"));
        assert_eq!(row.conditions.len(), 5);
    }

    #[test]
    fn unknown_class_and_fields_are_shown() {
        let rec = record(
            serde_json::json!({"instanceType": "x-new", "targetNodes": 2, "computeClass": "flex", "placement": "r1"}),
            serde_json::json!({}),
        );
        let row = pool_row("c", None, &rec, &NodeAggregate::default());
        assert_eq!(row.compute_class_text(), "flex");
        assert!(
            row.problems
                .iter()
                .any(|p| p.contains("Unknown computeClass"))
        );
        assert_eq!(row.detail.unknown_fields, ["spec.placement = \"r1\""]);
        assert_eq!(row.gpus_per_node, None);
    }
}
