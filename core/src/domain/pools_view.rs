//! The Node Pools dashboard's filters and sort order, as pure functions of the URL query.
//!
//! Filters, sort, the hidden columns and the page live in the URL
//! (`?zone=US-EAST-04A&provider=cks&capacity=spot&problem=1&sort=current&desc=1&hide=class,age&page=2&per=50`)
//! so a filtered view can be bookmarked and shared.

use std::cmp::Ordering;

use super::paging::{DEFAULT_PAGE_SIZE, Page, page_size};
use crate::model::PoolRow;

/// A pool's waiting work for [`SortKey::Waiting`]: `(GPUs, pods, since)`.
pub type WaitingKey = (u32, u32, Option<chrono::DateTime<chrono::Utc>>);

/// Columns the dashboard can sort by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SortKey {
    #[default]
    Name,
    Cluster,
    Provider,
    CapacityType,
    InstanceType,
    ComputeClass,
    Target,
    Current,
    Queued,
    InProgress,
    /// The work waiting for the pool: its waiting pods' GPUs, then pods, then the longest
    /// wait (rows from the stream, not the pool's own; see [`PoolQuery::compare_with`]).
    Waiting,
    Age,
    Problems,
}

impl SortKey {
    /// Every key with its URL name.
    pub const ALL: [(SortKey, &'static str); 13] = [
        (SortKey::Name, "name"),
        (SortKey::Cluster, "cluster"),
        (SortKey::Provider, "provider"),
        (SortKey::CapacityType, "capacity"),
        (SortKey::InstanceType, "type"),
        (SortKey::ComputeClass, "class"),
        (SortKey::Target, "target"),
        (SortKey::Current, "current"),
        (SortKey::Queued, "queued"),
        (SortKey::InProgress, "inprogress"),
        (SortKey::Waiting, "waiting"),
        (SortKey::Age, "age"),
        (SortKey::Problems, "problems"),
    ];

    /// The URL name of this key.
    pub fn as_str(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(k, _)| *k == self)
            .map(|(_, s)| *s)
            .unwrap_or("name")
    }

    /// Parses a URL name; unknown names sort by name.
    pub fn parse(s: &str) -> Self {
        Self::ALL
            .iter()
            .find(|(_, n)| *n == s)
            .map(|(k, _)| *k)
            .unwrap_or_default()
    }
}

/// The pools table's columns a person may hide (`hide=` in the URL), with their headings. The
/// pool's name is always shown.
pub const OPTIONAL_COLUMNS: [(&str, &str); 14] = [
    ("where", "Zone / cluster"),
    ("provider", "Provider"),
    ("capacity", "Capacity type"),
    ("type", "Instance type"),
    ("class", "computeClass"),
    ("target", "Target"),
    ("current", "Current"),
    ("queued", "Queued"),
    ("waiting", "Waiting pods"),
    ("inprogress", "In progress"),
    ("minmax", "Min / max"),
    ("conditions", "Conditions"),
    ("problems", "Problems"),
    ("age", "Age"),
];

/// How much room a pools table row takes (`density=` in the URL). Both keep a pool on one
/// line; compact trims the padding so a laptop screen holds more pools, as k9s does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Density {
    #[default]
    Comfortable,
    Compact,
}

impl Density {
    /// The URL value and the CSS variant.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Comfortable => "comfortable",
            Self::Compact => "compact",
        }
    }

    /// Reads `density=`; anything but `compact` is the default.
    pub fn parse(s: Option<&str>) -> Self {
        match s {
            Some("compact") => Self::Compact,
            _ => Self::Comfortable,
        }
    }
}

