//! The create form's one-line-per-entry text fields, in kubectl's own syntax:
//! `key=value` for labels and annotations (as `kubectl label`), `key[=value]:Effect` for
//! taints (as `kubectl taint`). Pure, so the form and its tests agree.

use std::collections::BTreeMap;

use crate::nodepool::Taint;

/// A line that could not be read: 1-based line number and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
}

/// `key=value` lines into a map; later lines win over earlier ones with the same key.
pub fn parse_pairs(text: &str) -> (BTreeMap<String, String>, Vec<LineError>) {
    let mut map = BTreeMap::new();
    let mut errors = Vec::new();
    for (line, l) in lines(text) {
        match l.split_once('=') {
            Some((k, v)) => {
                map.insert(k.trim().to_string(), v.trim().to_string());
            }
            None => errors.push(LineError {
                line,
                message: format!("\"{l}\" is not key=value"),
            }),
        }
    }
    (map, errors)
}

/// A map as `key=value` lines.
pub fn format_pairs(map: &BTreeMap<String, String>) -> String {
    map.iter().map(|(k, v)| format!("{k}={v}\n")).collect()
}

/// `key[=value]:Effect` lines into taints.
pub fn parse_taints(text: &str) -> (Vec<Taint>, Vec<LineError>) {
    let mut taints = Vec::new();
    let mut errors = Vec::new();
    for (line, l) in lines(text) {
        let Some((kv, effect)) = l.rsplit_once(':') else {
            errors.push(LineError {
                line,
                message: format!(
                    "\"{l}\" is not key=value:Effect (Effect is NoSchedule, PreferNoSchedule or NoExecute)"
                ),
            });
            continue;
        };
        let (key, value) = match kv.split_once('=') {
            Some((k, v)) => (k.trim(), Some(v.trim().to_string())),
            None => (kv.trim(), None),
        };
        taints.push(Taint {
            key: key.to_string(),
            value: value.filter(|v| !v.is_empty()),
            effect: effect.trim().into(),
        });
    }
    (taints, errors)
}

/// Taints as `key=value:Effect` lines.
pub fn format_taints(taints: &[Taint]) -> String {
    taints
        .iter()
        .map(|t| match &t.value {
            Some(v) => format!("{}={v}:{}\n", t.key, t.effect.as_str()),
            None => format!("{}:{}\n", t.key, t.effect.as_str()),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nodepool::TaintEffect;

    #[test]
    fn pairs_round_trip_and_report_bad_lines() {
        let (map, errs) = parse_pairs("team=ml\n\n# comment\nexample.com/owner = a\nbroken\n");
        assert_eq!(map.get("team").map(String::as_str), Some("ml"));
        assert_eq!(map.get("example.com/owner").map(String::as_str), Some("a"));
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].line, 5);
        assert_eq!(format_pairs(&map), "example.com/owner=a\nteam=ml\n");
    }

    #[test]
    fn taints_in_kubectl_syntax() {
        let (t, errs) = parse_taints("dedicated=ml:NoSchedule\nexample.com/gpu:NoExecute\nnope\n");
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].value.as_deref(), Some("ml"));
        assert_eq!(t[1].key, "example.com/gpu");
        assert_eq!(t[1].effect, TaintEffect::NoExecute);
        assert_eq!(errs[0].line, 3);
        assert_eq!(
            format_taints(&t),
            "dedicated=ml:NoSchedule\nexample.com/gpu:NoExecute\n"
        );
    }
}
