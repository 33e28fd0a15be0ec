//! A CKS node taken out for repair, by this zone's own rules: its lifecycle state leaves
//! `production` for `triage` (`node.coreweave.cloud/state` and `/reserved`, CoreWeave CKS:
//! node lifecycle labels), it is cordoned, and after [`IN_TRIAGE`] it leaves the cluster; the
//! NodePool controller then replaces it as it replaces any node its pool is short of.
//!
//! Started by annotating a node `sim.spotboard.dev/triage=now` (how tests and the curious
//! send a node to triage).

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use serde_json::json;
use spotboard_core::labels;

use super::clock::secs;
use super::{Ctx, Removal};

/// Annotation that sends a node to triage now.
pub const TRIAGE_ANNOTATION: &str = "sim.spotboard.dev/triage";

/// How long a node sits in triage before it leaves the cluster (simulated time).
const IN_TRIAGE: Duration = secs(30);

/// Whether `node` asks to be sent to triage.
pub fn wanted(node: &Node) -> bool {
    node.annotations()
        .get(TRIAGE_ANNOTATION)
        .is_some_and(|v| v == "now")
}

/// Sends node `name` to triage, unless it is already leaving.
pub(crate) fn start(ctx: &Arc<Ctx>, name: &str) {
    if !ctx.claim_removal(name, Removal::Repair) {
        return;
    }
    let (ctx2, name) = (ctx.clone(), name.to_string());
    ctx.spawn(async move {
        if let Err(e) = run(&ctx2, &name).await {
            tracing::warn!(zone = %ctx2.zone, node = %name, "triage: {e}");
        }
        ctx2.release_removal(&name);
        ctx2.wake.notify_one();
    });
}

async fn run(ctx: &Ctx, name: &str) -> kube::Result<()> {
    let api: Api<Node> = Api::all(ctx.client.clone());
    let patch = json!({
        "metadata": {
            "labels": {labels::NODE_STATE: "triage", labels::NODE_RESERVED: "triage"},
            "annotations": {TRIAGE_ANNOTATION: null},
        },
        "spec": {"unschedulable": true},
    });
    api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    ctx.clock.sleep(IN_TRIAGE).await;
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) | Err(kube::Error::Api(_)) => Ok(()),
        Err(e) => Err(e),
    }
}
