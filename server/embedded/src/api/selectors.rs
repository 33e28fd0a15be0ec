//! `labelSelector` and `fieldSelector`: parsing and matching against stored JSON objects.
//!
//! Label selectors follow Kubernetes: Labels and Selectors, "Label selectors"
//! (<https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors>):
//! requirements are ANDed; `=`/`==`/`in` need the label with one of the values; `!=` and
//! `notin` also hold when the label is absent; a bare key needs the label, `!key` its absence;
//! `>` and `<` (the apimachinery parser's `gt`/`lt`, used by node affinity) compare the value
//! as a base-10 integer and fail when it is not one; the empty selector selects everything.
//! The matcher is the API server's own, written here: the dashboard's selector matching is
//! tested against this server, so it must not be the same code (the unit tests hold the
//! set-based operators equal to kube-rs' `kube::core::Selector`).
//!
//! Field selectors are generic here: any dotted path into the object, compared as a string,
//! with a missing field equal to `""`. A real API server allows only a few paths per kind;
//! allowing all of them costs nothing and means a selector kubectl or kube-rs sends never
//! fails for want of a registration.

use serde_json::Value;

/// One requirement of a label selector.
#[derive(Clone, Debug, PartialEq)]
enum Requirement {
    /// `key`
    Exists(String),
    /// `!key`
    DoesNotExist(String),
    /// `key=v`, `key==v`, `key in (v, w)`
    In(String, Vec<String>),
    /// `key!=v`, `key notin (v, w)`
    NotIn(String, Vec<String>),
    /// `key>n`
    Gt(String, i64),
    /// `key<n`
    Lt(String, i64),
}

impl Requirement {
    /// Whether the label value `value` (`None`: no such label) satisfies this requirement.
    fn holds(&self, value: Option<&str>) -> bool {
        // apimachinery's `Requirement.Matches` parses the label as a base-10 int64 for `gt`
        // and `lt`; a value that is not one fails the requirement rather than the request.
        let int = || value.and_then(|v| v.parse::<i64>().ok());
        match self {
            Requirement::Exists(_) => value.is_some(),
            Requirement::DoesNotExist(_) => value.is_none(),
            Requirement::In(_, set) => value.is_some_and(|v| set.iter().any(|s| s == v)),
            Requirement::NotIn(_, set) => !value.is_some_and(|v| set.iter().any(|s| s == v)),
            Requirement::Gt(_, n) => int().is_some_and(|v| v > *n),
            Requirement::Lt(_, n) => int().is_some_and(|v| v < *n),
        }
    }

    fn key(&self) -> &str {
        match self {
            Requirement::Exists(k)
            | Requirement::DoesNotExist(k)
            | Requirement::In(k, _)
            | Requirement::NotIn(k, _)
            | Requirement::Gt(k, _)
            | Requirement::Lt(k, _) => k,
        }
    }
}

/// One parsed `labelSelector` (requirements ANDed).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LabelSelector(Vec<Requirement>);

impl LabelSelector {
    /// True for the empty selector, which every object matches.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Parses the Kubernetes label selector syntax: `a=b,c!=d,e in (f,g),h notin (i),j,!k,
    /// n>3`. Errors name the offending requirement.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        for part in split_top_level(text) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            reqs.push(parse_label_req(part)?);
        }
        Ok(Self(reqs))
    }

    /// Whether the object's `metadata.labels` satisfy every requirement.
    pub fn matches(&self, obj: &Value) -> bool {
        let labels = obj.pointer("/metadata/labels").and_then(Value::as_object);
        self.matches_with(|k| labels.and_then(|l| l.get(k)).and_then(Value::as_str))
    }

    /// Whether labels looked up with `get` satisfy every requirement.
    pub fn matches_with<'a>(&self, get: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.0.iter().all(|r| r.holds(get(r.key())))
    }
}

fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/')
}

fn parse_label_req(part: &str) -> Result<Requirement, String> {
    let bad = || format!("unable to parse requirement: {part:?}");
    if let Some(key) = part.strip_prefix('!') {
        let key = key.trim();
        if key.is_empty() || !key.chars().all(is_key_char) {
            return Err(bad());
        }
        return Ok(Requirement::DoesNotExist(key.to_string()));
    }
    let key_end = part.find(|c: char| !is_key_char(c)).unwrap_or(part.len());
    let key = part[..key_end].to_string();
    if key.is_empty() {
        return Err(bad());
    }
    let rest = part[key_end..].trim_start();
    let value = |v: &str| -> Result<String, String> {
        let v = v.trim();
        if v.chars().all(is_key_char) {
            Ok(v.to_string())
        } else {
            Err(bad())
        }
    };
    if rest.is_empty() {
        Ok(Requirement::Exists(key))
    } else if let Some(v) = rest.strip_prefix("==").or_else(|| rest.strip_prefix('=')) {
        Ok(Requirement::In(key, vec![value(v)?]))
    } else if let Some(v) = rest.strip_prefix("!=") {
        Ok(Requirement::NotIn(key, vec![value(v)?]))
    } else if let Some(v) = rest.strip_prefix('>') {
        Ok(Requirement::Gt(key, v.trim().parse().map_err(|_| bad())?))
    } else if let Some(v) = rest.strip_prefix('<') {
        Ok(Requirement::Lt(key, v.trim().parse().map_err(|_| bad())?))
    } else if let Some(set) = rest.strip_prefix("notin") {
        Ok(Requirement::NotIn(key, parse_set(set).ok_or_else(bad)?))
    } else if let Some(set) = rest.strip_prefix("in") {
        Ok(Requirement::In(key, parse_set(set).ok_or_else(bad)?))
    } else {
        Err(bad())
    }
}

