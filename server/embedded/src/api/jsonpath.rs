//! The JSONPath subset that CRD `additionalPrinterColumns` use: `.a.b`, `[n]`, `[*]`,
//! `['key']` and filters `[?(@.type=="Capacity")]` with `==`/`!=` against a literal.

use serde_json::Value;

#[derive(Debug, PartialEq)]
enum Step {
    Field(String),
    Index(usize),
    All,
    Filter {
        path: Vec<String>,
        equal: bool,
        literal: Value,
    },
}

/// A parsed path, evaluated with [`JsonPath::find`].
#[derive(Debug, PartialEq)]
pub struct JsonPath {
    steps: Vec<Step>,
}

impl JsonPath {
    /// Parses `.status.conditions[?(@.type=="Capacity")].reason` and the like (an optional
    /// `{...}` wrapper and leading `$` are accepted). Errors describe what was not
    /// understood.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut rest = text.trim();
        if let Some(inner) = rest.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
            rest = inner.trim();
        }
        rest = rest.strip_prefix('$').unwrap_or(rest);
        let mut steps = Vec::new();
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix('.') {
                let end = after.find(['.', '[']).unwrap_or(after.len());
                if end == 0 {
                    return Err(format!("empty field name in {text:?}"));
                }
                steps.push(Step::Field(after[..end].to_string()));
                rest = &after[end..];
            } else if let Some(after) = rest.strip_prefix('[') {
                let end =
                    closing_bracket(after).ok_or_else(|| format!("unclosed [ in {text:?}"))?;
                steps.push(parse_bracket(after[..end].trim(), text)?);
                rest = &after[end + 1..];
            } else {
                return Err(format!("unexpected {rest:?} in {text:?}"));
            }
        }
        Ok(Self { steps })
    }

    /// Every value the path reaches, in document order.
    pub fn find<'a>(&self, root: &'a Value) -> Vec<&'a Value> {
        let mut current = vec![root];
        for step in &self.steps {
            let mut next = Vec::new();
            for v in current {
                match step {
                    Step::Field(f) => next.extend(v.get(f.as_str())),
                    Step::Index(i) => next.extend(v.get(*i)),
                    Step::All => match v {
                        Value::Array(items) => next.extend(items.iter()),
                        Value::Object(map) => next.extend(map.values()),
                        _ => {}
                    },
                    Step::Filter {
                        path,
                        equal,
                        literal,
                    } => {
                        if let Value::Array(items) = v {
                            next.extend(items.iter().filter(|item| {
                                let got = path
                                    .iter()
                                    .try_fold(*item, |cur, seg| cur.get(seg.as_str()));
                                got.is_some_and(|g| g == literal) == *equal
                            }));
                        }
                    }
                }
            }
            current = next;
        }
        current
    }
}

/// Index of the `]` closing a bracket, skipping quoted text.
fn closing_bracket(text: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (None, '"' | '\'') => quote = Some(c),
            (None, ']') => return Some(i),
            _ => {}
        }
    }
    None
}

fn parse_bracket(inner: &str, whole: &str) -> Result<Step, String> {
    if inner == "*" {
        return Ok(Step::All);
    }
    if let Ok(i) = inner.parse::<usize>() {
        return Ok(Step::Index(i));
    }
    if let Some(key) = unquote(inner) {
        return Ok(Step::Field(key));
    }
    let expr = inner
        .strip_prefix("?(")
        .and_then(|e| e.strip_suffix(')'))
        .ok_or_else(|| format!("unsupported [{inner}] in {whole:?}"))?;
    let (lhs, equal, rhs) = if let Some((l, r)) = expr.split_once("==") {
        (l, true, r)
    } else if let Some((l, r)) = expr.split_once("!=") {
        (l, false, r)
    } else {
        return Err(format!("unsupported filter {expr:?} in {whole:?}"));
    };
    let path = lhs
        .trim()
        .strip_prefix("@.")
        .ok_or_else(|| format!("filter must start with @. in {whole:?}"))?
        .split('.')
        .map(str::to_string)
        .collect();
    let rhs = rhs.trim();
    let literal = match unquote(rhs) {
        Some(s) => Value::String(s),
        None => {
            serde_json::from_str(rhs).map_err(|_| format!("bad literal {rhs:?} in {whole:?}"))?
        }
    };
    Ok(Step::Filter {
        path,
        equal,
        literal,
    })
}

fn unquote(text: &str) -> Option<String> {
    ['"', '\'']
        .into_iter()
        .find_map(|q| text.strip_prefix(q).and_then(|t| t.strip_suffix(q)))
        .map(str::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pool() -> Value {
        json!({"spec": {"instanceType": "gd-8xh100ib-i128", "targetNodes": 4},
               "status": {"conditions": [
                   {"type": "Validated", "reason": "Valid"},
                   {"type": "Capacity", "reason": "Sufficient"},
                   {"type": "Quota", "reason": "Under"}]},
               "metadata": {"labels": {"a.b/c": "x"}}})
    }

    fn first(path: &str) -> Option<Value> {
        JsonPath::parse(path)
            .unwrap()
            .find(&pool())
            .first()
            .map(|v| (*v).clone())
    }

    #[test]
    fn dotted_paths_and_indexes() {
        assert_eq!(first(".spec.instanceType"), Some(json!("gd-8xh100ib-i128")));
        assert_eq!(first("{.spec.targetNodes}"), Some(json!(4)));
        assert_eq!(
            first("$.status.conditions[1].reason"),
            Some(json!("Sufficient"))
        );
        assert_eq!(first(".metadata.labels['a.b/c']"), Some(json!("x")));
        assert_eq!(first(".status.queuedNodes"), None);
        let all = JsonPath::parse(".status.conditions[*].type").unwrap();
        assert_eq!(all.find(&pool()).len(), 3);
    }

    #[test]
    fn filters_select_list_items() {
        assert_eq!(
            first(r#".status.conditions[?(@.type=="Capacity")].reason"#),
            Some(json!("Sufficient"))
        );
        assert_eq!(
            first(".status.conditions[?(@.type=='Quota')].reason"),
            Some(json!("Under"))
        );
        assert_eq!(
            first(r#".status.conditions[?(@.type=="AtTarget")].reason"#),
            None
        );
        let not = JsonPath::parse(r#".status.conditions[?(@.type!="Capacity")].type"#).unwrap();
        assert_eq!(not.find(&pool()).len(), 2);
    }

    #[test]
    fn rejects_what_it_does_not_know() {
        assert!(JsonPath::parse(".a[").is_err());
        assert!(JsonPath::parse(".a[?(@.x > 1)]").is_err());
        assert!(JsonPath::parse("a.b").is_err());
        assert!(JsonPath::parse(".a..b").is_err());
    }
}
