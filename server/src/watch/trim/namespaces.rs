//! Namespaces, trimmed to what showback reads of them: their labels (a team label may sit on
//! the namespace instead of its pods).

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Namespace;
use kube::ResourceExt;

use crate::watch::records::NamespaceRecord;

/// Labels kept per namespace at most (the first by key): a namespace carries a handful, and
/// a hostile one cannot make the hub hold thousands.
pub const MAX_LABELS: usize = 64;

/// Trims a Namespace; `None` without a uid.
pub fn namespace(n: &Namespace) -> Option<NamespaceRecord> {
    let labels: BTreeMap<String, String> = n
        .labels()
        .iter()
        .take(MAX_LABELS)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    Some(NamespaceRecord {
        uid: n.uid()?,
        name: n.name_any(),
        labels: Arc::new(labels),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_are_kept_up_to_the_budget() {
        let mut n = Namespace::default();
        n.metadata.name = Some("ml".into());
        n.metadata.uid = Some("u1".into());
        n.metadata.labels = Some(
            (0..1000)
                .map(|i| (format!("k{i:04}"), "v".to_string()))
                .chain([("team".to_string(), "research".to_string())])
                .collect(),
        );
        let r = namespace(&n).unwrap();
        assert_eq!(r.name, "ml");
        assert_eq!(r.labels.len(), MAX_LABELS);
        assert!(r.labels.contains_key("k0000"));
        n.metadata.uid = None;
        assert!(namespace(&n).is_none());
    }
}
