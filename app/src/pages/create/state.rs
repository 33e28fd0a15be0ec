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
    /// The inputs (by `name`) the person has left or typed in: a field's messages wait for
    /// it, so the form does not open in red.
    pub touched: RwSignal<Vec<String>>,
    /// Set by a dry run or create asked for with problems left: every message shows.
    pub attempted: RwSignal<bool>,
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
            touched: RwSignal::new(Vec::new()),
            attempted: RwSignal::new(false),
        }
    }

    /// Records that the input named `name` was touched.
    pub fn touch(&self, name: &str) {
        if !self.touched.with_untracked(|t| t.iter().any(|n| n == name)) {
            self.touched.update(|t| t.push(name.to_string()));
        }
    }

    /// The problems a person should see now: those of touched fields, or all of them after a
    /// submit attempt.
    pub fn shown(&self, all: &[FieldError]) -> Vec<FieldError> {
        if self.attempted.get() {
            return all.to_vec();
        }
        self.touched.with(|touched| {
            all.iter()
                .filter(|e| revealed_by(&e.field, touched))
                .cloned()
                .collect()
        })
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
        // The YAML is the whole manifest: typing in it touches every field it holds.
        self.touch("NodePool YAML");
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

/// Whether a message about `field` shows once the inputs named in `touched` were touched.
/// A field whose input is not listed waits for a submit attempt.
pub fn revealed_by(field: &str, touched: &[String]) -> bool {
    inputs_of(field)
        .iter()
        .any(|i| touched.iter().any(|t| t == i))
}

/// The inputs (their `name`s in the form) whose touch reveals messages about `field`.
fn inputs_of(field: &str) -> &'static [&'static str] {
    let under = |prefix: &str| field == prefix || field.starts_with(&format!("{prefix}."));
    if field == "metadata.name" {
        &["name", "NodePool YAML"]
    } else if field == "cluster" {
        &["cluster"]
    } else if under("spec.computeClass") {
        // The Superchip refusal is about the instance type chosen for a Spot pool.
        &["computeClass", "instanceType", "NodePool YAML"]
    } else if under("spec.instanceType") {
        &["instanceType", "NodePool YAML"]
    } else if under("spec.targetNodes") || under("spec.minNodes") || under("spec.maxNodes") {
        &[
            "targetNodes",
            "autoscaling",
            "minNodes",
            "maxNodes",
            "NodePool YAML",
        ]
    } else if under("spec.nodeLabels") {
        &["nodeLabels", "NodePool YAML"]
    } else if under("spec.nodeAnnotations") {
        &["nodeAnnotations", "NodePool YAML"]
    } else if under("spec.nodeTaints") {
        &["nodeTaints", "NodePool YAML"]
    } else if under("spec.lifecycle") {
        &["lifecycle.scaleDownStrategy", "NodePool YAML"]
    } else if under("spec.nodeConfigurationUpdateStrategy") {
        &["nodeConfigurationUpdateStrategy.type", "NodePool YAML"]
    } else if under("spec.image") || under("spec.gpu") {
        &["gpuVersion", "imageName", "NodePool YAML"]
    } else {
        &[]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_waits_for_its_own_input() {
        let touched = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        assert!(!revealed_by("metadata.name", &[]));
        assert!(!revealed_by("metadata.name", &touched(&["instanceType"])));
        assert!(revealed_by("metadata.name", &touched(&["name"])));
        assert!(revealed_by(
            "spec.computeClass",
            &touched(&["instanceType"])
        ));
        assert!(revealed_by("spec.nodeLabels", &touched(&["nodeLabels"])));
        assert!(revealed_by(
            "spec.lifecycle.scaleDownStrategy",
            &touched(&["NodePool YAML"])
        ));
        assert!(!revealed_by("spec.nodeLabelsX", &touched(&["nodeLabels"])));
        assert!(!revealed_by(
            "something.new",
            &touched(&["name", "cluster"])
        ));
    }
}
