//! Fallback pairs from the pools as they are now.

use std::borrow::Borrow;
use std::collections::BTreeSet;

use crate::model::{FallbackRow, PairKind, PoolRow};
use crate::{CapacityType, Provider};

/// The fallback pairs among `pools`, by cluster and on-demand pool, as rows with no figures
/// yet ([`super::report`] fills them). Each on-demand pool is in at most one pair:
/// 1. a Karpenter NodePool that allows both capacity types pairs with itself;
/// 2. an on-demand NodePool whose `spotboard.dev/fallback-for` annotation names spot pools of
///    its cluster pairs with those (names of no such pool are dropped; none left, no pair);
/// 3. any other on-demand CKS NodePool pairs with the CKS spot pools of the same cluster and
///    instanceType (and zone, where both give one).
///
/// Malformed pools are left out.
pub fn pairs<P: Borrow<PoolRow>>(pools: &[P]) -> Vec<FallbackRow> {
    let ok: Vec<&PoolRow> = pools
        .iter()
        .map(Borrow::borrow)
        .filter(|p| p.malformed.is_none())
        .collect();
    let spot_here = |cluster: &str, name: &str| {
        ok.iter().any(|s| {
            s.cluster == cluster && s.name == name && s.capacity_type == CapacityType::Spot
        })
    };
    let mut out = Vec::new();
    for p in &ok {
        if p.provider == Provider::Karpenter && p.allows_spot_and_on_demand {
            out.push(FallbackRow {
                cluster: p.cluster.clone(),
                zone: p.zone.clone(),
                spot_pools: vec![p.name.clone()],
                on_demand_pool: p.name.clone(),
                instance_type: p.instance_type.clone(),
                kind: PairKind::Karpenter,
                ..Default::default()
            });
            continue;
        }
        if p.capacity_type != CapacityType::OnDemand {
            continue;
        }
        let (spot, kind): (BTreeSet<&str>, PairKind) = if p.fallback_for.is_empty() {
            // CKS only: "short" is read from a NodePool's Capacity condition, which GKE node
            // pools (no Kubernetes object) do not have.
            if p.provider != Provider::Cks {
                continue;
            }
            let same = ok
                .iter()
                .filter(|s| {
                    s.capacity_type == CapacityType::Spot
                        && s.provider == p.provider
                        && s.cluster == p.cluster
                        && s.instance_type == p.instance_type
                        && (s.zone.is_none() || p.zone.is_none() || s.zone == p.zone)
                })
                .map(|s| s.name.as_str())
                .collect();
            (same, PairKind::SameInstanceType)
        } else {
            let named = p
                .fallback_for
                .iter()
                .map(String::as_str)
                .filter(|n| spot_here(&p.cluster, n))
                .collect();
            (named, PairKind::Annotation)
        };
        let Some(first) = spot.iter().next() else {
            continue;
        };
        let first = ok
            .iter()
            .find(|s| s.cluster == p.cluster && s.name == *first);
        out.push(FallbackRow {
            cluster: p.cluster.clone(),
            zone: first
                .and_then(|s| s.zone.clone())
                .or_else(|| p.zone.clone()),
            spot_pools: spot.iter().map(|s| s.to_string()).collect(),
            on_demand_pool: p.name.clone(),
            instance_type: first
                .map_or_else(|| p.instance_type.clone(), |s| s.instance_type.clone()),
            kind,
            ..Default::default()
        });
    }
    out.sort_by(|a, b| (&a.cluster, &a.on_demand_pool).cmp(&(&b.cluster, &b.on_demand_pool)));
    out
}
