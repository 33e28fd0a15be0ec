//! The kubeconfig written for the embedded cluster: one cluster, user and context per zone,
//! the first zone current, readable by its owner only (it holds the admin token).
//!
//! The token is in two places: the user entry (kube-rs sends it as a bearer token over any
//! scheme) and the server URL's path (`/token/<token>`), because kubectl sends kubeconfig
//! credentials only over TLS and the embedded API servers speak plain HTTP (see
//! [`api::url_with_token`](super::api::url_with_token)).

use std::io::Write;
use std::path::Path;

use serde_json::{Value, json};

use super::Zone;
use super::api::url_with_token;
use crate::{Error, Result};

/// The kubeconfig document for `zones` with `token` (the admin's, or the reader's for a
/// replica's own account).
pub fn document(zones: &[Zone], token: &str) -> Value {
    let clusters: Vec<Value> = zones
        .iter()
        .map(|z| json!({"name": z.context, "cluster": {"server": url_with_token(&z.url, token)}}))
        .collect();
    let users: Vec<Value> = zones
        .iter()
        .map(|z| json!({"name": z.context, "user": {"token": token}}))
        .collect();
    let contexts: Vec<Value> = zones
        .iter()
        .map(|z| json!({"name": z.context, "context": {"cluster": z.context, "user": z.context}}))
        .collect();
    json!({
        "apiVersion": "v1",
        "kind": "Config",
        "preferences": {},
        "clusters": clusters,
        "users": users,
        "contexts": contexts,
        "current-context": zones.first().map(|z| z.context.as_str()).unwrap_or(""),
    })
}

/// Writes the kubeconfig to `path` (parent directories created, mode 0600 on Unix,
/// replacing any earlier file). Errors: any I/O failure, as [`Error::Io`].
pub fn write(path: &Path, zones: &[Zone], token: &str) -> Result<()> {
    let yaml = serde_yaml::to_string(&document(zones, token)).map_err(Error::Kubeconfig)?;
    let ctx = |what: &str| format!("{what} kubeconfig {}", path.display());
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(ctx("creating the folder of"), e))?;
    }
    // Why remove first: `mode` applies only when a file is created, and an older file
    // might be readable by others.
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(ctx("replacing"), e)),
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options
        .open(path)
        .map_err(|e| Error::io(ctx("creating"), e))?;
    file.write_all(yaml.as_bytes())
        .map_err(|e| Error::io(ctx("writing"), e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zones() -> Vec<Zone> {
        ["US-EAST-04A", "US-WEST-01A"]
            .iter()
            .enumerate()
            .map(|(i, z)| Zone {
                zone: z.to_string(),
                context: super::super::context_name(z),
                url: format!("http://127.0.0.1:{}", 40000 + i),
                fleet: None,
            })
            .collect()
    }

    #[test]
    fn one_context_per_zone_first_is_current() {
        let doc = document(&zones(), "tok");
        assert_eq!(doc["current-context"], "spotboard-us-east-04a");
        assert_eq!(doc["contexts"].as_array().unwrap().len(), 2);
        assert_eq!(
            doc["clusters"][1]["cluster"]["server"],
            "http://127.0.0.1:40001/token/tok"
        );
        assert_eq!(doc["users"][0]["user"]["token"], "tok");
        assert_eq!(
            doc["contexts"][1]["context"]["cluster"],
            "spotboard-us-west-01a"
        );
    }

    #[test]
    fn written_file_is_private_yaml() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/kubeconfig");
        write(&path, &zones(), "tok").unwrap();
        write(&path, &zones(), "tok2").unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let back: Value = serde_yaml::from_str(&text).unwrap();
        assert_eq!(back["users"][0]["user"]["token"], "tok2");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(&path).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
