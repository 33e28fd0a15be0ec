//! One submit: refuse early with reasons, or send a dry run or a create as the user, and
//! write one audit record either way (one line, every field escaped).

use axum::http::request::Parts;
use kube::api::{Api, PostParams};
use spotboard_core::domain::{cost, validation};
use spotboard_core::model::{PoolDraft, SubmitMode, SubmitOutcome};
use spotboard_core::nodepool::NodePool;

use super::{Creator, Identity, Limited, client_as, client_of, identify};
use crate::http::ClientKey;

/// The field manager name on objects spotboard creates.
pub const FIELD_MANAGER: &str = "spotboard";

impl Creator {
    pub(super) async fn submit_for(
        &self,
        request: &Parts,
        draft: PoolDraft,
        mode: SubmitMode,
        confirm: Option<String>,
    ) -> SubmitOutcome {
        let identity = identify(&request.headers, &self.settings.identity);
        let client = client_of(request);
        let mut subject = None;
        let mut outcome = self
            .decide(&identity, &client, &draft, mode, confirm, &mut subject)
            .await;
        let who = identity
            .as_ref()
            .map(|id| id.label_as(subject.as_deref()))
            .unwrap_or_else(|_| "anonymous".into());
        if outcome.identity.is_some() {
            outcome.identity = Some(who.clone());
        }
        audit(&who, &draft, &outcome);
        outcome
    }

    /// The submit's outcome; `subject` gets the cluster's name for a bearer token's user
    /// when it was asked (only once every check before the call passed; see the module
    /// order in `create`).
    async fn decide(
        &self,
        identity: &Result<Identity, String>,
        client: &ClientKey,
        draft: &PoolDraft,
        mode: SubmitMode,
        confirm: Option<String>,
        subject: &mut Option<String>,
    ) -> SubmitOutcome {
        if self.settings.read_only {
            return SubmitOutcome::refused(
                mode,
                "spotboard runs with --read-only: it creates nothing",
            );
        }
        let identity = match identity {
            Ok(id) => id,
            Err(why) => return SubmitOutcome::refused(mode, why.clone()),
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
        // The review of an uncached token is a call too: charged before it is made.
        let review = self.subject_needs_call(target, identity);
        if let Err(limited) = self.allowed(identity, client, create, 1 + u32::from(review)) {
            let (n, what) = match (limited, create) {
                (Limited::User, true) => (self.settings.creates_per_minute, "creates"),
                (Limited::User, false) => (
                    self.settings.api_calls_per_minute,
                    "dry runs and access checks",
                ),
                (Limited::Client, _) => {
                    (self.settings.api_calls_per_minute, "calls to API servers")
                }
            };
            let per = limited.per();
            return SubmitOutcome::refused(
                mode,
                format!("rate limit: at most {n} {what} per minute per {per}; try again shortly"),
            );
        }
        *subject = self.subject(target, identity).await;
        let client = match client_as(target, identity) {
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
        verdict(mode, identity, &draft.cluster, result.map(|_| ()))
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

/// Longest text of one audit field, in bytes; longer values are cut (at a character boundary)
/// and marked. Pool and cluster names are DNS labels (63) or names (253); a message is a
/// sentence. A 64 KiB name must not make a 64 KiB log line.
pub const AUDIT_FIELD_MAX_BYTES: usize = 256;

/// `text` for an audit field: at most [`AUDIT_FIELD_MAX_BYTES`] (the record's `truncated`
/// says when a field was cut). Escaping is left to the field's Debug formatting ([`audit`]).
pub fn audit_field(text: &str) -> &str {
    spotboard_core::domain::text::clip(text, AUDIT_FIELD_MAX_BYTES)
}

/// Writes the submit's one audit record.
///
/// Every field that can carry text from the request (the user's name from a proxy header,
/// cluster and pool from the body, the message and the API server's reason quoting them) is
/// written with Debug formatting (`?`): quoted, with `"`, `\`, CR, LF, tabs, ESC and other
/// control characters escaped (`\n`, `\u{1b}`), so a record is always one line and no value
/// can end it and start a forged one, or drive a terminal. Display (`%`) would splice them raw.
pub(super) fn audit(who: &str, draft: &PoolDraft, outcome: &SubmitOutcome) {
    let verdict = if outcome.accepted {
        "accepted"
    } else if !outcome.errors.is_empty() {
        "invalid"
    } else {
        outcome.reason.as_deref().unwrap_or("refused")
    };
    let cut = |s: &str| s.len() > AUDIT_FIELD_MAX_BYTES;
    tracing::info!(
        target: crate::logging::AUDIT_TARGET,
        user = ?audit_field(who),
        action = outcome.mode.as_str(),
        cluster = ?audit_field(&draft.cluster),
        pool = ?audit_field(&draft.name),
        verdict = ?audit_field(verdict),
        // Not `message`: that is the event's own field (the text after the fields), which
        // the formatter writes without its name.
        detail = ?audit_field(&outcome.message),
        truncated = cut(who) || cut(&draft.cluster) || cut(&draft.name) || cut(verdict)
            || cut(&outcome.message),
        "nodepool {}", outcome.mode.as_str()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Forged records: CR/LF followed by a whole fake record, terminal escapes, a 70 KB value.
    #[test]
    fn audit_records_are_one_escaped_line_whatever_the_fields_hold() {
        let forged = "FORGED spotboard::audit: user=\"mallory\" verdict=accepted";
        let long = format!("{}\n{forged}", "a".repeat(70_000));
        let cases = [
            ("alice", format!("x\n{forged}"), "pool".to_string()),
            ("bob\r\n", "c1".to_string(), format!("p\r{forged}")),
            (
                "eve",
                "\x1b[2J\x1b[31mc1".to_string(),
                "p\x1b]0;title\x07".into(),
            ),
            ("mallory", long.clone(), long),
        ];
        let buf = crate::logging::tests::Buffer::default();
        let out = buf.clone();
        let sub = crate::logging::subscriber("off", move || out.clone(), false);
        tracing::subscriber::with_default(sub, || {
            for (who, cluster, name) in &cases {
                let draft = PoolDraft {
                    cluster: cluster.clone(),
                    name: name.clone(),
                    ..Default::default()
                };
                let outcome = SubmitOutcome::refused(
                    SubmitMode::DryRun,
                    format!("spotboard does not know a cluster named \"{cluster}\""),
                );
                audit(who, &draft, &outcome);
            }
        });
        let text = buf.text();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), cases.len(), "one line per record: {text}");
        for line in &lines {
            assert!(line.contains("spotboard::audit"), "{line}");
            assert!(!line.starts_with("FORGED"), "{line}");
            assert!(
                !line.chars().any(|c| c.is_control()),
                "a raw control character: {line:?}"
            );
            assert!(line.len() < 2_048, "{} bytes", line.len());
        }
        assert!(lines[3].contains("truncated=true"), "{}", lines[3]);
        assert!(lines[0].contains(r#"cluster="x\nFORGED"#), "{}", lines[0]);
        assert!(lines[2].contains(r#"\u{1b}[2J"#), "{}", lines[2]);
    }

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
