//! "May this user create NodePools here?": a SelfSubjectAccessReview sent as the user, per
//! cluster, cached for [`ACCESS_CACHE_TTL`](super::ACCESS_CACHE_TTL) so a page load does not
//! cost one review per cluster every time.

use axum::http::request::Parts;
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use spotboard_core::model::{ClusterAccess, CreateAccess};
use spotboard_core::nodepool::GROUP;

use super::{Creator, Identity, WriteTarget, client_as, client_of, identify};
use crate::http::ClientKey;

impl Creator {
    pub(super) async fn access_for(&self, request: &Parts) -> CreateAccess {
        let headers = &request.headers;
        let client = client_of(request);
        if self.settings.read_only {
            return CreateAccess {
                read_only: true,
                identity: None,
                clusters: Vec::new(),
            };
        }
        let identity = match identify(headers, &self.settings.identity) {
            Ok(id) => id,
            Err(why) => {
                return CreateAccess {
                    read_only: false,
                    identity: None,
                    clusters: self
                        .nodepool_targets()
                        .map(|t| denied(t, why.clone()))
                        .collect(),
                };
            }
        };
        let clusters = futures::future::join_all(
            self.nodepool_targets()
                .map(|t| self.cluster_access(t, &identity, &client)),
        )
        .await;
        CreateAccess {
            read_only: false,
            identity: Some(identity.label()),
            clusters,
        }
    }

    /// The cached or fresh answer for one cluster.
    pub(super) async fn cluster_access(
        &self,
        target: &WriteTarget,
        identity: &Identity,
        client: &ClientKey,
    ) -> ClusterAccess {
        let key = (identity.key(), target.cluster.clone());
        if let Some(hit) = self.access_cache.get(&key) {
            return hit;
        }
        if let Err(limited) = self.allowed(identity, client, false, 1) {
            let per = limited.per();
            // Not cached: the next page load asks again once the limit refills.
            return denied(
                target,
                format!(
                    "rate limit: at most {} dry runs and access checks per minute per {per}",
                    self.settings.api_calls_per_minute
                ),
            );
        }
        let answer = review(target, identity).await;
        self.access_cache.put(key, answer.clone());
        answer
    }
}

fn denied(target: &WriteTarget, reason: String) -> ClusterAccess {
    ClusterAccess {
        cluster: target.cluster.clone(),
        zone: target.zone.clone(),
        allowed: false,
        reason,
    }
}

async fn review(target: &WriteTarget, identity: &Identity) -> ClusterAccess {
    let client = match client_as(target, identity) {
        Ok(c) => c,
        Err(why) => return denied(target, why),
    };
    let review = SelfSubjectAccessReview {
        spec: SelfSubjectAccessReviewSpec {
            resource_attributes: Some(ResourceAttributes {
                verb: Some("create".into()),
                group: Some(GROUP.into()),
                resource: Some("nodepools".into()),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    let api: Api<SelfSubjectAccessReview> = Api::all(client);
    match api.create(&PostParams::default(), &review).await {
        Ok(r) => {
            let status = r.status.unwrap_or_default();
            let reason = if status.allowed {
                format!("{} may create NodePools here", identity.label())
            } else {
                format!(
                    "{} may not create NodePools in {}{}",
                    identity.label(),
                    target.cluster,
                    status.reason.map(|r| format!(": {r}")).unwrap_or_default()
                )
            };
            ClusterAccess {
                allowed: status.allowed,
                ..denied(target, reason)
            }
        }
        Err(e) => denied(
            target,
            format!(
                "could not ask {} whether you may create NodePools: {e}",
                target.cluster
            ),
        ),
    }
}
