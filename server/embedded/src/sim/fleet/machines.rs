//! The machine types a GKE or Karpenter zone's Nodes run on, and what their kubelets report:
//! `status.capacity` as the machine has it and `status.allocatable` less the provider's
//! reservations, so a GPU node shows its GPUs and a 4-vCPU node four CPUs, as on the real
//! clouds.
//!
//! Sources (public machine-type tables and reservation rules, read 2026-11-27):
//! - Compute Engine: general-purpose machines (E2, N2),
//!   <https://cloud.google.com/compute/docs/general-purpose-machines>; accelerator-optimized G2
//!   (`g2-standard-24`: 24 vCPUs, 96 GB, 2 × NVIDIA L4),
//!   <https://cloud.google.com/compute/docs/accelerator-optimized-machines#g2-vms>.
//! - GKE's reservations for system components: CPU 6 % of the first core, 1 % of the next,
//!   0.5 % of the next 2, 0.25 % of the rest; memory 25 % of the first 4 GiB, 20 % of the next
//!   4, 10 % of the next 8, 6 % of the next 112, 2 % above 128, plus 100 MiB for eviction; GPU
//!   nodes are labelled `cloud.google.com/gke-accelerator`,
//!   <https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes>.
//! - Amazon EC2 instance types (M5, M6i, C6i, G5: 1 × NVIDIA A10G, M7g and C7g on Graviton),
//!   <https://aws.amazon.com/ec2/instance-types/>.
//! - Karpenter's kubelet defaults on AWS: `kubeReserved` memory 11 MiB per pod of `maxPods`
//!   plus 255 MiB, CPU as GKE's table above, `evictionHard` `memory.available` 100 MiB;
//!   `maxPods` from the instance's ENIs (58 for these xlarge and 2xlarge sizes, 29 for
//!   large); the `karpenter.k8s.aws/instance-*` labels,
//!   <https://karpenter.sh/docs/concepts/nodeclasses/> and
//!   <https://karpenter.sh/docs/reference/instance-types/>.
//!
//! The embedded cluster keeps its own table (it judges by its own rules): the dashboard reads
//! a node's GPUs from `status.capacity`, so this file must not borrow the product's catalog.

use serde_json::{Map, Value, json};

use super::objects::Flavor;

/// One machine type as its provider publishes it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Machine {
    pub name: &'static str,
    pub vcpus: u32,
    /// Memory in GiB (Compute Engine's "GB" are GiB: 2^30 bytes).
    pub memory_gib: u32,
    pub gpus: u32,
    /// The GPU as the provider labels it: `nvidia-l4` (GKE's `gke-accelerator`), `a10g`
    /// (Karpenter's `instance-gpu-name`); empty without a GPU.
    pub gpu_name: &'static str,
    /// GPU memory in MiB (Karpenter's `instance-gpu-memory`); 0 without a GPU.
    pub gpu_memory_mib: u32,
    /// `amd64` or `arm64` (Graviton).
    pub arch: &'static str,
    /// Pods the kubelet admits (`maxPods`): GKE's default 110, EC2's ENI limit on AWS.
    pub max_pods: u32,
}

const fn cpu(
    name: &'static str,
    vcpus: u32,
    memory_gib: u32,
    arch: &'static str,
    max_pods: u32,
) -> Machine {
    Machine {
        name,
        vcpus,
        memory_gib,
        gpus: 0,
        gpu_name: "",
        gpu_memory_mib: 0,
        arch,
        max_pods,
    }
}

/// `m` with `gpus` GPUs named `gpu_name`, of 24 GiB each (the L4's and the A10G's memory).
const fn with_gpus(m: Machine, gpus: u32, gpu_name: &'static str) -> Machine {
    Machine {
        gpus,
        gpu_name,
        gpu_memory_mib: 24 * 1024,
        ..m
    }
}

