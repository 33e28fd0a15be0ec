//! The price catalog in force: instance type (and region, and cluster) → on-demand and spot USD
//! per instance-hour, each with its source and as-of date.
//!
//! The shipped rows are CoreWeave's public prices (`core/data/`, coreweave.com/pricing
//! scraped 2026-08-22): North America on-demand and spot, and Europe spot; and dated Compute
//! Engine and EC2 list prices for GKE and Karpenter node types (`core/data/cloud-prices.csv`). A user file
//! (`--prices FILE`, CSV) adds rows that win over the shipped ones, including per-cluster
//! negotiated prices and discounts, and prices for GKE or Karpenter node types:
//!
//! ```csv
//! instance_type,region,cluster,on_demand_usd_h,spot_usd_h,discount_pct,source,as_of
//! gd-8xh100ib-i128,,cks-prod,39.00,,,"contract 2026-07",2026-07-01
//! *,,cks-prod,,,12,"enterprise discount",2026-07-01
//! n2-standard-8,europe-west4,,0.427664,0.155472,,"cloud billing export",2026-11-01
//! ```
//!
//! Lookup picks the most specific row with a price for the capacity type (cluster match beats
//! region match beats neither; user rows beat shipped rows at equal specificity), then applies
//! the most specific `*` discount row of the cluster. Unknown stays unknown: no guess, and never
//! on-demand in place of a missing spot price.

use rust_decimal::Decimal;

pub use crate::CapacityType;
use crate::catalog::{self, PRICES_AS_OF, PRICES_SOURCE};
use crate::model::{PriceEntry, UnitPrice};

/// A line of a price file that could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PriceFileError {
    /// 1-based line in the file.
    pub line: usize,
    pub message: String,
}

impl std::fmt::Display for PriceFileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// The catalog: user rows first, then shipped rows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PriceCatalog {
    pub entries: Vec<PriceEntry>,
    /// How many leading entries came from the user's file.
    pub user_entries: usize,
}

fn dec(s: &Option<String>) -> Option<Decimal> {
    s.as_deref().and_then(|v| v.parse().ok())
}

impl PriceCatalog {
    /// The shipped prices: CoreWeave's public prices from the instance catalog (North America
    /// on-demand and spot, Europe spot; coreweave.com/pricing), then Compute Engine and EC2 list
    /// prices for GKE and Karpenter node types (`core/data/cloud-prices.csv`, each row with its
    /// source and date).
    pub fn shipped() -> Self {
        let mut entries = Vec::new();
        for t in catalog::instance_types() {
            let row = |region: &str, od: Option<Decimal>, spot: Option<Decimal>| PriceEntry {
                instance_type: t.id.clone(),
                region: Some(region.into()),
                cluster: None,
                on_demand_usd_h: od,
                spot_usd_h: spot,
                discount_pct: None,
                source: PRICES_SOURCE.into(),
                as_of: PRICES_AS_OF.into(),
            };
            entries.push(row(
                "North America",
                dec(&t.on_demand_usd_h),
                dec(&t.spot_usd_h),
            ));
            entries.push(row("Europe", None, dec(&t.spot_usd_h_eu)));
        }
        // The file is compiled in and covered by a test, so a bad row is a build defect.
        entries.extend(
            Self::parse_csv(catalog::CLOUD_PRICES_CSV).expect("shipped cloud price rows parse"),
        );
        PriceCatalog {
            entries,
            user_entries: 0,
        }
    }

    /// This catalog with `user` rows in front.
    pub fn with_user(mut self, user: Vec<PriceEntry>) -> Self {
        self.user_entries = user.len();
        let mut entries = user;
        entries.append(&mut self.entries);
        self.entries = entries;
        self
    }

