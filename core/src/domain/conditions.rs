//! What a NodePool condition means for a person: its severity and the problems it names.
//!
//! Source: CoreWeave: Node Pool reference ("Node Pool Conditions") and CoreWeave: Node Pool
//! status for types, statuses and reasons, and CoreWeave's public `coreweave/skills`
//! repository (`cw-create-node-pool`) for what is normal (e.g. `QueuedAwaitingCapacity`
//! resolves on its own; `Quota`/`NotSet` never will). URLs in `docs/sources.md`.

use crate::model::{ConditionView, Severity};

/// Severity of one condition from its type, status and reason.
///
/// Unknown types or reasons are `Unknown`, never silently healthy.
pub fn severity(type_: &str, status: &str, reason: &str) -> Severity {
    if status.is_empty() {
        return Severity::Unknown;
    }
    if reason == "InternalError" {
        return Severity::Error;
    }
    match type_ {
        "Validated" => match (status, reason) {
            ("True", _) => Severity::Ok,
            ("False", _) => Severity::Error,
            _ => Severity::Unknown,
        },
        "Capacity" => match reason {
            "Sufficient" => Severity::Ok,
            "Partial" | "PartialNodeAffinity" | "QueuedAwaitingCapacity" => Severity::Warning,
            "NoneAvailable" | "NoneAvailableNodeAffinity" => Severity::Error,
            _ if status == "True" => Severity::Ok,
            _ => Severity::Unknown,
        },
        "Quota" => match reason {
            "Under" => Severity::Ok,
            "Over" | "NotSet" => Severity::Error,
            _ if status == "True" => Severity::Ok,
            _ => Severity::Unknown,
        },
        "AtTarget" => match reason {
            "TargetMet" => Severity::Ok,
            "UnderTarget" | "OverTarget" | "PendingDelete" => Severity::Progressing,
            _ if status == "True" => Severity::Ok,
            _ => Severity::Unknown,
        },
        // The question here is "do nodes need reconfiguring?", so False is the healthy answer.
        "NodeReconfigurationRequired" => match (status, reason) {
            ("False", _) | (_, "AllNodesUpToDate") => Severity::Ok,
            ("True", _) => Severity::Warning,
            _ => Severity::Unknown,
        },
        "NodesRemoved" => Severity::Progressing,
        // Karpenter's NodePool conditions (`Ready`, `NodeClassReady`, `ValidationSucceeded`)
        // and others named the same way: True is healthy, False is not.
        t if t.ends_with("Ready") || t.ends_with("Succeeded") => match status {
            "True" => Severity::Ok,
            "False" => Severity::Error,
            _ => Severity::Unknown,
        },
        _ => Severity::Unknown,
    }
}

/// One sentence per condition that needs a person's attention, for the "has a problem"
/// filter and the pool page.
///
/// Normal scaling (AtTarget=False with UnderTarget/OverTarget) is not a problem on its own;
/// capacity and quota are, and say which kind: waiting for capacity resolves by itself,
/// zero quota never does; users otherwise cannot tell an expected wait from a real failure.
pub fn problems(conditions: &[ConditionView]) -> Vec<String> {
    conditions
        .iter()
        .filter_map(|c| {
            let msg = if c.message.is_empty() {
                String::new()
            } else {
                format!(": {}", c.message)
            };
            match (c.type_.as_str(), c.severity) {
                (_, Severity::Ok | Severity::Progressing) => None,
                ("Validated", Severity::Error) => Some(format!("Spec is invalid ({}){msg}", c.reason)),
                ("Capacity", Severity::Warning) => Some(format!(
                    "Waiting for spot/instance capacity in the zone ({}); resolves when capacity returns{msg}",
                    c.reason
                )),
                ("Capacity", Severity::Error) => Some(format!(
                    "No capacity for this instance type in the zone ({}){msg}",
                    c.reason
                )),
                ("Quota", Severity::Error) => Some(format!(
                    "Quota blocks new nodes ({}); will not resolve without a quota change{msg}",
                    c.reason
                )),
                ("NodeReconfigurationRequired", Severity::Warning) => Some(format!(
                    "Nodes need a reconfigure reboot to reach the active configuration{msg}"
                )),
                (t, Severity::Error) => Some(format!("{t} reports {}{msg}", c.reason)),
                // A missing one of the five, or an unknown value, is shown on the badge but is
                // not by itself a problem: a brand-new pool has no conditions for a moment.
                (_, Severity::Unknown | Severity::Warning) => None,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cond(t: &str, s: &str, r: &str) -> ConditionView {
        ConditionView {
            type_: t.into(),
            status: s.into(),
            reason: r.into(),
            severity: severity(t, s, r),
            ..Default::default()
        }
    }

    #[test]
    fn severity_table() {
        let cases = [
            ("Validated", "True", "Valid", Severity::Ok),
            ("Validated", "False", "Invalid", Severity::Error),
            ("Capacity", "True", "Sufficient", Severity::Ok),
            (
                "Capacity",
                "False",
                "QueuedAwaitingCapacity",
                Severity::Warning,
            ),
            ("Capacity", "False", "NoneAvailable", Severity::Error),
            ("Quota", "True", "Under", Severity::Ok),
            ("Quota", "False", "NotSet", Severity::Error),
            ("AtTarget", "False", "UnderTarget", Severity::Progressing),
            (
                "NodeReconfigurationRequired",
                "False",
                "AllNodesUpToDate",
                Severity::Ok,
            ),
            (
                "NodeReconfigurationRequired",
                "True",
                "StagedNodeConfig",
                Severity::Warning,
            ),
            ("Quota", "False", "InternalError", Severity::Error),
            ("Capacity", "False", "SomethingNew", Severity::Unknown),
            ("FutureCondition", "True", "Fine", Severity::Unknown),
            ("Capacity", "", "", Severity::Unknown),
        ];
        for (t, s, r, want) in cases {
            assert_eq!(severity(t, s, r), want, "{t}/{s}/{r}");
        }
    }

    #[test]
    fn scaling_is_not_a_problem_but_quota_is() {
        let healthy = [
            cond("AtTarget", "False", "UnderTarget"),
            cond("Quota", "True", "Under"),
        ];
        assert!(problems(&healthy).is_empty());
        let blocked = [cond("Quota", "False", "NotSet")];
        let p = problems(&blocked);
        assert_eq!(p.len(), 1);
        assert!(p[0].contains("will not resolve"), "{p:?}");
        let queued = [cond("Capacity", "False", "QueuedAwaitingCapacity")];
        assert!(problems(&queued)[0].contains("resolves when capacity returns"));
    }
}
