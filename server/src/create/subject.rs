//! Who a bearer token belongs to, for the audit trail and the form: a SelfSubjectReview
//! (`authentication.k8s.io/v1`) sent with the token, so the record names the cluster's own
//! user name rather than whatever the proxy's header said. Cached like access reviews.

use std::{collections::HashMap, sync::Mutex, time::Instant};

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use kube::api::{Api, PostParams};

use super::{ACCESS_CACHE_TTL, Creator, Identity, WriteTarget, client_as};

/// Answers per (identity key, cluster); `None` when the cluster would not say.
#[derive(Default)]
pub struct Cache(Mutex<HashMap<(String, String), (Instant, Option<String>)>>);

impl Creator {
    /// The user name `target`'s API server gives the bearer token of `identity`; `None` for
    /// other identities, or when the review fails (an old cluster, a refused token).
    pub(super) async fn subject(
        &self,
        target: &WriteTarget,
        identity: &Identity,
    ) -> Option<String> {
        if !matches!(identity, Identity::Bearer { .. }) {
            return None;
        }
        let key = (identity.key(), target.cluster.clone());
        {
            let map = self.subjects.0.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((at, s)) = map.get(&key)
                && at.elapsed() < ACCESS_CACHE_TTL
            {
                return s.clone();
            }
        }
        let answer = review(target, identity).await;
        let mut map = self.subjects.0.lock().unwrap_or_else(|p| p.into_inner());
        map.retain(|_, (at, _)| at.elapsed() < ACCESS_CACHE_TTL);
        map.insert(key, (Instant::now(), answer.clone()));
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
