//! The fleet's zones, shared by the bench's run of many clusters and the fault suite's run
//! with 20 (`server/tests/it/faults/twenty_clusters.rs`, which includes this file).

/// The clusters' zones, in the order they are used. The first 16 are the general-access zones
/// of CoreWeave's availability matrix (docs.coreweave.com, platform/instances/availability-matrix,
/// as `../shared/reference/coreweave-zones.txt` lists them); the last 4 are zones CoreWeave's
/// region pages name beyond those. The embedded cluster takes any zone name; these keep the
/// contexts' names the field's.
pub const ZONES: [&str; 20] = [
    "US-EAST-04A",
    "US-CENTRAL-07A",
    "EU-SOUTH-04A",
    "EU-SOUTH-03B",
    "US-CENTRAL-06A",
    "US-EAST-01A",
    "US-EAST-02A",
    "US-EAST-06A",
    "US-EAST-08A",
    "US-EAST-13A",
    "US-EAST-14A",
    "RNO2A",
    "US-WEST-01A",
    "US-WEST-04A",
    "US-WEST-09B",
    "US-WEST-10A",
    "US-CENTRAL-08A",
    "US-CENTRAL-09A",
    "US-EAST-09A",
    "US-EAST-10A",
];
