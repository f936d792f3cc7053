//! Server-sent events: the streamed replies of every protocol.
//!
//! The model is asked whole (the client does not stream), so a stream is opened at once with
//! what can be said before the answer, kept alive while the model thinks, and then carries the
//! whole answer as events.

use std::convert::Infallible;

use axum::body::{Body, Bytes};
use axum::http::{header, HeaderValue};
use axum::response::Response;
use serde_json::Value;
use tokio::sync::mpsc;

/// One event as sent, in SSE's text form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Event(String);

impl Event {
    /// `event: <name>` with its JSON data (Responses, Messages).
    pub(crate) fn named(name: &str, data: &Value) -> Event {
        Event(format!("event: {name}\ndata: {data}\n\n"))
    }

    /// Data without a name (Chat Completions' chunks).
    pub(crate) fn data(data: &Value) -> Event {
        Event(format!("data: {data}\n\n"))
    }

    /// Chat Completions' end of stream.
    pub(crate) fn done() -> Event {
        Event("data: [DONE]\n\n".into())
    }

    /// A comment: bytes on the wire that every SSE parser skips, to keep a waiting client's
    /// read timeouts at bay.
    pub(crate) fn comment(text: &str) -> Event {
        Event(format!(": {text}\n\n"))
    }

    #[cfg(test)]
    pub(crate) fn text(&self) -> &str {
        &self.0
    }
}

/// Where a stream's events are sent; the stream ends when it is dropped.
pub(crate) struct Sender(mpsc::Sender<Bytes>);

impl Sender {
    /// Sends `events` in order; false once the agent has gone away.
    pub(crate) async fn send(&self, events: Vec<Event>) -> bool {
        for Event(text) in events {
            if self.0.send(Bytes::from(text)).await.is_err() {
                return false;
            }
        }
        true
    }
}

/// A `200 text/event-stream` response whose body is what is sent to the returned sender.
pub(crate) fn open() -> (Sender, Response) {
    // A few events at most wait here: the agent reads them as fast as they come.
    let (tx, rx) = mpsc::channel::<Bytes>(16);
    let chunks = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|chunk| (Ok::<_, Infallible>(chunk), rx))
    });
    let mut response = Response::new(Body::from_stream(chunks));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    (Sender(tx), response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_are_framed_as_sse() {
        let data = json!({"type": "ping"});
        assert_eq!(
            Event::named("ping", &data).text(),
            "event: ping\ndata: {\"type\":\"ping\"}\n\n"
        );
        assert_eq!(Event::data(&json!(1)).text(), "data: 1\n\n");
        assert_eq!(Event::done().text(), "data: [DONE]\n\n");
        assert_eq!(Event::comment("keepalive").text(), ": keepalive\n\n");
    }
}
