//! The create form's state: one draft pool as the source of truth, the texts of the fields
//! that are edited as text (YAML, labels, annotations, taints), and the last verdict.
//!
//! Editing a field rewrites the YAML; editing the YAML rewrites the fields, but never the
//! text being typed in (so a half-typed line is not reformatted under the cursor).

use leptos::prelude::*;

use crate::domain::form_text::{self, LineError};
use crate::domain::manifest::{self, ManifestError};
use crate::domain::validation::{self, FieldError};
use crate::model::{PoolDraft, SubmitOutcome};

/// Every signal of the form; `Copy`, so closures take it by value.
#[derive(Clone, Copy)]
pub struct FormState {
    pub draft: RwSignal<PoolDraft>,
    pub yaml: RwSignal<String>,
    pub yaml_error: RwSignal<Option<ManifestError>>,
    pub labels: RwSignal<String>,
    pub annotations: RwSignal<String>,
    pub taints: RwSignal<String>,
    pub line_errors: RwSignal<Vec<FieldError>>,
    pub confirm: RwSignal<String>,
    /// The last verdict from the server.
    pub outcome: RwSignal<Option<SubmitOutcome>>,
    /// The draft the last accepted dry run was for: Create is offered for exactly that draft.
    pub dry_run_ok_for: RwSignal<Option<PoolDraft>>,
    pub busy: RwSignal<bool>,
}

impl FormState {
    pub fn new(initial: PoolDraft) -> Self {
        FormState {
            yaml: RwSignal::new(manifest::to_yaml(&initial)),
            labels: RwSignal::new(form_text::format_pairs(&initial.spec.node_labels)),
            annotations: RwSignal::new(form_text::format_pairs(&initial.spec.node_annotations)),
            taints: RwSignal::new(form_text::format_taints(&initial.spec.node_taints)),
            draft: RwSignal::new(initial),
            yaml_error: RwSignal::new(None),
            line_errors: RwSignal::new(Vec::new()),
            confirm: RwSignal::new(String::new()),
            outcome: RwSignal::new(None),
            dry_run_ok_for: RwSignal::new(None),
            busy: RwSignal::new(false),
        }
    }

    /// Changes the draft from a form field and rewrites the YAML.
    pub fn edit(&self, f: impl FnOnce(&mut PoolDraft)) {
        self.draft.update(f);
        self.yaml.set(self.draft.with_untracked(manifest::to_yaml));
        self.yaml_error.set(None);
    }

    /// Reads the YAML pane after an edit there: a readable manifest replaces the name and spec
    /// (the cluster is not part of a manifest) and rewrites the text fields.
    pub fn edit_yaml(&self, text: String) {
        let parsed = manifest::from_text(&text);
        self.yaml.set(text);
        match parsed {
            Ok((name, spec)) => {
                self.labels.set(form_text::format_pairs(&spec.node_labels));
                self.annotations
                    .set(form_text::format_pairs(&spec.node_annotations));
                self.taints.set(form_text::format_taints(&spec.node_taints));
                self.line_errors.set(Vec::new());
                self.draft.update(|d| {
                    d.name = name;
                    d.spec = spec;
                });
                self.yaml_error.set(None);
            }
            Err(e) => self.yaml_error.set(Some(e)),
        }
    }

    /// Re-reads the three text fields into the draft (after any of them changed).
    pub fn edit_text_fields(&self) {
        let (labels, le) = form_text::parse_pairs(&self.labels.get_untracked());
        let (annotations, ae) = form_text::parse_pairs(&self.annotations.get_untracked());
        let (taints, te) = form_text::parse_taints(&self.taints.get_untracked());
        let mut errors = Vec::new();
        let mut push = |field: &str, errs: Vec<LineError>| {
            errors.extend(
                errs.into_iter()
                    .map(|e| FieldError::at(field, e.to_string())),
            );
        };
        push("spec.nodeLabels", le);
        push("spec.nodeAnnotations", ae);
        push("spec.nodeTaints", te);
        self.line_errors.set(errors);
        self.edit(|d| {
            d.spec.node_labels = labels;
            d.spec.node_annotations = annotations;
            d.spec.node_taints = taints;
        });
    }

    /// Every problem the form shows now: unreadable lines, then the shared validation.
    pub fn problems(&self, taken: impl Fn(&str, &str) -> bool) -> Vec<FieldError> {
        let mut all = self.line_errors.get();
        self.draft.with(|d| {
            all.extend(validation::validate_draft(d, |name| {
                taken(&d.cluster, name)
            }));
        });
        all
    }
}
