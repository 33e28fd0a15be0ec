//! Creating NodePools for the user: identity, permission, rate limit, validation, dry run,
//! create and the audit trail. The server's side of `app::create_api`.
//!
//! # Layout
//! - `identity`: who a request's create goes out as (bearer token, impersonation, local user).
//! - `access`: SelfSubjectAccessReview per user and cluster, cached briefly.
//! - `cache`: the per-user, per-cluster answer cache both reviews use.
//! - `subject`: the cluster's name for a bearer token's user (SelfSubjectReview), for the
//!   audit trail.
//! - `submit`: read-only, validation, confirmation, rate limits, the API call and its verdict,
//!   the audit line.
//!
//! # Order of a submit
//! Nothing reaches an API server before every check that needs none: `--read-only`, the
//! identity, validation and confirmation; then the rate limits, per user (its token's hash)
//! and per client (the proxy's user, or the peer address), charged for every call the submit
//! will make, the SelfSubjectReview of an uncached token included; only then the review and
//! the dry run or create. A new token per request gets a new user budget, never a new client
//! budget.

mod access;
mod cache;
mod identity;
mod subject;
mod submit;
#[cfg(test)]
mod tests;

use std::{
    num::NonZeroU32,
    sync::{
        Arc,
        atomic::{AtomicI64, Ordering},
    },
    time::Duration,
};

use app::create_api::{BoxFuture, PoolWriter};
use axum::http::request::Parts;
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use spotboard_core::model::{CreateAccess, PoolDraft, SubmitMode, SubmitOutcome};

use crate::http::ClientKey;
use crate::hub::Hub;

pub use identity::{Identity, IdentitySettings, identify};
pub use submit::{AUDIT_FIELD_MAX_BYTES, FIELD_MANAGER, audit_field};

/// How long a SelfSubjectAccessReview answer is reused for the same user and cluster.
pub const ACCESS_CACHE_TTL: Duration = Duration::from_secs(30);

/// A cluster creates can go to.
#[derive(Clone)]
pub struct WriteTarget {
    /// The cluster's name in the dashboard.
    pub cluster: String,
    /// Its zone, when known (prices the cost preview by geography).
    pub zone: Option<String>,
    /// spotboard's own (read-only) credentials: the base for bearer-token and impersonated
    /// requests.
    pub base: kube::Config,
    /// The local user's credentials, when spotboard runs on loopback for that user: the
    /// embedded cluster's administrator, or the kubeconfig's own user. `None` in-cluster.
    pub local: Option<kube::Config>,
    /// Whether CoreWeave NodePools are created here (the create form's clusters); `false` for
    /// the embedded GKE and Karpenter zones, which take only other writes (drills).
    pub nodepools: bool,
}

/// Creator settings from the flags.
#[derive(Clone, Debug)]
pub struct CreateSettings {
    pub identity: IdentitySettings,
    pub read_only: bool,
    /// Creates per user per minute.
    pub creates_per_minute: u32,
    /// Other calls to API servers made for a user (dry runs, access reviews not answered
    /// from the cache) per user per minute.
    pub api_calls_per_minute: u32,
}

/// The server's [`PoolWriter`].
pub struct Creator {
    targets: Vec<WriteTarget>,
    settings: CreateSettings,
    hub: Hub,
    access_cache: cache::TtlCache<spotboard_core::model::ClusterAccess>,
    /// The cluster's user name per bearer token (`None`: it would not say).
    subjects: cache::TtlCache<Option<String>>,
    limiter: DefaultKeyedRateLimiter<String>,
    api_limiter: DefaultKeyedRateLimiter<String>,
    /// Every call to an API server made for one client (`ClientKey`), whatever identity
    /// each request carries: `--api-calls-per-minute` per client.
    client_limiter: DefaultKeyedRateLimiter<ClientKey>,
    /// When idle keys were last dropped from the limiters (seconds since the Unix epoch).
    forgot_at: AtomicI64,
}

impl Creator {
    pub fn new(targets: Vec<WriteTarget>, settings: CreateSettings, hub: Hub) -> Arc<Self> {
        let quota =
            |n: u32| Quota::per_minute(NonZeroU32::new(n.max(1)).unwrap_or(NonZeroU32::MIN));
        Arc::new(Creator {
            access_cache: Default::default(),
            subjects: Default::default(),
            limiter: RateLimiter::keyed(quota(settings.creates_per_minute)),
            api_limiter: RateLimiter::keyed(quota(settings.api_calls_per_minute)),
            client_limiter: RateLimiter::keyed(quota(settings.api_calls_per_minute)),
            forgot_at: AtomicI64::new(0),
            targets,
            settings,
            hub,
        })
    }

    /// Whether `identity`, from `client`, may make `calls` calls to API servers now: the last
    /// a create (`create`, counted against `--creates-per-minute` per user) or not (against
    /// `--api-calls-per-minute` per user), and every one of them against
    /// `--api-calls-per-minute` per client. The client is charged first: what a client is
    /// refused costs no user anything.
    fn allowed(
        &self,
        identity: &Identity,
        client: &ClientKey,
        create: bool,
        calls: u32,
    ) -> Result<(), Limited> {
        self.forget_idle();
        let n = NonZeroU32::new(calls).unwrap_or(NonZeroU32::MIN);
        if !matches!(self.client_limiter.check_key_n(client, n), Ok(Ok(()))) {
            return Err(Limited::Client);
        }
        let limiter = if create {
            &self.limiter
        } else {
            &self.api_limiter
        };
        limiter
            .check_key(&identity.key())
            .map_err(|_| Limited::User)
    }

