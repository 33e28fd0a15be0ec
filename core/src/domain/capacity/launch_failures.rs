//! Karpenter's refused launches: `InsufficientCapacityError` events on NodeClaims, read into
//! which zone and instance type the cloud provider had no capacity for, and counted per
//! cluster × zone × instance type over 24 h and 7 d beside the capacity grid.
//!
//! Karpenter records the event when the provider refuses a NodeClaim's launch, then deletes
//! the NodeClaim and schedules the pods again (kubernetes-sigs/karpenter,
//! `pkg/controllers/nodeclaim/lifecycle`). Its message is `NodeClaim <name> event: <error>`;
//! on AWS the error lists the fleet's errors, each naming the offering:
//! "InsufficientInstanceCapacity: We currently do not have sufficient p5.48xlarge capacity in the Availability Zone you
//! requested (us-east-1a)" (AWS: EC2 error codes, `InsufficientInstanceCapacity`).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Duration, Utc};

use crate::model::{EventRow, LaunchFailureRow};

/// Bytes of an event's message kept: the row carries the last one to every viewer.
pub const MAX_MESSAGE: usize = 1024;

/// Offerings read from one message at most: a fleet request lists one error per override
/// (Karpenter cuts its error to 300 bytes, so in practice one or two).
pub const MAX_OFFERINGS: usize = 16;

/// Rows kept per cluster, those with the most failures: what the page, the stream and the
/// metric labels carry stays bounded whatever events a cluster holds.
pub const MAX_ROWS_PER_CLUSTER: usize = 100;

/// One `InsufficientCapacityError` event, as the cluster shows it or the ledger kept it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchFailure {
    pub cluster: String,
    /// The event's uid: a failure both seen live and kept by the ledger counts once.
    pub uid: String,
    /// The NodeClaim's name (`<nodepool>-<suffix>`).
    pub nodeclaim: String,
    /// The event's message, at most [`MAX_MESSAGE`] bytes.
    pub message: String,
    /// The event's `count`: launches it stands for (Karpenter records one per NodeClaim).
    pub count: u32,
    /// The event's `lastTimestamp`.
    pub last_seen: DateTime<Utc>,
}

/// An instance type in a zone the provider said it had no capacity for; either is empty
/// when the message does not name it.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Offering {
    pub zone: String,
    pub instance_type: String,
}

const SUFFICIENT: &str = "do not have sufficient ";
const IN_ZONE: &str = " capacity in the Availability Zone you requested (";

/// The offerings `message` names, in order, without repeats, at most [`MAX_OFFERINGS`]; one
/// unnamed offering when it names none (Karpenter's own "all requested instance types were
/// unavailable during launch", or a provider that does not say).
pub fn offerings(message: &str) -> Vec<Offering> {
    let mut out: Vec<Offering> = Vec::new();
    let mut rest = message;
    while let Some(at) = rest.find(SUFFICIENT) {
        rest = &rest[at + SUFFICIENT.len()..];
        let Some(end) = rest.find(IN_ZONE) else {
            break;
        };
        let instance_type = &rest[..end];
        let after = &rest[end + IN_ZONE.len()..];
        let Some(close) = after.find(')') else {
            break;
        };
        let zone = &after[..close];
        rest = &after[close..];
        // An instance type or zone is one word of letters, digits, dots, dashes and
        // underscores (a '/' would make two rows share a key, a quote a metric label's
        // escape); anything else is not this sentence.
        let word = |s: &str| {
            !s.is_empty()
                && s.len() <= 64
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
        };
        if !(word(instance_type) && word(zone)) {
            continue;
        }
        let o = Offering {
            zone: zone.to_string(),
            instance_type: instance_type.to_string(),
        };
        if !out.contains(&o) {
            out.push(o);
        }
        if out.len() == MAX_OFFERINGS {
            break;
        }
    }
    if out.is_empty() {
        out.push(Offering::default());
    }
    out
}

