//! Discovery documents: `/version`, `/api`, `/api/v1`, `/apis`, `/apis/{group}` and
//! `/apis/{group}/{version}`.
//!
//! kubectl 1.33 first asks for aggregated discovery (`Accept:
//! application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,...`). Answering
//! the unaggregated documents with `Content-Type: application/json` is the fallback
//! client-go takes for servers without it (it switches on the response's content type), so
//! only the classic shapes are served.

use serde_json::{Value, json};

use super::resources::{CORE_GROUP_VERSION, Kind, groups};

/// The Kubernetes version this server claims. `/usr/bin/kubectl` on the project's machines
/// picks a matching real kubectl (1.27 … 1.33) from it.
pub const GIT_VERSION: &str = "v1.33.1";

/// `/version`.
pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "33",
        "gitVersion": GIT_VERSION,
        "gitCommit": "spotboard-embedded",
        "gitTreeState": "clean",
        "buildDate": "2025-05-15T00:00:00Z",
        "goVersion": "go1.24.2",
        "compiler": "gc",
        "platform": format!("{}/{}", std::env::consts::OS, go_arch()),
    })
}

fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// `/api`: the core API's versions. `server_address` is `host:port` of this server.
pub fn core_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": [CORE_GROUP_VERSION],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group(name: &str, version: &str) -> Value {
    let gv = json!({"groupVersion": format!("{name}/{version}"), "version": version});
    json!({"name": name, "versions": [gv.clone()], "preferredVersion": gv})
}

/// `/apis`: the groups of the `served` kinds.
pub fn group_list(served: &[Kind]) -> Value {
    let groups: Vec<Value> = groups(served).iter().map(|(n, v)| group(n, v)).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/{group}`, if a `served` kind is in the group.
pub fn api_group(served: &[Kind], name: &str) -> Option<Value> {
    let (n, v) = groups(served).into_iter().find(|(n, _)| *n == name)?;
    let mut g = group(n, v);
    g["kind"] = json!("APIGroup");
    g["apiVersion"] = json!("v1");
    Some(g)
}

/// The `APIResourceList` of a group-version (`""` group for core), if a `served` kind is in it.
pub fn resource_list(served: &[Kind], group: &str, version: &str) -> Option<Value> {
    let kinds: Vec<Kind> = served
        .iter()
        .copied()
        .filter(|k| k.info().group == group && k.info().version == version)
        .collect();
    if kinds.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for kind in kinds {
        let rt = kind.info();
        let mut r = json!({
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": rt.verbs(),
            "shortNames": rt.short_names,
        });
        if !rt.categories.is_empty() {
            r["categories"] = json!(rt.categories);
        }
        resources.push(r);
        if kind == Kind::Pods {
            // `kubectl drain` looks for this entry before it asks for evictions.
            resources.push(json!({
                "name": "pods/eviction",
                "singularName": "",
                "namespaced": true,
                "group": "policy",
                "version": "v1",
                "kind": "Eviction",
                "verbs": ["create"],
            }));
        }
        if rt.status_subresource {
            let verbs: &[&str] = if rt.writable {
                &["get", "patch", "update"]
            } else {
                &["get"]
            };
            resources.push(json!({
                "name": format!("{}/status", rt.plural),
                "singularName": "",
                "namespaced": rt.namespaced,
                "kind": rt.kind,
                "verbs": verbs,
            }));
        }
    }
    let group_version = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version,
        "resources": resources,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &Value) -> Vec<String> {
        list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap().to_string())
            .collect()
    }

    #[test]
    fn core_resources_have_short_names_and_status() {
        let core = resource_list(&Kind::BUILT_IN, "", "v1").unwrap();
        assert_eq!(core["groupVersion"], "v1");
        let n = names(&core);
        for want in [
            "nodes",
            "nodes/status",
            "pods",
            "pods/status",
            "events",
            "namespaces",
        ] {
            assert!(n.contains(&want.to_string()), "{want}");
        }
        let pods =
            &core["resources"].as_array().unwrap()[n.iter().position(|x| x == "pods").unwrap()];
        assert_eq!(pods["namespaced"], true);
        assert_eq!(pods["shortNames"][0], "po");
        assert!(!n.contains(&"events/status".to_string()));
    }

    #[test]
    fn a_registered_crd_is_discoverable_and_only_where_registered() {
        let served: Vec<Kind> = Kind::BUILT_IN
            .into_iter()
            .chain([crate::api::resources::test_nodepools()])
            .collect();
        let groups = group_list(&served);
        let listed: Vec<&str> = groups["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["name"].as_str().unwrap())
            .collect();
        assert!(listed.contains(&"compute.coreweave.com"));
        assert!(listed.contains(&"apiextensions.k8s.io"));
        let np = resource_list(&served, "compute.coreweave.com", "v1alpha1").unwrap();
        assert_eq!(names(&np), ["nodepools", "nodepools/status"]);
        assert_eq!(np["resources"][0]["shortNames"][0], "np");
        assert_eq!(np["resources"][0]["namespaced"], false);
        let crds = resource_list(&served, "apiextensions.k8s.io", "v1").unwrap();
        assert_eq!(
            crds["resources"][0]["verbs"],
            json!(["get", "list", "watch"])
        );
        assert!(resource_list(&served, "apps", "v1").is_none());
        assert_eq!(
            api_group(&served, "compute.coreweave.com").unwrap()["kind"],
            "APIGroup"
        );
        assert!(api_group(&served, "apps").is_none());
        assert!(api_group(&Kind::BUILT_IN, "compute.coreweave.com").is_none());
        assert!(resource_list(&Kind::BUILT_IN, "compute.coreweave.com", "v1alpha1").is_none());
    }

    #[test]
    fn version_is_one_kubectl_accepts() {
        let v = version();
        assert_eq!(v["gitVersion"], "v1.33.1");
        assert_eq!(
            (v["major"].as_str(), v["minor"].as_str()),
            (Some("1"), Some("33"))
        );
    }
}
