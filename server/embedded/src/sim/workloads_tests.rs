use super::*;
use rand::SeedableRng;

fn spec(instance: &str, class: &str) -> NodePoolSpec {
    NodePoolSpec {
        instance_type: instance.into(),
        compute_class: class.into(),
        target_nodes: 2,
        ..Default::default()
    }
}

fn pods(
    workload: Workload,
    pool: &str,
    s: &NodePoolSpec,
    index: usize,
    per_node: usize,
) -> Vec<PodPlan> {
    let mut rng = rand::rngs::SmallRng::seed_from_u64(3);
    let slot = Slot {
        pool,
        spec: s,
        node: "g0000aa",
        index,
    };
    node_pods(11, workload, slot, per_node, &mut rng)
}

#[test]
fn spot_training_is_gracefully_interruptible_with_long_grace() {
    let s = spec("gd-8xh100ib-i128", "spot");
    let p = pods(Workload::Training, "h100-spot-train", &s, 2, 0);
    assert_eq!(p.len(), 2, "trainer and cilium");
    let t = &p[0];
    assert_eq!(t.name, "llama3-70b-pretrain-2");
    assert_eq!(
        (t.owner.kind, t.namespace, t.gpus, t.grace),
        ("StatefulSet", "ml-training", 8, 600)
    );
    assert_eq!(t.policy, Policy::Graceful);
    assert!(t.pre_stop.is_some());
    assert_eq!(p[1].owner.kind, "DaemonSet");
    let reserved = pods(
        Workload::Training,
        "example-nodepool",
        &spec("gd-8xa100-i128", "default"),
        0,
        0,
    );
    assert_eq!(reserved[0].policy, Policy::NonInterruptible);
    assert_eq!(reserved[0].name, "bert-large-finetune-0");
}

#[test]
fn inference_fills_the_gpus_with_interruptible_replicas() {
    let s = spec("gd-8xl40s-i128", "default");
    let p: Vec<_> = pods(Workload::Inference, "l40s-inference", &s, 0, 0)
        .into_iter()
        .filter(|p| p.owner.kind == "ReplicaSet")
        .collect();
    assert_eq!(p.len(), 4);
    assert_eq!(p.iter().map(|p| p.gpus).sum::<u32>(), 8);
    assert!(
        p.iter()
            .all(|p| p.grace == 120 && p.policy == Policy::Interruptible)
    );
    let rs = &p[0].owner.name;
    assert!(
        rs.starts_with("vllm-llama3-8b-") && rs.len() == "vllm-llama3-8b-".len() + 10,
        "{rs}"
    );
    assert!(
        p.iter()
            .all(|x| &x.owner.name == rs && x.name.starts_with(rs.as_str()))
    );
    // The same pool names its ReplicaSet the same way on every node.
    let again = pods(Workload::Inference, "l40s-inference", &s, 1, 0);
    assert_eq!(&again[0].owner.name, rs);
}

#[test]
fn batch_and_cpu_pods_tolerate_the_cpu_taint() {
    let s = spec("cd-gp-a192-genoa", "spot");
    let p = pods(Workload::Batch, "cpu-spot-batch", &s, 0, 0);
    let job: Vec<_> = p.iter().filter(|p| p.owner.kind == "Job").collect();
    assert_eq!(job.len(), 4);
    assert!(job.iter().all(|p| p.grace == 30 && p.gpus == 0));
    assert!(
        job[0]
            .tolerations
            .iter()
            .any(|t| t.key.as_deref() == Some("is_cpu_compute"))
    );
}

#[test]
fn bulk_nodes_get_exactly_pods_per_node() {
    let s = spec("gd-8xh100ib-i128", "spot");
    let p = pods(Workload::Bulk, "bulk-spot-8xh100ib-0", &s, 0, 5);
    assert_eq!(p.len(), 5);
    assert!(p.iter().all(|p| p.gpus == 1));
    let names: std::collections::HashSet<_> = p.iter().map(|p| p.name.clone()).collect();
    assert_eq!(names.len(), 5);
    assert!(pods(Workload::Bulk, "b", &s, 0, 0).is_empty());
}

#[test]
fn mixed_and_control_plane() {
    let a100 = spec("gd-8xa100-i128", "spot");
    let p = pods(Workload::Mixed, "a100-spot-eval", &a100, 0, 0);
    assert_eq!(p.iter().map(|p| p.gpus).sum::<u32>(), 8);
    let cp = spec("cd-gp-i64-erapids", "default");
    let first = pods(Workload::ControlPlane, "cpu-control-plane", &cp, 0, 0);
    let second = pods(Workload::ControlPlane, "cpu-control-plane", &cp, 1, 0);
    assert_eq!(
        (first.len(), second.len()),
        (3, 2),
        "metrics-server on the first node only"
    );
    assert!(first.iter().all(|p| p.namespace == "kube-system"));
}
