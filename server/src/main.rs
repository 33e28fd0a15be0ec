//! The `spotboard` binary: parse flags, set up logging, run.

use clap::Parser;
use server::{
    cli::{Cli, Command},
    crd, run,
};

// The first list of a big cluster decodes hundreds of megabytes of objects that are trimmed
// at once; glibc's allocator keeps that peak as resident memory, mimalloc gives it back.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    server::allocator::purge_freed_pages_at_once();
    match run::runtime() {
        Ok(rt) => rt.block_on(run_cli()),
        Err(e) => {
            eprintln!("spotboard: starting the runtime: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run_cli() -> std::process::ExitCode {
    server::logging::init();
    let cli = Cli::parse();
    let result = match cli.command.unwrap_or(Command::Serve) {
        Command::Crd => print_crd(),
        Command::Embedded => embedded(&cli.serve).await,
        Command::Serve => serve(&cli.serve).await,
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("spotboard: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// `spotboard crd | head` closes the pipe early; that is the reader's choice, not an error.
fn print_crd() -> server::Result<()> {
    match print(&crd::yaml()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(server::Error::io("printing the CRD", e))
        }
        _ => Ok(()),
    }
}

async fn serve(args: &server::cli::ServeArgs) -> server::Result<()> {
    let running = run::start(args, shutdown_signal()).await?;
    tracing::info!("serving the dashboard on http://{}", running.addr);
    running.wait().await
}

#[cfg(not(feature = "embedded"))]
async fn embedded(_: &server::cli::ServeArgs) -> server::Result<()> {
    Err(run::no_embedded_cluster())
}

#[cfg(feature = "embedded")]
async fn embedded(args: &server::cli::ServeArgs) -> server::Result<()> {
    let cluster =
        spotboard_embedded::EmbeddedCluster::start(run::embedded_options(args, true)).await?;
    announce(&cluster);
    shutdown_signal().await;
    Ok(())
}

/// Prints where the embedded cluster listens. A script that read what it needed and closed
/// the pipe must not end the cluster (`println!` panics on a closed stdout), so a failed write
/// is logged instead.
#[cfg(feature = "embedded")]
fn announce(cluster: &spotboard_embedded::EmbeddedCluster) {
    let mut text = format!("KUBECONFIG={}\n", cluster.kubeconfig_path.display());
    for z in &cluster.zones {
        text.push_str(&format!("{} {} {}\n", z.context, z.zone, z.url));
    }
    if let Err(e) = print(&text) {
        tracing::warn!("could not print the embedded cluster's addresses to stdout: {e}");
    }
}

/// Writes `text` to stdout. Unlike `print!`, a closed stdout is an error to handle, not a panic.
fn print(text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// Ctrl-C or SIGTERM (what Kubernetes and systemd send before killing).
async fn shutdown_signal() {
    let interrupt = async {
        // If it cannot be installed there is no way to ask for shutdown this way.
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = interrupt => tracing::info!("interrupted; stopping"),
        _ = terminate => tracing::info!("SIGTERM; stopping"),
    }
}
