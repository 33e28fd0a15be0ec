//! The validation table shared by every place that validates: the `app` unit tests, the
//! server's `POST /api/v1/pools/validate` and create server function, and the embedded
//! cluster's NodePool controller (its `Validated` condition). One list, so the three cannot
//! drift apart.

/// One row of the table: a NodePool manifest and the fields [`super::validate_draft`] must
/// flag (empty: valid).
#[derive(Clone, Copy, Debug)]
pub struct Case {
    /// What the row checks, for assertion messages.
    pub title: &'static str,
    /// A NodePool manifest (YAML).
    pub manifest: &'static str,
    /// The `FieldError::field`s expected, in order.
    pub fields: &'static [&'static str],
    /// Whether the problem is in the spec (so the embedded controller's `Validated`
    /// condition sees it too); name problems are the API server's and the form's business.
    pub spec_level: bool,
}

macro_rules! manifest {
    ($name:literal, $spec:literal) => {
        concat!(
            "apiVersion: compute.coreweave.com/v1alpha1\nkind: NodePool\nmetadata:\n  name: ",
            $name,
            "\nspec:\n",
            $spec
        )
    };
}

/// The table.
pub const CASES: &[Case] = &[
    Case {
        title: "valid spot H100 pool",
        manifest: manifest!(
            "case-h100-spot",
            "  computeClass: spot\n  instanceType: gd-8xh100ib-i128\n  targetNodes: 1\n"
        ),
        fields: &[],
        spec_level: true,
    },
    Case {
        title: "valid autoscaling pool with labels and a taint",
        manifest: manifest!(
            "case-autoscale",
            "  computeClass: spot\n  instanceType: gd-8xa100-i128\n  targetNodes: 2\n  autoscaling: true\n  minNodes: 1\n  maxNodes: 4\n  nodeLabels:\n    team: ml\n  nodeTaints:\n  - key: dedicated\n    value: ml\n    effect: NoSchedule\n"
        ),
        fields: &[],
        spec_level: true,
    },
    Case {
        title: "Superchip type refused for spot",
        manifest: manifest!(
            "case-gb200-spot",
            "  computeClass: spot\n  instanceType: gb200-4x\n  targetNodes: 1\n"
        ),
        fields: &["spec.computeClass"],
        spec_level: true,
    },
    Case {
        title: "reserved label domain refused",
        manifest: manifest!(
            "case-reserved-label",
            "  computeClass: spot\n  instanceType: gd-8xa100-i128\n  targetNodes: 1\n  nodeLabels:\n    qos.coreweave.cloud/interruptable: \"true\"\n"
        ),
        fields: &["spec.nodeLabels"],
        spec_level: true,
    },
    Case {
        title: "reserved annotation domain refused",
        manifest: manifest!(
            "case-reserved-annotation",
            "  computeClass: spot\n  instanceType: gd-8xa100-i128\n  targetNodes: 1\n  nodeAnnotations:\n    node.coreweave.com/note: x\n"
        ),
        fields: &["spec.nodeAnnotations"],
        spec_level: true,
    },
    Case {
        title: "label value syntax",
        manifest: manifest!(
            "case-label-value",
            "  computeClass: spot\n  instanceType: gd-8xa100-i128\n  targetNodes: 1\n  nodeLabels:\n    team: has space\n"
        ),
        fields: &["spec.nodeLabels"],
        spec_level: true,
    },
    Case {
        title: "target above maxNodes when autoscaling",
        manifest: manifest!(
            "case-above-max",
            "  computeClass: spot\n  instanceType: gd-8xa100-i128\n  targetNodes: 5\n  autoscaling: true\n  minNodes: 1\n  maxNodes: 4\n"
        ),
        fields: &["spec.targetNodes"],
        spec_level: true,
    },
    Case {
        title: "negative targetNodes",
        manifest: manifest!(
            "case-negative",
            "  computeClass: spot\n  instanceType: gd-8xa100-i128\n  targetNodes: -1\n"
        ),
        fields: &["spec.targetNodes"],
        spec_level: true,
    },
    Case {
        title: "taint key syntax and effect",
        manifest: manifest!(
            "case-taint",
            "  computeClass: spot\n  instanceType: gd-8xa100-i128\n  targetNodes: 1\n  nodeTaints:\n  - key: bad key!\n    effect: Sometimes\n"
        ),
        fields: &["spec.nodeTaints", "spec.nodeTaints"],
        spec_level: true,
    },
    Case {
        title: "unknown instance type",
        manifest: manifest!(
            "case-unknown-type",
            "  computeClass: spot\n  instanceType: gd-8xz999-i128\n  targetNodes: 1\n"
        ),
        fields: &["spec.instanceType"],
        spec_level: true,
    },
    Case {
        title: "name not a DNS-1123 subdomain",
        manifest: manifest!(
            "Case_Upper",
            "  computeClass: spot\n  instanceType: gd-8xa100-i128\n  targetNodes: 1\n"
        ),
        fields: &["metadata.name"],
        spec_level: false,
    },
];
