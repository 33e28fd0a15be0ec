//! `POST /api/v1/namespaces/{ns}/pods/{name}/eviction` (a `policy/v1` Eviction): a pod
//! deletion that a PodDisruptionBudget may refuse. `kubectl drain`, Karpenter's termination
//! controller and CKS's drain all ask for evictions, never plain deletes (Kubernetes:
//! "API-initiated Eviction").
//!
//! The rules are the API server's (`pkg/registry/core/pod/storage/eviction.go`):
//! - a pod already terminating, finished (Succeeded, Failed) or Pending is deleted without
//!   asking any budget;
//! - a pod no budget selects is deleted;
//! - more than one budget selecting it: 500, the API does not choose;
//! - otherwise the eviction goes through only if the budget keeps its desired healthy pods
//!   after it, else `429 TooManyRequests` "Cannot evict pod as it would violate the pod's
//!   disruption budget." with a `DisruptionBudget` cause naming the budget and its figures.
//!
//! Why the figures are computed here, not read from the budget's status: the embedded
//! cluster runs no disruption controller, and computing under one lock per eviction keeps two
//! concurrent evictions from both spending the last allowed disruption.

use serde_json::{Value, json};

use super::selectors::LabelSelector;
use super::status::ApiError;

/// What the budget needs and has, for the refusal's cause.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Budget {
    pub name: String,
    /// Pods the budget must keep healthy.
    pub desired_healthy: i64,
    /// Pods it selects that are Running, Ready and not terminating.
    pub current_healthy: i64,
}

/// The answer to one eviction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Delete the pod with its grace period.
    Evict,
    /// A budget would drop below its desired healthy pods.
    Refuse(Budget),
    /// Several budgets select the pod.
    TooManyBudgets,
}

/// The pod's phase (`""` when unset).
fn phase(pod: &Value) -> &str {
    pod.pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// Running, Ready and not terminating: what a budget counts as healthy.
pub fn healthy(pod: &Value) -> bool {
    let ready = pod
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        });
    phase(pod) == "Running" && ready && pod.pointer("/metadata/deletionTimestamp").is_none()
}

/// The budget's `spec.selector` as a label selector; `None` for a budget without one, or
/// with an operator a LabelSelector does not have (such a budget selects nothing).
pub fn selector(budget: &Value) -> Option<LabelSelector> {
    let sel = budget.pointer("/spec/selector")?;
    let mut parts = Vec::new();
    if let Some(m) = sel.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in m {
            parts.push(format!("{k}={}", v.as_str()?));
        }
    }
    for e in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = e["key"].as_str()?;
        let values: Vec<&str> = e["values"]
            .as_array()
            .map(|v| v.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        parts.push(match e["operator"].as_str()? {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => return None,
        });
    }
    LabelSelector::parse(&parts.join(",")).ok()
}

/// The pods a budget must keep healthy out of `expected`, as Kubernetes' disruption
/// controller works it out (`getExpectedPodCount`, `pkg/controller/disruption`), following
/// Kubernetes: Specifying a Disruption Budget for your Application
/// (<https://kubernetes.io/docs/tasks/run-application/configure-pdb/>):
/// - `maxUnavailable` set: `expected` less that many, never below 0 (the controller reads
///   this field first);
/// - else `minAvailable` set: that many;
/// - neither: 0, the budget protects no pod.
///
/// Each is an integer or a percent of `expected`, and a percent rounds UP ("Kubernetes rounds
/// up", the page's "Rounding logic when specifying percentages"; in code
/// `intstr.GetScaledValueFromIntOrPercent(v, expected, roundUp=true)`): `minAvailable: 50%` of
/// 3 pods keeps 2; `maxUnavailable: 34%` of 3 lets 2 go and keeps 1.
///
/// A value the API server refuses at create (`ValidatePodDisruptionBudgetSpec`: a negative
/// integer, a string that is not digits and `%`, a percent above 100) protects nothing here:
/// no real cluster holds such a budget, and this server does not validate budgets.
pub fn desired_healthy(budget: &Value, expected: i64) -> i64 {
    let spec = budget.get("spec");
    let field = |name: &str| spec.and_then(|s| s.get(name)).filter(|v| !v.is_null());
    if let Some(max_unavailable) = field("maxUnavailable") {
        scaled(max_unavailable, expected).map_or(0, |n| (expected - n).max(0))
    } else if let Some(min_available) = field("minAvailable") {
        scaled(min_available, expected).unwrap_or(0)
    } else {
        0
    }
}

/// An `IntOrString` budget value against `total` pods: a non-negative integer as it is, a
/// percent (`"25%"`, at most 100) of `total` rounded up; `None` for anything else.
fn scaled(value: &Value, total: i64) -> Option<i64> {
    match value {
        Value::Number(n) => n.as_i64().filter(|n| *n >= 0),
        Value::String(s) => {
            let digits = s.strip_suffix('%')?;
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let percent: i64 = digits.parse().ok().filter(|p| *p <= 100)?;
            // ceil(percent × total / 100) in integers.
            Some((percent.checked_mul(total)? + 99) / 100)
        }
        _ => None,
    }
}

