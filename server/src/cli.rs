//! Command-line flags and environment.

use std::{net::SocketAddr, path::PathBuf};

use clap::{Args, Parser, Subcommand};

/// spotboard: a live dashboard for Kubernetes Spot node pools (CoreWeave CKS NodePools).
///
/// With no cluster flags it starts an embedded CKS-like cluster (one Kubernetes API server
/// per zone, kubectl works against it) and serves the dashboard on http://127.0.0.1:3000.
#[derive(Parser, Debug)]
#[command(name = "spotboard", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub serve: ServeArgs,
}

/// What to run.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve the dashboard (the default).
    Serve,
    /// Run only the embedded cluster, for kubectl and for benchmarks that measure the
    /// dashboard apart from it. Prints the kubeconfig path and waits.
    Embedded,
    /// Print the NodePool CustomResourceDefinition as YAML.
    Crd,
}

/// Flags of `serve` (and `embedded`, for the embedded cluster's flags).
#[derive(Args, Debug, Clone)]
pub struct ServeArgs {
    /// Address to serve on. Anything but loopback needs --auth-proxy-header.
    #[arg(
        global = true,
        long,
        env = "SPOTBOARD_LISTEN",
        default_value = "127.0.0.1:3000"
    )]
    pub listen: SocketAddr,

    /// Watch real clusters from this kubeconfig instead of the embedded cluster.
    #[arg(global = true, long, env = "SPOTBOARD_KUBECONFIG")]
    pub kubeconfig: Option<PathBuf>,

    /// A kubeconfig context to watch (repeatable). Default: the current context.
    #[arg(global = true, long = "context", requires = "kubeconfig")]
    pub contexts: Vec<String>,

    /// Watch the cluster this pod runs in (service account credentials).
    #[arg(global = true, long, conflicts_with = "kubeconfig")]
    pub in_cluster: bool,

    /// Where the embedded cluster writes its kubeconfig.
    /// Default: $TMPDIR/spotboard-embedded.kubeconfig.
    #[arg(global = true, long, env = "SPOTBOARD_EMBEDDED_KUBECONFIG")]
    pub embedded_kubeconfig: Option<PathBuf>,

    /// Embedded cluster: zones to simulate, one API server each.
    #[arg(
        global = true,
        long,
        value_delimiter = ',',
        default_value = "US-EAST-04A,US-CENTRAL-07A,EU-SOUTH-04A"
    )]
    pub zones: Vec<String>,

    /// Embedded cluster: GKE-style zones (node pools of Spot VMs), one API server
    /// each; `--gke-zones ''` for none.
    #[arg(
        global = true,
        long,
        value_delimiter = ',',
        default_value = "us-central1-a"
    )]
    pub gke_zones: Vec<String>,

    /// Embedded cluster: Karpenter-on-AWS-style zones, one API server each;
    /// `--karpenter-zones ''` for none.
    #[arg(
        global = true,
        long,
        value_delimiter = ',',
        default_value = "us-east-1a"
    )]
    pub karpenter_zones: Vec<String>,

    /// Embedded cluster: random seed; the same seed plays the same scenario.
    #[arg(global = true, long, env = "SPOTBOARD_SEED", default_value_t = 42)]
    pub seed: u64,

    /// Embedded cluster: time scale. 60 plays a 7-minute CKS preemption in 7 seconds.
    #[arg(global = true, long, env = "SPOTBOARD_SPEED", default_value_t = 1.0)]
    pub speed: f64,

    /// Embedded cluster: extra nodes for scale tests, spread over the zones.
    #[arg(global = true, long, env = "SPOTBOARD_NODES", default_value_t = 0)]
    pub nodes: usize,

    /// Embedded cluster: preempt a CKS spot node 20 s after start, a GKE one at 2 min 20 s and
    /// a Karpenter one at 4 min 20 s (then only the random rate), so the first visit to
    /// /preemptions shows a live countdown. `--demo-preemptions false` (or
    /// SPOTBOARD_DEMO_PREEMPTIONS=false) keeps the fleet quiet, as tests that count
    /// preemptions need.
    #[arg(
        global = true,
        long,
        env = "SPOTBOARD_DEMO_PREEMPTIONS",
        default_value_t = true,
        action = clap::ArgAction::Set,
        value_name = "BOOL"
    )]
    pub demo_preemptions: bool,

    /// Embedded cluster: pods on each extra node.
    #[arg(global = true, long, default_value_t = 5)]
    pub pods_per_node: usize,

    /// Embedded cluster: the extra nodes go in `bulk-spot-*` NodePools of at most this many
    /// (e.g. `--nodes 10000 --nodes-per-pool 5`: 2,000 pools).
    #[arg(global = true, long, default_value_t = 2_500, value_parser = clap::value_parser!(u32).range(1..))]
    pub nodes_per_pool: u32,

    /// Trust an authenticating proxy that puts the user's name in this header; required to
    /// listen on a non-loopback address.
    #[arg(global = true, long, env = "SPOTBOARD_AUTH_PROXY_HEADER")]
    pub auth_proxy_header: Option<String>,

    /// With --auth-proxy-header: create NodePools by impersonating the user the proxy names
    /// (Impersonate-User). spotboard's own account then needs the `impersonate` verb
    /// (server/deploy/rbac-impersonate.yaml); without this flag a create needs the user's own
    /// bearer token in the request's Authorization header.
    #[arg(
        global = true,
        long,
        env = "SPOTBOARD_IMPERSONATE",
        requires = "auth_proxy_header"
    )]
    pub impersonate: bool,

    /// With --impersonate: a header holding the user's groups, comma-separated
    /// (Impersonate-Group). Read only from requests the proxy vouched for; `system:` groups
    /// are never impersonated.
    #[arg(global = true, long, env = "SPOTBOARD_AUTH_PROXY_GROUPS_HEADER")]
    pub auth_proxy_groups_header: Option<String>,

    /// With --auth-proxy-header: the networks the proxy connects from (CIDR or an address,
    /// repeatable). Requests from anywhere else get 401 even when they carry the user
    /// header. Default: loopback (a proxy on this host or in this pod).
    #[arg(
        global = true,
        long = "trusted-proxy",
        env = "SPOTBOARD_TRUSTED_PROXY",
        value_delimiter = ','
    )]
    pub trusted_proxies: Vec<String>,

    /// With --auth-proxy-header: a shared secret the proxy sends in the
    /// `X-Spotboard-Proxy-Secret` header; when set, it is required on every request, from
    /// whatever address. Prefer the environment variable: flags show in `ps`.
    #[arg(
        global = true,
        long,
        env = "SPOTBOARD_AUTH_PROXY_SECRET",
        hide_env_values = true
    )]
    pub auth_proxy_secret: Option<String>,

    /// A Host name this server answers to (repeatable), `name` for any port or `name:port`.
    /// The listen address and localhost/127.0.0.1/[::1] at its port are always allowed;
    /// other Host names get 421 (DNS rebinding). Behind a proxy, name the host users type.
    #[arg(
        global = true,
        long = "allowed-host",
        env = "SPOTBOARD_ALLOWED_HOST",
        value_delimiter = ','
    )]
    pub allowed_hosts: Vec<String>,

    /// Live streams one client may hold open at once (a client is the proxy's user, or the
    /// peer address without a proxy); more get 429.
    #[arg(global = true, long, default_value_t = 32)]
    pub streams_per_client: usize,

    /// Open connections the server holds at most; one past it is closed at once, so a flood
    /// cannot take the file descriptors the watches and the ledger need. Each live stream is
    /// one connection; idle ones are closed after 10 s.
    #[arg(global = true, long, default_value_t = 10_000)]
    pub max_connections: usize,

    /// Also serve `GET /metrics` (and nothing else) on this address, for Prometheus inside the
    /// cluster: no Host or Origin check there (a scrape names the pod's IP), so keep it off the
    /// network people reach (the deployment's NetworkPolicy admits only the monitoring
    /// namespace to it). The dashboard's own `/metrics` stays as it is.
    #[arg(global = true, long, env = "SPOTBOARD_METRICS_LISTEN")]
    pub metrics_listen: Option<SocketAddr>,

    /// Open connections one peer address may hold at once, within --max-connections; one
    /// past it is closed at once. The trusted proxy's addresses (--trusted-proxy, with
    /// --auth-proxy-header) are held only to --max-connections: every user comes through them.
    #[arg(global = true, long, default_value_t = crate::http::CONNECTIONS_PER_PEER)]
    pub connections_per_peer: usize,

    /// Seconds a request's body has to arrive in full once its headers have (which have 10 s):
    /// a body still arriving after it fails and its connection is closed.
    #[arg(global = true, long, default_value_t = crate::http::BODY_TIMEOUT.as_secs(), value_parser = clap::value_parser!(u64).range(1..))]
    pub request_body_seconds: u64,

    /// Hide the Create Spot Node Pool form and refuse every create and dry run.
    #[arg(global = true, long, env = "SPOTBOARD_READ_ONLY")]
    pub read_only: bool,

    /// Creates (not dry runs) allowed per user per minute.
    #[arg(global = true, long, default_value_t = 10)]
    pub creates_per_minute: u32,

    /// Dry runs and access reviews (SelfSubjectAccessReview, cached 30 s) sent for one user
    /// per minute.
    #[arg(global = true, long, default_value_t = 120)]
    pub api_calls_per_minute: u32,

    /// A capacity feed to read (repeatable): a JSON file or an http(s) URL in the format of
    /// `spotboard_core::model::capacity` (docs/operations.md "Capacity feeds"). The embedded cluster's
    /// zones are added by themselves.
    #[arg(
        global = true,
        long = "capacity-feed",
        env = "SPOTBOARD_CAPACITY_FEED",
        // A feed URL can carry a token in its query.
        hide_env_values = true,
        value_delimiter = ','
    )]
    pub capacity_feeds: Vec<String>,

    /// Seconds between reads of each capacity feed.
    #[arg(global = true, long, default_value_t = 15)]
    pub capacity_poll_seconds: u64,

    /// The pod label whose value names a pod's team on the showback (`/savings` by team,
    /// `GET /api/v1/showback?by=team`). A label key: `[prefix/]name`.
    #[arg(global = true, long, env = "SPOTBOARD_TEAM_LABEL", default_value = "team", value_parser = label_key)]
    pub team_label: String,

    /// Seconds between looks at the pods for showback's pod intervals (an end is seen this
    /// late at most).
    #[arg(
        global = true,
        long,
        env = "SPOTBOARD_SHOWBACK_SAMPLE_SECONDS",
        default_value_t = 15
    )]
    pub showback_sample_seconds: u64,

    /// Seconds between keeps of each listed cluster's pools and nodes in the ledger, which a
    /// restart shows (marked stale since then) until the cluster is listed again; 0 keeps
    /// and restores nothing. Not for the embedded cluster, a new world each run.
    #[arg(
        global = true,
        long,
        env = "SPOTBOARD_LAST_KNOWN_SECONDS",
        default_value_t = 60
    )]
    pub last_known_seconds: u64,

    /// The ledger's database: `postgres://…` for replicated deployments, or `sqlite://PATH`.
    /// Default: the SQLite file of --ledger. It can hold a password: its environment value
    /// is never shown in `--help`.
    #[arg(
        global = true,
        long,
        env = "SPOTBOARD_DATABASE_URL",
        hide_env_values = true
    )]
    pub database_url: Option<String>,

    /// The Lease (`NAMESPACE/NAME`, on the first cluster: in-cluster, or the first --context)
    /// that elects which replica writes a PostgreSQL ledger; replicas sharing one
    /// --database-url name the same Lease. Default with --in-cluster: `spotboard-ledger` in
    /// the pod's namespace; otherwise no election unless given. Not used with SQLite (one
    /// process per file) or the embedded cluster (each run records its own clusters).
    #[arg(global = true, long, env = "SPOTBOARD_LEADER_LEASE")]
    pub leader_lease: Option<String>,

    /// How long a replica that stops renewing the Lease keeps it, in seconds; it stops writing
    /// after two thirds of this, and another replica takes over after all of it.
    #[arg(global = true, long, default_value_t = 15)]
    pub lease_duration_seconds: u64,

    /// The SQLite ledger file used without --database-url.
    #[arg(
        global = true,
        long,
        env = "SPOTBOARD_LEDGER",
        default_value = "spotboard.sqlite"
    )]
    pub ledger: PathBuf,

    /// A price file (CSV: instance_type,region,cluster,on_demand_usd_h,spot_usd_h,discount_pct,
    /// source,as_of) whose rows win over the shipped CoreWeave prices.
    #[arg(global = true, long, env = "SPOTBOARD_PRICES")]
    pub prices: Option<PathBuf>,

    /// A reserved (committed-use) price to weigh spot against, in percent off on-demand
    /// (e.g. 40): the savings page then says above which share of GPU-hours lost to
    /// preemptions that reserved price would be cheaper than spot. Greater than 0, below 100.
    #[arg(global = true, long, env = "SPOTBOARD_RESERVED_DISCOUNT_PCT", value_parser = discount_pct)]
    pub reserved_discount_pct: Option<rust_decimal::Decimal>,

    /// Preemptions in one cluster less than this many seconds apart form one wave.
    #[arg(global = true, long, default_value_t = 60)]
    pub wave_gap_seconds: u64,

    /// A wave of at least this many preempted nodes is an alert (and counts in
    /// `spotboard_preemption_waves_total`); a lone preemption is routine on spot.
    #[arg(global = true, long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    pub wave_min_nodes: u32,

    /// A NodePool's Quota or Capacity condition False for longer than this many minutes (by
    /// its lastTransitionTime) is an alert.
    #[arg(
        global = true,
        long,
        env = "SPOTBOARD_ALERT_CONDITION_MINUTES",
        default_value_t = 15
    )]
    pub alert_condition_minutes: u32,

    /// Advise moving a fallback pair's on-demand nodes back to spot once its spot pools have
    /// had Capacity True for this many minutes (and no queued nodes now) and the Capacity
    /// Finder ranks their zone well.
    #[arg(
        global = true,
        long,
        env = "SPOTBOARD_FALLBACK_MOVE_BACK_MINUTES",
        default_value_t = crate::ledger::MOVE_BACK_AFTER_MINUTES
    )]
    pub fallback_move_back_minutes: u32,

    /// A pod requesting GPUs waiting for a node (unschedulable or gated) for longer than
    /// this many minutes (by its PodScheduled condition's lastTransitionTime) is a
    /// `pending-work` alert for its cluster.
    #[arg(
        global = true,
        long,
        env = "SPOTBOARD_ALERT_PENDING_MINUTES",
        default_value_t = 15
    )]
    pub alert_pending_minutes: u32,

    /// Flag a pool, zone or instance type still running spot nodes whose preemption rate is
    /// above this percent (over any of 24 h / 7 d / 30 d), with advice for its provider.
    #[arg(
        global = true,
        long,
        env = "SPOTBOARD_RATE_ALERT_PCT",
        default_value_t = 10.0
    )]
    pub rate_alert_pct: f64,

    /// POST every alert here as JSON when it fires and when it resolves (schema
    /// `spotboard.dev/alert/v1`: docs/operations.md "Alerts"). Webhook URLs often carry a token (Slack's
    /// do): its environment value is never shown in `--help`.
    #[arg(
        global = true,
        long,
        env = "SPOTBOARD_ALERT_WEBHOOK",
        hide_env_values = true
    )]
    pub alert_webhook: Option<String>,

    /// A Prometheus that scrapes NVIDIA's DCGM exporter: each GPU node's utilisation
    /// (`DCGM_FI_DEV_GPU_UTIL`, mean over `--dcgm-range`) is shown beside its allocation
    /// (`GET /api/v1/allocation` reads `source: dcgm`, the pool page a "GPU util" column).
    /// Without it, allocation is by the pods' requests only. `http://` or `https://`, with a
    /// path prefix where Prometheus' API sits under one.
    #[arg(global = true, long, env = "SPOTBOARD_PROMETHEUS_URL", value_parser = http_url)]
    pub prometheus_url: Option<String>,

    /// A bearer token for `--prometheus-url` (set it by the environment: a flag's value shows
    /// in the process list).
    #[arg(
        global = true,
        long,
        env = "SPOTBOARD_PROMETHEUS_TOKEN",
        hide_env_values = true
    )]
    pub prometheus_token: Option<String>,

    /// The range each node's GPU utilisation is averaged over: a Prometheus duration from 1m
    /// to 7d.
    #[arg(
        global = true,
        long,
        env = "SPOTBOARD_DCGM_RANGE",
        default_value = "1h"
    )]
    pub dcgm_range: crate::dcgm::Range,

    /// The label of the DCGM exporter's series that holds the node name (`Hostname` as the
    /// exporter writes it; `node` or `kubernetes_node` where a relabelling put it there).
    #[arg(global = true, long, env = "SPOTBOARD_DCGM_NODE_LABEL", default_value = "Hostname", value_parser = crate::dcgm::query::label_name)]
    pub dcgm_node_label: String,

    /// Seconds between reads of GPU utilisation from `--prometheus-url`.
    #[arg(global = true, long, default_value_t = 30)]
    pub dcgm_poll_seconds: u64,

    /// Directory of the built site (wasm, JS, CSS): `./tasks.sh serve`/`release` build it there.
    #[arg(
        global = true,
        long,
        env = "LEPTOS_SITE_ROOT",
        default_value = "target/site"
    )]
    pub site_root: String,
}

