//! kube-scheduler's message on a pod it cannot place (`PodScheduled=False`, reason
//! `Unschedulable`), read into its reasons and their node counts.
//!
//! The shape is the upstream scheduler's `FitError` text (kubernetes/kubernetes,
//! pkg/scheduler/schedule_one.go): `0/N nodes are available: <count> <reason>, <count>
//! <reason>. preemption: 0/N nodes are available: <count> <why>, ….` with the reasons sorted
//! by text, e.g. "0/9 nodes are available: 3 Insufficient nvidia.com/gpu, 6 node(s) didn't
//! match Pod's node affinity/selector. preemption: 0/9 nodes are available: 3 No preemption
//! victims found for incoming pod, 6 Preemption is not helpful for scheduling.". A reason may
//! hold braces with commas inside ("untolerated taint {a: b}"), which do not split it.
//!
//! Input is bounded ([`MAX_MESSAGE`] bytes read, [`MAX_REASONS`] reasons); a message that
//! does not have the shape keeps its text and gives the one reason [`UNKNOWN`].

use serde::{Deserialize, Serialize};

/// The most of a message that is read, in bytes (a real one is well under 1 KB).
pub const MAX_MESSAGE: usize = 8 * 1024;
/// The most reasons kept from one message.
pub const MAX_REASONS: usize = 32;
/// The reason of a message that does not parse.
pub const UNKNOWN: &str = "unknown";

/// One reason of the message and how many nodes gave it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasonCount {
    /// As the scheduler wrote it: `Insufficient nvidia.com/gpu`, `node(s) had untolerated
    /// taint {nvidia.com/gpu: true}`, `node(s) didn't match Pod's node affinity/selector`.
    pub reason: String,
    /// Nodes that gave this reason; 0 for [`UNKNOWN`].
    pub nodes: u32,
}

/// A message read.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedulerMessage {
    /// The cluster's node count the scheduler saw (`0/N`); `None` when not given.
    pub total: Option<u32>,
    /// Why nodes could not take the pod, in the message's order.
    pub reasons: Vec<ReasonCount>,
    /// Why preempting other pods would not help, likewise (the text after `preemption:`).
    pub preemption: Vec<ReasonCount>,
}

impl SchedulerMessage {
    /// Whether the message read as the scheduler's shape.
    pub fn parsed(&self) -> bool {
        !self.reasons.iter().any(|r| r.reason == UNKNOWN)
    }
}

/// Reads `message`; see the module's text.
pub fn parse(message: &str) -> SchedulerMessage {
    let message = crate::domain::text::clip(message, MAX_MESSAGE).trim();
    let (main, preemption) = match message.split_once(" preemption: ") {
        Some((m, p)) => (m, Some(p)),
        None => (message, None),
    };
    let Some((total, reasons)) = section(main) else {
        return SchedulerMessage {
            total: None,
            reasons: vec![ReasonCount {
                reason: UNKNOWN.into(),
                nodes: 0,
            }],
            preemption: Vec::new(),
        };
    };
    SchedulerMessage {
        total,
        reasons,
        preemption: preemption
            .and_then(section)
            .map(|(_, r)| r)
            .unwrap_or_default(),
    }
}

/// `0/N nodes are available: <list>.` → `(N, reasons)`; `None` when not of that shape.
/// "no nodes available to schedule pods" (a cluster without nodes) is a shape of its own.
fn section(text: &str) -> Option<(Option<u32>, Vec<ReasonCount>)> {
    let text = text.trim().trim_end_matches('.');
    if text == "no nodes available to schedule pods" {
        return Some((
            Some(0),
            vec![ReasonCount {
                reason: "no nodes available to schedule pods".into(),
                nodes: 0,
            }],
        ));
    }
    let (head, list) = text.split_once(" nodes are available: ")?;
    let total = head.strip_prefix("0/")?.parse().ok()?;
    let mut reasons = Vec::new();
    for item in split_top_level(list).into_iter().take(MAX_REASONS) {
        let (count, reason) = item.trim().split_once(' ')?;
        reasons.push(ReasonCount {
            reason: reason.trim().to_string(),
            nodes: count.parse().ok()?,
        });
    }
    (!reasons.is_empty()).then_some((Some(total), reasons))
}

/// `list` split at `, ` outside braces.
fn split_top_level(list: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    let bytes = list.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        match b {
            b'{' => depth += 1,
            b'}' => depth -= 1,
            b',' if depth == 0 && bytes.get(i + 1) == Some(&b' ') => {
                out.push(&list[start..i]);
                start = i + 2;
            }
            _ => {}
        }
    }
    out.push(&list[start..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reasons(m: &SchedulerMessage) -> Vec<(&str, u32)> {
        m.reasons
            .iter()
            .map(|r| (r.reason.as_str(), r.nodes))
            .collect()
    }

    /// Messages in the shapes the upstream scheduler writes (its `FitError` and its tests).
    #[test]
    fn the_schedulers_shapes() {
        let m = parse(
            "0/9 nodes are available: 3 Insufficient nvidia.com/gpu, 6 node(s) didn't match Pod's node affinity/selector. \
             preemption: 0/9 nodes are available: 3 No preemption victims found for incoming pod, 6 Preemption is not helpful for scheduling.",
        );
        assert_eq!(m.total, Some(9));
        assert_eq!(
            reasons(&m),
            [
                ("Insufficient nvidia.com/gpu", 3),
                ("node(s) didn't match Pod's node affinity/selector", 6)
            ]
        );
        assert_eq!(m.preemption.len(), 2);
        assert_eq!(
            m.preemption[1].reason,
            "Preemption is not helpful for scheduling"
        );
        assert!(m.parsed());

        // Before preemption's suffix (Kubernetes ≤ 1.23), and a taint with a comma inside.
        let m = parse(
            "0/4 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, \
             3 node(s) had untolerated taint {nvidia.com/gpu: true, team: ml}.",
        );
        assert_eq!(
            reasons(&m),
            [
                (
                    "node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }",
                    1
                ),
                (
                    "node(s) had untolerated taint {nvidia.com/gpu: true, team: ml}",
                    3
                )
            ]
        );
        assert!(m.preemption.is_empty());

        let m = parse(
            "0/1 nodes are available: 1 Too many pods. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
        );
        assert_eq!(reasons(&m), [("Too many pods", 1)]);
        assert_eq!(parse("no nodes available to schedule pods").total, Some(0));
    }

    /// Bad input: text of another shape keeps one `unknown` reason; a huge message is read
    /// to its budget; a count that is not a number is unknown; no panic on any of it.
    #[test]
    fn what_does_not_parse_is_unknown() {
        for text in [
            "",
            "running PreBind plugin \"VolumeBinding\": binding volumes: timed out",
            "0/x nodes are available: 1 Insufficient cpu.",
            "0/3 nodes are available: many Insufficient cpu.",
            "0/3 nodes are available: .",
        ] {
            let m = parse(text);
            assert!(!m.parsed(), "{text:?}: {m:?}");
            assert_eq!(reasons(&m), [(UNKNOWN, 0)]);
        }
        let long = format!(
            "0/99 nodes are available: {}.",
            vec!["1 Insufficient cpu"; 10_000].join(", ")
        );
        let m = parse(&long);
        assert!(m.reasons.len() <= MAX_REASONS);
        let multibyte = format!("0/1 nodes are available: 1 {}", "é".repeat(MAX_MESSAGE));
        let _ = parse(&multibyte);
    }
}
