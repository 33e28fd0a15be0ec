//! The hybrid what-if: keep an on-demand floor and run the rest on spot (the usual production
//! shape: a guaranteed floor for the capacity that must stay, spot above it).

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::domain::cost::{HOURS_PER_MONTH, cents};
use crate::model::FleetGroup;

/// The on-demand floor: a node count or a percent of the fleet.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Floor {
    Nodes(u32),
    Percent(Decimal),
}

/// Monthly (730 h) costs of the fleet under the floor, all on-demand and all spot.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Hybrid {
    pub nodes: u32,
    /// Node-equivalents kept on-demand (fractional when a percent splits a type).
    pub floor_nodes: Decimal,
    pub on_demand_part_usd: Decimal,
    pub spot_part_usd: Decimal,
    pub blended_usd: Decimal,
    pub all_on_demand_usd: Decimal,
    pub all_spot_usd: Decimal,
    /// All on-demand minus blended.
    pub saving_usd: Decimal,
    /// Saving as a percent of all on-demand.
    pub saving_pct: Decimal,
}

/// The what-if for `fleet` under `floor`. The floor share is the same for every instance type
/// (a `Nodes` floor is taken as that share of the whole fleet).
pub fn hybrid(fleet: &[FleetGroup], floor: Floor) -> Hybrid {
    let nodes: u32 = fleet.iter().map(|g| g.nodes).sum();
    let month = Decimal::from(HOURS_PER_MONTH);
    let share = match floor {
        _ if nodes == 0 => Decimal::ZERO,
        Floor::Nodes(n) => Decimal::from(n.min(nodes)) / Decimal::from(nodes),
        Floor::Percent(p) => p.clamp(Decimal::ZERO, Decimal::ONE_HUNDRED) / Decimal::ONE_HUNDRED,
    };
    let mut h = Hybrid {
        nodes,
        ..Default::default()
    };
    for g in fleet {
        let n = Decimal::from(g.nodes);
        let on_demand_nodes = n * share;
        h.floor_nodes += on_demand_nodes;
        h.on_demand_part_usd += on_demand_nodes * g.on_demand_usd_h * month;
        h.spot_part_usd += (n - on_demand_nodes) * g.spot_usd_h * month;
        h.all_on_demand_usd += n * g.on_demand_usd_h * month;
        h.all_spot_usd += n * g.spot_usd_h * month;
    }
    h.blended_usd = h.on_demand_part_usd + h.spot_part_usd;
    h.saving_usd = h.all_on_demand_usd - h.blended_usd;
    if !h.all_on_demand_usd.is_zero() {
        h.saving_pct = cents(h.saving_usd * Decimal::ONE_HUNDRED / h.all_on_demand_usd);
    }
    for m in [
        &mut h.on_demand_part_usd,
        &mut h.spot_part_usd,
        &mut h.blended_usd,
        &mut h.all_on_demand_usd,
        &mut h.all_spot_usd,
        &mut h.saving_usd,
        &mut h.floor_nodes,
    ] {
        *m = cents(*m);
    }
    h
}
