//! GKE node pools and Karpenter NodePools, seen through their nodes and, where the cluster
//! serves `karpenter.sh/v1`, the Karpenter NodePool object.
//!
//! spotboard does not read the GKE API, so a GKE pool's row says what its nodes say: how
//! many there are and are Ready, their instance types and capacity type, how many are
//! cordoned or under a preemption notice. A Karpenter NodePool adds what its spec allows
//! (capacity types, instance types, zones, limits, disruption budgets) and its status
//! conditions, and shows even with no node. Targets, queues and CKS conditions do not exist
//! for these pools and stay empty.

use std::collections::{BTreeMap, BTreeSet};

use spotboard_core::model::PoolRow;
use spotboard_core::{CapacityType, Provider};

use crate::watch::records::{KarpenterPoolRecord, NodeRecord};

/// The row of pool `name` of `provider` from its nodes and, for Karpenter, its NodePool
/// object; `None` when neither is left.
pub fn provider_pool_row(
    cluster: &str,
    key: &str,
    name: &str,
    provider: Provider,
    nodes: &[&NodeRecord],
    spec: Option<&KarpenterPoolRecord>,
) -> Option<PoolRow> {
    if nodes.is_empty() {
        return spec.map(|s| from_spec(cluster, key, provider, s));
    }
    let types: BTreeSet<&str> = nodes
        .iter()
        .filter_map(|n| n.instance_type.as_deref())
        .collect();
    let capacity: BTreeSet<&str> = nodes.iter().map(|n| n.capacity.as_str()).collect();
    let mut zones: BTreeMap<&str, usize> = BTreeMap::new();
    for z in nodes.iter().filter_map(|n| n.zone.as_deref()) {
        *zones.entry(z).or_default() += 1;
    }
    let ready = nodes.iter().filter(|n| n.ready == Some(true)).count();
    let count = nodes.len();
    let mut problems = Vec::new();
    if ready < count {
        problems.push(format!("{} of {count} nodes are not Ready", count - ready));
    }
    let mut row = PoolRow {
        key: key.to_string(),
        provider,
        capacity_type: if capacity.len() == 1 {
            capacity
                .into_iter()
                .next()
                .map_or(CapacityType::Unknown, CapacityType::parse)
        } else {
            CapacityType::Mixed
        },
        cluster: cluster.to_string(),
        zone: zones
            .into_iter()
            .max_by_key(|(z, n)| (*n, std::cmp::Reverse(*z)))
            .map(|(z, _)| z.to_string()),
        name: name.to_string(),
        instance_type: types.into_iter().collect::<Vec<_>>().join(", "),
        target_nodes: count as i32,
        current_nodes: Some(ready as i32),
        nodes_cordoned: nodes.iter().filter(|n| n.cordoned).count() as u32,
        nodes_preempting: nodes.iter().filter(|n| n.notice).count() as u32,
        created: nodes.iter().filter_map(|n| n.created).min(),
        problems,
        ..Default::default()
    };
    // The GPUs per node when every node has the same (its capacity, else the catalog's):
    // a GKE or AWS GPU type is not in the catalog, so only its nodes say.
    let counts: Option<BTreeSet<u32>> = nodes.iter().map(|n| super::gpus(n).0).collect();
    if let Some(counts) = counts.filter(|c| c.len() == 1) {
        row.gpus_per_node = counts.into_iter().next().filter(|g| *g > 0);
    }
    if let Some(s) = spec {
        add_spec(&mut row, s);
    }
    // The GPU model its nodes carry, for a waiting pod that selects it, after the spec's
    // lines; a NodePool requirement on the same label says it for every node, and stands.
    let models: BTreeSet<&str> = nodes
        .iter()
        .filter_map(|n| n.accelerator.as_deref())
        .collect();
    let model_label = match provider {
        Provider::Gke => Some(spotboard_core::labels::GKE_ACCELERATOR),
        Provider::Karpenter => Some(spotboard_core::labels::KARPENTER_GPU_NAME),
        _ => None,
    };
    if let Some(key) = model_label
        && !models.is_empty()
        && !row.detail.node_label_values.contains_key(key)
    {
        let values: Vec<String> = models.into_iter().map(String::from).collect();
        row.detail
            .provider_spec
            .push((format!("node label {key}"), values.join(", ")));
        row.detail.node_label_values.insert(key.to_string(), values);
    }
    Some(row)
}