/// The dashboard's filter and sort state, as held in the URL query.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolQuery {
    /// Keep only pools in this zone (or, when the zone is unknown, this cluster).
    pub zone: Option<String>,
    /// Keep only pools of this computeClass.
    pub class: Option<String>,
    /// Keep only pools of this provider (`cks`, `gke`, `karpenter`).
    pub provider: Option<String>,
    /// Keep only pools of this capacity type (`spot`, `on-demand`, …).
    pub capacity: Option<String>,
    /// Keep only pools of this instance type.
    pub instance_type: Option<String>,
    /// Keep only pools with a problem (see [`PoolRow::has_problem`]).
    pub problem: bool,
    /// Free-text match on the pool name.
    pub text: Option<String>,
    pub sort: SortKey,
    pub desc: bool,
    /// Columns hidden, by their [`OPTIONAL_COLUMNS`] id, in that list's order.
    pub hidden: Vec<String>,
    /// The page of the table asked for, 1-based (`page=`).
    pub page: usize,
    /// Rows per page, one of [`super::paging::PAGE_SIZES`] (`per=`).
    pub per_page: usize,
    /// Row height (`density=`).
    pub density: Density,
}

impl Default for PoolQuery {
    fn default() -> Self {
        Self::from_params(|_| None)
    }
}

impl PoolQuery {
    /// Reads the query from URL parameters (`get(name)` returns the value of `?name=`).
    pub fn from_params(get: impl Fn(&str) -> Option<String>) -> Self {
        let non_empty = |k: &str| get(k).filter(|v| !v.is_empty());
        Self {
            zone: non_empty("zone"),
            class: non_empty("class"),
            provider: non_empty("provider"),
            capacity: non_empty("capacity"),
            instance_type: non_empty("type"),
            problem: matches!(get("problem").as_deref(), Some("1" | "true")),
            text: non_empty("q"),
            sort: get("sort").map(|s| SortKey::parse(&s)).unwrap_or_default(),
            desc: matches!(get("desc").as_deref(), Some("1" | "true")),
            // Unknown ids are dropped: an old bookmark cannot hide the name.
            hidden: {
                let listed = get("hide").unwrap_or_default();
                let listed: Vec<&str> = listed.split(',').map(str::trim).collect();
                OPTIONAL_COLUMNS
                    .iter()
                    .filter(|(id, _)| listed.contains(id))
                    .map(|(id, _)| id.to_string())
                    .collect()
            },
            page: get("page").and_then(|p| p.parse().ok()).unwrap_or(1).max(1),
            per_page: page_size(get("per").as_deref()),
            density: Density::parse(get("density").as_deref()),
        }
    }

    /// The page of `total` matching rows this query shows.
    pub fn page_of(&self, total: usize) -> Page {
        Page::of(self.page, self.per_page, total)
    }

    /// This query, set by a person who was looking at `before`: a new filter, sort or page
    /// size starts again at page 1 (page 7 of a different list means nothing); showing or
    /// hiding a column or changing the density keeps the page.
    pub fn navigated_from(mut self, before: &PoolQuery) -> Self {
        let same_list = Self {
            page: before.page,
            hidden: before.hidden.clone(),
            density: before.density,
            ..self.clone()
        } == *before;
        if !same_list {
            self.page = 1;
        }
        self
    }

    /// Whether column `id` is shown.
    pub fn shows(&self, id: &str) -> bool {
        !self.hidden.iter().any(|h| h == id)
    }

    /// This query with column `id` shown or hidden.
    pub fn with_column(&self, id: &str, shown: bool) -> Self {
        let mut q = self.clone();
        q.hidden.retain(|h| h != id);
        if !shown {
            q.hidden.push(id.to_string());
        }
        q.hidden = OPTIONAL_COLUMNS
            .iter()
            .filter(|(c, _)| q.hidden.iter().any(|h| h == c))
            .map(|(c, _)| c.to_string())
            .collect();
        q
    }