/// Every machine type the fleet zones use (see [`super::objects::pools`]).
pub const MACHINES: &[Machine] = &[
    cpu("e2-standard-8", 8, 32, "amd64", 110),
    cpu("n2-standard-16", 16, 64, "amd64", 110),
    with_gpus(cpu("g2-standard-24", 24, 96, "amd64", 110), 2, "nvidia-l4"),
    cpu("m5.large", 2, 8, "amd64", 29),
    cpu("m5.xlarge", 4, 16, "amd64", 58),
    cpu("m6i.xlarge", 4, 16, "amd64", 58),
    cpu("c6i.2xlarge", 8, 16, "amd64", 58),
    with_gpus(cpu("g5.2xlarge", 8, 32, "amd64", 58), 1, "a10g"),
    cpu("m7g.xlarge", 4, 16, "arm64", 58),
    cpu("c7g.2xlarge", 8, 16, "arm64", 58),
];

/// What a Node of a type missing from [`MACHINES`] reports: 8 vCPUs, 32 GiB, no GPU.
pub const GENERIC: Machine = cpu("generic", 8, 32, "amd64", 110);

/// The machine type named `name`. Errors: none; a name not in [`MACHINES`] is a bug of the
/// fleet's plan, and a unit test walks every pool's types.
pub fn machine(name: &str) -> Option<&'static Machine> {
    MACHINES.iter().find(|m| m.name == name)
}

/// CPU the provider reserves for system components, in millicores (the same table on GKE
/// and on Karpenter's AWS nodes).
pub fn reserved_cpu_m(vcpus: u32) -> u32 {
    // Per mille of a core's 1000 m: 60 of the first, 10 of the second, 5 each of the
    // third and fourth, 2.5 of every core after (kept in tenths to stay integral).
    let tenths: u32 = (1..=vcpus)
        .map(|core| match core {
            1 => 600,
            2 => 100,
            3 | 4 => 50,
            _ => 25,
        })
        .sum();
    tenths / 10
}

/// Memory GKE reserves (system components and the 100 MiB eviction threshold), in MiB.
pub fn gke_reserved_memory_mib(memory_gib: u32) -> u64 {
    let mib = u64::from(memory_gib) * 1024;
    // (band size in MiB, percent); the last band is unbounded.
    let bands: [(u64, u64); 5] = [
        (4096, 25),
        (4096, 20),
        (8192, 10),
        (112 * 1024, 6),
        (u64::MAX, 2),
    ];
    let mut left = mib;
    let mut reserved = 0;
    for (size, pct) in bands {
        let take = left.min(size);
        reserved += take * pct / 100;
        left -= take;
    }
    reserved + 100
}

/// Memory Karpenter reserves on an AWS node (`kubeReserved` and `evictionHard`), in MiB.
pub fn karpenter_reserved_memory_mib(max_pods: u32) -> u64 {
    11 * u64::from(max_pods) + 255 + 100
}

/// The Node's `status.capacity` and `status.allocatable` for `m` in a `flavor` zone.
pub fn resources(flavor: Flavor, m: &Machine) -> (Value, Value) {
    let mib = u64::from(m.memory_gib) * 1024;
    let reserved_mib = match flavor {
        Flavor::Gke => gke_reserved_memory_mib(m.memory_gib),
        Flavor::Karpenter => karpenter_reserved_memory_mib(m.max_pods),
    };
    let mut capacity = Map::new();
    capacity.insert("cpu".into(), json!(m.vcpus.to_string()));
    capacity.insert("memory".into(), json!(format!("{}Ki", mib * 1024)));
    capacity.insert("pods".into(), json!(m.max_pods.to_string()));
    let mut allocatable = capacity.clone();
    allocatable.insert(
        "cpu".into(),
        json!(format!("{}m", m.vcpus * 1000 - reserved_cpu_m(m.vcpus))),
    );
    allocatable.insert(
        "memory".into(),
        json!(format!("{}Ki", (mib - reserved_mib) * 1024)),
    );
    if m.gpus > 0 {
        // The NVIDIA device plugin advertises every GPU; nothing of it is reserved.
        for map in [&mut capacity, &mut allocatable] {
            map.insert("nvidia.com/gpu".into(), json!(m.gpus.to_string()));
        }
    }
    (Value::Object(capacity), Value::Object(allocatable))
}

