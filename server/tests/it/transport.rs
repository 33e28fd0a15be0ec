//! How responses travel: compressed where that helps, never where it would hold the live
//! stream back.

use std::time::Duration;

use crate::common::start;

const ZONE: &str = "US-EAST-04A";

/// Pages and the JSON API are gzipped for a browser that asks (a first visit downloads a
/// few megabytes otherwise); the live stream never is, since a compressor would hold its
/// events back. On spotboard's own runtime: a page rendered into the compressor needs its
/// deeper worker stacks.
#[test]
fn pages_and_the_api_are_gzipped_but_the_stream_is_not() {
    server::run::runtime().unwrap().block_on(async {
        let d = start(&[ZONE], 60.0).await;
        let client = reqwest::Client::new();
        for path in ["/api/v1/pools", "/"] {
            let plain = client
                .get(format!("{}{path}", d.base))
                .send()
                .await
                .unwrap();
            assert!(plain.headers().get("content-encoding").is_none(), "{path}");
            let plain = plain.bytes().await.unwrap().len();
            let zipped = client
                .get(format!("{}{path}", d.base))
                .header("accept-encoding", "gzip")
                .send()
                .await
                .unwrap();
            assert_eq!(
                zipped
                    .headers()
                    .get("content-encoding")
                    .map(|v| v.to_str().unwrap()),
                Some("gzip"),
                "{path}"
            );
            let zipped = zipped.bytes().await.unwrap().len();
            println!("{path}: {plain} bytes, {zipped} gzipped");
            assert!(zipped * 2 < plain, "{path}: {zipped} of {plain} bytes");
        }
        let mut stream = client
            .get(format!("{}/api/v1/stream", d.base))
            .header("accept-encoding", "gzip")
            .send()
            .await
            .unwrap();
        assert!(stream.headers().get("content-encoding").is_none());
        let first = tokio::time::timeout(Duration::from_secs(5), stream.chunk())
            .await
            .expect("the snapshot comes at once")
            .unwrap()
            .unwrap();
        assert!(
            String::from_utf8_lossy(&first).contains("snapshot"),
            "plain text events"
        );
    });
}

/// The wasm and JS go out as the precompressed files the release site build writes beside them
/// (`spotboard-site precompress`; brotli first), chosen by the browser's `Accept-Encoding`, and
/// are not compressed a second time on the way.
#[test]
fn precompressed_assets_are_served_by_accept_encoding() {
    server::run::runtime().unwrap().block_on(async {
        let site = tempfile::tempdir().unwrap();
        let pkg = site.path().join("pkg");
        std::fs::create_dir_all(&pkg).unwrap();
        let wasm = vec![0u8; 64 * 1024];
        std::fs::write(pkg.join("spotboard.wasm"), &wasm).unwrap();
        std::fs::write(pkg.join("spotboard.wasm.br"), b"brotli bytes").unwrap();
        std::fs::write(pkg.join("spotboard.wasm.gz"), b"gzip bytes").unwrap();
        let root = site.path().display().to_string();
        let d = crate::common::start_with(&[ZONE], 60.0, |a| a.site_root = root).await;
        let client = reqwest::Client::new();
        let url = format!("{}/pkg/spotboard.wasm", d.base);
        for (accept, encoding, body) in [
            ("gzip, deflate, br, zstd", Some("br"), &b"brotli bytes"[..]),
            ("gzip", Some("gzip"), &b"gzip bytes"[..]),
            ("identity", None, &wasm[..]),
        ] {
            let r = client
                .get(&url)
                .header("accept-encoding", accept)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status().as_u16(), 200, "{accept}");
            assert_eq!(
                r.headers()
                    .get("content-encoding")
                    .map(|v| v.to_str().unwrap().to_string())
                    .as_deref(),
                encoding,
                "{accept}"
            );
            assert_eq!(
                r.bytes().await.unwrap(),
                body,
                "{accept}: the file as written"
            );
        }
    });
}
