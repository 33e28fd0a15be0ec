//! The bench's figures as one JSON object (`--json FILE`): the run's parameters, the machine,
//! and each figure by name (MB are MiB of RSS, ms are milliseconds, bytes per change are bytes
//! of SSE payload per node change), so two runs can be compared with `jq` or a diff.

use serde_json::{Map, Value, json};

use crate::Args;

pub struct Report {
    params: Value,
    figures: Map<String, Value>,
}

impl Report {
    pub fn new(args: &Args) -> Self {
        Self {
            params: json!({
                "nodes": args.nodes,
                "pods_per_node": args.pods_per_node,
                "rate_per_s": args.rate,
                "seconds": args.seconds,
                "fan_out_seconds": args.fan_out_seconds,
                "streams": args.streams,
                "quick": args.quick,
                "clusters": args.clusters,
                "nodes_per_pool": args.nodes_per_pool,
                "flood_rate_per_s": args.flood_rate,
                "flood_seconds": args.flood_seconds,
            }),
            figures: Map::new(),
        }
    }

    /// Records `value` under `name`, rounded to 0.1 (finer is noise here).
    pub fn add(&mut self, name: &str, value: f64) {
        self.figures
            .insert(name.to_string(), json!((value * 10.0).round() / 10.0));
    }

    /// Writes the report. Errors: the file cannot be written.
    pub fn write(&self, path: &std::path::Path) -> std::io::Result<()> {
        let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
        let doc = json!({
            "at": chrono::Utc::now().to_rfc3339(),
            "machine": {"cpus": cpus, "os": std::env::consts::OS, "arch": std::env::consts::ARCH},
            "params": self.params,
            "figures": self.figures,
        });
        std::fs::write(path, serde_json::to_vec_pretty(&doc).unwrap_or_default())
    }
}
