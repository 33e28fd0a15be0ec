//! The committed CRD YAML must match what the Rust types generate.

#[test]
fn committed_crd_is_current() {
    let committed = include_str!("../../crd/nodepools.compute.coreweave.com.yaml");
    let generated = server::crd::yaml();
    assert!(
        committed == generated,
        "server/crd/nodepools.compute.coreweave.com.yaml is stale: run ./tasks.sh crd and commit it"
    );
    assert!(generated.contains("compute.coreweave.com"));
    assert!(generated.contains("targetNodes"));
    assert!(generated.contains("subresources"));
}