    /// Rows of a user price file (CSV with the header in the module docs).
    ///
    /// Errors: the first line that is not a valid row, with why (a missing instance type, a
    /// price that is not a decimal number, a negative price or a discount outside 0–100).
    pub fn parse_csv(text: &str) -> Result<Vec<PriceEntry>, PriceFileError> {
        #[derive(serde::Deserialize)]
        struct Row {
            instance_type: String,
            #[serde(default)]
            region: String,
            #[serde(default)]
            cluster: String,
            #[serde(default)]
            on_demand_usd_h: String,
            #[serde(default)]
            spot_usd_h: String,
            #[serde(default)]
            discount_pct: String,
            #[serde(default)]
            source: String,
            #[serde(default)]
            as_of: String,
        }
        let mut out = Vec::new();
        let mut reader = csv::ReaderBuilder::new()
            .comment(Some(b'#'))
            .trim(csv::Trim::All)
            .from_reader(text.as_bytes());
        for (i, row) in reader.deserialize::<Row>().enumerate() {
            let err = |message: String| PriceFileError {
                line: i + 2,
                message,
            };
            let row = row.map_err(|e| err(e.to_string()))?;
            if row.instance_type.is_empty() {
                return Err(err(
                    "instance_type is empty (use * for a discount row)".into()
                ));
            }
            let money = |field: &str, v: &str| -> Result<Option<Decimal>, PriceFileError> {
                if v.is_empty() {
                    return Ok(None);
                }
                let d: Decimal = v
                    .parse()
                    .map_err(|_| err(format!("{field} \"{v}\" is not a decimal number")))?;
                if d.is_sign_negative() {
                    return Err(err(format!("{field} must not be negative")));
                }
                Ok(Some(d))
            };
            let discount = money("discount_pct", &row.discount_pct)?;
            if discount.is_some_and(|d| d > Decimal::from(100)) {
                return Err(err("discount_pct must be between 0 and 100".into()));
            }
            let opt = |s: String| (!s.is_empty()).then_some(s);
            out.push(PriceEntry {
                on_demand_usd_h: money("on_demand_usd_h", &row.on_demand_usd_h)?,
                spot_usd_h: money("spot_usd_h", &row.spot_usd_h)?,
                discount_pct: discount,
                instance_type: row.instance_type,
                region: opt(row.region),
                cluster: opt(row.cluster),
                source: if row.source.is_empty() {
                    "price file".into()
                } else {
                    row.source
                },
                as_of: row.as_of,
            });
        }
        Ok(out)
    }

    /// The price of `instance_type` as `capacity` in `cluster`/`zone`, or `None` when no row
    /// gives one.
    pub fn lookup(
        &self,
        cluster: &str,
        zone: Option<&str>,
        instance_type: &str,
        capacity: CapacityType,
    ) -> Option<UnitPrice> {
        let price_of = |e: &PriceEntry| match capacity {
            CapacityType::Spot => e.spot_usd_h,
            CapacityType::OnDemand => e.on_demand_usd_h,
            // Reserved capacity is billed by contract; no public price applies (and a
            // mixed pool's nodes are priced one by one).
            CapacityType::Reserved | CapacityType::Mixed | CapacityType::Unknown => None,
        };
        let base = self
            .matching(cluster, zone, instance_type)
            .filter(|(_, e)| price_of(e).is_some())
            .max_by_key(|(rank, _)| *rank)?
            .1;
        let mut price = UnitPrice {
            usd_per_hour: price_of(base)?,
            source: base.source.clone(),
            as_of: base.as_of.clone(),
        };
        if let Some((_, d)) = self
            .matching(cluster, zone, "*")
            .filter(|(_, e)| e.discount_pct.is_some())
            .max_by_key(|(rank, _)| *rank)
        {
            let pct = d.discount_pct.unwrap_or_default();
            price.usd_per_hour = (price.usd_per_hour * (Decimal::ONE_HUNDRED - pct)
                / Decimal::ONE_HUNDRED)
                .round_dp(6);
            price.source = format!("{} less {pct} % ({})", price.source, d.source);
        }
        Some(price)
    }

    /// Rows for `instance_type` that apply to `cluster`/`zone`, with a specificity rank
    /// (higher wins; earlier rows win ties).
    fn matching<'a>(
        &'a self,
        cluster: &'a str,
        zone: Option<&'a str>,
        instance_type: &'a str,
    ) -> impl Iterator<Item = ((u8, std::cmp::Reverse<usize>), &'a PriceEntry)> {
        self.entries.iter().enumerate().filter_map(move |(i, e)| {
            if e.instance_type != instance_type {
                return None;
            }
            let cluster_rank = match &e.cluster {
                Some(c) if c == cluster => 2,
                Some(_) => return None,
                None => 0,
            };
            let region_rank = match &e.region {
                None => 0,
                Some(r) if region_matches(r, zone) => 1,
                Some(_) => return None,
            };
            Some(((cluster_rank + region_rank, std::cmp::Reverse(i)), e))
        })
    }
}