/// `(a, b)` → `["a", "b"]`.
fn parse_set(text: &str) -> Option<Vec<String>> {
    let inner = text.trim().strip_prefix('(')?.strip_suffix(')')?;
    let values: Vec<String> = inner.split(',').map(|v| v.trim().to_string()).collect();
    values
        .iter()
        .all(|v| v.chars().all(is_key_char))
        .then_some(values)
}

/// One parsed `fieldSelector` (requirements ANDed).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FieldSelector {
    reqs: Vec<FieldReq>,
}

#[derive(Clone, Debug, PartialEq)]
struct FieldReq {
    /// Dotted path, e.g. `spec.nodeName`.
    path: String,
    value: String,
    equal: bool,
}

impl FieldSelector {
    /// True for the empty selector, which every object matches.
    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    /// Parses `path=value`, `path==value`, `path!=value`, comma-separated; `\` escapes
    /// `,`, `=`, `!` and `\` in values.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        for part in split_unescaped(text, ',') {
            if part.trim().is_empty() {
                continue;
            }
            let (path, op, value) = split_field_req(&part)
                .ok_or_else(|| format!("invalid selector: {part:?}; expected path=value"))?;
            let path = path.trim().to_string();
            if path.split('.').any(str::is_empty) {
                return Err(format!("invalid field path in selector {part:?}"));
            }
            reqs.push(FieldReq {
                path,
                value: unescape(value),
                equal: op != "!=",
            });
        }
        Ok(Self { reqs })
    }

    /// Whether every requirement holds; a missing field compares as `""`.
    pub fn matches(&self, obj: &Value) -> bool {
        self.matches_with(|path| field_string(obj, path))
    }

    /// Whether every requirement holds for field values looked up with `get` (dotted path
    /// to string form, `""` when missing).
    pub fn matches_with(&self, mut get: impl FnMut(&str) -> String) -> bool {
        self.reqs
            .iter()
            .all(|r| (get(&r.path) == r.value) == r.equal)
    }

    /// The dotted paths the selector reads.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.reqs.iter().map(|r| r.path.as_str())
    }

    /// The name when the selector pins `metadata.name=x`, letting a list skip the scan.
    pub fn pinned_name(&self) -> Option<&str> {
        self.reqs
            .iter()
            .find(|r| r.equal && r.path == "metadata.name")
            .map(|r| r.value.as_str())
    }
}

/// The string form of the field at dotted `path`, as field selectors compare it: strings
/// as they are, numbers and booleans printed, anything else or nothing `""`.
pub fn field_string(obj: &Value, path: &str) -> String {
    let mut cur = obj;
    for seg in path.split('.') {
        match cur.get(seg) {
            Some(v) => cur = v,
            None => return String::new(),
        }
    }
    scalar_string(cur)
}

/// `"x"` → `x`, `3` → `3`, `true` → `true`, anything else `""`.
pub fn scalar_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

/// Splits at `sep` not preceded by a backslash, keeping escapes for [`unescape`].
fn split_unescaped(text: &str, sep: char) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut escaped = false;
    for c in text.chars() {
        let last = parts.last_mut().expect("never empty");
        if escaped {
            last.push('\\');
            last.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == sep {
            parts.push(String::new());
        } else {
            last.push(c);
        }
    }
    parts
}

/// Finds the first unescaped operator: returns (path, op, raw value).
fn split_field_req(part: &str) -> Option<(&str, &'static str, &str)> {
    let bytes = part.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'!' if bytes.get(i + 1) == Some(&b'=') => {
                return Some((&part[..i], "!=", &part[i + 2..]));
            }
            b'=' if bytes.get(i + 1) == Some(&b'=') => {
                return Some((&part[..i], "==", &part[i + 2..]));
            }
            b'=' => return Some((&part[..i], "=", &part[i + 1..])),
            _ => i += 1,
        }
    }
    None
}

fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "n1", "namespace": "default", "labels": labels},
               "spec": {"nodeName": "node-a", "unschedulable": true, "replicas": 3},
               "status": {"phase": "Running"}})
    }

    #[test]
    fn equality_based_label_selectors() {
        let o = obj(json!({"pool": "a", "tier": "gpu"}));
        let m = |s: &str| LabelSelector::parse(s).unwrap().matches(&o);
        assert!(m(""));
        assert!(m("pool=a"));
        assert!(m("pool==a,tier=gpu"));
        assert!(!m("pool=b"));
        assert!(m("pool!=b"));
        assert!(m("missing!=x"), "!= holds when the label is absent");
        assert!(!m("pool!=a"));
        assert!(m("pool"));
        assert!(!m("!pool"));
        assert!(m("!missing"));
    }

    #[test]
    fn set_based_label_selectors() {
        let o = obj(json!({"pool": "a", "n": "5"}));
        let m = |s: &str| LabelSelector::parse(s).unwrap().matches(&o);
        assert!(m("pool in (a, b)"));
        assert!(m("pool in (a,b),n"));
        assert!(!m("pool in (b,c)"));
        assert!(m("pool notin (b,c)"));
        assert!(!m("pool notin (a)"));
        assert!(m("missing notin (a)"));
        assert!(m("n>4") && !m("n>5") && m("n<6"));
        assert!(!m("missing>1"));
    }

    /// The set-based and equality operators give what kube-rs' selector gives, on every
    /// combination of a few label sets (kube-core has no `gt`/`lt`; `set_based_label_selectors`
    /// covers those).
    #[test]
    fn label_selectors_agree_with_kube_rs() {
        use std::collections::{BTreeMap, BTreeSet};

        use kube::core::{Expression, Selector, SelectorExt};

        let set = |vs: &[String]| vs.iter().cloned().collect::<BTreeSet<_>>();
        let kube_selector = |ours: &LabelSelector| -> Selector {
            ours.0
                .iter()
                .map(|r| match r {
                    Requirement::Exists(k) => Expression::Exists(k.clone()),
                    Requirement::DoesNotExist(k) => Expression::DoesNotExist(k.clone()),
                    Requirement::In(k, vs) => Expression::In(k.clone(), set(vs)),
                    Requirement::NotIn(k, vs) => Expression::NotIn(k.clone(), set(vs)),
                    Requirement::Gt(..) | Requirement::Lt(..) => unreachable!("not in kube-core"),
                })
                .collect()
        };
        let label_sets: Vec<BTreeMap<String, String>> = [
            &[][..],
            &[("pool", "a")],
            &[("pool", "b"), ("tier", "gpu")],
            &[("pool", "a"), ("tier", "cpu"), ("team", "")],
        ]
        .iter()
        .map(|ls| {
            ls.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .collect();
        let selectors = [
            "",
            "pool=a",
            "pool==b,tier=gpu",
            "pool!=a",
            "pool in (a, b)",
            "pool notin (a)",
            "tier notin (gpu,cpu),pool",
            "!tier",
            "team",
            "team=",
            "team!=",
            "pool=a,!team",
        ];
        for text in selectors {
            let ours = LabelSelector::parse(text).unwrap();
            let theirs = kube_selector(&ours);
            for labels in &label_sets {
                assert_eq!(
                    ours.matches_with(|k| labels.get(k).map(String::as_str)),
                    theirs.matches(labels),
                    "{text:?} on {labels:?}"
                );
            }
        }
    }

    #[test]
    fn label_selector_errors() {
        assert!(LabelSelector::parse("a in b").is_err());
        assert!(LabelSelector::parse("=x").is_err());
        assert!(LabelSelector::parse("a>x").is_err());
        assert!(LabelSelector::parse("a=b c").is_err());
        assert!(LabelSelector::parse("!").is_err());
    }

    #[test]
    fn field_selectors_compare_dotted_paths_as_strings() {
        let o = obj(json!({}));
        let m = |s: &str| FieldSelector::parse(s).unwrap().matches(&o);
        assert!(m("metadata.name=n1"));
        assert!(m("metadata.name==n1,metadata.namespace=default"));
        assert!(m(
            "spec.nodeName=node-a,status.phase!=Succeeded,status.phase!=Failed"
        ));
        assert!(!m("status.phase=Pending"));
        assert!(m("spec.unschedulable=true"));
        assert!(m("spec.replicas=3"));
        assert!(
            m("involvedObject.uid="),
            "a missing field equals the empty string"
        );
        assert!(!m("involvedObject.uid!="));
        assert!(m("metadata.missing.deeper="));
    }

    #[test]
    fn field_selector_escapes_and_errors() {
        let o = json!({"message": "a,b=c"});
        let s = FieldSelector::parse(r"message=a\,b\=c").unwrap();
        assert!(s.matches(&o));
        assert!(FieldSelector::parse("novalue").is_err());
        assert!(FieldSelector::parse("a..b=x").is_err());
        assert_eq!(FieldSelector::parse("").unwrap(), FieldSelector::default());
    }

    #[test]
    fn pinned_name_is_found() {
        let s = FieldSelector::parse("metadata.namespace=x,metadata.name=abc").unwrap();
        assert_eq!(s.pinned_name(), Some("abc"));
        let s = FieldSelector::parse("metadata.name!=abc").unwrap();
        assert_eq!(s.pinned_name(), None);
    }
}
