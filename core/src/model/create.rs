//! What the create form and the server exchange: the draft pool, the submit outcome, and
//! whether the current user may create at all.

use serde::{Deserialize, Serialize};

use crate::domain::validation::FieldError;
use crate::nodepool::NodePoolSpec;

/// A NodePool about to be created: where, its name, and its spec (CoreWeave: Node Pool
/// reference).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PoolDraft {
    /// The cluster (kubeconfig context or embedded zone context) to create it in.
    pub cluster: String,
    /// `metadata.name`: a DNS-1123 subdomain, unique among the cluster's NodePools.
    pub name: String,
    pub spec: NodePoolSpec,
}

/// Whether a submit only asks the API server (`dryRun=All`) or creates the pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SubmitMode {
    #[default]
    DryRun,
    Create,
}

impl SubmitMode {
    /// For log lines and the audit trail: `dry-run` or `create`.
    pub fn as_str(self) -> &'static str {
        match self {
            SubmitMode::DryRun => "dry-run",
            SubmitMode::Create => "create",
        }
    }
}

/// The verdict on one submit.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubmitOutcome {
    pub mode: SubmitMode,
    /// True when the API server accepted the request (for a dry run: it would create it).
    pub accepted: bool,
    /// Per-field problems found before anything was sent; nothing was sent when non-empty.
    pub errors: Vec<FieldError>,
    /// One sentence for the person: the API server's message, or why nothing was sent.
    pub message: String,
    /// The API server's `Status.reason` (`AlreadyExists`, `Forbidden`, `Invalid`, …) when it
    /// answered with an error.
    pub reason: Option<String>,
    /// The dry run was refused only because an admission webhook does not support dry runs:
    /// the form then offers to create without one.
    pub dry_run_unsupported: bool,
    /// Who the request went out as, e.g. `local administrator (embedded cluster)` or
    /// `alice (impersonated)`.
    pub identity: Option<String>,
}

impl SubmitOutcome {
    /// A refusal before anything was sent.
    pub fn refused(mode: SubmitMode, message: impl Into<String>) -> Self {
        SubmitOutcome {
            mode,
            message: message.into(),
            ..Default::default()
        }
    }
}

/// Whether the current user may create NodePools, per cluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateAccess {
    /// `--read-only`: the form is hidden and every submit is refused.
    pub read_only: bool,
    /// How the server identifies the user, when it can.
    pub identity: Option<String>,
    pub clusters: Vec<ClusterAccess>,
}

/// One cluster's answer to "may I create a NodePool here?".
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterAccess {
    pub cluster: String,
    pub zone: Option<String>,
    /// The SelfSubjectAccessReview's answer (or the local-user rule on the embedded cluster).
    pub allowed: bool,
    /// Why not, or how: shown beside the disabled Create button.
    pub reason: String,
}