/// Whether a row's region applies to `zone`: a geography name (`North America`, `Europe`;
/// an unknown zone counts as North America, as CKS clusters mostly are), or a zone prefix.
fn region_matches(region: &str, zone: Option<&str>) -> bool {
    match region {
        "North America" | "Europe" => catalog::geography_of(zone.unwrap_or_default()) == region,
        r => zone.is_some_and(|z| z.to_ascii_uppercase().starts_with(&r.to_ascii_uppercase())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rust_decimal_macros::dec;

    const FILE: &str = "\
instance_type,region,cluster,on_demand_usd_h,spot_usd_h,discount_pct,source,as_of
# negotiated H100 price in one cluster
gd-8xh100ib-i128,,cks-prod,39.00,,,contract,2026-07-01
*,,cks-prod,,,10,enterprise discount,2026-07-01
n2-standard-8,europe-west4,,0.4370,0.0874,,price sheet,2026-11-01
";

    fn catalog() -> PriceCatalog {
        PriceCatalog::shipped().with_user(PriceCatalog::parse_csv(FILE).unwrap())
    }

    #[test]
    fn gke_and_aws_node_types_have_dated_shipped_prices() {
        let c = PriceCatalog::shipped();
        let spot = |cluster: &str, zone: &str, t: &str| {
            c.lookup(cluster, Some(zone), t, CapacityType::Spot)
                .unwrap()
        };
        let od = |cluster: &str, zone: &str, t: &str| {
            c.lookup(cluster, Some(zone), t, CapacityType::OnDemand)
                .unwrap()
        };
        let g2 = spot("gke", "us-central1-a", "g2-standard-24");
        assert_eq!(g2.usd_per_hour, dec!(1.124816));
        assert_eq!(g2.as_of, "2026-07-30");
        assert!(
            g2.source.contains("google-cloud-pricing-cost-calculator"),
            "{}",
            g2.source
        );
        assert_eq!(
            od("gke", "europe-west4-b", "n2-standard-16").usd_per_hour,
            dec!(0.855328),
            "the region's row, not us-central1's"
        );
        // AWS on-demand and spot come from different sources, each kept with its price.
        let m5 = od("eks", "us-east-1a", "m5.xlarge");
        assert_eq!(
            (m5.usd_per_hour, m5.as_of.as_str()),
            (dec!(0.192), "2026-07-20")
        );
        let m5_spot = spot("eks", "us-east-1a", "m5.xlarge");
        assert_eq!(
            (m5_spot.usd_per_hour, m5_spot.as_of.as_str()),
            (dec!(0.0627), "2026-08-06")
        );
        assert!(
            c.lookup("eks", Some("eu-west-1a"), "m5.xlarge", CapacityType::Spot)
                .is_none(),
            "no price for a region the file does not cover"
        );
    }

    #[test]
    fn shipped_prices_by_geography() {
        let c = PriceCatalog::shipped();
        let od = c
            .lookup(
                "any",
                Some("US-EAST-04A"),
                "gd-8xa100-i128",
                CapacityType::OnDemand,
            )
            .unwrap();
        assert_eq!(od.usd_per_hour, dec!(21.60));
        assert_eq!(od.as_of, "2026-08-22");
        let eu_spot = c.lookup(
            "any",
            Some("EU-SOUTH-04A"),
            "gd-8xa100-i128",
            CapacityType::Spot,
        );
        assert_eq!(eu_spot.unwrap().usd_per_hour, dec!(9.51));
        assert!(
            c.lookup(
                "any",
                Some("EU-SOUTH-04A"),
                "gd-8xa100-i128",
                CapacityType::OnDemand
            )
            .is_none(),
            "no Europe on-demand price is published, and none is guessed"
        );
    }

    #[test]
    fn user_rows_win_and_discounts_apply_per_cluster() {
        let c = catalog();
        // 39.00 negotiated, less 10 % = 35.10.
        let p = c
            .lookup(
                "cks-prod",
                Some("US-EAST-04A"),
                "gd-8xh100ib-i128",
                CapacityType::OnDemand,
            )
            .unwrap();
        assert_eq!(p.usd_per_hour, dec!(35.10));
        assert!(
            p.source.contains("contract") && p.source.contains("10 %"),
            "{}",
            p.source
        );
        // Spot has no negotiated row: the shipped 19.71, less 10 % = 17.739.
        let s = c
            .lookup(
                "cks-prod",
                Some("US-EAST-04A"),
                "gd-8xh100ib-i128",
                CapacityType::Spot,
            )
            .unwrap();
        assert_eq!(s.usd_per_hour, dec!(17.739));
        // Another cluster pays list.
        let list = c
            .lookup(
                "other",
                Some("US-EAST-04A"),
                "gd-8xh100ib-i128",
                CapacityType::OnDemand,
            )
            .unwrap();
        assert_eq!(list.usd_per_hour, dec!(49.24));
        // A GKE type priced by region prefix.
        let gke = c
            .lookup(
                "gke",
                Some("europe-west4-a"),
                "n2-standard-8",
                CapacityType::Spot,
            )
            .unwrap();
        assert_eq!(
            gke.usd_per_hour,
            dec!(0.0874),
            "the user's row wins over the shipped one"
        );
        assert!(
            c.lookup(
                "gke",
                Some("asia-east1-a"),
                "n2-standard-8",
                CapacityType::Spot
            )
            .is_none()
        );
    }

    #[test]
    fn bad_files_say_which_line() {
        let e = PriceCatalog::parse_csv(
            "instance_type,region,cluster,on_demand_usd_h,spot_usd_h,discount_pct,source,as_of\nx,,,abc,,,,\n",
        )
        .unwrap_err();
        assert_eq!(e.line, 2);
        assert!(e.message.contains("not a decimal"), "{e}");
        let e = PriceCatalog::parse_csv(
            "instance_type,region,cluster,on_demand_usd_h,spot_usd_h,discount_pct,source,as_of\n*,,c,,,120,,\n",
        )
        .unwrap_err();
        assert!(e.message.contains("between 0 and 100"), "{e}");
    }
}
