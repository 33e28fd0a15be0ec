//! Cost of a pool before it exists: USD per hour and per 730-hour month at targetNodes and at
//! maxNodes, spot against on-demand, from the shipped price catalog.
//!
//! Money is `rust_decimal::Decimal`, never a float. A price the catalog does not publish
//! (e.g. on-demand in Europe, "Contact sales" types) is `None` and shown as "unknown price",
//! never guessed.
//!
//! Source: [`catalog`] (coreweave.com/pricing, scraped 2026-08-22; USD per instance-hour;
//! North America prices, and the Europe spot column for `EU-*` zones).

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

use crate::catalog::{self, InstanceType, PRICES_AS_OF, PRICES_SOURCE};
use crate::nodepool::{ComputeClass, NodePoolSpec};

/// Hours in the month used for monthly figures: 730 (365 × 24 / 12, the month cloud price
/// calculators use).
pub const HOURS_PER_MONTH: u32 = 730;
/// Above this many GPUs at the pool's largest size the form asks the user to type the name.
pub const CONFIRM_ABOVE_GPUS: u32 = 8;
/// Above this many USD per hour at the pool's largest size the form asks the same.
pub const CONFIRM_ABOVE_USD_PER_HOUR: u32 = 100;

/// Unit prices of one instance type in one zone, USD per instance-hour.
#[derive(Clone, Debug, PartialEq)]
pub struct UnitPrices {
    pub spot: Option<Decimal>,
    pub on_demand: Option<Decimal>,
    /// `North America` or `Europe`: the price column used.
    pub geography: &'static str,
    pub source: &'static str,
    pub as_of: &'static str,
}

/// The catalog's unit prices for `t` in `zone`.
pub fn unit_prices(t: &InstanceType, zone: &str) -> UnitPrices {
    let geography = catalog::geography_of(zone);
    let parse = |s: &Option<String>| s.as_deref().and_then(|v| v.parse::<Decimal>().ok());
    let (spot, on_demand) = if geography == "Europe" {
        // The public page lists Europe spot prices only; on-demand there is "Contact sales".
        (parse(&t.spot_usd_h_eu), None)
    } else {
        (parse(&t.spot_usd_h), parse(&t.on_demand_usd_h))
    };
    UnitPrices {
        spot,
        on_demand,
        geography,
        source: PRICES_SOURCE,
        as_of: PRICES_AS_OF,
    }
}

/// Cost of `nodes` nodes at one unit price.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub nodes: i32,
    /// USD per hour; `None` when the unit price is unknown.
    pub usd_per_hour: Option<Decimal>,
    /// USD per 730-hour month; `None` when the unit price is unknown.
    pub usd_per_month: Option<Decimal>,
}

impl Cost {
    /// `nodes` × `unit` (USD per instance-hour), and × 730 for the month.
    pub fn of(nodes: i32, unit: Option<Decimal>) -> Self {
        let hourly = unit.map(|u| u * Decimal::from(nodes.max(0)));
        Cost {
            nodes,
            usd_per_hour: hourly,
            usd_per_month: hourly.map(|h| h * Decimal::from(HOURS_PER_MONTH)),
        }
    }
}

/// What the create form shows under "Cost".
#[derive(Clone, Debug, PartialEq)]
pub struct CostPreview {
    pub prices: UnitPrices,
    pub spot_at_target: Cost,
    pub on_demand_at_target: Cost,
    /// At maxNodes, when autoscaling with a maxNodes above targetNodes.
    pub spot_at_max: Option<Cost>,
    pub on_demand_at_max: Option<Cost>,
    /// GPUs at the pool's largest size (maxNodes when autoscaling, else targetNodes).
    pub gpus_at_peak: u32,
    /// USD per hour at the pool's largest size at its own computeClass's price.
    pub peak_usd_per_hour: Option<Decimal>,
}

impl CostPreview {
    /// Whether creating this pool should need the name typed again: more than 8 GPUs or more
    /// than 100 USD/h at its largest size.
    pub fn needs_confirmation(&self) -> bool {
        self.gpus_at_peak > CONFIRM_ABOVE_GPUS
            || self
                .peak_usd_per_hour
                .is_some_and(|h| h > Decimal::from(CONFIRM_ABOVE_USD_PER_HOUR))
    }

    /// Spot's saving against on-demand at targetNodes, USD per month, when both are known.
    pub fn monthly_saving_at_target(&self) -> Option<Decimal> {
        Some(self.on_demand_at_target.usd_per_month? - self.spot_at_target.usd_per_month?)
    }
}

/// The preview for `spec` in `zone`; `None` for an instance type not in the catalog.
pub fn preview(spec: &NodePoolSpec, zone: &str) -> Option<CostPreview> {
    let t = catalog::instance_type(spec.instance_type.trim())?;
    let prices = unit_prices(t, zone);
    let target = spec.target_nodes;
    let max = spec.max_nodes.filter(|m| spec.autoscaling && *m > target);
    let peak = max.unwrap_or(target).max(0);
    let own_price = match spec.compute_class {
        ComputeClass::Spot => prices.spot,
        _ => prices.on_demand,
    };
    Some(CostPreview {
        spot_at_target: Cost::of(target, prices.spot),
        on_demand_at_target: Cost::of(target, prices.on_demand),
        spot_at_max: max.map(|m| Cost::of(m, prices.spot)),
        on_demand_at_max: max.map(|m| Cost::of(m, prices.on_demand)),
        gpus_at_peak: t.gpus.saturating_mul(peak as u32),
        peak_usd_per_hour: own_price.map(|p| p * Decimal::from(peak)),
        prices,
    })
}

