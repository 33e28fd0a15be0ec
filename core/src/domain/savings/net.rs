//! Net savings and the break-even: what spot saved once its preemptions are paid for, and how
//! much work spot could lose before on-demand (or a reserved price) would have been cheaper.
//!
//! For a group with on-demand baseline `B`, actual cost `A`, capacity gap `G` (USD) and `V`,
//! the on-demand value of the GPU-hours it ran (each GPU node's hours × its type's on-demand
//! USD per instance-hour), losing a fraction `f` of the GPU-hours costs `f × V` at the
//! on-demand price per GPU-hour, so
//!
//! - net savings: `B − A − G − lost work`;
//! - break-even against on-demand: `f* = (B − A − G) ÷ V` (net savings 0);
//! - against a reserved price at `r` % off: spot costs `A + G + f × V` and reserved
//!   `B × (1 − r/100)`, so reserved wins above `f_r = (B × (1 − r/100) − A − G) ÷ V`.
//!
//! Both fractions are given in percent, clamped to 0–100. `docs/using.md` works one example
//! by hand from `/api/v1/ledger` rows.

use rust_decimal::Decimal;

use crate::domain::cost::cents;
use crate::model::NetSavings;

/// What a group's net savings are summed from, exact (rounded only by [`finish`]). Priced
/// nodes only.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NetParts {
    /// Preemptions with T=0 in the range.
    pub preemptions: u32,
    /// Node-hours from T=0 until the replacement was Ready.
    pub gap_node_hours: Decimal,
    /// Those node-hours at the preempted node's price, USD.
    pub gap_usd: Decimal,
    /// GPU-hours run in the range.
    pub gpu_hours: Decimal,
    /// The same GPU-hours at on-demand prices, USD (`V` above).
    pub gpu_baseline_usd: Decimal,
    /// GPU-hours of work the preempted pods lost (an upper bound).
    pub lost_work_gpu_hours: Decimal,
    /// Those GPU-hours at the on-demand price per GPU-hour, USD.
    pub lost_work_usd: Decimal,
}

impl NetParts {
    /// Adds `other`'s parts to these.
    pub fn add(&mut self, other: &NetParts) {
        self.preemptions += other.preemptions;
        self.gap_node_hours += other.gap_node_hours;
        self.gap_usd += other.gap_usd;
        self.gpu_hours += other.gpu_hours;
        self.gpu_baseline_usd += other.gpu_baseline_usd;
        self.lost_work_gpu_hours += other.lost_work_gpu_hours;
        self.lost_work_usd += other.lost_work_usd;
    }
}

/// A percent of `whole`, two decimals; 0 for no whole.
fn pct(part: Decimal, whole: Decimal) -> Decimal {
    if whole.is_zero() {
        Decimal::ZERO
    } else {
        cents(part * Decimal::ONE_HUNDRED / whole)
    }
}

/// `numerator ÷ v` as a percent clamped to 0–100; `None` when `v` is not positive.
fn fraction_pct(numerator: Decimal, v: Decimal) -> Option<Decimal> {
    (v > Decimal::ZERO).then(|| {
        cents(numerator * Decimal::ONE_HUNDRED / v).clamp(Decimal::ZERO, Decimal::ONE_HUNDRED)
    })
}

/// The net savings of a group whose priced node-hours cost `actual_usd` against
/// `baseline_usd` on-demand, with `parts` summed over its nodes, compared with a reserved
/// price `reserved_discount_pct` % off on-demand when one is given.
pub fn finish(
    parts: &NetParts,
    baseline_usd: Decimal,
    actual_usd: Decimal,
    reserved_discount_pct: Option<Decimal>,
) -> NetSavings {
    let gross = baseline_usd - actual_usd;
    let net = gross - parts.gap_usd - parts.lost_work_usd;
    let v = parts.gpu_baseline_usd;
    NetSavings {
        gross_usd: cents(gross),
        gross_pct: pct(gross, baseline_usd),
        preemptions: parts.preemptions,
        gap_node_hours: cents(parts.gap_node_hours),
        gap_usd: cents(parts.gap_usd),
        lost_work_gpu_hours: cents(parts.lost_work_gpu_hours),
        lost_work_usd: cents(parts.lost_work_usd),
        net_usd: cents(net),
        net_pct: pct(net, baseline_usd),
        gpu_hours: cents(parts.gpu_hours),
        lost_work_pct: pct(parts.lost_work_gpu_hours, parts.gpu_hours),
        break_even_pct: fraction_pct(gross - parts.gap_usd, v),
        reserved_discount_pct,
        reserved_break_even_pct: reserved_discount_pct.and_then(|r| {
            let reserved = baseline_usd * (Decimal::ONE - r / Decimal::ONE_HUNDRED);
            fraction_pct(reserved - actual_usd - parts.gap_usd, v)
        }),
    }
}

/// The net savings in one sentence: "spot saves 55 % gross, 49 % net; break-even at 38 % of
/// GPU-hours lost (3.1 % now); reserved at 40 % off would win above 14 %".
pub fn sentence(n: &NetSavings) -> String {
    let mut s = format!(
        "spot saves {} % gross, {} % net",
        n.gross_pct.normalize(),
        n.net_pct.normalize()
    );
    if let Some(b) = n.break_even_pct {
        s.push_str(&format!(
            "; break-even at {} % of GPU-hours lost ({} % now)",
            b.normalize(),
            n.lost_work_pct.normalize()
        ));
    }
    if let (Some(r), Some(b)) = (n.reserved_discount_pct, n.reserved_break_even_pct) {
        if b.is_zero() {
            s.push_str(&format!(
                "; reserved at {} % off would win at any loss",
                r.normalize()
            ));
        } else {
            s.push_str(&format!(
                "; reserved at {} % off would win above {} %",
                r.normalize(),
                b.normalize()
            ));
        }
    }
    s
}