impl ServeArgs {
    /// The ledger's database URL, defaulted to the SQLite file.
    pub fn database_url(&self) -> String {
        self.database_url
            .clone()
            .unwrap_or_else(|| format!("sqlite://{}", self.ledger.display()))
    }

    /// The leader Lease's (namespace, name): `--leader-lease`, or with `--in-cluster`
    /// `spotboard-ledger` in `pod_namespace`; `None` for no election.
    ///
    /// Errors: the flag is not `NAMESPACE/NAME`.
    pub fn leader_lease(
        &self,
        pod_namespace: Option<&str>,
    ) -> Result<Option<(String, String)>, String> {
        let Some(lease) = &self.leader_lease else {
            return Ok(pod_namespace
                .filter(|_| self.in_cluster)
                .map(|ns| (ns.to_string(), "spotboard-ledger".to_string())));
        };
        match lease.split_once('/') {
            Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
                Ok(Some((ns.to_string(), name.to_string())))
            }
            _ => Err(format!(
                "--leader-lease {lease:?}: expected NAMESPACE/NAME, e.g. spotboard/spotboard-ledger"
            )),
        }
    }

    /// The embedded kubeconfig path, defaulted.
    pub fn embedded_kubeconfig_path(&self) -> PathBuf {
        self.embedded_kubeconfig
            .clone()
            .unwrap_or_else(|| std::env::temp_dir().join("spotboard-embedded.kubeconfig"))
    }
}