    /// The URL parameters of this query, defaults left out.
    pub fn to_params(&self) -> Vec<(&'static str, String)> {
        let mut p = Vec::new();
        if let Some(z) = &self.zone {
            p.push(("zone", z.clone()));
        }
        if let Some(c) = &self.class {
            p.push(("class", c.clone()));
        }
        if let Some(v) = &self.provider {
            p.push(("provider", v.clone()));
        }
        if let Some(v) = &self.capacity {
            p.push(("capacity", v.clone()));
        }
        if let Some(t) = &self.instance_type {
            p.push(("type", t.clone()));
        }
        if self.problem {
            p.push(("problem", "1".into()));
        }
        if let Some(q) = &self.text {
            p.push(("q", q.clone()));
        }
        if self.sort != SortKey::Name {
            p.push(("sort", self.sort.as_str().into()));
        }
        if self.desc {
            p.push(("desc", "1".into()));
        }
        if !self.hidden.is_empty() {
            p.push(("hide", self.hidden.join(",")));
        }
        if self.page > 1 {
            p.push(("page", self.page.to_string()));
        }
        if self.per_page != DEFAULT_PAGE_SIZE {
            p.push(("per", self.per_page.to_string()));
        }
        if self.density != Density::Comfortable {
            p.push(("density", self.density.as_str().into()));
        }
        p
    }

    /// Whether a pool passes every filter.
    pub fn matches(&self, row: &PoolRow) -> bool {
        let zone_ok = self
            .zone
            .as_ref()
            .is_none_or(|z| row.zone.as_deref().unwrap_or(&row.cluster) == z);
        let class_ok = self
            .class
            .as_ref()
            .is_none_or(|c| row.compute_class_text() == c)
            && self
                .provider
                .as_ref()
                .is_none_or(|v| row.provider.as_str() == v)
            && self
                .capacity
                .as_ref()
                .is_none_or(|v| row.capacity_type.as_str() == v);
        let type_ok = self
            .instance_type
            .as_ref()
            .is_none_or(|t| &row.instance_type == t);
        let text_ok = self
            .text
            .as_ref()
            // ASCII is enough: NodePool names are RFC 1123 (lower-case letters, digits, `-`, `.`), and
            // Unicode case mapping would carry its tables into the dashboard's wasm.
            .is_none_or(|q| {
                row.name
                    .to_ascii_lowercase()
                    .contains(&q.to_ascii_lowercase())
            });
        zone_ok && class_ok && type_ok && text_ok && (!self.problem || row.has_problem())
    }

    /// The order of two pools under this query's sort; ties fall back to cluster then name so
    /// the order is stable while rows update. Sorting by [`SortKey::Waiting`] needs the
    /// waiting rows: without them ([`Self::compare_with`]) every pool waits for nothing.
    pub fn compare(&self, a: &PoolRow, b: &PoolRow) -> Ordering {
        self.compare_with(a, b, |_| None)
    }

