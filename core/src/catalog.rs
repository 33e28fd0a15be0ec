//! The shipped reference data: CoreWeave instance types and General Access zones.
//!
//! Source: `core/data/coreweave-instance-catalog.csv` (instance IDs, GPUs, vCPUs, memory,
//! Superchip flag, spot eligibility and public prices scraped from coreweave.com/pricing on
//! 2026-08-22) and `core/data/coreweave-zones.txt` (General Access zones). Both files keep their
//! `# SOURCE` lines; `docs/sources.md` lists the public pages behind them.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

const INSTANCE_CSV: &str = include_str!("../data/coreweave-instance-catalog.csv");
const ZONES_TXT: &str = include_str!("../data/coreweave-zones.txt");
/// Dated public list prices of GKE and AWS instance types, in the `--prices` file format
/// (sources and dates in the file's header and on every row).
pub const CLOUD_PRICES_CSV: &str = include_str!("../data/cloud-prices.csv");

/// The as-of date of the shipped prices.
pub const PRICES_AS_OF: &str = "2026-08-22";
/// Where the shipped prices come from.
pub const PRICES_SOURCE: &str = "coreweave.com/pricing, scraped 2026-08-22";

/// One CoreWeave instance type.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InstanceType {
    /// Instance type ID as used in `spec.instanceType`, e.g. `gd-8xh100ib-i128`.
    pub id: String,
    /// `gpu` or `cpu`.
    pub family: String,
    /// GPU model, empty for CPU types.
    pub gpu_model: String,
    /// GPUs per node.
    pub gpus: u32,
    /// vCPUs per node.
    pub vcpus: u32,
    /// List memory per node, GB.
    pub ram_gb: u32,
    /// `amd64` or `arm64`.
    pub arch: String,
    /// Superchip types (GH200, GB200, GB300, Vera Rubin) cannot run Spot (CoreWeave: Spot Node
    /// Pools, "Availability").
    pub superchip: bool,
    /// Whether a Spot NodePool may use this type.
    pub spot_ok: bool,
    /// On-demand price, USD per instance-hour, North America; `None` when not published.
    pub on_demand_usd_h: Option<String>,
    /// Spot price, USD per instance-hour, North America; `None` when not published.
    pub spot_usd_h: Option<String>,
    /// Spot price, USD per instance-hour, Europe; `None` when not published.
    pub spot_usd_h_eu: Option<String>,
    /// `A` (Kubernetes autoscaler source), `docs`, or `?third-party` (unverified ID).
    pub id_confidence: String,
}

#[derive(Deserialize)]
struct Row {
    instance_id: String,
    family: String,
    gpu_model: String,
    gpus: u32,
    vcpus: u32,
    ram_gb_list: u32,
    arch: String,
    superchip: bool,
    spot_ok: bool,
    #[serde(rename = "od_usd_h_NA")]
    od_usd_h_na: String,
    #[serde(rename = "spot_usd_h_NA")]
    spot_usd_h_na: String,
    #[serde(rename = "spot_usd_h_EU")]
    spot_usd_h_eu: String,
    id_confidence: String,
}

fn non_empty(s: String) -> Option<String> {
    let t = s.trim();
    (!t.is_empty()).then(|| t.to_string())
}

/// Every instance type of the shipped catalog, in file order.
pub fn instance_types() -> &'static [InstanceType] {
    static TYPES: OnceLock<Vec<InstanceType>> = OnceLock::new();
    TYPES.get_or_init(|| {
        let body: String = INSTANCE_CSV
            .lines()
            .filter(|l| !l.starts_with('#'))
            .collect::<Vec<_>>()
            .join("\n");
        csv::Reader::from_reader(body.as_bytes())
            .deserialize::<Row>()
            // The file is compiled in and covered by a test, so a bad row is a build defect.
            .map(|r| r.expect("shipped instance catalog row parses"))
            .map(|r| InstanceType {
                id: r.instance_id,
                family: r.family,
                gpu_model: r.gpu_model,
                gpus: r.gpus,
                vcpus: r.vcpus,
                ram_gb: r.ram_gb_list,
                arch: r.arch,
                superchip: r.superchip,
                spot_ok: r.spot_ok,
                on_demand_usd_h: non_empty(r.od_usd_h_na),
                spot_usd_h: non_empty(r.spot_usd_h_na),
                spot_usd_h_eu: non_empty(r.spot_usd_h_eu),
                id_confidence: r.id_confidence,
            })
            .collect()
    })
}

/// Looks up an instance type by ID.
pub fn instance_type(id: &str) -> Option<&'static InstanceType> {
    instance_types().iter().find(|t| t.id == id)
}

/// CoreWeave General Access zones (CKS clusters are zonal), e.g. `US-EAST-04A`.
pub fn zones() -> Vec<&'static str> {
    ZONES_TXT
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect()
}

/// The region of a zone: the zone name without its trailing letter (`US-EAST-04A` →
/// `US-EAST-04`).
pub fn region_of(zone: &str) -> &str {
    match zone.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() && i > 0 => &zone[..i],
        _ => zone,
    }
}

/// The pricing geography of a zone: `Europe` for `EU-*`, otherwise `North America`.
pub fn geography_of(zone: &str) -> &'static str {
    if zone.to_ascii_uppercase().starts_with("EU-") {
        "Europe"
    } else {
        "North America"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_parses_with_real_rows() {
        let a100 = instance_type("gd-8xa100-i128").expect("A100 type present");
        assert_eq!(a100.gpus, 8);
        assert_eq!(a100.on_demand_usd_h.as_deref(), Some("21.60"));
        assert_eq!(a100.spot_usd_h.as_deref(), Some("9.65"));
        assert!(a100.spot_ok);
        let gb200 = instance_type("gb200-4x").expect("GB200 type present");
        assert!(gb200.superchip && !gb200.spot_ok);
        assert_eq!(gb200.spot_usd_h, None);
        assert!(instance_types().len() >= 25);
    }

    #[test]
    fn zones_and_regions() {
        let z = zones();
        assert!(z.contains(&"US-EAST-04A") && z.contains(&"RNO2A"));
        assert!(!z.iter().any(|l| l.starts_with('#')));
        assert_eq!(region_of("US-EAST-04A"), "US-EAST-04");
        assert_eq!(region_of("EU-SOUTH-03B"), "EU-SOUTH-03");
        assert_eq!(geography_of("EU-SOUTH-03B"), "Europe");
        assert_eq!(geography_of("RNO2A"), "North America");
    }
}