/// A discount in percent: a decimal number greater than 0 and below 100.
/// A label key for `--team-label`.
fn label_key(v: &str) -> Result<String, String> {
    match spotboard_core::domain::validation::qualified_name_problem(v) {
        None => Ok(v.to_string()),
        Some(p) => Err(format!("--team-label is not a label key: {p}")),
    }
}

fn http_url(v: &str) -> Result<String, String> {
    if (v.starts_with("http://") || v.starts_with("https://")) && v.len() > "https://".len() {
        Ok(v.to_string())
    } else {
        Err("expected an http:// or https:// URL".into())
    }
}

fn discount_pct(s: &str) -> std::result::Result<rust_decimal::Decimal, String> {
    let d: rust_decimal::Decimal = s
        .trim()
        .parse()
        .map_err(|_| "expected a percent such as 40 or 37.5".to_string())?;
    if d <= rust_decimal::Decimal::ZERO || d >= rust_decimal::Decimal::ONE_HUNDRED {
        return Err("a discount is greater than 0 and below 100 (percent)".into());
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use rust_decimal::Decimal;

    use super::Cli;

    fn reserved(v: &str) -> Result<Option<Decimal>, String> {
        Cli::try_parse_from([
            "spotboard".to_string(),
            format!("--reserved-discount-pct={v}"),
        ])
        .map(|c| c.serve.reserved_discount_pct)
        .map_err(|e| e.to_string())
    }

    #[test]
    fn a_reserved_discount_is_a_percent_between_0_and_100() {
        assert_eq!(reserved("40"), Ok(Some(Decimal::new(40, 0))));
        assert_eq!(reserved(" 37.5"), Ok(Some(Decimal::new(375, 1))));
        for bad in ["0", "100", "140", "-5", "forty", "1e999"] {
            let e = reserved(bad).unwrap_err();
            assert!(e.contains("--reserved-discount-pct"), "{bad}: {e}");
        }
        let none = Cli::try_parse_from(["spotboard"]).unwrap();
        assert_eq!(none.serve.reserved_discount_pct, None);
    }

    #[test]
    fn the_dcgm_flags_refuse_what_would_not_make_a_query() {
        let parse = |args: &[&str]| {
            Cli::try_parse_from(std::iter::once("spotboard").chain(args.iter().copied()))
                .map(|c| c.serve)
                .map_err(|e| e.to_string())
        };
        let ok = parse(&["--prometheus-url=http://prom:9090", "--dcgm-range=6h"]).unwrap();
        assert_eq!(ok.prometheus_url.as_deref(), Some("http://prom:9090"));
        assert_eq!(ok.dcgm_range.as_str(), "6h");
        assert_eq!(ok.dcgm_node_label, "Hostname");
        assert!(parse(&["--prometheus-url=prom:9090"]).is_err());
        assert!(parse(&["--dcgm-range=30d"]).unwrap_err().contains("7d"));
        assert!(parse(&["--dcgm-node-label=node) or vector(1"]).is_err());
    }

    #[test]
    fn the_team_label_is_a_label_key() {
        let parse = |v: &str| {
            Cli::try_parse_from(["spotboard".to_string(), format!("--team-label={v}")])
                .map(|c| c.serve.team_label)
                .map_err(|e| e.to_string())
        };
        assert_eq!(parse("example.com/team"), Ok("example.com/team".into()));
        assert!(parse("has space").unwrap_err().contains("--team-label"));
        let none = Cli::try_parse_from(["spotboard"]).unwrap();
        assert_eq!(none.serve.team_label, "team");
    }
}