    /// [`Self::compare`], with `waiting` giving a pool's waiting work: `(GPUs, pods, since)`
    /// of the pods that could land on it, `None` when none wait. More GPUs, then more pods,
    /// then the longer wait (the earlier since) sorts after, so descending puts the pool with
    /// the most waiting GPU work first.
    pub fn compare_with(
        &self,
        a: &PoolRow,
        b: &PoolRow,
        waiting: impl Fn(&PoolRow) -> Option<WaitingKey>,
    ) -> Ordering {
        let primary = match self.sort {
            SortKey::Waiting => {
                // An unknown since (no PodScheduled time) ranks as the shortest wait.
                let key = |r: &PoolRow| {
                    waiting(r).map(|(gpus, pods, since)| (gpus, pods, since.map(std::cmp::Reverse)))
                };
                key(a).cmp(&key(b))
            }
            SortKey::Name => a.name.cmp(&b.name),
            SortKey::Cluster => a.cluster.cmp(&b.cluster),
            SortKey::Provider => a.provider.as_str().cmp(b.provider.as_str()),
            SortKey::CapacityType => a.capacity_type.as_str().cmp(b.capacity_type.as_str()),
            SortKey::InstanceType => a.instance_type.cmp(&b.instance_type),
            SortKey::ComputeClass => a.compute_class_text().cmp(b.compute_class_text()),
            SortKey::Target => a.target_nodes.cmp(&b.target_nodes),
            SortKey::Current => a.current_nodes.cmp(&b.current_nodes),
            SortKey::Queued => a.queued_nodes.cmp(&b.queued_nodes),
            SortKey::InProgress => a.in_progress.cmp(&b.in_progress),
            // Newest first reads as "youngest age first" only with desc; keep ascending = oldest.
            SortKey::Age => a.created.cmp(&b.created),
            SortKey::Problems => (a.problems.len() + usize::from(a.malformed.is_some()))
                .cmp(&(b.problems.len() + usize::from(b.malformed.is_some()))),
        };
        let primary = if self.desc {
            primary.reverse()
        } else {
            primary
        };
        primary
            .then_with(|| a.cluster.cmp(&b.cluster))
            .then_with(|| a.name.cmp(&b.name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(name: &str, cluster: &str, class: &str, current: i32, problem: bool) -> PoolRow {
        PoolRow {
            key: format!("{cluster}/{name}"),
            name: name.into(),
            cluster: cluster.into(),
            zone: Some(cluster.to_uppercase()),
            compute_class: Some(class.into()),
            instance_type: "gd-8xa100-i128".into(),
            current_nodes: Some(current),
            problems: if problem {
                vec!["quota".into()]
            } else {
                vec![]
            },
            ..Default::default()
        }
    }

    #[test]
    fn query_round_trips_through_params() {
        let q = PoolQuery {
            zone: Some("US-EAST-04A".into()),
            class: Some("spot".into()),
            problem: true,
            sort: SortKey::Current,
            desc: true,
            ..Default::default()
        };
        let params = q.to_params();
        let back = PoolQuery::from_params(|k| {
            params.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
        });
        assert_eq!(back, q);
        assert!(PoolQuery::default().to_params().is_empty());
    }

    #[test]
    fn hidden_columns_round_trip_in_column_order_and_ignore_unknown_ids() {
        let q = PoolQuery::default()
            .with_column("age", false)
            .with_column("provider", false);
        assert_eq!(
            q.hidden,
            ["provider", "age"],
            "the table's order, not the clicks'"
        );
        assert!(!q.shows("age") && q.shows("target"));
        let params = q.to_params();
        assert_eq!(params, [("hide", "provider,age".to_string())]);
        let back =
            PoolQuery::from_params(|k| (k == "hide").then(|| "age,name,bogus,provider".into()));
        assert_eq!(
            back.hidden,
            ["provider", "age"],
            "name cannot be hidden; unknown ids drop"
        );
        assert!(
            q.with_column("age", true)
                .with_column("provider", true)
                .to_params()
                .is_empty()
        );
    }

    #[test]
    fn filters_combine() {
        let rows = [
            pool("a", "us-east-04a", "spot", 1, false),
            pool("b", "us-east-04a", "default", 2, true),
            pool("c", "eu-south-04a", "spot", 3, true),
        ];
        let q = PoolQuery {
            class: Some("spot".into()),
            problem: true,
            ..Default::default()
        };
        let kept: Vec<_> = rows
            .iter()
            .filter(|r| q.matches(r))
            .map(|r| r.name.as_str())
            .collect();
        assert_eq!(kept, ["c"]);
        let q = PoolQuery {
            zone: Some("US-EAST-04A".into()),
            ..Default::default()
        };
        assert_eq!(rows.iter().filter(|r| q.matches(r)).count(), 2);
    }

    #[test]
    fn sort_is_stable_and_reversible() {
        // Input out of the tie-break order: a stable sort alone would keep a before b.
        let rows = vec![
            pool("a", "z2", "spot", 5, false),
            pool("b", "z1", "spot", 5, false),
            pool("c", "z1", "spot", 1, false),
        ];
        let sorted = |desc: bool| {
            let q = PoolQuery {
                sort: SortKey::Current,
                desc,
                ..Default::default()
            };
            let mut r = rows.clone();
            r.sort_by(|a, b| q.compare(a, b));
            r.iter().map(|r| r.name.clone()).collect::<Vec<_>>()
        };
        // Equal counts fall back to cluster, then name, whichever the direction.
        assert_eq!(sorted(true), ["b", "a", "c"]);
        assert_eq!(sorted(false), ["c", "b", "a"]);
    }

    /// Descending by waiting work: most GPUs first, then most pods, then the longest wait;
    /// pools nothing waits for last, by cluster and name.
    #[test]
    fn sort_by_waiting_work_puts_the_most_waiting_gpus_first() {
        use chrono::TimeZone;
        let at = |h| chrono::Utc.with_ymd_and_hms(2026, 11, 28, h, 0, 0).single();
        let rows = vec![
            pool("idle", "z1", "spot", 1, false),
            pool("cpu", "z1", "spot", 1, false),
            pool("gpu-new", "z1", "spot", 1, false),
            pool("gpu-old", "z1", "spot", 1, false),
            pool("gpu-big", "z1", "spot", 1, false),
            pool("gpu-unknown", "z1", "spot", 1, false),
        ];
        let waiting = |r: &PoolRow| match r.name.as_str() {
            "cpu" => Some((0, 3, at(8))),
            "gpu-new" => Some((8, 1, at(9))),
            "gpu-old" => Some((8, 1, at(7))),
            "gpu-big" => Some((64, 8, at(9))),
            "gpu-unknown" => Some((8, 1, None)),
            _ => None,
        };
        let q = PoolQuery {
            sort: SortKey::Waiting,
            desc: true,
            ..Default::default()
        };
        let mut r = rows.clone();
        r.sort_by(|a, b| q.compare_with(a, b, waiting));
        assert_eq!(
            r.iter().map(|r| r.name.as_str()).collect::<Vec<_>>(),
            [
                "gpu-big",
                "gpu-old",
                "gpu-new",
                "gpu-unknown",
                "cpu",
                "idle"
            ]
        );
        assert_eq!(SortKey::parse("waiting"), SortKey::Waiting);
        // Without the waiting rows, nothing waits: the tie-break order.
        r.sort_by(|a, b| q.compare(a, b));
        assert_eq!(r[0].name, "cpu");
    }

    #[test]
    fn the_page_round_trips_and_a_new_filter_starts_at_page_one() {
        let on_page_3 = PoolQuery::from_params(|k| match k {
            "page" => Some("3".into()),
            "per" => Some("50".into()),
            _ => None,
        });
        assert_eq!((on_page_3.page, on_page_3.per_page), (3, 50));
        assert_eq!(
            on_page_3.to_params(),
            [("page", "3".to_string()), ("per", "50".to_string())]
        );
        assert_eq!(on_page_3.page_of(120).rows, 100..120);

        let hid_a_column = on_page_3.with_column("age", false);
        assert_eq!(hid_a_column.navigated_from(&on_page_3).page, 3);
        let next = PoolQuery {
            page: 4,
            ..on_page_3.clone()
        };
        assert_eq!(next.navigated_from(&on_page_3).page, 4);
        for changed in [
            PoolQuery {
                zone: Some("US-EAST-04A".into()),
                ..on_page_3.clone()
            },
            PoolQuery {
                sort: SortKey::Current,
                ..on_page_3.clone()
            },
            PoolQuery {
                per_page: 25,
                ..on_page_3.clone()
            },
        ] {
            assert_eq!(
                changed.clone().navigated_from(&on_page_3).page,
                1,
                "{changed:?}"
            );
        }
        let bogus = PoolQuery::from_params(|k| (k == "page").then(|| "0".into()));
        assert_eq!(bogus.page, 1);
    }

    #[test]
    fn density_round_trips_and_keeps_the_page() {
        let compact = PoolQuery::from_params(|k| match k {
            "density" => Some("compact".into()),
            "page" => Some("2".into()),
            _ => None,
        });
        assert_eq!(compact.density, Density::Compact);
        assert_eq!(
            compact.to_params(),
            [
                ("page", "2".to_string()),
                ("density", "compact".to_string())
            ]
        );
        let comfortable = PoolQuery {
            density: Density::Comfortable,
            ..compact.clone()
        };
        assert_eq!(comfortable.navigated_from(&compact).page, 2);
        assert_eq!(
            PoolQuery::from_params(|k| (k == "density").then(|| "bogus".into())).density,
            Density::Comfortable
        );
        assert!(PoolQuery::default().to_params().is_empty());
    }
}