/// Decides the eviction of `pod`, given the budgets of its namespace that select it and the
/// pods each of them selects (`(budget, selected pods)`).
pub fn decide(pod: &Value, budgets: &[(Value, Vec<Value>)]) -> Verdict {
    let terminating = pod.pointer("/metadata/deletionTimestamp").is_some();
    if terminating || matches!(phase(pod), "Succeeded" | "Failed" | "Pending") {
        return Verdict::Evict;
    }
    let [(budget, selected)] = budgets else {
        return if budgets.is_empty() {
            Verdict::Evict
        } else {
            Verdict::TooManyBudgets
        };
    };
    // The workload's size. A real API server reads the owner's scale; this cluster has no
    // ReplicaSets, so it counts the unfinished pods, terminating ones included: a pod just
    // evicted still counts before its replacement exists. While a replacement and the pod it
    // replaces overlap, that is one too many, which errs toward refusing.
    let expected = selected
        .iter()
        .filter(|p| !matches!(phase(p), "Succeeded" | "Failed"))
        .count() as i64;
    let current_healthy = selected.iter().filter(|p| healthy(p)).count() as i64;
    let desired_healthy = desired_healthy(budget, expected);
    // An unhealthy pod does not lower the healthy count, so it may go while the budget is
    // met (the default `unhealthyPodEvictionPolicy: IfHealthyBudget`).
    let after = current_healthy - i64::from(healthy(pod));
    if after >= desired_healthy {
        Verdict::Evict
    } else {
        Verdict::Refuse(Budget {
            name: budget
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            desired_healthy,
            current_healthy,
        })
    }
}

/// The API server's error for a refused or undecidable eviction.
pub fn error(verdict: &Verdict) -> Option<ApiError> {
    match verdict {
        Verdict::Evict => None,
        Verdict::Refuse(b) => Some(ApiError {
            code: 429,
            reason: "TooManyRequests",
            message: "Cannot evict pod as it would violate the pod's disruption budget.".into(),
            details: Some(json!({"causes": [{
                "reason": "DisruptionBudget",
                "message": format!(
                    "The disruption budget {} needs {} healthy pods and has {} currently",
                    b.name, b.desired_healthy, b.current_healthy
                ),
            }]})),
        }),
        Verdict::TooManyBudgets => Some(ApiError {
            code: 500,
            reason: "InternalError",
            message: "This pod has more than one PodDisruptionBudget, which the eviction \
                      subresource does not support."
                .into(),
            details: None,
        }),
    }
}

/// The grace period an Eviction's `deleteOptions` ask for, if any.
pub fn requested_grace(eviction: &Value) -> Option<i64> {
    eviction
        .pointer("/deleteOptions/gracePeriodSeconds")
        .and_then(Value::as_i64)
}