/// A Karpenter NodePool with no node yet: what its spec allows.
fn from_spec(cluster: &str, key: &str, provider: Provider, s: &KarpenterPoolRecord) -> PoolRow {
    let mut row = PoolRow {
        key: key.to_string(),
        provider,
        capacity_type: match s.capacity_types.as_slice() {
            [one] => CapacityType::parse(one),
            _ => CapacityType::Mixed,
        },
        cluster: cluster.to_string(),
        zone: (s.zones.len() == 1).then(|| s.zones[0].clone()),
        name: s.name.clone(),
        // Sorted, as the types of a pool with nodes are: the same pool reads the same
        // before and after its first node registers.
        instance_type: if s.instance_types.is_empty() {
            "any".into()
        } else {
            let sorted: BTreeSet<&str> = s.instance_types.iter().map(String::as_str).collect();
            sorted.into_iter().collect::<Vec<_>>().join(", ")
        },
        current_nodes: Some(0),
        created: s.created,
        ..Default::default()
    };
    add_spec(&mut row, s);
    row
}

/// The NodePool's conditions, spec lines and problems on a row.
fn add_spec(row: &mut PoolRow, s: &KarpenterPoolRecord) {
    row.allows_spot_and_on_demand = ["spot", "on-demand"]
        .iter()
        .all(|t| s.capacity_types.iter().any(|c| c == t));
    row.conditions = s.conditions.iter().map(super::condition_view).collect();
    row.problems
        .extend(spotboard_core::domain::conditions::problems(
            &row.conditions,
        ));
    if let Some(m) = &s.malformed {
        row.problems
            .push(format!("Could not read the NodePool: {m}"));
    }
    let mut lines = vec![(
        "requirements karpenter.sh/capacity-type".to_string(),
        s.capacity_types.join(", "),
    )];
    let any = |v: &[String]| {
        if v.is_empty() {
            "any".to_string()
        } else {
            v.join(", ")
        }
    };
    lines.push((
        "requirements node.kubernetes.io/instance-type".into(),
        any(&s.instance_types),
    ));
    lines.push((
        "requirements topology.kubernetes.io/zone".into(),
        any(&s.zones),
    ));
    for (k, v) in &s.limits {
        lines.push((format!("limits.{k}"), v.clone()));
    }
    for (k, vs) in &s.requirements {
        lines.push((format!("requirements {k}"), vs.join(", ")));
        row.detail.node_label_values.insert(k.clone(), vs.clone());
    }
    if let Some(c) = &s.consolidation {
        lines.push(("disruption.consolidationPolicy".into(), c.clone()));
    }
    if !s.budgets.is_empty() {
        lines.push(("disruption.budgets".into(), s.budgets.join("; ")));
    }
    row.detail.provider_spec = lines;
}

#[cfg(test)]
mod tests {
    use super::*;
    use spotboard_core::CapacityType;

    fn node(name: &str, t: &str, cap: CapacityType, ready: bool, notice: bool) -> NodeRecord {
        NodeRecord {
            uid: name.into(),
            name: name.into(),
            pool: Some("spot-general".into()),
            instance_type: Some(t.into()),
            zone: Some("us-east-1a".into()),
            ready: Some(ready),
            cordoned: notice,
            notice,
            provider: Provider::Karpenter,
            capacity: cap,
            ..Default::default()
        }
    }

    #[test]
    fn a_pool_is_what_its_nodes_say() {
        let a = node("a", "m5.xlarge", CapacityType::Spot, true, false);
        let b = node("b", "m6i.xlarge", CapacityType::Spot, false, true);
        let row = provider_pool_row(
            "aws",
            "karpenter:aws:spot-general",
            "spot-general",
            Provider::Karpenter,
            &[&a, &b],
            None,
        )
        .unwrap();
        assert_eq!(row.provider, Provider::Karpenter);
        assert_eq!(row.capacity_type, CapacityType::Spot);
        assert_eq!(row.instance_type, "m5.xlarge, m6i.xlarge");
        assert_eq!((row.target_nodes, row.current_nodes), (2, Some(1)));
        assert_eq!((row.nodes_cordoned, row.nodes_preempting), (1, 1));
        assert_eq!(row.zone.as_deref(), Some("us-east-1a"));
        assert_eq!(row.problems, ["1 of 2 nodes are not Ready"]);
        assert!(row.conditions.is_empty());

        let od = node("c", "m5.xlarge", CapacityType::OnDemand, true, false);
        let mixed = provider_pool_row(
            "aws",
            "k",
            "spot-general",
            Provider::Karpenter,
            &[&a, &od],
            None,
        )
        .unwrap();
        assert_eq!(mixed.capacity_type, CapacityType::Mixed);
        assert!(provider_pool_row("aws", "k", "x", Provider::Gke, &[], None).is_none());
    }

