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
        Command::Crd => {
            print!("{}", crd::yaml());
            Ok(())
        }
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
    println!("KUBECONFIG={}", cluster.kubeconfig_path.display());
    for z in &cluster.zones {
        println!("{} {} {}", z.context, z.zone, z.url);
    }
    shutdown_signal().await;
    Ok(())
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
