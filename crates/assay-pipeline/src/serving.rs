//! `--serve`: the model server a run starts for itself, in its run directory, only when it has
//! something to ask.

use assay_models::{Client, ModelServer, Provider, ServeSettings};
use assay_records::{Listener, RunEvent, StartedServer};
use assay_rundir::RunDir;

use crate::error::PipelineError;

/// The server's output, in the run directory.
pub const SERVER_LOG: &str = "server.log";

/// Starts `settings`' server for `client`'s model, its output in `run`'s `server.log`, telling
/// `listener`, and records it in the manifest; it answers with its models when this returns.
pub(crate) async fn start(
    settings: &ServeSettings,
    client: &Client,
    run: &RunDir,
    listener: &mut dyn Listener,
) -> Result<ModelServer, PipelineError> {
    let server = start_logged(settings, client, &run.path().join(SERVER_LOG), listener).await?;
    let mut manifest = run.manifest()?;
    if let Some(access) = manifest.model_access.as_mut() {
        access.server = Some(StartedServer {
            command: server.command().to_string(),
            models: server.models().to_vec(),
            log: SERVER_LOG.to_string(),
        });
        run.update_manifest(&manifest)?;
    }
    Ok(server)
}

/// Starts `settings`' server for `client`'s model, its output in `log`, telling `listener`;
/// it answers with its models when this returns.
pub(crate) async fn start_logged(
    settings: &ServeSettings,
    client: &Client,
    log: &std::path::Path,
    listener: &mut dyn Listener,
) -> Result<ModelServer, PipelineError> {
    listener.on_event(&RunEvent::Notice {
        message: format!(
            "starting the model server (at most {} s; its output in {}): {}",
            settings.ready_timeout.as_secs(),
            log.display(),
            settings.command
        ),
    });
    let server = ModelServer::start(settings, client, log).await?;
    let model = &client.spec().model;
    let serves = server.models().iter().any(|m| m == model);
    listener.on_event(&RunEvent::Notice {
        message: format!(
            "the model server answers at {}, serving {}{}",
            client.base_url(),
            server.models().join(", "),
            if serves {
                String::new()
            } else {
                format!(" (not `{model}` by that name: requests name it all the same)")
            }
        ),
    });
    Ok(server)
}

/// The base URL a run talks to: the one given, or for a server it starts (`serve`) the one
/// the command's own `--port` says; a server it starts and cannot reach is an error.
pub(crate) fn base_url(
    given: Option<&str>,
    serve: Option<&ServeSettings>,
    provider: &Provider,
) -> Result<Option<String>, PipelineError> {
    match (given, serve) {
        (Some(url), _) => Ok(Some(url.to_string())),
        (None, None) => Ok(None),
        (None, Some(serve)) => serve.base_url(provider).map(Some).ok_or_else(|| {
            PipelineError::Invalid(format!(
                "--serve `{}`: where will it listen? Give --base-url, or a --port in the command",
                serve.command
            ))
        }),
    }
}
