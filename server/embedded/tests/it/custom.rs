//! What a vendor adds, registered by the behaviour model at start: custom resources from
//! their CRDs and read-only JSON routes. The API server itself serves only the built-in kinds.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use kube::Api;
use kube::api::{ApiResource, DynamicObject, PostParams};
use serde_json::{Value, json};
use spotboard_embedded::api::{ApiOptions, ApiServer, Tokens};
use spotboard_embedded::client_for;
use spotboard_embedded::sim::crds;
use spotboard_embedded::sim::fleet::Flavor;

use crate::common::api::get_json;

async fn start(crds: &[Value]) -> (ApiServer, Tokens) {
    let tokens = Tokens::generate();
    let server = ApiServer::start_with("TEST-01A", tokens.clone(), ApiOptions::default(), crds)
        .await
        .unwrap();
    (server, tokens)
}

fn karpenter() -> ApiResource {
    ApiResource {
        group: "karpenter.sh".into(),
        version: "v1".into(),
        api_version: "karpenter.sh/v1".into(),
        kind: "NodePool".into(),
        plural: "nodepools".into(),
    }
}

#[tokio::test]
async fn a_zone_serves_the_custom_resources_it_was_started_with_and_no_others() {
    let (server, tokens) = start(&crds::for_zone(Some(Flavor::Karpenter))).await;
    let admin = client_for(&server.url(), &tokens.admin, "test").unwrap();
    let served = admin
        .list_api_group_resources("karpenter.sh/v1")
        .await
        .unwrap();
    assert_eq!(served.resources[0].name, "nodepools");
    assert_eq!(
        served.resources[0].categories,
        Some(vec!["karpenter".to_string()])
    );
    match admin
        .list_api_group_resources("compute.coreweave.com/v1alpha1")
        .await
    {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 404),
        other => panic!("a Karpenter zone serves no CoreWeave NodePools: {other:?}"),
    }
    let crds: Api<DynamicObject> = Api::all_with(
        admin.clone(),
        &ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk(
                "apiextensions.k8s.io",
                "v1",
                "CustomResourceDefinition",
            ),
            "customresourcedefinitions",
        ),
    );
    let names: Vec<String> = crds
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(names, ["nodepools.karpenter.sh"]);

    // The CRD's printer columns are what `kubectl get nodepools` shows.
    let pools: Api<DynamicObject> = Api::all_with(admin, &karpenter());
    let mut np = DynamicObject::new("spot-a", &karpenter()).data(json!({
        "spec": {"template": {"spec": {"nodeClassRef": {"name": "default"}}}}}));
    np.metadata.name = Some("spot-a".into());
    pools.create(&PostParams::default(), &np).await.unwrap();
    let table = get_json(
        &format!("{}/apis/karpenter.sh/v1/nodepools", server.url()),
        &tokens.reader,
        Some("application/json;as=Table;v=v1;g=meta.k8s.io"),
    )
    .await;
    let columns: Vec<&str> = table["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        columns,
        ["Name", "NodeClass", "Nodes", "Ready", "Age", "Weight"]
    );
    assert_eq!(table["rows"][0]["cells"][0], "spot-a");
    assert_eq!(table["rows"][0]["cells"][1], "default");
    assert_eq!(
        table["rows"][0]["cells"][2],
        Value::Null,
        "no status yet prints empty"
    );

    // A GKE zone serves the built-in kinds only.
    let (gke, tokens) = start(&crds::for_zone(Some(Flavor::Gke))).await;
    let reader = client_for(&gke.url(), &tokens.reader, "test").unwrap();
    let groups = reader.list_api_groups().await.unwrap();
    let names: Vec<&str> = groups.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(
        names,
        ["apiextensions.k8s.io", "policy", "coordination.k8s.io"]
    );
}

#[tokio::test]
async fn a_crd_without_names_stops_the_start_with_the_reason() {
    let bad = json!({"spec": {"group": "example.com", "scope": "Cluster",
                              "names": {"plural": "widgets"}, "versions": [{"name": "v1"}]}});
    let err = ApiServer::start_with(
        "TEST-01A",
        Tokens::generate(),
        ApiOptions::default(),
        &[bad],
    )
    .await
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "embedded zone TEST-01A: CRD has no spec.names.kind"
    );
}

#[tokio::test]
async fn extra_routes_answer_authenticated_reads_only() {
    let (server, tokens) = start(&[]).await;
    let calls = Arc::new(AtomicU64::new(0));
    let counted = calls.clone();
    server.serve_json(
        "/capacity-feed",
        Arc::new(move || json!({"call": counted.fetch_add(1, Ordering::SeqCst) + 1})),
    );
    let http = reqwest::Client::new();
    let url = format!("{}/capacity-feed", server.url());
    let anonymous = http.get(&url).send().await.unwrap();
    assert_eq!(anonymous.status().as_u16(), 401);
    let read = get_json(&url, &tokens.reader, None).await;
    assert_eq!(
        read,
        json!({"call": 1}),
        "the document is made on each request"
    );
    let post = http
        .post(&url)
        .bearer_auth(&tokens.admin)
        .send()
        .await
        .unwrap();
    assert_eq!(post.status().as_u16(), 405);
    let (bare, tokens) = start(&[]).await;
    let missing = http
        .get(format!("{}/capacity-feed", bare.url()))
        .bearer_auth(&tokens.reader)
        .send()
        .await
        .unwrap();
    assert_eq!(
        missing.status().as_u16(),
        404,
        "no route until one is registered"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}
