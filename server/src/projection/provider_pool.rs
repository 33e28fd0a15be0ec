//! GKE node pools and Karpenter NodePools, seen through their nodes.
//!
//! spotboard reads Nodes, not the GKE API or Karpenter's objects, so a pool's row says what
//! its nodes say: how many there are and are Ready, their instance types and capacity type,
//! how many are cordoned or under a preemption notice. Targets, queues and CKS conditions do
//! not exist for these pools and stay empty.

use std::collections::{BTreeMap, BTreeSet};

use app::domain::preemption::Provider;
use app::model::PoolRow;

use crate::watch::records::NodeRecord;

/// The row of pool `name` of `provider` from its nodes; `None` when it has none left.
pub fn provider_pool_row(
    cluster: &str,
    key: &str,
    name: &str,
    provider: Provider,
    nodes: &[&NodeRecord],
) -> Option<PoolRow> {
    if nodes.is_empty() {
        return None;
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
    Some(PoolRow {
        key: key.to_string(),
        provider: provider.as_str().to_string(),
        capacity_type: if capacity.len() == 1 {
            capacity.into_iter().next().unwrap_or("unknown").to_string()
        } else {
            "mixed".to_string()
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
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use app::domain::preemption::CapacityType;

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
        )
        .unwrap();
        assert_eq!(row.provider, "karpenter");
        assert_eq!(row.capacity_type, "spot");
        assert_eq!(row.instance_type, "m5.xlarge, m6i.xlarge");
        assert_eq!((row.target_nodes, row.current_nodes), (2, Some(1)));
        assert_eq!((row.nodes_cordoned, row.nodes_preempting), (1, 1));
        assert_eq!(row.zone.as_deref(), Some("us-east-1a"));
        assert_eq!(row.problems, ["1 of 2 nodes are not Ready"]);
        assert!(row.conditions.is_empty());

        let od = node("c", "m5.xlarge", CapacityType::OnDemand, true, false);
        let mixed =
            provider_pool_row("aws", "k", "spot-general", Provider::Karpenter, &[&a, &od]).unwrap();
        assert_eq!(mixed.capacity_type, "mixed");
        assert!(provider_pool_row("aws", "k", "x", Provider::Gke, &[]).is_none());
    }
}
