//! What a pending pod asks of a node beyond its selector and requests: tolerations of the
//! node's taints and required node affinity, judged the way kube-scheduler's TaintToleration
//! and NodeAffinity filters document it ("Taints and Tolerations", "Assigning Pods to
//! Nodes"). The embedded cluster's own reading, written apart from the product's
//! (`spotboard_core::domain::waiting`), so that a wrong rule in either is caught by the other.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{PodSpec, Taint};

/// A toleration as the scheduler compares it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Tolerates {
    key: Option<String>,
    /// `operator: Exists` (else `Equal`, the default).
    any_value: bool,
    value: String,
    effect: Option<String>,
}

/// One `matchExpressions` entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Expression {
    key: String,
    operator: String,
    values: Vec<String>,
}

/// A pending pod's tolerations and required node-affinity terms; `None` on the pod when it
/// has neither. Shared: the pod index keeps one copy of each distinct placement, as every
/// pod of a template has the same one (a GPU pod's toleration of CoreWeave's `is_gpu`
/// taint, as its own copy, was 320 bytes a pod in a heap profile of a scale run).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Placement {
    tolerations: Vec<Tolerates>,
    /// ORed terms of ANDed expressions; empty: no required affinity.
    terms: Vec<Vec<Expression>>,
}

impl Placement {
    pub fn from_spec(spec: &PodSpec) -> Option<Arc<Self>> {
        let tolerations: Vec<Tolerates> = spec
            .tolerations
            .iter()
            .flatten()
            .map(|t| Tolerates {
                key: t.key.clone().filter(|k| !k.is_empty()),
                any_value: t.operator.as_deref() == Some("Exists"),
                value: t.value.clone().unwrap_or_default(),
                effect: t.effect.clone().filter(|e| !e.is_empty()),
            })
            .collect();
        let terms: Vec<Vec<Expression>> = spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|n| {
                n.required_during_scheduling_ignored_during_execution
                    .as_ref()
            })
            .map(|r| {
                r.node_selector_terms
                    .iter()
                    .map(|t| {
                        t.match_expressions
                            .iter()
                            .flatten()
                            .map(|e| Expression {
                                key: e.key.clone(),
                                operator: e.operator.clone(),
                                values: e.values.clone().unwrap_or_default(),
                            })
                            .collect()
                    })
                    .collect()
            })
            .unwrap_or_default();
        (!tolerations.is_empty() || !terms.is_empty())
            .then(|| Arc::new(Placement { tolerations, terms }))
    }

    /// The first of `taints` with effect `NoSchedule` or `NoExecute` that no toleration
    /// tolerates (`PreferNoSchedule` only steers scoring).
    pub fn untolerated<'a>(this: Option<&Self>, taints: &'a [Taint]) -> Option<&'a Taint> {
        let tolerations = this.map(|p| p.tolerations.as_slice()).unwrap_or_default();
        taints.iter().find(|t| {
            matches!(t.effect.as_str(), "NoSchedule" | "NoExecute")
                && !tolerations.iter().any(|o| {
                    let key = match &o.key {
                        None => o.any_value,
                        Some(k) => *k == t.key,
                    };
                    let effect = o.effect.as_ref().is_none_or(|e| *e == t.effect);
                    let value = o.any_value || o.value == t.value.clone().unwrap_or_default();
                    key && effect && value
                })
        })
    }

    /// Whether a node with `labels` meets the required node affinity (some term holds).
    pub fn affinity_holds(this: Option<&Self>, labels: &BTreeMap<String, String>) -> bool {
        let Some(p) = this.filter(|p| !p.terms.is_empty()) else {
            return true;
        };
        p.terms.iter().any(|term| {
            // An empty term matches no node (Kubernetes: "null or empty
            // NodeSelectorTerm matches no objects").
            !term.is_empty() && term.iter().all(|e| {
                let have = labels.get(&e.key);
                let number = |v: &str| v.parse::<i64>().ok();
                let bound = e.values.first().and_then(|v| number(v));
                match e.operator.as_str() {
                    "In" => have.is_some_and(|v| e.values.contains(v)),
                    "NotIn" => have.is_none_or(|v| !e.values.contains(v)),
                    "Exists" => have.is_some(),
                    "DoesNotExist" => have.is_none(),
                    "Gt" => {
                        matches!((have.and_then(|v| number(v)), bound), (Some(v), Some(b)) if v > b)
                    }
                    "Lt" => {
                        matches!((have.and_then(|v| number(v)), bound), (Some(v), Some(b)) if v < b)
                    }
                    _ => false,
                }
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::nodes::taint;

    fn spec(v: serde_json::Value) -> PodSpec {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_pod_with_neither_keeps_nothing() {
        assert_eq!(
            Placement::from_spec(&spec(serde_json::json!({"containers": []}))),
            None
        );
    }

    /// The cases of Kubernetes' "Taints and Tolerations" page.
    #[test]
    fn tolerations_as_the_documentation_tells_them() {
        let taints = [
            taint("dedicated", Some("inference"), "NoSchedule"),
            taint("is_gpu", Some("true"), "PreferNoSchedule"),
        ];
        let with = |tolerations: serde_json::Value| {
            Placement::from_spec(&spec(
                serde_json::json!({"containers": [], "tolerations": tolerations}),
            ))
        };
        assert_eq!(
            Placement::untolerated(None, &taints).map(|t| t.key.as_str()),
            Some("dedicated"),
            "PreferNoSchedule is not a filter"
        );
        for ok in [
            serde_json::json!([{"key": "dedicated", "operator": "Equal", "value": "inference", "effect": "NoSchedule"}]),
            serde_json::json!([{"key": "dedicated", "operator": "Exists"}]),
            serde_json::json!([{"operator": "Exists"}]),
        ] {
            assert_eq!(
                Placement::untolerated(with(ok.clone()).as_deref(), &taints),
                None,
                "{ok}"
            );
        }
        for refused in [
            serde_json::json!([{"key": "dedicated", "value": "training", "effect": "NoSchedule"}]),
            serde_json::json!([{"key": "dedicated", "operator": "Exists", "effect": "NoExecute"}]),
            serde_json::json!([{"key": "other", "operator": "Exists"}]),
        ] {
            assert!(
                Placement::untolerated(with(refused.clone()).as_deref(), &taints).is_some(),
                "{refused}"
            );
        }
    }

    #[test]
    fn affinity_terms_are_ored_and_their_expressions_anded() {
        let p = Placement::from_spec(&spec(
            serde_json::json!({"containers": [], "affinity": {"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "type", "operator": "In", "values": ["a", "b"]},
                                      {"key": "gen", "operator": "Gt", "values": ["8"]}]},
                {"matchExpressions": [{"key": "spot", "operator": "Exists"}]}]}}}}),
        ));
        let labels = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let holds =
            |pairs: &[(&str, &str)]| Placement::affinity_holds(p.as_deref(), &labels(pairs));
        assert!(holds(&[("type", "a"), ("gen", "9")]));
        assert!(!holds(&[("type", "a"), ("gen", "8")]));
        assert!(!holds(&[("type", "c"), ("gen", "9")]));
        assert!(holds(&[("spot", "")]));
        assert!(!holds(&[]));
        assert!(Placement::affinity_holds(None, &labels(&[])));
    }
}
