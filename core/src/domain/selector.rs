//! Kubernetes label selectors: the one matcher for the embedded API server's `labelSelector`
//! queries and for PodDisruptionBudget selectors in the readiness audit.
//!
//! Semantics are Kubernetes' (labels concepts page, "Label selectors"): requirements are
//! ANDed; `!=` and `notin` also match when the label is absent; `>` and `<` compare integers
//! and fail on a value that is not one; an empty selector matches everything.

use serde::{Deserialize, Serialize};

/// One requirement of a selector.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Requirement {
    Exists(String),
    DoesNotExist(String),
    /// `k=v`, `k==v`, `k in (…)`, and `matchLabels` entries.
    In(String, Vec<String>),
    /// `k!=v`, `k notin (…)`.
    NotIn(String, Vec<String>),
    Gt(String, i64),
    Lt(String, i64),
}

impl Requirement {
    /// A `matchExpressions` entry (`In`, `NotIn`, `Exists`, `DoesNotExist`); `None` for an
    /// operator a `LabelSelector` does not have.
    pub fn from_expression(key: &str, operator: &str, values: Vec<String>) -> Option<Self> {
        let key = key.to_string();
        Some(match operator {
            "In" => Self::In(key, values),
            "NotIn" => Self::NotIn(key, values),
            "Exists" => Self::Exists(key),
            "DoesNotExist" => Self::DoesNotExist(key),
            _ => return None,
        })
    }

    /// A node selector requirement (`spec.affinity.nodeAffinity` terms' `matchExpressions`):
    /// the label selector's operators and `Gt`/`Lt`, whose one value is an integer. `None`
    /// for an unknown operator or a `Gt`/`Lt` without exactly one integer value (the API
    /// server refuses both).
    pub fn from_node_selector(key: &str, operator: &str, values: Vec<String>) -> Option<Self> {
        let int = |values: &[String]| match values {
            [v] => v.parse::<i64>().ok(),
            _ => None,
        };
        match operator {
            "Gt" => Some(Self::Gt(key.to_string(), int(&values)?)),
            "Lt" => Some(Self::Lt(key.to_string(), int(&values)?)),
            _ => Self::from_expression(key, operator, values),
        }
    }

    /// The label key it is about.
    pub fn key(&self) -> &str {
        match self {
            Self::Exists(k)
            | Self::DoesNotExist(k)
            | Self::In(k, _)
            | Self::NotIn(k, _)
            | Self::Gt(k, _)
            | Self::Lt(k, _) => k,
        }
    }

    /// Whether the labels looked up with `get` satisfy this requirement.
    pub fn matches<'a>(&self, get: &impl Fn(&str) -> Option<&'a str>) -> bool {
        let int = |k: &str| get(k).and_then(|v| v.parse::<i64>().ok());
        match self {
            Self::Exists(k) => get(k).is_some(),
            Self::DoesNotExist(k) => get(k).is_none(),
            Self::In(k, vs) => get(k).is_some_and(|v| vs.iter().any(|x| x == v)),
            Self::NotIn(k, vs) => get(k).is_none_or(|v| vs.iter().all(|x| x != v)),
            Self::Gt(k, n) => int(k).is_some_and(|v| v > *n),
            Self::Lt(k, n) => int(k).is_some_and(|v| v < *n),
        }
    }
}

/// In the label selector's text form (`kubectl get -l`): `k in (a,b)`, `k=a` for one value,
/// `k notin (a)`, `k`, `!k`, `k>3`, `k<3`.
impl std::fmt::Display for Requirement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Exists(k) => write!(f, "{k}"),
            Self::DoesNotExist(k) => write!(f, "!{k}"),
            Self::In(k, vs) if vs.len() == 1 => write!(f, "{k}={}", vs[0]),
            Self::In(k, vs) => write!(f, "{k} in ({})", vs.join(",")),
            Self::NotIn(k, vs) => write!(f, "{k} notin ({})", vs.join(",")),
            Self::Gt(k, n) => write!(f, "{k}>{n}"),
            Self::Lt(k, n) => write!(f, "{k}<{n}"),
        }
    }
}

/// Requirements, ANDed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Selector(pub Vec<Requirement>);

impl Selector {
    /// Whether the labels looked up with `get` satisfy every requirement.
    pub fn matches_with<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.0.iter().all(|r| r.matches(&get))
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &std::collections::BTreeMap<String, String>) -> bool {
        self.matches_with(|k| labels.get(k).map(String::as_str))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn requirements_follow_kubernetes() {
        let labels: BTreeMap<String, String> = [("app", "web"), ("gpu", "8")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let holds = |r: Requirement| Selector(vec![r]).matches(&labels);
        assert!(holds(Requirement::In("app".into(), vec!["web".into()])));
        assert!(!holds(Requirement::In("team".into(), vec!["web".into()])));
        assert!(
            holds(Requirement::NotIn("team".into(), vec!["x".into()])),
            "absent"
        );
        assert!(!holds(Requirement::NotIn("app".into(), vec!["web".into()])));
        assert!(holds(Requirement::Gt("gpu".into(), 4)));
        assert!(!holds(Requirement::Lt("app".into(), 4)), "not a number");
        assert!(holds(Requirement::DoesNotExist("team".into())));
        assert!(Selector::default().matches(&labels), "empty matches all");
        assert_eq!(Requirement::from_expression("a", "Gt", vec![]), None);
    }

    #[test]
    fn node_selector_requirements_take_gt_and_lt_with_one_integer() {
        let r = |op: &str, vs: &[&str]| {
            Requirement::from_node_selector("k", op, vs.iter().map(|v| v.to_string()).collect())
        };
        assert_eq!(r("Gt", &["3"]), Some(Requirement::Gt("k".into(), 3)));
        assert_eq!(r("Lt", &["-1"]), Some(Requirement::Lt("k".into(), -1)));
        assert_eq!(r("Gt", &["3", "4"]), None);
        assert_eq!(r("Gt", &["three"]), None);
        assert_eq!(r("Gt", &[]), None);
        assert_eq!(r("Near", &["3"]), None);
        assert_eq!(r("In", &["a", "b"]).unwrap().to_string(), "k in (a,b)");
        assert_eq!(r("NotIn", &["a"]).unwrap().to_string(), "k notin (a)");
        assert_eq!(r("In", &["a"]).unwrap().to_string(), "k=a");
        assert_eq!(r("DoesNotExist", &[]).unwrap().to_string(), "!k");
    }
}
