use super::*;
use chrono::TimeZone;

fn node(uid: &str, notice: bool) -> NodeRow {
    NodeRow {
        key: uid.into(),
        cluster: "c1".into(),
        name: format!("n-{uid}"),
        pool: Some("p".into()),
        provider: Provider::Cks,
        capacity_type: spotboard_core::CapacityType::Unknown,
        notice,
        ..Default::default()
    }
}

#[test]
fn t0_once_waves_group_close_preemptions_and_removed_nodes_stay_an_hour() {
    let t = |s: i64| Utc.with_ymd_and_hms(2026, 11, 21, 8, 0, 0).unwrap() + Duration::seconds(s);
    let m = Metrics::default();
    let mut tr = Tracker::default();
    assert!(
        tr.observe(&[node("a", false), node("b", false)], t(0), &m)
            .is_empty()
    );
    let fresh = tr.observe(&[node("a", true), node("b", false)], t(1), &m);
    assert_eq!(fresh.len(), 1, "T=0 seen once");
    assert!(
        tr.observe(&[node("a", true), node("b", true)], t(30), &m)
            .len()
            == 1
    );
    assert_eq!(tr.view(t(31)).waves.len(), 1, "30 s apart: one wave");
    assert_eq!(tr.view(t(31)).waves[0].nodes.len(), 2);
    // Both gone; a third preemption much later starts a new wave.
    tr.observe(&[node("c", true)], t(500), &m);
    let v = tr.view(t(501));
    assert_eq!(v.waves.len(), 2);
    assert!(v.nodes.iter().filter(|n| n.timeline.removed()).count() == 2);
    // Counted from two nodes: the lone third preemption is no wave to count.
    assert!(
        m.encode()
            .contains("spotboard_preemption_waves_total{cluster=\"c1\"} 1"),
        "{}",
        m.encode()
    );
    // An hour later the removed ones are forgotten.
    tr.observe(&[node("c", true)], t(500 + 3601), &m);
    assert_eq!(tr.view(t(500 + 3601)).nodes.len(), 1);
}

#[test]
fn nodes_already_under_notice_at_the_first_look_make_no_wave() {
    let (m, mut tr, now) = (Metrics::default(), Tracker::default(), Utc::now());
    let fresh = tr.observe(&[node("a", true), node("b", true)], now, &m);
    assert_eq!(fresh.len(), 2, "their pods are still read");
    assert!(tr.view(now).waves.is_empty(), "T=0 unknown: no wave");
    tr.observe(
        &[node("a", true), node("b", true), node("c", true)],
        now,
        &m,
    );
    assert_eq!(tr.view(now).waves[0].nodes, ["n-c"], "later ones do");
}

/// Two drilled nodes at once: each gets its card, marked a drill, and its pods read, but no
/// preemption is counted and no wave forms (a wave pages someone). The mark stays once an
/// abort removed the annotation.
#[test]
fn a_drill_has_a_card_and_counts_nowhere() {
    let t = |s: i64| Utc.with_ymd_and_hms(2026, 11, 21, 8, 0, 0).unwrap() + Duration::seconds(s);
    let m = Metrics::default();
    let mut tr = Tracker::default();
    tr.observe(&[node("a", false), node("b", false)], t(0), &m);
    let drilled = |uid: &str| NodeRow {
        drill: true,
        ..node(uid, true)
    };
    let fresh = tr.observe(&[drilled("a"), drilled("b")], t(5), &m);
    assert_eq!(fresh.len(), 2, "the drill's pods are read");
    let v = tr.view(t(6));
    assert_eq!(v.nodes.len(), 2);
    assert!(v.nodes.iter().all(|n| n.drill), "{:?}", v.nodes);
    assert!(v.waves.is_empty(), "a drill makes no wave");
    let text = m.encode();
    assert!(
        !text.contains("spotboard_preemptions_total{"),
        "no preemption counted: {text}"
    );
    // Aborted: the notice and the annotation are gone; the drill's card closes.
    tr.observe(&[node("a", false), drilled("b")], t(9), &m);
    let v = tr.view(t(10));
    assert_eq!(v.nodes.len(), 1, "{:?}", v.nodes);
    assert!(v.nodes[0].drill && v.nodes[0].node == "n-b");
    assert!(!m.encode().contains("spotboard_preemptions_total{"));
    // A real preemption of the aborted drill's node, later, counts as one.
    let fresh = tr.observe(&[node("a", true), drilled("b")], t(100), &m);
    assert_eq!(fresh.len(), 1);
    let v = tr.view(t(101));
    let a = v.nodes.iter().find(|n| n.node == "n-a").unwrap();
    assert!(!a.drill, "a preemption, not the old drill");
    assert!(
        m.encode().contains("spotboard_preemptions_total{"),
        "{}",
        m.encode()
    );
}
