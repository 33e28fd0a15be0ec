//! A real Prometheus (Debian's `prometheus` package, `SPOTBOARD_TEST_PROMETHEUS`, where
//! `./tasks.sh test` installs it) on loopback, scraping what a test points it at: the judge
//! of the DCGM path is Prometheus' own query engine, not a mock of its API.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::common::sim::eventually;

/// A running Prometheus; killed when dropped.
pub struct Prometheus {
    child: Child,
    pub url: String,
    dir: tempfile::TempDir,
    port: u16,
}

impl Prometheus {
    /// Starts Prometheus on a free loopback port, scraping every second the targets written
    /// with [`Prometheus::scrape`] (file-based discovery), and waits until it is ready.
    ///
    /// Panics when `SPOTBOARD_TEST_PROMETHEUS` is not set or Prometheus does not start.
    pub async fn start() -> Self {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("targets.json"), "[]").unwrap();
        let config = format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: dcgm\n    \
             file_sd_configs:\n      - files: ['{}']\n        refresh_interval: 1s\n",
            dir.path().join("targets.json").display()
        );
        std::fs::write(dir.path().join("prometheus.yml"), config).unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut p = Self {
            child: spawn(dir.path(), port),
            url: format!("http://127.0.0.1:{port}"),
            dir,
            port,
        };
        p.wait_ready().await;
        p
    }

    /// Points the scrape at `metrics_url` (`http://host:port/metrics`).
    pub fn scrape(&self, metrics_url: &str) {
        let host = metrics_url
            .trim_start_matches("http://")
            .trim_end_matches("/metrics");
        let targets = serde_json::json!([{"targets": [host], "labels": {}}]);
        // Written whole and renamed, so discovery never reads half a file.
        let tmp = self.dir.path().join("targets.json.tmp");
        std::fs::write(&tmp, targets.to_string()).unwrap();
        std::fs::rename(tmp, self.dir.path().join("targets.json")).unwrap();
    }

    /// Stops Prometheus (an outage).
    pub fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts it again on the same port and data, after [`Prometheus::stop`].
    pub async fn restart(&mut self) {
        self.child = spawn(self.dir.path(), self.port);
        self.wait_ready().await;
    }

    async fn wait_ready(&mut self) {
        let ready = format!("{}/-/ready", self.url);
        eventually(Duration::from_secs(30), "Prometheus ready", || async {
            reqwest::get(&ready)
                .await
                .ok()?
                .status()
                .is_success()
                .then_some(())
        })
        .await;
    }

    /// An instant query, as a test reads Prometheus directly.
    pub async fn query(&self, promql: &str) -> serde_json::Value {
        crate::common::json_of(
            reqwest::Client::new()
                .get(format!("{}/api/v1/query", self.url))
                .query(&[("query", promql)]),
        )
        .await
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        self.stop();
    }
}

fn spawn(dir: &Path, port: u16) -> Child {
    let bin = std::env::var("SPOTBOARD_TEST_PROMETHEUS").unwrap_or_else(|_| {
        panic!(
            "SPOTBOARD_TEST_PROMETHEUS is not set: run the tests through ./tasks.sh test, which \
             installs Debian's prometheus"
        )
    });
    let log = std::fs::File::create(dir.join("log")).unwrap();
    Command::new(bin)
        .arg(format!(
            "--config.file={}",
            dir.join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("prometheus starts")
}