/// `d` rounded to cents, halves away from zero (4.825 → 4.83), as invoices round.
pub fn cents(d: Decimal) -> Decimal {
    d.round_dp_with_strategy(2, rust_decimal::RoundingStrategy::MidpointAwayFromZero)
}

/// `$1,234.50`-style text for an amount of USD; "unknown price" for `None`.
pub fn usd(amount: Option<Decimal>) -> String {
    let Some(a) = amount else {
        return "unknown price".into();
    };
    let rounded = cents(a);
    let text = format!("{:.2}", rounded.abs());
    let (int, frac) = text.split_once('.').unwrap_or((&text, "00"));
    let grouped = super::numbers::thousands(int);
    let sign = if rounded.is_sign_negative() && !rounded.is_zero() {
        "-"
    } else {
        ""
    };
    format!("{sign}${grouped}.{frac}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    fn spec(class: &str, instance: &str, target: i32) -> NodePoolSpec {
        NodePoolSpec::new(class, instance, target)
    }

    #[test]
    fn hand_computed_a100_spot_pool() {
        // gd-8xa100-i128: on-demand 21.60, spot 9.65 USD per instance-hour (NA, 2026-08-22).
        let p = preview(&spec("spot", "gd-8xa100-i128", 3), "US-EAST-04A").unwrap();
        // 3 × 9.65 = 28.95 USD/h; × 730 = 21,133.50 USD/month.
        assert_eq!(p.spot_at_target.usd_per_hour, Some(dec!(28.95)));
        assert_eq!(p.spot_at_target.usd_per_month, Some(dec!(21133.50)));
        // 3 × 21.60 = 64.80 USD/h; × 730 = 47,304.00 USD/month.
        assert_eq!(p.on_demand_at_target.usd_per_month, Some(dec!(47304.00)));
        assert_eq!(p.monthly_saving_at_target(), Some(dec!(26170.50)));
        assert_eq!(p.gpus_at_peak, 24);
        assert!(p.needs_confirmation(), "24 GPUs > 8");
        assert_eq!(p.prices.as_of, "2026-08-22");
    }

    #[test]
    fn autoscaling_peak_uses_max_nodes() {
        let mut s = spec("spot", "gd-8xa100-i128", 1);
        s.autoscaling = true;
        s.min_nodes = Some(1);
        s.max_nodes = Some(4);
        let p = preview(&s, "US-EAST-04A").unwrap();
        // 4 × 9.65 = 38.60 USD/h at maxNodes.
        assert_eq!(p.spot_at_max.unwrap().usd_per_hour, Some(dec!(38.60)));
        assert_eq!(p.peak_usd_per_hour, Some(dec!(38.60)));
        assert_eq!(p.gpus_at_peak, 32);
    }

    #[test]
    fn more_than_100_usd_an_hour_needs_confirmation_without_gpus() {
        let p = preview(&spec("spot", "gd-8xa100-i128", 1), "US-EAST-04A").unwrap();
        let cpu = |usd: Decimal| CostPreview {
            gpus_at_peak: 0,
            peak_usd_per_hour: Some(usd),
            ..p.clone()
        };
        assert!(cpu(dec!(100.01)).needs_confirmation());
        assert!(
            !cpu(dec!(100.00)).needs_confirmation(),
            "at the limit is fine"
        );
    }

    #[test]
    fn small_cpu_pool_needs_no_confirmation_and_europe_on_demand_is_unknown() {
        let p = preview(&spec("spot", "gd-8xa100-i128", 1), "US-EAST-04A").unwrap();
        assert_eq!(p.gpus_at_peak, 8);
        assert!(
            !p.needs_confirmation(),
            "8 GPUs and 9.65 USD/h are at or below the limits"
        );
        let eu = preview(&spec("spot", "gd-8xa100-i128", 1), "EU-SOUTH-04A").unwrap();
        assert_eq!(eu.prices.geography, "Europe");
        assert_eq!(eu.on_demand_at_target.usd_per_hour, None);
        assert_eq!(eu.monthly_saving_at_target(), None);
        assert!(preview(&spec("spot", "no-such-type", 1), "US-EAST-04A").is_none());
    }

    #[test]
    fn usd_formatting() {
        assert_eq!(usd(Some(dec!(21133.5))), "$21,133.50");
        assert_eq!(usd(Some(dec!(0))), "$0.00");
        assert_eq!(usd(Some(dec!(1234567.891))), "$1,234,567.89");
        assert_eq!(usd(Some(dec!(-5.5))), "-$5.50");
        assert_eq!(usd(None), "unknown price");
    }
}