/// Whether the Eviction asks for a dry run (`deleteOptions.dryRun: ["All"]`).
pub fn dry_run(eviction: &Value) -> bool {
    eviction
        .pointer("/deleteOptions/dryRun")
        .and_then(Value::as_array)
        .is_some_and(|d| d.iter().any(|v| v == "All"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, ready: bool) -> Value {
        json!({
            "metadata": {"name": name, "labels": {"app": "api"}},
            "status": {"phase": "Running",
                       "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"}}]}
        })
    }

    fn budget(spec: Value) -> Value {
        let mut b = json!({"metadata": {"name": "api-pdb"},
                           "spec": {"selector": {"matchLabels": {"app": "api"}}}});
        for (k, v) in spec.as_object().unwrap() {
            b["spec"][k] = v.clone();
        }
        b
    }

    #[test]
    fn min_available_equal_to_replicas_refuses_every_eviction() {
        let pods: Vec<Value> = (0..3).map(|i| pod(&format!("p{i}"), true)).collect();
        let b = budget(json!({"minAvailable": 3}));
        let v = decide(&pods[0], &[(b, pods.clone())]);
        assert_eq!(
            v,
            Verdict::Refuse(Budget {
                name: "api-pdb".into(),
                desired_healthy: 3,
                current_healthy: 3
            })
        );
        let e = error(&v).unwrap();
        assert_eq!(e.code, 429);
        assert_eq!(
            e.message,
            "Cannot evict pod as it would violate the pod's disruption budget."
        );
        assert_eq!(
            e.details.unwrap()["causes"][0]["message"],
            "The disruption budget api-pdb needs 3 healthy pods and has 3 currently"
        );
    }

    #[test]
    fn one_disruption_is_allowed_then_the_next_is_refused() {
        let mut pods: Vec<Value> = (0..3).map(|i| pod(&format!("p{i}"), true)).collect();
        let b = budget(json!({"minAvailable": 2}));
        assert_eq!(
            decide(&pods[0], &[(b.clone(), pods.clone())]),
            Verdict::Evict
        );
        // p0 is now terminating and its replacement is Pending: 2 healthy of 3 expected.
        pods[0]["metadata"]["deletionTimestamp"] = json!("2026-11-24T10:00:00Z");
        let mut replacement = pod("p3", false);
        replacement["status"]["phase"] = json!("Pending");
        pods.push(replacement);
        assert!(matches!(
            decide(&pods[1], &[(b.clone(), pods.clone())]),
            Verdict::Refuse(Budget {
                desired_healthy: 2,
                current_healthy: 2,
                ..
            })
        ));
        // Before the replacement exists, the terminating pod still counts as expected.
        pods.pop();
        let max1 = budget(json!({"maxUnavailable": 1}));
        assert!(matches!(
            decide(&pods[1], &[(max1, pods.clone())]),
            Verdict::Refuse(Budget {
                desired_healthy: 2,
                current_healthy: 2,
                ..
            })
        ));
    }

    #[test]
    fn percents_round_up_and_max_unavailable_counts_from_the_expected_pods() {
        let b = |spec| budget(spec);
        assert_eq!(desired_healthy(&b(json!({"minAvailable": "50%"})), 3), 2);
        assert_eq!(desired_healthy(&b(json!({"maxUnavailable": 1})), 3), 2);
        assert_eq!(desired_healthy(&b(json!({"maxUnavailable": "34%"})), 3), 1);
        assert_eq!(desired_healthy(&b(json!({"maxUnavailable": 0})), 3), 3);
        assert_eq!(
            desired_healthy(&b(json!({})), 4),
            0,
            "neither field: nothing kept"
        );
        assert_eq!(desired_healthy(&b(json!({"minAvailable": "100%"})), 7), 7);
        assert_eq!(
            desired_healthy(&b(json!({"minAvailable": "1%"})), 7),
            1,
            "0.07 → 1"
        );
        assert_eq!(desired_healthy(&b(json!({"maxUnavailable": "100%"})), 7), 0);
        assert_eq!(
            desired_healthy(&b(json!({"maxUnavailable": 9})), 3),
            0,
            "never below 0"
        );
        assert_eq!(desired_healthy(&b(json!({"minAvailable": "0%"})), 0), 0);
    }

    /// Values the API server refuses at create (policy validation) protect nothing; with both
    /// fields (also refused) the disruption controller's order holds: maxUnavailable first.
    #[test]
    fn budgets_the_api_server_would_refuse() {
        for bad in [
            json!("2"),
            json!("150%"),
            json!(-1),
            json!("x%"),
            json!(" 5%"),
            json!(1.5),
        ] {
            let b = budget(json!({"minAvailable": bad}));
            assert_eq!(desired_healthy(&b, 4), 0, "{bad}");
        }
        let both = budget(json!({"minAvailable": 4, "maxUnavailable": 1}));
        assert_eq!(desired_healthy(&both, 4), 3);
    }

    #[test]
    fn unprotected_terminating_finished_and_unhealthy_pods_go() {
        let p = pod("p0", true);
        assert_eq!(decide(&p, &[]), Verdict::Evict);
        let b = budget(json!({"minAvailable": 5}));
        let mut terminating = p.clone();
        terminating["metadata"]["deletionTimestamp"] = json!("2026-11-24T10:00:00Z");
        let (mut done, mut pending) = (p.clone(), p.clone());
        done["status"]["phase"] = json!("Succeeded");
        pending["status"]["phase"] = json!("Pending");
        for q in [terminating, done, pending] {
            assert_eq!(decide(&q, &[(b.clone(), vec![q.clone()])]), Verdict::Evict);
        }
        // Unhealthy while the budget is met: it may go.
        let pods = vec![pod("a", true), pod("b", true), pod("c", false)];
        let b = budget(json!({"minAvailable": 2}));
        assert_eq!(decide(&pods[2], &[(b, pods.clone())]), Verdict::Evict);
    }

    #[test]
    fn two_budgets_are_an_error() {
        let p = pod("p0", true);
        let b = budget(json!({"minAvailable": 0}));
        let v = decide(&p, &[(b.clone(), vec![]), (b, vec![])]);
        assert_eq!(v, Verdict::TooManyBudgets);
        assert_eq!(error(&v).unwrap().code, 500);
    }

    #[test]
    fn selectors_read_match_labels_and_expressions() {
        let b = json!({"spec": {"selector": {
            "matchLabels": {"app": "api"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "edge"]}]
        }}});
        let s = selector(&b).unwrap();
        assert!(s.matches(&json!({"metadata": {"labels": {"app": "api", "tier": "edge"}}})));
        assert!(!s.matches(&json!({"metadata": {"labels": {"app": "api", "tier": "db"}}})));
        let bad =
            json!({"spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "Gt"}]}}});
        assert!(selector(&bad).is_none());
        assert!(selector(&json!({"spec": {}})).is_none());
    }
}
