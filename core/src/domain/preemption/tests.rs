use std::collections::BTreeMap;

use chrono::{Duration, TimeZone, Utc};

use super::timeline::{Observation, derive, grace_fit};
use super::*;

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn t(s: i64) -> chrono::DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 11, 21, 8, 0, 0).unwrap() + Duration::seconds(s)
}

fn obs(at: i64, notice: bool, draining: bool, gone: bool) -> Observation {
    Observation {
        at: t(at),
        notice,
        draining,
        gone,
    }
}

#[test]
fn providers_and_capacity_types_from_real_label_sets() {
    // A CKS node as the embedded cluster labels it (CoreWeave: Workload scheduling on CKS).
    let cks = labels(&[
        ("compute.coreweave.com/node-pool", "h100-spot-train"),
        ("node.kubernetes.io/instance-type", "gd-8xh100ib-i128"),
        ("qos.coreweave.cloud/pending-preemption", "true"),
    ]);
    assert_eq!(
        classify(&cks),
        (
            Provider::Cks,
            Some("h100-spot-train".into()),
            CapacityType::Unknown
        )
    );
    assert!(notice(Provider::Cks, &cks, &[], CapacityType::Unknown));
    // GKE (GKE: Spot VMs): both Spot labels, or only the older one.
    let gke = labels(&[
        ("cloud.google.com/gke-nodepool", "spot-pool"),
        ("cloud.google.com/gke-spot", "true"),
        ("cloud.google.com/gke-provisioning", "spot"),
    ]);
    assert_eq!(classify(&gke).2, CapacityType::Spot);
    let gke_old = labels(&[
        ("cloud.google.com/gke-nodepool", "p"),
        ("cloud.google.com/gke-spot", "true"),
    ]);
    assert_eq!(classify(&gke_old).2, CapacityType::Spot);
    let gke_std = labels(&[("cloud.google.com/gke-nodepool", "default-pool")]);
    assert_eq!(classify(&gke_std).2, CapacityType::OnDemand);
    assert!(notice(
        Provider::Gke,
        &gke,
        &[GKE_TERMINATION_TAINT.into()],
        CapacityType::Spot
    ));
    assert!(!notice(
        Provider::Gke,
        &gke,
        &["nvidia.com/gpu".into()],
        CapacityType::Spot
    ));
    // Karpenter (Karpenter: NodePools, well-known labels).
    let k = labels(&[
        ("karpenter.sh/nodepool", "general"),
        ("karpenter.sh/capacity-type", "spot"),
    ]);
    assert_eq!(
        classify(&k),
        (
            Provider::Karpenter,
            Some("general".into()),
            CapacityType::Spot
        )
    );
    assert!(notice(
        Provider::Karpenter,
        &k,
        &[KARPENTER_DISRUPTED_TAINT.into()],
        CapacityType::Spot
    ));
    // Consolidation of an on-demand node is not a preemption.
    assert!(!notice(
        Provider::Karpenter,
        &k,
        &[KARPENTER_DISRUPTED_TAINT.into()],
        CapacityType::OnDemand
    ));
    assert_eq!(
        classify(&labels(&[
            ("karpenter.sh/nodepool", "r"),
            ("karpenter.sh/capacity-type", "reserved")
        ]))
        .2,
        CapacityType::Reserved
    );
    assert_eq!(classify(&labels(&[])).0, Provider::Unknown);
}

#[test]
fn cks_timeline_walks_notice_draining_removed_from_signals() {
    let mut h = vec![obs(-10, false, false, false), obs(0, true, false, false)];
    let tl = derive(Provider::Cks, &h).unwrap();
    assert_eq!(
        (tl.t0, tl.phase_at(t(30)), tl.next_in_s(t(30))),
        (t(0), "notice", Some(("draining", 90)))
    );
    // No evicted-at seen yet at T+130: the planned drain start still moves the phase.
    assert_eq!(tl.phase_at(t(130)), "draining");
    assert_eq!(tl.next_in_s(t(130)), Some(("removed", 290)));
    // evicted-at observed at T+125: the drain phase takes the observed time.
    h.push(obs(125, true, true, false));
    let tl = derive(Provider::Cks, &h).unwrap();
    assert_eq!(tl.phases[1].observed, Some(t(125)));
    // Past T+7 min but the node is still there: not shown as removed.
    assert!(!tl.removed());
    assert_eq!(tl.phase_at(t(500)), "draining");
    assert_eq!(tl.next_in_s(t(500)), Some(("removed", 0)));
    h.push(obs(400, false, false, true));
    let tl = derive(Provider::Cks, &h).unwrap();
    assert!(tl.removed());
    assert_eq!(tl.phase_at(t(500)), "removed");
    assert_eq!(tl.removal(), t(400));
    assert_eq!(tl.next_in_s(t(500)), None);
    // Only a cordon, no label: no preemption.
    assert!(derive(Provider::Cks, &[obs(0, false, false, false)]).is_none());
}