    /// The row of Karpenter pool `gpu-spot` from `nodes` and `spec`.
    fn gpu_spot(nodes: &[&NodeRecord], spec: &KarpenterPoolRecord) -> PoolRow {
        provider_pool_row(
            "aws",
            "k",
            "gpu-spot",
            Provider::Karpenter,
            nodes,
            Some(spec),
        )
        .unwrap()
    }

    #[test]
    fn a_karpenter_nodepool_without_nodes_shows_what_it_allows() {
        let spec = KarpenterPoolRecord {
            uid: "k1".into(),
            name: "gpu-spot".into(),
            capacity_types: vec!["spot".into()],
            instance_types: vec!["g5.2xlarge".into()],
            limits: vec![("nvidia.com/gpu".into(), "16".into())],
            budgets: vec!["nodes 10%".into()],
            conditions: vec![
                serde_json::from_value(serde_json::json!({
                    "type": "Ready", "status": "False", "reason": "NodeClassNotReady",
                    "message": "EC2NodeClass gpu not found"
                }))
                .unwrap(),
            ],
            ..Default::default()
        };
        let row = gpu_spot(&[], &spec);
        assert_eq!(
            (row.capacity_type.as_str(), row.current_nodes),
            ("spot", Some(0))
        );
        assert_eq!(row.instance_type, "g5.2xlarge");
        assert!(!row.allows_spot_and_on_demand, "spot only");
        let both = KarpenterPoolRecord {
            capacity_types: vec!["on-demand".into(), "spot".into()],
            ..spec.clone()
        };
        let mixed = provider_pool_row("aws", "k", "gpu", Provider::Karpenter, &[], Some(&both));
        assert!(mixed.is_some_and(|r| r.allows_spot_and_on_demand));
        assert_eq!(row.conditions[0].type_.as_str(), "Ready");
        assert!(
            row.problems
                .iter()
                .any(|p| p.contains("EC2NodeClass gpu not found")),
            "{:?}",
            row.problems
        );
        assert!(
            row.detail
                .provider_spec
                .contains(&("limits.nvidia.com/gpu".to_string(), "16".to_string()))
        );
    }

    /// A pool's GPU model label is what its nodes carry (GKE), or what its NodePool requires
    /// where it says (Karpenter), so a pod selecting the model finds the pool.
    #[test]
    fn the_gpu_model_label_comes_from_the_nodes_or_the_nodepools_requirement() {
        let mut l4 = node("gke-l4-1", "g2-standard-8", CapacityType::Spot, true, false);
        l4.provider = Provider::Gke;
        l4.accelerator = Some("nvidia-l4".into());
        let row = provider_pool_row("gke", "k", "spot-l4", Provider::Gke, &[&l4], None).unwrap();
        assert_eq!(
            row.detail
                .node_label_values
                .get(spotboard_core::labels::GKE_ACCELERATOR),
            Some(&vec!["nvidia-l4".to_string()])
        );
        assert!(row.detail.provider_spec.contains(&(
            "node label cloud.google.com/gke-accelerator".into(),
            "nvidia-l4".into()
        )));

        let mut a10g = node("ip-1", "g5.2xlarge", CapacityType::Spot, true, false);
        a10g.accelerator = Some("a10g".into());
        let spec = KarpenterPoolRecord {
            name: "gpu-spot".into(),
            capacity_types: vec!["spot".into()],
            requirements: vec![(
                spotboard_core::labels::KARPENTER_GPU_NAME.into(),
                vec!["a10g".into(), "l4".into()],
            )],
            ..Default::default()
        };
        let row = gpu_spot(&[&a10g], &spec);
        assert_eq!(
            row.detail
                .node_label_values
                .get(spotboard_core::labels::KARPENTER_GPU_NAME),
            Some(&vec!["a10g".to_string(), "l4".to_string()])
        );
        let lines: Vec<&str> = row
            .detail
            .provider_spec
            .iter()
            .map(|(k, _)| k.as_str())
            .collect();
        assert!(
            lines.contains(&"requirements karpenter.k8s.aws/instance-gpu-name"),
            "{lines:?}"
        );
        assert!(
            !lines.iter().any(|l| l.starts_with("node label")),
            "{lines:?}"
        );
    }
}
