//! The gateway's HTTP surface: the three model protocols, and what agents and their SDKs ask
//! besides (token counts, the model list, reachability probes).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, Method, StatusCode, Uri};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};

use crate::chat::Chat;
use crate::dialect::Dialect;
use crate::failure::MAX_BODY;
use crate::failure::{Failure, Wording};
use crate::messages::{self, Messages};
use crate::relay::Relay;
use crate::responses::Responses;

/// Every route, behind the token check. Each protocol is served with and without the `/v1`
/// prefix: SDKs differ on whether the base URL includes it.
pub(crate) fn router(relay: Arc<Relay>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(relay_to::<Chat>))
        .route("/chat/completions", post(relay_to::<Chat>))
        .route("/v1/responses", post(relay_to::<Responses>))
        .route("/responses", post(relay_to::<Responses>))
        .route("/v1/messages", post(relay_to::<Messages>))
        .route("/messages", post(relay_to::<Messages>))
        .route("/v1/messages/count_tokens", post(count_tokens))
        .route("/messages/count_tokens", post(count_tokens))
        .route("/v1/models", get(models))
        .route("/models", get(models))
        .fallback(not_found)
        .method_not_allowed_fallback(not_found)
        .layer(middleware::from_fn_with_state(relay.clone(), guard))
        .with_state(relay)
}

async fn relay_to<D: Dialect>(State(relay): State<Arc<Relay>>, body: Body) -> Response {
    relay.serve::<D>(body).await
}

/// Answers `HEAD` on any path (Anthropic's SDKs probe whether the endpoint is reachable) and
/// refuses requests without the placeholder token.
async fn guard(State(relay): State<Arc<Relay>>, request: Request, next: Next) -> Response {
    if request.method() == Method::HEAD {
        return StatusCode::OK.into_response();
    }
    if !authorized(request.headers(), &relay.token) {
        let wording = wording(request.uri());
        return Failure::Unauthorized.response(wording);
    }
    next.run(request).await
}

/// Whether the request carries `token` the way one of the SDKs sends a key: OpenAI's
/// `Authorization: Bearer`, Anthropic's `x-api-key`, Google's `x-goog-api-key`. An empty token
/// admits nothing.
fn authorized(headers: &HeaderMap, token: &str) -> bool {
    let given = |name| headers.get(name).and_then(|v| v.to_str().ok());
    let bearer = given(header::AUTHORIZATION.as_str()).and_then(|value| {
        let (scheme, credential) = value.split_once(' ')?;
        scheme
            .eq_ignore_ascii_case("bearer")
            .then(|| credential.trim())
    });
    !token.is_empty()
        && [bearer, given("x-api-key"), given("x-goog-api-key")].contains(&Some(token))
}

/// Anthropic's error shape on its paths, OpenAI's elsewhere.
fn wording(uri: &Uri) -> Wording {
    if uri.path().contains("/messages") {
        Wording::Anthropic
    } else {
        Wording::OpenAi
    }
}

/// `POST /v1/messages/count_tokens`.
async fn count_tokens(body: Body) -> Response {
    let body = match axum::body::to_bytes(body, MAX_BODY).await {
        Ok(bytes) => serde_json::from_slice::<Value>(&bytes),
        Err(err) => return Failure::Unreadable(err.to_string()).response(Wording::Anthropic),
    };
    match body {
        Ok(body) => Json(messages::count_tokens(&body)).into_response(),
        Err(err) => {
            Failure::BadRequest(format!("the body is not JSON: {err}")).response(Wording::Anthropic)
        }
    }
}

/// `GET /v1/models`: the served model, in a list both OpenAI's and Anthropic's SDKs read.
async fn models(State(relay): State<Arc<Relay>>) -> Json<Value> {
    let model = json!({
        "id": relay.model, "object": "model", "created": 0, "owned_by": "assay",
        "type": "model", "display_name": relay.model, "created_at": "1970-01-01T00:00:00Z",
    });
    Json(json!({
        "object": "list", "data": [model],
        "has_more": false, "first_id": relay.model, "last_id": relay.model,
    }))
}

async fn not_found(uri: Uri) -> Response {
    Failure::NotFound(uri.path().to_string()).response(wording(&uri))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn the_token_is_taken_in_each_sdks_header() {
        let with = |name: &'static str, value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(name, HeaderValue::from_static(value));
            headers
        };
        assert!(authorized(&with("authorization", "Bearer tok"), "tok"));
        assert!(authorized(&with("authorization", "bearer tok"), "tok"));
        assert!(authorized(&with("x-api-key", "tok"), "tok"));
        assert!(authorized(&with("x-goog-api-key", "tok"), "tok"));
        assert!(!authorized(&with("authorization", "Bearer other"), "tok"));
        assert!(!authorized(&with("authorization", "tok"), "tok"));
        assert!(!authorized(&HeaderMap::new(), "tok"));
        assert!(!authorized(&with("authorization", "Bearer "), ""));
    }
}
