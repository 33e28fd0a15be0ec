//! Kubernetes name syntax: qualified names (label and annotation keys), label values, DNS
//! subdomains. Rules from the Kubernetes API conventions (`IsQualifiedName`, `IsValidLabelValue`,
//! `IsDNS1123Subdomain`).

/// Why `name` is not a DNS-1123 subdomain (an object name such as a NodePool's), if it is not:
/// at most 253 characters, lowercase alphanumerics, '-' and '.', starting and ending with an
/// alphanumeric.
pub fn dns_subdomain_problem(name: &str) -> Option<String> {
    if name.len() > 253 {
        return Some(format!(
            "must be at most 253 characters, got {}",
            name.len()
        ));
    }
    (!is_dns_subdomain(name)).then(|| {
        "must be a DNS-1123 subdomain: lowercase letters, digits, '-' and '.', starting and \
         ending with a letter or digit (e.g. h100-spot-east)"
            .to_string()
    })
}

/// Why `key` is not a Kubernetes qualified name (`[prefix/]name`), if it is not.
pub fn qualified_name_problem(key: &str) -> Option<String> {
    let (prefix, name) = match key.split_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix
        && (p.is_empty() || p.len() > 253 || !is_dns_subdomain(p))
    {
        return Some(format!(
            "prefix \"{p}\" must be a DNS subdomain (lowercase letters, digits, '-' and '.', at most 253 characters)"
        ));
    }
    if name.is_empty() {
        return Some("name part must not be empty".into());
    }
    if name.len() > 63 {
        return Some("name part must be at most 63 characters".into());
    }
    if !is_label_token(name) {
        return Some(
            "name part must consist of alphanumerics, '-', '_' or '.', and start and end with an alphanumeric"
                .into(),
        );
    }
    None
}

/// Why `value` is not a valid label value, if it is not. Empty values are valid.
pub fn label_value_problem(value: &str) -> Option<String> {
    if value.is_empty() {
        return None;
    }
    if value.len() > 63 {
        return Some("must be at most 63 characters".into());
    }
    if !is_label_token(value) {
        return Some(
            "must consist of alphanumerics, '-', '_' or '.', and start and end with an alphanumeric"
                .into(),
        );
    }
    None
}

fn is_label_token(s: &str) -> bool {
    let b = s.as_bytes();
    let inner = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.');
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(inner)
}

fn is_dns_subdomain(s: &str) -> bool {
    s.split('.').all(|part| {
        let b = part.as_bytes();
        !b.is_empty()
            && b.len() <= 63
            && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
            && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    })
}
