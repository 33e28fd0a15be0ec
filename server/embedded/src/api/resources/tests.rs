use super::*;

#[test]
fn find_round_trips_among_served_kinds() {
    let np = test_nodepools();
    let served: Vec<Kind> = Kind::BUILT_IN.into_iter().chain([np]).collect();
    for k in &served {
        let info = k.info();
        assert_eq!(
            Kind::find(&served, info.group, info.version, info.plural),
            Some(*k)
        );
        let expected_api_version = if info.group.is_empty() {
            info.version.to_string()
        } else {
            format!("{}/{}", info.group, info.version)
        };
        assert_eq!(info.api_version, expected_api_version);
    }
    assert_eq!(Kind::find(&served, "", "v1", "nodepools"), None);
    assert_eq!(
        Kind::find(
            &Kind::BUILT_IN,
            "compute.coreweave.com",
            "v1alpha1",
            "nodepools"
        ),
        None,
        "a custom resource is served only where it was registered"
    );
}

#[test]
fn a_crd_registers_once_with_what_it_declares() {
    let np = test_nodepools();
    assert_eq!(
        test_nodepools(),
        np,
        "registering again returns the same kind"
    );
    let rt = np.info();
    assert_eq!(rt.kind, "NodePool");
    assert!(!rt.namespaced);
    assert!(rt.status_subresource);
    let crd = rt.crd.as_ref().unwrap();
    assert!(crd.schema["properties"]["spec"].is_object());
    assert!(
        crd.printer_columns
            .iter()
            .any(|c| c.name == "Instance Type")
    );
    assert_eq!(crd.object["status"]["conditions"][1]["type"], "Established");
}

#[test]
fn a_crd_missing_what_discovery_needs_is_refused_with_the_field() {
    let crd = json!({"spec": {"group": "example.com", "names": {"kind": "Widget"},
                              "scope": "Cluster", "versions": [{"name": "v1"}]}});
    assert_eq!(
        Kind::from_crd(&crd),
        Err("CRD has no spec.names.plural".to_string())
    );
    let crd = json!({"spec": {"group": "example.com",
                              "names": {"kind": "Widget", "plural": "widgets"},
                              "scope": "Galaxy", "versions": [{"name": "v1"}]}});
    assert!(Kind::from_crd(&crd).unwrap_err().contains("Galaxy"));
}

#[test]
fn names_for_messages() {
    let np = test_nodepools();
    assert_eq!(Kind::Pods.info().group_resource(), "pods");
    assert_eq!(
        np.info().group_resource(),
        "nodepools.compute.coreweave.com"
    );
    assert_eq!(np.info().group_kind(), "NodePool.compute.coreweave.com");
    assert_eq!(Kind::Crds.info().verbs(), &["get", "list", "watch"]);
    assert_eq!(
        groups(&[Kind::Nodes, Kind::Crds, np, Kind::PodDisruptionBudgets]),
        [
            ("apiextensions.k8s.io", "v1"),
            ("compute.coreweave.com", "v1alpha1"),
            ("policy", "v1")
        ]
    );
}
