//! One submit: refuse early with reasons, or send a dry run or a create as the user, and
//! write one audit line either way.

use app::domain::{cost, validation};
use app::model::{PoolDraft, SubmitMode, SubmitOutcome};
use app::nodepool::NodePool;
use axum::http::HeaderMap;
use kube::api::{Api, PostParams};

use super::{Creator, Identity, client_as, identify};

/// The field manager name on objects spotboard creates.
pub const FIELD_MANAGER: &str = "spotboard";

impl Creator {
    pub(super) async fn submit_for(
        &self,
        headers: &HeaderMap,
        draft: PoolDraft,
        mode: SubmitMode,
        confirm: Option<String>,
    ) -> SubmitOutcome {
        let identity = identify(headers, &self.settings.identity);
        let subject = match (&identity, self.target(&draft.cluster)) {
            (Ok(id), Some(target)) => self.subject(target, id).await,
            _ => None,
        };
        let who = identity
            .as_ref()
            .map(|id| id.label_as(subject.as_deref()))
            .unwrap_or_else(|_| "anonymous".into());
        let mut outcome = self.decide(identity, &draft, mode, confirm).await;
        if outcome.identity.is_some() {
            outcome.identity = Some(who.clone());
        }
        audit(&who, &draft, &outcome);
        outcome
    }

    async fn decide(
        &self,
        identity: Result<Identity, String>,
        draft: &PoolDraft,
        mode: SubmitMode,
        confirm: Option<String>,
    ) -> SubmitOutcome {
        if self.settings.read_only {
            return SubmitOutcome::refused(
                mode,
                "spotboard runs with --read-only: it creates nothing",
            );
        }
        let identity = match identity {
            Ok(id) => id,
            Err(why) => return SubmitOutcome::refused(mode, why),
        };
        let pools = self.hub.pool_rows();
        let mut errors = validation::validate_draft(draft, |name| {
            pools
                .iter()
                .any(|p| p.cluster == draft.cluster && p.name == name)
        });
        let target = self.target(&draft.cluster);
        if target.is_none() && !draft.cluster.trim().is_empty() {
            errors.push(validation::FieldError::at(
                "cluster",
                format!(
                    "spotboard does not know a cluster named \"{}\"",
                    draft.cluster
                ),
            ));
        }
        if !errors.is_empty() {
            let n = errors.len();
            return SubmitOutcome {
                errors,
                ..SubmitOutcome::refused(
                    mode,
                    format!("{n} problem(s) in the form; nothing was sent"),
                )
            };
        }
        let Some(target) = target else {
            return SubmitOutcome::refused(mode, "no cluster chosen");
        };
        if mode == SubmitMode::Create {
            let zone = target.zone.as_deref().unwrap_or_default();
            let large = cost::preview(&draft.spec, zone).is_some_and(|p| p.needs_confirmation());
            if large && confirm.as_deref() != Some(draft.name.as_str()) {
                return SubmitOutcome {
                    errors: vec![validation::FieldError::at(
                        "confirm",
                        format!(
                            "this pool is large (more than {} GPUs or {} USD/h): type its name \
                             \"{}\" to confirm",
                            cost::CONFIRM_ABOVE_GPUS,
                            cost::CONFIRM_ABOVE_USD_PER_HOUR,
                            draft.name
                        ),
                    )],
                    ..SubmitOutcome::refused(mode, "confirmation needed; nothing was sent")
                };
            }
        }
        let create = mode == SubmitMode::Create;
        if !self.allowed(&identity, create) {
            let (n, what) = if create {
                (self.settings.creates_per_minute, "creates")
            } else {
                (
                    self.settings.api_calls_per_minute,
                    "dry runs and access checks",
                )
            };
            return SubmitOutcome::refused(
                mode,
                format!("rate limit: at most {n} {what} per minute per user; try again shortly"),
            );
        }
        let client = match client_as(target, &identity) {
            Ok(c) => c,
            Err(why) => return SubmitOutcome::refused(mode, why),
        };
        let pool = NodePool::new(&draft.name, draft.spec.clone());
        let params = PostParams {
            dry_run: mode == SubmitMode::DryRun,
            field_manager: Some(FIELD_MANAGER.into()),
        };
        let api: Api<NodePool> = Api::all(client);
        let result = api.create(&params, &pool).await;
        verdict(mode, &identity, &draft.cluster, result.map(|_| ()))
    }
}

/// The outcome of the API call, worded for the person.
pub fn verdict(
    mode: SubmitMode,
    identity: &Identity,
    cluster: &str,
    result: Result<(), kube::Error>,
) -> SubmitOutcome {
    let identity_label = Some(identity.label());
    match result {
        Ok(()) => SubmitOutcome {
            mode,
            accepted: true,
            message: match mode {
                SubmitMode::DryRun => format!("dry run accepted by {cluster}'s API server"),
                SubmitMode::Create => format!("created in {cluster}"),
            },
            identity: identity_label,
            ..Default::default()
        },
        Err(kube::Error::Api(status)) => {
            let unsupported = mode == SubmitMode::DryRun && is_dry_run_unsupported(&status.message);
            SubmitOutcome {
                mode,
                accepted: false,
                message: format!("{cluster}'s API server refused: {}", status.message),
                reason: Some(status.reason.clone()).filter(|r| !r.is_empty()),
                dry_run_unsupported: unsupported,
                identity: identity_label,
                ..Default::default()
            }
        }
        Err(e) => SubmitOutcome {
            mode,
            message: format!("could not reach {cluster}'s API server: {e}"),
            identity: identity_label,
            ..Default::default()
        },
    }
}

/// Whether an API refusal of a dry run only says that an admission webhook cannot do dry runs
/// (Kubernetes: `admission webhook "…" does not support dry run`).
pub fn is_dry_run_unsupported(message: &str) -> bool {
    message.contains("does not support dry run")
}

fn audit(who: &str, draft: &PoolDraft, outcome: &SubmitOutcome) {
    let verdict = if outcome.accepted {
        "accepted".to_string()
    } else if !outcome.errors.is_empty() {
        "invalid".to_string()
    } else {
        outcome
            .reason
            .clone()
            .unwrap_or_else(|| "refused".to_string())
    };
    tracing::info!(
        target: crate::logging::AUDIT_TARGET,
        user = who,
        action = outcome.mode.as_str(),
        cluster = %draft.cluster,
        pool = %draft.name,
        verdict = %verdict,
        message = %outcome.message,
        "nodepool {}", outcome.mode.as_str()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webhook_refusing_dry_runs_is_recognised() {
        assert!(is_dry_run_unsupported(
            "admission webhook \"pools.example.com\" does not support dry run"
        ));
        assert!(!is_dry_run_unsupported("nodepools \"x\" already exists"));
    }

    #[test]
    fn api_refusal_keeps_reason_and_message() {
        let status = kube::core::Status::failure("nodepools \"a\" already exists", "AlreadyExists")
            .with_code(409);
        let out = verdict(
            SubmitMode::Create,
            &Identity::Local,
            "c1",
            Err(kube::Error::Api(Box::new(status))),
        );
        assert!(!out.accepted);
        assert_eq!(out.reason.as_deref(), Some("AlreadyExists"));
        assert!(out.message.contains("already exists"), "{}", out.message);
        assert!(!out.dry_run_unsupported);
    }
}
