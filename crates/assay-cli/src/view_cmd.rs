//! `assay view`: the local web UI over run directories.

use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use anyhow::{Context, Result};
use assay_view::{serve, Viewer};
use clap::Args;

#[derive(Args)]
pub struct ViewArgs {
    /// Run directories (BigCodeBench or PyBench) or official `*_eval_results.json` files.
    #[arg(required = true, value_name = "RUN")]
    pub runs: Vec<PathBuf>,

    /// The port (0: any free one).
    #[arg(long, default_value_t = 8765)]
    pub port: u16,
    /// The address to listen on. The default answers this machine only; another address
    /// lets others reach every run given (the page has no login).
    #[arg(long, value_name = "ADDR", default_value_t = IpAddr::V4(Ipv4Addr::LOCALHOST))]
    pub host: IpAddr,
}

pub async fn run(args: ViewArgs) -> Result<i32> {
    let addr = SocketAddr::new(args.host, args.port);
    let viewer = Viewer::new(&args.runs, addr)?;
    let listener = tokio::net::TcpListener::bind(addr).await.with_context(|| {
        format!("listening on {addr} (another port: --port N, any free one: --port 0)")
    })?;
    let bound = listener.local_addr()?;
    let shown = if bound.ip().is_unspecified() {
        SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), bound.port())
    } else {
        bound
    };
    println!(
        "assay view: {} run(s) at http://{shown}/ (Ctrl-C stops)",
        args.runs.len()
    );
    std::io::stdout().flush()?;
    tokio::select! {
        served = serve(viewer, listener) => served.context("serving")?,
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(0)
}