#[test]
fn gke_and_aws_windows() {
    let h = [obs(0, true, false, false)];
    let gke = derive(Provider::Gke, &h).unwrap();
    assert_eq!(gke.phase_at(t(20)), "shutting down system pods");
    assert_eq!(gke.next_in_s(t(20)).map(|n| n.1), Some(10));
    assert_eq!(gke.phases.last().unwrap().planned, t(30));
    let aws = derive(Provider::Karpenter, &h).unwrap();
    assert_eq!(aws.phase_at(t(60)), "draining");
    assert_eq!(aws.next_in_s(t(60)).map(|n| n.1), Some(60));
    // The whole windows, phase by phase, seconds since T=0: GKE's 30 s (ordinary pods get
    // the first 15 s, system pods the last 15; GKE: Spot VMs), AWS's two minutes (AWS: Spot
    // interruption notices), CKS's cordon, drain at T+2 min, gone by T+7 min (CoreWeave:
    // Spot Node Pools).
    let planned = |p: Provider| {
        let tl = derive(p, &h).unwrap();
        tl.phases
            .iter()
            .map(|ph| (ph.name.clone(), (ph.planned - t(0)).num_seconds()))
            .collect::<Vec<_>>()
    };
    let named = |v: &[(&str, i64)]| {
        v.iter()
            .map(|(n, s)| (n.to_string(), *s))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        planned(Provider::Gke),
        named(&[
            ("shutting down pods", 0),
            ("shutting down system pods", 15),
            ("removed", 30)
        ])
    );
    assert_eq!(
        planned(Provider::Karpenter),
        named(&[("draining", 0), ("removed", 120)])
    );
    assert_eq!(
        planned(Provider::Cks),
        named(&[("notice", 0), ("draining", 120), ("removed", 420)])
    );
    // Each boundary belongs to the phase it starts, on every provider.
    assert_eq!(gke.phase_at(t(14)), "shutting down pods");
    assert_eq!(gke.phase_at(t(15)), "shutting down system pods");
    assert_eq!(aws.phase_at(t(119)), "draining");
}

#[test]
fn grace_periods_against_the_time_left() {
    let h = [obs(0, true, false, false)];
    let cks = derive(Provider::Cks, &h).unwrap();
    // SIGTERM at T+2 min; 30 s (the default) ends at T+150, well before T+7 min.
    let fit = grace_fit(&cks, 30, false);
    assert_eq!(
        (fit.sigterm, fit.grace_end, fit.sigkill_risk),
        (t(120), t(150), false)
    );
    // 600 s ends at T+12 min: SIGKILL risk.
    assert!(grace_fit(&cks, 600, false).sigkill_risk);
    // GKE gives ordinary pods 15 s: a 30 s grace period is cut short.
    let gke = derive(Provider::Gke, &h).unwrap();
    let fit = grace_fit(&gke, 30, false);
    assert_eq!(
        (fit.sigterm, fit.grace_end, fit.sigkill_risk),
        (t(0), t(15), true)
    );
    assert!(!grace_fit(&gke, 10, false).sigkill_risk);
    // System pods get the last 15 s: SIGTERM at T+15, done by T+30 when 15 s suffice.
    let fit = grace_fit(&gke, 15, true);
    assert_eq!(
        (fit.sigterm, fit.grace_end, fit.sigkill_risk),
        (t(15), t(30), false)
    );
    assert!(grace_fit(&gke, 30, true).sigkill_risk);
    // AWS: 2 minutes from the warning.
    let aws = derive(Provider::Karpenter, &h).unwrap();
    assert!(!grace_fit(&aws, 90, false).sigkill_risk);
    assert!(grace_fit(&aws, 180, false).sigkill_risk);
}

/// The enums on the wire keep the spellings the JSON API had when these fields were strings,
/// and a spelling this build does not know reads as `unknown` instead of failing the row.
#[test]
fn capacity_types_and_providers_keep_their_wire_spelling() {
    use crate::model::{ConditionView, EventRow, NodeRow, PoolRow};
    let pool = PoolRow {
        provider: Provider::Karpenter,
        capacity_type: CapacityType::Mixed,
        conditions: vec![ConditionView {
            type_: "Ready".into(),
            ..Default::default()
        }],
        ..Default::default()
    };
    let json = serde_json::to_value(&pool).unwrap();
    assert_eq!(json["provider"], "karpenter");
    assert_eq!(json["capacity_type"], "mixed");
    assert_eq!(json["conditions"][0]["type"], "Ready");
    let back: PoolRow = serde_json::from_value(json).unwrap();
    assert_eq!(back, pool);

    let mut node = serde_json::to_value(NodeRow {
        capacity_type: CapacityType::OnDemand,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(node["capacity_type"], "on-demand");
    node["capacity_type"] = "preemptible-2027".into();
    node["provider"] = "aks".into();
    let read: NodeRow = serde_json::from_value(node).unwrap();
    assert_eq!(
        (read.capacity_type, read.provider),
        (CapacityType::Unknown, Provider::Unknown)
    );

    let event: EventRow = serde_json::from_value(serde_json::json!({
        "key": "e", "cluster": "c", "object": "Node/n", "type_": "Warning",
        "reason": "r", "message": "m", "count": 1
    }))
    .unwrap();
    assert_eq!(event.type_, crate::model::EventType::Warning);
}
