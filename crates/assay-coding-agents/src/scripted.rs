//! A scripted model on loopback, speaking OpenAI Chat Completions (what the gateway asks
//! upstream): it makes an agent run one shell command, through whichever of the agent's
//! declared shell tools the agent offers, then finish. What `assay agents check` drives an
//! agent with, so that a check needs no API key and proves the whole path: the agent's own
//! protocol, the gateway's translation, the sandbox's relay, the agent's tool running in the
//! sandbox.

use std::sync::Arc;

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::net::TcpListener;

use crate::declaration::Smoke;

/// The command a check makes the agent run, and what it leaves.
pub const CHECK_FILE: &str = "assay-check.txt";
/// What the file holds.
pub const CHECK_TEXT: &str = "assay-check";

/// A running scripted model: its OpenAI base URL (with `/v1`).
pub struct ScriptedModel {
    /// Where to reach it.
    pub base_url: String,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for ScriptedModel {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl ScriptedModel {
    /// Starts one on 127.0.0.1 for an agent that calls its shell as `smoke` says.
    pub async fn start(smoke: Smoke) -> std::io::Result<ScriptedModel> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let base_url = format!("http://{}/v1", listener.local_addr()?);
        let app = Router::new()
            .route("/v1/chat/completions", post(reply))
            .with_state(Arc::new(smoke));
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(ScriptedModel { base_url, server })
    }
}

/// The shell commands of the script, in order.
fn commands(smoke: &Smoke) -> Vec<String> {
    let mut commands = vec![format!("echo {CHECK_TEXT} > {CHECK_FILE}")];
    commands.extend(smoke.finish.clone());
    commands
}

async fn reply(State(smoke): State<Arc<Smoke>>, Json(request): Json<Value>) -> Json<Value> {
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let results = messages.iter().filter(|m| m["role"] == "tool").count();
    let offered: Vec<&str> = request["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["function"]["name"].as_str())
        .collect();
    let shell = smoke
        .shell
        .iter()
        .find(|(name, _)| offered.contains(&name.as_str()));
    let message = match (shell, commands(&smoke).get(results)) {
        (Some((name, template)), Some(command)) => {
            let escaped = serde_json::to_string(command).unwrap_or_default();
            let arguments = template.replace("{command}", escaped.trim_matches('"'));
            json!({
                "role": "assistant",
                "content": null,
                "tool_calls": [{
                    "id": format!("call_{results}"),
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }],
            })
        }
        (None, _) => json!({
            "role": "assistant",
            "content": format!("None of the shell tools {:?} was offered (offered: {offered:?}).",
                               smoke.shell.keys().collect::<Vec<_>>()),
        }),
        (Some(_), None) => json!({"role": "assistant", "content": "Done."}),
    };
    let finish = if message.get("tool_calls").is_some() {
        "tool_calls"
    } else {
        "stop"
    };
    Json(json!({
        "id": format!("chatcmpl-scripted-{results}"),
        "object": "chat.completion",
        "created": 0,
        "model": request["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }))
}