    /// Drops users whose limits have refilled, at most once a minute, so that a stream of
    /// new identities (one per bearer token) does not grow the limiters without end.
    fn forget_idle(&self) {
        let now = chrono::Utc::now().timestamp();
        let last = self.forgot_at.load(Ordering::Relaxed);
        if now - last >= 60
            && self
                .forgot_at
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            for l in [&self.limiter, &self.api_limiter] {
                l.retain_recent();
                l.shrink_to_fit();
            }
            self.client_limiter.retain_recent();
            self.client_limiter.shrink_to_fit();
        }
    }

    /// The cluster `cluster` as a target for NodePool creates.
    fn target(&self, cluster: &str) -> Option<&WriteTarget> {
        self.nodepool_targets().find(|t| t.cluster == cluster)
    }

    /// The clusters NodePools may be created in.
    fn nodepool_targets(&self) -> impl Iterator<Item = &WriteTarget> {
        self.targets.iter().filter(|t| t.nodepools)
    }
}

/// What the other writes spotboard makes as the user (the preemption drill, `crate::drill`)
/// share with creates: `--read-only`, the identity, the clusters and the per-user and
/// per-client rate limits. One place decides who a write goes out as.
impl Creator {
    /// Whether spotboard runs with `--read-only` (it writes nothing then).
    pub fn read_only(&self) -> bool {
        self.settings.read_only
    }

    /// Who `request`'s writes go out as.
    ///
    /// Errors: a sentence for the person (no identity a write may use: see
    /// [`identify`]).
    pub fn identity_of(&self, request: &Parts) -> Result<Identity, String> {
        identify(&request.headers, &self.settings.identity)
    }

    /// The cluster `cluster` as a write target, if spotboard knows it (NodePool targets or
    /// not).
    pub fn write_target(&self, cluster: &str) -> Option<&WriteTarget> {
        self.targets.iter().find(|t| t.cluster == cluster)
    }

    /// Charges `calls` calls to API servers against `--api-calls-per-minute` for the user and
    /// for `request`'s client.
    ///
    /// Errors: the sentence naming the limit that refused.
    pub fn charge(&self, identity: &Identity, request: &Parts, calls: u32) -> Result<(), String> {
        self.allowed(identity, &client_of(request), false, calls)
            .map_err(|limited| {
                format!(
                    "rate limit: at most {} calls to API servers per minute per {}; try again shortly",
                    self.settings.api_calls_per_minute,
                    limited.per()
                )
            })
    }
}

/// Which rate limit refused a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Limited {
    /// The user's (per identity).
    User,
    /// The client's (per proxy user or peer address), whatever identities it sent.
    Client,
}

impl Limited {
    /// Whom the limit is counted for, as the refusal says it ("per user", "per client").
    fn per(self) -> &'static str {
        match self {
            Limited::User => "user",
            Limited::Client => "client",
        }
    }
}

/// The client a request came from, as the guard named it (one shared key when it did not,
/// which only requests that bypassed the router can be).
fn client_of(request: &Parts) -> ClientKey {
    request
        .extensions
        .get::<ClientKey>()
        .cloned()
        .unwrap_or_else(|| ClientKey::of(None, None))
}

impl PoolWriter for Creator {
    fn access<'a>(&'a self, request: &'a Parts) -> BoxFuture<'a, CreateAccess> {
        Box::pin(self.access_for(request))
    }

    fn submit<'a>(
        &'a self,
        request: &'a Parts,
        draft: PoolDraft,
        mode: SubmitMode,
        confirm: Option<String>,
    ) -> BoxFuture<'a, SubmitOutcome> {
        Box::pin(self.submit_for(request, draft, mode, confirm))
    }
}

/// A kube-rs client for `target` as `identity`.
///
/// Errors: a sentence for the person (no local credentials here, or a client that cannot be
/// built from the configuration).
pub fn client_as(target: &WriteTarget, identity: &Identity) -> Result<kube::Client, String> {
    let config = match identity {
        Identity::Local => target.local.clone().ok_or_else(|| {
            format!(
                "{} has no local user: spotboard runs with its own read-only account there",
                target.cluster
            )
        })?,
        Identity::Bearer { token, .. } => {
            let mut c = target.base.clone();
            c.auth_info = kube::config::AuthInfo {
                token: Some(token.clone().into()),
                ..Default::default()
            };
            c
        }
        Identity::Impersonate { user, groups } => {
            let mut c = target.base.clone();
            c.auth_info.impersonate = Some(user.clone());
            c.auth_info.impersonate_groups = (!groups.is_empty()).then(|| groups.clone());
            c
        }
    };
    kube::Client::try_from(config).map_err(|e| format!("client for {}: {e}", target.cluster))
}