/// The launch failure event row `e` stands for: an `InsufficientCapacityError` about a
/// NodeClaim (its `object` is `NodeClaim/<name>`); `None` for any other event. An event
/// without a time counts at `now`.
pub fn from_event(e: &EventRow, now: DateTime<Utc>) -> Option<LaunchFailure> {
    let nodeclaim = e.object.strip_prefix("NodeClaim/")?;
    if e.reason != crate::labels::KARPENTER_INSUFFICIENT_CAPACITY {
        return None;
    }
    Some(LaunchFailure {
        cluster: e.cluster.clone(),
        uid: e.key.clone(),
        nodeclaim: nodeclaim.to_string(),
        message: crate::domain::text::clip(&e.message, MAX_MESSAGE).to_string(),
        count: u32::try_from(e.count).unwrap_or(0).max(1),
        last_seen: e.last_seen.unwrap_or(now),
    })
}

/// The NodePool of NodeClaim `nodeclaim` among `pools` (names): the one whose name is the
/// NodeClaim's less its last `-` and generated suffix (Karpenter names a NodeClaim from its
/// NodePool's name with `generateName`); `None` when none matches (a NodePool name longer than
/// 58 characters, which `generateName` shortens, included).
pub fn nodeclaim_pool<'a>(
    nodeclaim: &str,
    pools: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let (prefix, suffix) = nodeclaim.rsplit_once('-')?;
    if suffix.is_empty() {
        return None;
    }
    pools.into_iter().find(|p| *p == prefix)
}

/// The provider's error in an event's message, without Karpenter's `NodeClaim <name> event: `.
pub fn error_of(message: &str) -> &str {
    match message.split_once(" event: ") {
        Some((head, error)) if head.starts_with("NodeClaim ") => error,
        _ => message,
    }
}

/// The rows beside the capacity grid at `now`: per cluster × zone × instance type, the
/// failures of the last 24 h and 7 d among `failures` (any order; one event seen twice, live
/// and from the ledger, counts once, at its highest `count`), the NodePools they came from
/// (`karpenter_pools`: cluster → NodePool names), and the last one. Most failures in 24 h
/// first, then in 7 d, then by key; at most [`MAX_ROWS_PER_CLUSTER`] per cluster. Failures
/// older than 7 d are left out.
pub fn rows<'a>(
    failures: impl IntoIterator<Item = &'a LaunchFailure>,
    karpenter_pools: &BTreeMap<String, Vec<String>>,
    now: DateTime<Utc>,
) -> Vec<LaunchFailureRow> {
    let week = now - Duration::days(7);
    let day = now - Duration::days(1);
    let mut once: HashMap<(&str, &str), &LaunchFailure> = HashMap::new();
    for f in failures.into_iter().filter(|f| f.last_seen >= week) {
        let slot = once.entry((&f.cluster, &f.uid)).or_insert(f);
        if (f.count, f.last_seen) > (slot.count, slot.last_seen) {
            *slot = f;
        }
    }
    struct Acc<'a> {
        pools: BTreeSet<String>,
        day: u32,
        week: u32,
        last: Option<&'a LaunchFailure>,
    }
    let mut by: BTreeMap<(String, Offering), Acc> = BTreeMap::new();
    for f in once.into_values() {
        let pool = karpenter_pools
            .get(&f.cluster)
            .and_then(|names| nodeclaim_pool(&f.nodeclaim, names.iter().map(String::as_str)));
        for o in offerings(&f.message) {
            let acc = by.entry((f.cluster.clone(), o)).or_insert(Acc {
                pools: BTreeSet::new(),
                day: 0,
                week: 0,
                last: None,
            });
            if let Some(p) = pool {
                acc.pools.insert(p.to_string());
            }
            acc.week = acc.week.saturating_add(f.count);
            if f.last_seen >= day {
                acc.day = acc.day.saturating_add(f.count);
            }
            if acc
                .last
                .is_none_or(|l| (f.last_seen, &f.uid) > (l.last_seen, &l.uid))
            {
                acc.last = Some(f);
            }
        }
    }
    let mut out: Vec<LaunchFailureRow> = by
        .into_iter()
        .map(|((cluster, o), acc)| LaunchFailureRow {
            cluster,
            zone: o.zone,
            instance_type: o.instance_type,
            pools: acc.pools.into_iter().collect(),
            failures_24h: acc.day,
            failures_7d: acc.week,
            last_at: acc.last.map(|l| l.last_seen),
            last_message: acc
                .last
                .map(|l| error_of(&l.message).to_string())
                .unwrap_or_default(),
        })
        .collect();
    out.sort_by(|a, b| {
        (b.failures_24h, b.failures_7d)
            .cmp(&(a.failures_24h, a.failures_7d))
            .then_with(|| a.key().cmp(&b.key()))
    });
    let mut per_cluster: HashMap<String, usize> = HashMap::new();
    out.retain(|r| {
        let n = per_cluster.entry(r.cluster.clone()).or_default();
        *n += 1;
        *n <= MAX_ROWS_PER_CLUSTER
    });
    out
}

