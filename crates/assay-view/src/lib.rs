//! `assay view`: a local web UI over run directories and official results files. The page is
//! one static app (embedded in the binary, nothing fetched from elsewhere) that asks a small
//! JSON API for what it shows, a page of rows at a time, so that a run of thousands of samples
//! opens at once; the API reads the files when asked and follows them as they grow.
//!
//! Sample code, tracebacks and model text are hostile: the app only ever puts them into the
//! page as text (never as markup), and the page's Content-Security-Policy allows no script but
//! the app's own. The server answers only for the runs it was given (files under their
//! `figures/` and `tasks/*/output/`, nothing else on disk), and on loopback only answers
//! requests addressed to a loopback name, so a web page elsewhere cannot read it through DNS
//! rebinding.

mod api;
mod files;
mod journal;
mod judge;
mod run;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

pub use run::{Filter, Page, Row, RunSource, Summary};

/// Why a run cannot be shown: the report's reading errors, which name the file and line.
pub use assay_report::SourceError as ViewError;

/// The file system's refusal, naming the file.
fn io_error(path: &Path, source: std::io::Error) -> ViewError {
    ViewError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// The runs being shown.
pub struct Viewer {
    runs: Vec<RunSource>,
    /// Whether the server listens on loopback only (then only loopback names are answered).
    loopback: bool,
}

impl Viewer {
    /// The runs at `paths` (run directories or official `*_eval_results.json` files). Fails
    /// naming the first that is neither.
    pub fn new(paths: &[PathBuf], addr: SocketAddr) -> Result<Viewer, ViewError> {
        let runs = paths
            .iter()
            .enumerate()
            .map(|(id, path)| RunSource::open(id, path))
            .collect::<Result<_, _>>()?;
        Ok(Viewer {
            runs,
            loopback: addr.ip().is_loopback(),
        })
    }

    fn run(&self, id: usize) -> Option<&RunSource> {
        self.runs.get(id)
    }
}

/// Serves `viewer` on `listener` until the process is stopped.
pub async fn serve(viewer: Viewer, listener: tokio::net::TcpListener) -> std::io::Result<()> {
    axum::serve(listener, router(Arc::new(viewer))).await
}

fn router(viewer: Arc<Viewer>) -> Router {
    Router::new()
        .route("/", get(api::index))
        .route("/app.js", get(api::script))
        .route("/judge.js", get(api::judge_script))
        .route("/app.css", get(api::style))
        // Browsers ask for it; there is none, and a 404 would be an error in the console.
        .route("/favicon.ico", get(|| async { StatusCode::NO_CONTENT }))
        .route("/api/runs", get(api::runs))
        .route("/api/runs/{id}/samples", get(api::samples))
        .route("/api/runs/{id}/samples/{index}", get(api::sample))
        .route("/api/runs/{id}/files/{*path}", get(api::file))
        .route("/api/diff", get(api::diff))
        .layer(axum::middleware::from_fn_with_state(viewer.clone(), guard))
        .with_state(viewer)
}

/// Refuses requests addressed to a name that is not loopback when serving on loopback (a
/// rebinding page's requests carry its own host name), and gives every answer the headers
/// that keep content from running: the app's policy, no sniffing, no framing.
async fn guard(State(viewer): State<Arc<Viewer>>, request: Request, next: Next) -> Response {
    if viewer.loopback {
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok())
            .unwrap_or_default();
        if !is_loopback_host(host) {
            return (
                StatusCode::FORBIDDEN,
                "assay view answers loopback addresses only (use --host to serve others)",
            )
                .into_response();
        }
    }
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    headers
        .entry(header::CONTENT_SECURITY_POLICY)
        .or_insert(HeaderValue::from_static(
            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
             connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        ));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// `localhost`, `127.x.y.z` or `[::1]`, with or without a port.
fn is_loopback_host(host: &str) -> bool {
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or_default()
    } else {
        host.rsplit_once(':').map_or(host, |(name, _)| name)
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_names_pass_on_loopback() {
        for ok in [
            "localhost:8000",
            "127.0.0.1:1",
            "[::1]:80",
            "LOCALHOST",
            "127.0.0.5",
        ] {
            assert!(is_loopback_host(ok), "{ok}");
        }
        for bad in [
            "evil.example:8000",
            "",
            "10.0.0.1:80",
            "localhost.evil.example",
        ] {
            assert!(!is_loopback_host(bad), "{bad}");
        }
    }
}
