use super::*;
use spotboard_core::nodepool::FIVE_CONDITIONS;

fn spec(instance: &str, class: &str, target: i32) -> NodePoolSpec {
    NodePoolSpec::new(class, instance, target)
}

fn facts(spec: &NodePoolSpec) -> PoolFacts<'_> {
    PoolFacts {
        spec,
        zone: "US-EAST-04A",
        errors: &[],
        current: spec.target_nodes.max(0) as u32,
        in_progress: 0,
        queued: 0,
        offered: true,
        free: 4,
        quota_limit: Some(16),
        quota_used_by_others: 0,
        scale_down_stalled: false,
    }
}

fn reasons(f: &PoolFacts<'_>) -> Vec<String> {
    desired(f)
        .into_iter()
        .map(|c| format!("{}={}:{}", c.type_, c.status, c.reason.unwrap_or_default()))
        .collect()
}

#[test]
fn healthy_pool_matches_seed_describe() {
    let s = spec("gd-8xa100-i128", "default", 1);
    let conds = desired(&facts(&s));
    let types: Vec<_> = conds.iter().map(|c| c.type_.clone()).collect();
    assert_eq!(types, FIVE_CONDITIONS);
    let msgs: Vec<_> = conds.iter().map(|c| c.message.clone().unwrap()).collect();
    assert_eq!(
        msgs,
        [
            "NodePool configuration is valid.",
            "Sufficient capacity available for the requested instance type.",
            "NodePool is within instance type quota.",
            "NodePool has reached its target node count.",
            "All nodes are on the current configuration.",
        ]
    );
    assert_eq!(
        reasons(&facts(&s)),
        [
            "Validated=True:Valid",
            "Capacity=True:Sufficient",
            "Quota=True:Under",
            "AtTarget=True:TargetMet",
            "NodeReconfigurationRequired=False:AllNodesUpToDate",
        ]
    );
}

#[test]
fn capacity_table() {
    let s = spec("gd-8xh100ib-i128", "spot", 4);
    // (current, in_progress, queued, offered, free, expected Capacity)
    let cases = [
        (4, 0, 0, true, 0, "True:Sufficient"),
        (2, 2, 0, true, 0, "True:Sufficient"),
        (2, 0, 2, true, 5, "True:Sufficient"),
        (2, 0, 2, true, 1, "False:Partial"),
        (0, 0, 4, true, 0, "False:QueuedAwaitingCapacity"),
        (3, 0, 1, true, 0, "False:QueuedAwaitingCapacity"),
        (0, 0, 4, false, 0, "False:NoneAvailable"),
        (4, 0, 0, false, 0, "True:Sufficient"),
        (1, 0, 0, true, 0, "True:Sufficient"), // short of target for another reason (quota)
    ];
    for (current, in_progress, queued, offered, free, want) in cases {
        let f = PoolFacts {
            current,
            in_progress,
            queued,
            offered,
            free,
            ..facts(&s)
        };
        let got = &desired(&f)[1];
        assert_eq!(
            format!("{}:{}", got.status, got.reason.clone().unwrap()),
            want,
            "current={current} in_progress={in_progress} queued={queued} offered={offered} free={free}"
        );
    }
}

#[test]
fn quota_table() {
    // (target, limit, used by others, expected Quota)
    let cases = [
        (2, Some(4), 0, "True:Under"),
        (2, Some(4), 2, "True:Under"),
        (2, Some(4), 3, "False:Over"),
        (3, Some(1), 0, "False:Over"),
        (0, Some(1), 1, "True:Under"),
        (2, None, 0, "False:NotSet"),
    ];
    for (target, limit, others, want) in cases {
        let s = spec("b200-8x", "default", target);
        let f = PoolFacts {
            quota_limit: limit,
            quota_used_by_others: others,
            ..facts(&s)
        };
        let got = &desired(&f)[2];
        assert_eq!(
            format!("{}:{}", got.status, got.reason.clone().unwrap()),
            want
        );
    }
    let s = spec("gb200-4x", "default", 2);
    let f = PoolFacts {
        quota_limit: None,
        ..facts(&s)
    };
    assert_eq!(
        desired(&f)[2].message.as_deref(),
        Some("quota limit is 0 for instance type gb200-4x")
    );
}

#[test]
fn at_target_table() {
    let s = spec("turin-gp", "default", 3);
    for (current, want) in [(3, "TargetMet"), (1, "UnderTarget"), (5, "OverTarget")] {
        let f = PoolFacts {
            current,
            ..facts(&s)
        };
        assert_eq!(desired(&f)[3].reason.as_deref(), Some(want));
    }
    let f = PoolFacts {
        current: 5,
        scale_down_stalled: true,
        ..facts(&s)
    };
    let msg = desired(&f)[3].message.clone().unwrap();
    assert!(
        msg.contains("IdleOnly") && msg.contains("no node is idle"),
        "{msg}"
    );
}

#[test]
fn invalid_pool_says_why() {
    let s = spec("gb200-4x", "spot", 2);
    let errors = crate::sim::admission::check(&s);
    let f = PoolFacts {
        errors: &errors,
        current: 0,
        offered: false,
        ..facts(&s)
    };
    let v = &desired(&f)[0];
    assert_eq!(v.status, ConditionStatus::False);
    assert_eq!(v.reason.as_deref(), Some("Invalid"));
    assert!(v.message.as_deref().unwrap().contains("Superchip"), "{v:?}");
}

#[test]
fn merge_keeps_transition_time_unless_status_or_reason_changes() {
    let s = spec("gd-8xh100ib-i128", "spot", 2);
    let t0 = "2026-11-21T10:00:00Z";
    let t1 = "2026-11-21T10:05:00Z";
    let first = merge(&[], desired(&facts(&s)), t0, Some(1));
    assert!(
        first
            .iter()
            .all(|c| c.last_transition_time.as_deref() == Some(t0))
    );
    assert!(first.iter().all(|c| c.observed_generation == Some(1)));

    // Same reasons, new message (counts changed): time kept, generation updated.
    let f = PoolFacts {
        current: 1,
        queued: 1,
        free: 0,
        ..facts(&s)
    };
    let under = merge(&first, desired(&f), t1, Some(2));
    let times: Vec<_> = under
        .iter()
        .map(|c| (c.type_.to_string(), c.last_transition_time.clone().unwrap()))
        .collect();
    assert_eq!(times[0], ("Validated".into(), t0.into()));
    assert_eq!(
        times[1],
        ("Capacity".into(), t1.into()),
        "Sufficient -> Queued"
    );
    assert_eq!(
        times[3],
        ("AtTarget".into(), t1.into()),
        "TargetMet -> UnderTarget"
    );
    assert_eq!(times[4].1, t0);
    assert!(under.iter().all(|c| c.observed_generation == Some(2)));

    let changed: Vec<_> = changed(&first, &under)
        .into_iter()
        .map(|c| c.type_.to_string())
        .collect();
    assert_eq!(changed, ["Capacity", "AtTarget"]);
    assert_eq!(
        reason_of(&under, &ConditionType::Capacity),
        "QueuedAwaitingCapacity"
    );
}
