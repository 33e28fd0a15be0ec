//! Who a bearer token belongs to, for the audit trail and the form: a SelfSubjectReview
//! (`authentication.k8s.io/v1`) sent with the token, so the record names the cluster's own
//! user name rather than whatever the proxy's header said. Cached like access reviews.

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use kube::api::{Api, PostParams};

use super::{Creator, Identity, WriteTarget, client_as};

impl Creator {
    /// Whether [`Creator::subject`] would ask `target`'s API server (a bearer token whose
    /// answer is not cached): one more call for the rate limits to charge.
    pub(super) fn subject_needs_call(&self, target: &WriteTarget, identity: &Identity) -> bool {
        matches!(identity, Identity::Bearer { .. })
            && self
                .subjects
                .get(&(identity.key(), target.cluster.clone()))
                .is_none()
    }

    /// The user name `target`'s API server gives the bearer token of `identity`; `None` for
    /// other identities, or when the review fails (an old cluster, a refused token). Called
    /// only once the rate limits have been charged for it ([`Creator::subject_needs_call`]).
    pub(super) async fn subject(
        &self,
        target: &WriteTarget,
        identity: &Identity,
    ) -> Option<String> {
        if !matches!(identity, Identity::Bearer { .. }) {
            return None;
        }
        let key = (identity.key(), target.cluster.clone());
        // `None` is cached too: a cluster that would not say is not asked at every submit.
        if let Some(hit) = self.subjects.get(&key) {
            return hit;
        }
        let answer = review(target, identity).await;
        self.subjects.put(key, answer.clone());
        answer
    }
}

async fn review(target: &WriteTarget, identity: &Identity) -> Option<String> {
    let client = client_as(target, identity).ok()?;
    let api: Api<SelfSubjectReview> = Api::all(client);
    match api
        .create(&PostParams::default(), &Default::default())
        .await
    {
        Ok(r) => r.status?.user_info?.username,
        Err(e) => {
            tracing::info!(cluster = %target.cluster, error = %e, "SelfSubjectReview failed; the audit names the token by its hash");
            None
        }
    }
}