/// What a row says on its pool's page: "Karpenter could not launch g5.2xlarge in us-east-1a
/// 2 times in 24 h (3 in 7 d): the provider had no capacity there." A row whose message
/// named no offering says "a NodeClaim" and "in any zone it asked".
pub fn sentence(r: &LaunchFailureRow) -> String {
    let what = if r.instance_type.is_empty() {
        "a NodeClaim".to_string()
    } else {
        r.instance_type.clone()
    };
    let place = if r.zone.is_empty() {
        "in any zone it asked".to_string()
    } else {
        format!("in {}", r.zone)
    };
    let times = |n: u32| {
        if n == 1 {
            "once".to_string()
        } else {
            format!("{n} times")
        }
    };
    format!(
        "Karpenter could not launch {what} {place} {} in 24 h ({} in 7 d): the provider had no \
         capacity there.",
        times(r.failures_24h),
        r.failures_7d
    )
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;

    const ICE: &str = "NodeClaim gpu-spot-7x2kq event: creating instance, insufficient capacity, \
        with fleet error(s), InsufficientInstanceCapacity: We currently do not have sufficient \
        g5.2xlarge capacity in the Availability Zone you requested (us-east-1a). Our system will \
        be working on provisioning additional capacity.";

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 11, 28, 12, 0, 0).unwrap()
    }

    fn failure(uid: &str, nodeclaim: &str, message: &str, hours_ago: i64) -> LaunchFailure {
        LaunchFailure {
            cluster: "aws".into(),
            uid: uid.into(),
            nodeclaim: nodeclaim.into(),
            message: message.into(),
            count: 1,
            last_seen: now() - Duration::hours(hours_ago),
        }
    }

    #[test]
    fn the_offerings_an_aws_message_names() {
        assert_eq!(
            offerings(ICE),
            vec![Offering {
                zone: "us-east-1a".into(),
                instance_type: "g5.2xlarge".into()
            }]
        );
        // Two fleet errors, one repeated: each offering once, in order.
        let two = format!(
            "NodeClaim x-1 event: with fleet error(s), InsufficientInstanceCapacity: We currently \
             do not have sufficient p5.48xlarge capacity in the Availability Zone you requested \
             (us-east-1b).; InsufficientInstanceCapacity: We currently do not have sufficient \
             p4d.24xlarge capacity in the Availability Zone you requested (us-east-1c). {}",
            "We currently do not have sufficient p5.48xlarge capacity in the Availability Zone \
             you requested (us-east-1b)."
        );
        let got: Vec<(String, String)> = offerings(&two)
            .into_iter()
            .map(|o| (o.instance_type, o.zone))
            .collect();
        assert_eq!(
            got,
            [
                ("p5.48xlarge".to_string(), "us-east-1b".to_string()),
                ("p4d.24xlarge".to_string(), "us-east-1c".to_string())
            ]
        );
        // Karpenter's own words name no offering; a cut-off sentence names none either.
        let none = Offering::default();
        assert_eq!(
            offerings(
                "NodeClaim a-b event: all requested instance types were unavailable during launch"
            ),
            vec![none.clone()]
        );
        assert_eq!(
            offerings(
                "do not have sufficient g5.xlarge capacity in the Availability Zone you requested (us-ea"
            ),
            vec![none.clone()]
        );
        // A sentence with spaces where the words should be is not read as one.
        assert_eq!(
            offerings(
                "do not have sufficient big GPU capacity in the Availability Zone you requested (a b)"
            ),
            vec![none]
        );
    }

    #[test]
    fn a_hostile_message_yields_at_most_the_budget() {
        let one = "do not have sufficient t capacity in the Availability Zone you requested (z";
        let many: String = (0..100).map(|i| format!("{one}{i}) ")).collect();
        assert_eq!(offerings(&many).len(), MAX_OFFERINGS);
    }

    /// One launch refused for two offerings counts in both rows; a failure exactly 24 h old
    /// is in the day, one a second older only in the week.
    #[test]
    fn each_offering_named_counts_and_the_day_ends_where_it_should() {
        let two = "NodeClaim gpu-spot-aaaaa event: InsufficientInstanceCapacity: We currently do \
                   not have sufficient p5.48xlarge capacity in the Availability Zone you \
                   requested (us-east-1b).; InsufficientInstanceCapacity: We currently do not \
                   have sufficient p4d.24xlarge capacity in the Availability Zone you requested \
                   (us-east-1c).";
        let edge = LaunchFailure {
            last_seen: now() - Duration::days(1),
            ..failure("u1", "gpu-spot-aaaaa", two, 0)
        };
        let older = LaunchFailure {
            last_seen: now() - Duration::days(1) - Duration::seconds(1),
            ..failure("u2", "gpu-spot-bbbbb", two, 0)
        };
        let rows = rows([&edge, &older], &BTreeMap::new(), now());
        assert_eq!(rows.len(), 2);
        for r in &rows {
            assert_eq!((r.failures_24h, r.failures_7d), (1, 2), "{}", r.key());
        }
    }

    #[test]
    fn rows_per_cluster_are_capped_keeping_the_most_failures() {
        let many: Vec<LaunchFailure> = (0..=MAX_ROWS_PER_CLUSTER)
            .map(|i| {
                let m = format!(
                    "do not have sufficient t{i} capacity in the Availability Zone you requested (z)"
                );
                LaunchFailure {
                    count: if i == MAX_ROWS_PER_CLUSTER { 9 } else { 1 },
                    ..failure(&format!("u{i}"), "x-aaaaa", &m, 1)
                }
            })
            .collect();
        let rows = rows(&many, &BTreeMap::new(), now());
        assert_eq!(rows.len(), MAX_ROWS_PER_CLUSTER);
        assert_eq!(rows[0].instance_type, format!("t{MAX_ROWS_PER_CLUSTER}"));
    }

    #[test]
    fn a_nodeclaims_pool_is_its_name_less_the_suffix() {
        let pools = ["gpu", "gpu-spot", "on-demand"];
        assert_eq!(nodeclaim_pool("gpu-spot-7x2kq", pools), Some("gpu-spot"));
        assert_eq!(nodeclaim_pool("gpu-7x2kq", pools), Some("gpu"));
        assert_eq!(nodeclaim_pool("other-7x2kq", pools), None);
        assert_eq!(nodeclaim_pool("gpu-spot-", pools), None);
        assert_eq!(nodeclaim_pool("gpuspot", pools), None);
    }

    #[test]
    fn only_a_nodeclaims_insufficient_capacity_event_is_a_failure() {
        let row = EventRow {
            key: "u1".into(),
            cluster: "aws".into(),
            object: "NodeClaim/gpu-spot-7x2kq".into(),
            reason: crate::labels::KARPENTER_INSUFFICIENT_CAPACITY.into(),
            message: ICE.into(),
            count: 0,
            last_seen: None,
            ..Default::default()
        };
        let f = from_event(&row, now()).unwrap();
        assert_eq!(
            (f.nodeclaim.as_str(), f.count, f.last_seen),
            ("gpu-spot-7x2kq", 1, now())
        );
        let on_a_node = EventRow {
            object: "Node/gpu-spot-7x2kq".into(),
            ..row.clone()
        };
        assert_eq!(from_event(&on_a_node, now()), None);
        let other = EventRow {
            reason: "Launched".into(),
            ..row
        };
        assert_eq!(from_event(&other, now()), None);
    }

    #[test]
    fn a_rows_sentence() {
        let r = LaunchFailureRow {
            zone: "us-east-1a".into(),
            instance_type: "g5.2xlarge".into(),
            failures_24h: 2,
            failures_7d: 3,
            ..Default::default()
        };
        assert_eq!(
            sentence(&r),
            "Karpenter could not launch g5.2xlarge in us-east-1a 2 times in 24 h (3 in 7 d): \
             the provider had no capacity there."
        );
        let unnamed = LaunchFailureRow {
            failures_24h: 1,
            failures_7d: 1,
            ..Default::default()
        };
        assert!(sentence(&unnamed).starts_with(
            "Karpenter could not launch a NodeClaim in any zone it asked once in 24 h"
        ));
    }

    #[test]
    fn the_error_without_karpenters_prefix() {
        assert!(error_of(ICE).starts_with("creating instance, insufficient capacity"));
        assert_eq!(error_of("no prefix: here"), "no prefix: here");
    }

    /// Worked by hand: three g5.2xlarge failures in us-east-1a from gpu-spot (2 h, 20 h and
    /// 3 d ago), the last one also read again with count 2 (counted once, as 2): 2 in 24 h,
    /// 4 in 7 d; one 9 days ago (left out); one naming no offering from a NodeClaim of no
    /// watched pool (count 2, 1 h ago). Both rows have 2 in 24 h; the g5.2xlarge row has 4
    /// in 7 d against 2, so it leads.
    #[test]
    fn rows_by_hand() {
        let unnamed = LaunchFailure {
            count: 2,
            ..failure(
                "u5",
                "lost-abcde",
                "NodeClaim lost-abcde event: all requested instance types were unavailable during launch",
                1,
            )
        };
        let failures = vec![
            failure("u1", "gpu-spot-aaaaa", ICE, 2),
            failure("u2", "gpu-spot-bbbbb", ICE, 20),
            failure("u3", "gpu-spot-ccccc", ICE, 72),
            // The same event again, repeated since: counted once, at its higher count.
            LaunchFailure {
                count: 2,
                ..failure("u3", "gpu-spot-ccccc", ICE, 72)
            },
            failure("u4", "gpu-spot-ddddd", ICE, 9 * 24),
            unnamed,
        ];
        let pools = BTreeMap::from([(
            "aws".to_string(),
            vec!["gpu-spot".to_string(), "on-demand".to_string()],
        )]);
        let rows = rows(&failures, &pools, now());
        assert_eq!(rows.len(), 2);
        let g5 = &rows[0];
        assert_eq!(
            (g5.zone.as_str(), g5.instance_type.as_str()),
            ("us-east-1a", "g5.2xlarge")
        );
        assert_eq!((g5.failures_24h, g5.failures_7d), (2, 4));
        assert_eq!(g5.pools, ["gpu-spot"]);
        assert_eq!(g5.last_at, Some(now() - Duration::hours(2)));
        assert!(g5.last_message.starts_with("creating instance"));
        assert_eq!(g5.key(), "aws/us-east-1a/g5.2xlarge");
        let other = &rows[1];
        assert_eq!(
            (other.zone.as_str(), other.instance_type.as_str()),
            ("", "")
        );
        assert_eq!((other.failures_24h, other.failures_7d), (2, 2));
        assert!(other.pools.is_empty());
    }
}
