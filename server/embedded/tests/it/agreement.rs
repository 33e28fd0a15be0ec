//! Where the embedded cluster and the product each write down the same public fact, they must
//! say the same: each side keeps its own copy (the fixture never runs the product's rules, so a
//! wrong rule cannot pass a test twice), and these tests hold the copies equal.
//!
//! - The provider notice windows: the fixture plays them (`sim::notice`), the product draws
//!   them (`spotboard_core::domain::preemption::window`).
//! - NodePool validation: the fixture's controller (`sim::admission`) flags the fields the
//!   product's shared case table expects, by its own rules.

use std::time::Duration;

use spotboard_core::domain::preemption::{self, Provider};
use spotboard_core::domain::validation::cases::CASES;
use spotboard_core::nodepool::NodePool;
use spotboard_embedded::sim::admission;
use spotboard_embedded::sim::notice::{
    AWS_NOTICE, CKS_DRAIN_AFTER, CKS_REMOVE_BY, GKE_NOTICE, GKE_POD_SHUTDOWN,
};

/// When each phase of `provider`'s notice window starts in the fixture, since T=0; `None` for a
/// provider the fixture does not play. No `_` arm: a provider added to the product fails to
/// compile here until someone says what the fixture plays for it.
fn fixture_window(provider: Provider) -> Option<Vec<Duration>> {
    match provider {
        // Notice and cordon, drain, removal at the latest.
        Provider::Cks => Some(vec![Duration::ZERO, CKS_DRAIN_AFTER, CKS_REMOVE_BY]),
        // Ordinary pods shut down, then system pods, then the VM is gone.
        Provider::Gke => Some(vec![Duration::ZERO, GKE_POD_SHUTDOWN, GKE_NOTICE]),
        // Karpenter drains during AWS's warning; the instance is gone at its end.
        Provider::Karpenter => Some(vec![Duration::ZERO, AWS_NOTICE]),
        Provider::Unknown => None,
    }
}

#[test]
fn every_providers_notice_window_is_the_same_in_the_fixture_and_the_product() {
    let providers = [
        Provider::Cks,
        Provider::Gke,
        Provider::Karpenter,
        Provider::Unknown,
    ];
    let mut compared = 0;
    for provider in providers {
        let Some(fixture) = fixture_window(provider) else {
            continue;
        };
        let product: Vec<Duration> = preemption::window(provider)
            .iter()
            .map(|phase| Duration::from_secs(phase.starts_at_s.try_into().expect("not negative")))
            .collect();
        assert_eq!(
            fixture, product,
            "{provider}: phase starts in the fixture (sim::notice) and the product \
             (domain::preemption::window)"
        );
        compared += 1;
    }
    assert_eq!(compared, 3, "CKS, GKE and Karpenter on AWS");
}

/// The fixture's controller and the product agree on every spec-level row of the shared
/// table, each by its own rules: the same fields are flagged, in the same order.
#[test]
fn the_controller_flags_what_the_shared_validation_table_says() {
    let mut checked = 0;
    for case in CASES.iter().filter(|c| c.spec_level) {
        // Read as the API server reads an applied manifest: the YAML into the CRD's type.
        let pool: NodePool = serde_yaml::from_str(case.manifest).expect(case.title);
        let flagged: Vec<String> = admission::check(&pool.spec)
            .into_iter()
            .map(|p| p.field)
            .collect();
        assert_eq!(flagged, case.fields, "{}", case.title);
        checked += 1;
    }
    assert!(checked > 0, "the table has spec-level rows");
}
