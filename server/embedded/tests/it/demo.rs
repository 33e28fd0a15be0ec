//! The demo's preemptions ("Play a preemption", the first minute's schedule) against an API
//! server with more nodes than one page holds.

use crate::common;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::{Api, ResourceExt};
use serde_json::json;
use spotboard_core::labels;
use spotboard_core::nodepool::{ComputeClass, NodePool};
use spotboard_embedded::sim::demo::{DemoZone, Preempter};
use spotboard_embedded::sim::nodes::PREEMPT_ANNOTATION;

use common::objects::{node, pool};

/// The only spot nodes come after 1,050 on-demand ones: the third page of 500. A preempter
/// that read one page would find none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_finds_a_spot_node_beyond_the_first_page_of_nodes() {
    let f = common::api::fixture().await;
    let pools: Api<NodePool> = Api::all(f.admin.clone());
    let mut spot = pool("h100-spot", 2);
    spot.spec.compute_class = ComputeClass::Spot;
    pools.create(&Default::default(), &spot).await.unwrap();
    pools
        .create(&Default::default(), &pool("h100-reserved", 1_050))
        .await
        .unwrap();
    let nodes: Api<Node> = Api::all(f.admin.clone());
    let named = (0..1_050)
        .map(|i| (format!("a-{i:04}"), "h100-reserved"))
        .chain([
            ("z-1".to_string(), "h100-spot"),
            ("z-0".to_string(), "h100-spot"),
        ]);
    futures::stream::iter(named)
        .for_each_concurrent(16, |(name, pool)| {
            let nodes = nodes.clone();
            async move {
                let n = node(&name, json!({labels::NODE_POOL: pool}));
                nodes.create(&Default::default(), &n).await.unwrap();
            }
        })
        .await;

    let preempter = Preempter::new(vec![DemoZone {
        context: "test".into(),
        fleet: None,
        client: f.admin.clone(),
    }]);
    let chosen = preempter.preempt_any(None).await.unwrap();
    assert_eq!(chosen, Some(("test".to_string(), "z-0".to_string())));
    let z0 = nodes.get("z-0").await.unwrap();
    assert_eq!(
        z0.annotations().get(PREEMPT_ANNOTATION).map(String::as_str),
        Some("now")
    );
    // Asked again, the one already going is passed over for the other.
    let next = preempter.preempt_any(None).await.unwrap();
    assert_eq!(next, Some(("test".to_string(), "z-1".to_string())));
}