/// The labels the provider adds for the machine: the architecture, GKE's accelerator label,
/// Karpenter's `instance-*` labels.
pub fn labels(flavor: Flavor, m: &Machine) -> Vec<(&'static str, String)> {
    let mut out = vec![("kubernetes.io/arch", m.arch.to_string())];
    match flavor {
        Flavor::Gke => {
            if m.gpus > 0 {
                out.push(("cloud.google.com/gke-accelerator", m.gpu_name.to_string()));
            }
        }
        Flavor::Karpenter => {
            out.push(("karpenter.k8s.aws/instance-cpu", m.vcpus.to_string()));
            out.push((
                "karpenter.k8s.aws/instance-memory",
                (u64::from(m.memory_gib) * 1024).to_string(),
            ));
            if m.gpus > 0 {
                out.push(("karpenter.k8s.aws/instance-gpu-count", m.gpus.to_string()));
                out.push((
                    "karpenter.k8s.aws/instance-gpu-name",
                    m.gpu_name.to_string(),
                ));
                out.push((
                    "karpenter.k8s.aws/instance-gpu-manufacturer",
                    "nvidia".into(),
                ));
                out.push((
                    "karpenter.k8s.aws/instance-gpu-memory",
                    m.gpu_memory_mib.to_string(),
                ));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::objects::pools;
    use super::*;

    #[test]
    fn every_pool_type_is_in_the_table() {
        for flavor in [Flavor::Gke, Flavor::Karpenter] {
            for pool in pools(flavor) {
                for t in pool.instance_types {
                    assert!(machine(t).is_some(), "{t} of {}", pool.name);
                }
            }
        }
    }

    /// Hand-worked from GKE's published table: an 8-vCPU, 32 GiB e2-standard-8 keeps
    /// 60 + 10 + 5 + 5 + 4 × 2.5 = 90 m of CPU (7910 m allocatable) and 1024 + 819.2 +
    /// 819.2 + 983.04 = 3645.44 MiB (integer percent of each band: 1024 + 819 + 819 + 983 =
    /// 3645) + 100 MiB of memory.
    #[test]
    fn gke_reservations_match_the_published_table() {
        assert_eq!(reserved_cpu_m(1), 60);
        assert_eq!(reserved_cpu_m(8), 90);
        assert_eq!(reserved_cpu_m(24), 130);
        assert_eq!(gke_reserved_memory_mib(32), 3645 + 100);
        let (cap, alloc) = resources(Flavor::Gke, machine("g2-standard-24").unwrap());
        assert_eq!(cap["cpu"], "24");
        assert_eq!(cap["nvidia.com/gpu"], "2");
        assert_eq!(alloc["nvidia.com/gpu"], "2");
        assert_eq!(alloc["cpu"], "23870m");
        assert_eq!(cap["memory"], format!("{}Ki", 96 * 1024 * 1024));
    }

    /// Karpenter on a g5.2xlarge (58 pods): 11 × 58 + 255 = 893 MiB kube-reserved plus
    /// 100 MiB for eviction, out of 32 GiB.
    #[test]
    fn karpenter_reservations_follow_max_pods() {
        let g5 = machine("g5.2xlarge").unwrap();
        let (cap, alloc) = resources(Flavor::Karpenter, g5);
        assert_eq!(cap["pods"], "58");
        assert_eq!(cap["nvidia.com/gpu"], "1");
        assert_eq!(alloc["memory"], format!("{}Ki", (32 * 1024 - 993) * 1024));
        let l: std::collections::BTreeMap<_, _> =
            labels(Flavor::Karpenter, g5).into_iter().collect();
        assert_eq!(l["karpenter.k8s.aws/instance-gpu-name"], "a10g");
        let arm = labels(Flavor::Karpenter, machine("m7g.xlarge").unwrap());
        assert!(arm.contains(&("kubernetes.io/arch", "arm64".into())));
        let (cpu_only, _) = resources(Flavor::Karpenter, machine("m6i.xlarge").unwrap());
        assert!(cpu_only.get("nvidia.com/gpu").is_none());
    }
}
