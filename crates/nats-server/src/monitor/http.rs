//! The HTTP side of the monitoring port, on hyper's HTTP/1.1 server: keep-alive, a 5-second
//! limit on reading a request head (slowloris), a 1 MiB limit on its size (431 beyond, as Go's
//! `MaxHeaderBytes`), plain or TLS (`https_port`, with the client TLS settings). Paths live
//! under `http_base_path`; answers carry nats-server's headers, statuses and error texts. Ours
//! alone: `/metrics` and the web console (`/console`, `console.rs`).

use super::query::Query;
use super::{
    accounts, connz, console, health, index, jsz, metrics, raftz, routez, runtime, subsz, topology,
    varz, Refusal,
};
use crate::server::Server;
use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{
    HeaderValue, ACCESS_CONTROL_ALLOW_ORIGIN, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE,
};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::Value;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;

/// Go's `http.Server` default `MaxHeaderBytes`.
const MAX_HEADER_BYTES: usize = 1 << 20;
/// Time to read a request head before the connection is dropped.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(5);
/// Time for a TLS handshake on the https port.
const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

type Body = Full<Bytes>;

/// The paths served under the base path.
const ENDPOINTS: &[&str] = &[
    "/",
    "/varz",
    "/connz",
    "/routez",
    "/gatewayz",
    "/leafz",
    "/subsz",
    "/subscriptionsz",
    "/accountz",
    "/accstatz",
    "/jsz",
    "/healthz",
    "/ipqueuesz",
    "/raftz",
    "/stacksz",
    "/debug/vars",
    "/metrics",
    "/console",
    "/console/data",
    "/console/messages",
];

/// Accept monitoring connections on `listener` until the process ends; with `tls`, each
/// connection first completes a TLS handshake.
pub async fn serve(
    server: Arc<Server>,
    listener: TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    varz::process_start();
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(_) => {
                // Out of descriptors and the like: back off instead of spinning.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let server = server.clone();
        let tls = tls.clone();
        tokio::spawn(async move {
            match tls {
                Some(acceptor) => {
                    let handshake =
                        tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await;
                    if let Ok(Ok(stream)) = handshake {
                        serve_connection(server, stream).await;
                    }
                }
                None => serve_connection(server, stream).await,
            }
        });
    }
}

async fn serve_connection<S>(server: Arc<Server>, stream: S)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn(move |request: Request<Incoming>| {
        let server = server.clone();
        // Answers are built on a blocking thread: `/jsz?consumers=true` or `/metrics` over
        // thousands of streams and consumers takes milliseconds of CPU, which on a runtime
        // worker would hold up every client connection scheduled there (with two workers, half
        // of them) for the whole scrape. The request's body is not read by any endpoint.
        let (parts, _body) = request.into_parts();
        let request = Request::from_parts(parts, ());
        async move {
            let answer = tokio::task::spawn_blocking(move || respond(&server, &request)).await;
            Ok::<_, Infallible>(answer.unwrap_or_else(|_| {
                response(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "text/plain; charset=utf-8",
                    "the answer could not be built\n".into(),
                )
            }))
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .max_buf_size(MAX_HEADER_BYTES);
    // A client that goes away or sends garbage ends only its own connection.
    let _ = builder
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

/// `http_base_path` as nats-server uses it: a leading slash, no trailing one, empty for none.
pub fn normalize_base_path(configured: &str) -> String {
    let trimmed = configured.trim().trim_end_matches('/');
    if trimmed.is_empty() {
        String::new()
    } else if trimmed.starts_with('/') {
        trimmed.to_string()
    } else {
        format!("/{trimmed}")
    }
}

fn respond(server: &Server, request: &Request<()>) -> Response<Body> {
    let base = normalize_base_path(&server.options.http_base_path);
    let path = request.uri().path();
    let Some(endpoint) = path.strip_prefix(base.as_str()) else {
        return not_found();
    };
    let endpoint = if endpoint.is_empty() { "/" } else { endpoint };
    if endpoint == "/" && !base.is_empty() && path.ends_with('/') {
        // The index is the base path itself; `/base/` is not a page, as in nats-server.
        return not_found();
    }
    if !ENDPOINTS.contains(&endpoint) {
        return not_found();
    }
    if endpoint == "/metrics" {
        // Ours alone: left out of `http_req_stats` so `/varz` reads as nats-server's.
        return response(
            StatusCode::OK,
            metrics::CONTENT_TYPE,
            metrics::render(server).into(),
        );
    }
    let query = Query::parse(request.uri().query().unwrap_or(""));
    if let Some(console) = endpoint.strip_prefix("/console") {
        // Ours alone, like `/metrics`: not in `http_req_stats`.
        let authorization = request
            .headers()
            .get(AUTHORIZATION)
            .and_then(|value| value.to_str().ok());
        let Some(access) = console::access(server, authorization) else {
            let mut refused = response(
                StatusCode::UNAUTHORIZED,
                "text/plain; charset=utf-8",
                "the console needs its user's credentials\n".into(),
            );
            refused
                .headers_mut()
                .insert(WWW_AUTHENTICATE, HeaderValue::from_static(console::REALM));
            return refused;
        };
        let answer = match console {
            "" => Answer::Html(console::PAGE.to_string()),
            "/data" => Answer::Json(console::data(server)),
            _ => console::messages(server, access, query.text("account"), query.text("stream"))
                .map(Answer::Json)
                .into(),
        };
        let mut answer = answer.into_response();
        if access == console::Access::Authenticated {
            // What the user may see is for pages of this origin only.
            answer.headers_mut().remove(ACCESS_CONTROL_ALLOW_ORIGIN);
        }
        return answer;
    }
    // Counted before the answer is built, so `/varz` shows its own request as nats-server's does.
    count_request(server, endpoint);
    let answer = match endpoint {
        "/" => Answer::Html(index::page(&base)),
        "/varz" => Answer::Json(varz::varz(server)),
        "/connz" => connz::ConnzOptions::from_query(&query)
            .map(|options| Answer::Json(connz::connz(server, &options)))
            .into(),
        "/routez" => routez::RoutezOptions::from_query(&query)
            .map(|options| Answer::Json(routez::routez(server, &options)))
            .into(),
        "/gatewayz" => topology::GatewayzOptions::from_query(&query)
            .map(|options| Answer::Json(topology::gatewayz(server, &options)))
            .into(),
        "/leafz" => topology::LeafzOptions::from_query(&query)
            .map(|options| Answer::Json(topology::leafz(server, &options)))
            .into(),
        "/subsz" | "/subscriptionsz" => subsz::SubszOptions::from_query(&query)
            .map(|options| Answer::Json(subsz::subsz(server, &options)))
            .into(),
        "/accountz" => accounts::AccountzOptions::from_query(&query)
            .and_then(|options| accounts::accountz(server, &options))
            .map(Answer::Json)
            .into(),
        "/accstatz" => accounts::AccstatzOptions::from_query(&query)
            .map(|options| Answer::Json(accounts::accstatz(server, &options)))
            .into(),
        "/jsz" => jsz::JszOptions::from_query(&query)
            .map(|options| Answer::Json(jsz::jsz(server, &options)))
            .into(),
        "/healthz" => match health::HealthOptions::from_query(&query) {
            Ok(options) => {
                let (status, body) = health::healthz(server, &options);
                Answer::Health(status, body)
            }
            Err(refusal) => Answer::Refused(refusal),
        },
        "/ipqueuesz" => runtime::ipqueuesz(&query).map(Answer::Json).into(),
        "/raftz" => raftz::raftz(server).map(Answer::Json).into(),
        "/stacksz" => Answer::Stacks(runtime::stacksz()),
        "/debug/vars" => Answer::Json(runtime::debug_vars()),
        _ => return not_found(),
    };
    answer.into_response()
}

/// nats-server's `http_req_stats`: requests per endpoint path (without the base path).
fn count_request(server: &Server, endpoint: &str) {
    let endpoint = if endpoint == "/subscriptionsz" {
        "/subsz"
    } else {
        endpoint
    };
    *server
        .http_requests
        .lock()
        .entry(endpoint.to_string())
        .or_insert(0) += 1;
}

/// What an endpoint answered, before it becomes a response.
enum Answer {
    Json(Value),
    /// `/healthz`: compact JSON with its own status.
    Health(u16, Value),
    Html(String),
    Stacks(String),
    Refused(Refusal),
}

impl From<Result<Answer, Refusal>> for Answer {
    fn from(result: Result<Answer, Refusal>) -> Answer {
        result.unwrap_or_else(Answer::Refused)
    }
}

impl Answer {
    fn into_response(self) -> Response<Body> {
        match self {
            Answer::Json(value) => {
                let text = serde_json::to_string_pretty(&value).unwrap_or_default();
                json_response(StatusCode::OK, text)
            }
            Answer::Health(status, value) => {
                let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
                json_response(status, serde_json::to_string(&value).unwrap_or_default())
            }
            Answer::Html(page) => response(StatusCode::OK, "text/html; charset=utf-8", page.into()),
            Answer::Stacks(text) => {
                // nats-server labels its goroutine dump as JSON too.
                json_response(StatusCode::OK, text)
            }
            Answer::Refused(refusal) => {
                let status =
                    StatusCode::from_u16(refusal.status).unwrap_or(StatusCode::BAD_REQUEST);
                response(status, "text/plain; charset=utf-8", refusal.text.into())
            }
        }
    }
}

fn json_response(status: StatusCode, text: String) -> Response<Body> {
    let mut response = response(status, "application/json", text.into());
    response
        .headers_mut()
        .insert(ACCESS_CONTROL_ALLOW_ORIGIN, HeaderValue::from_static("*"));
    response
}

fn response(status: StatusCode, content_type: &'static str, body: Bytes) -> Response<Body> {
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}

/// Go's `http.NotFound`.
fn not_found() -> Response<Body> {
    let mut response = response(
        StatusCode::NOT_FOUND,
        "text/plain; charset=utf-8",
        Bytes::from_static(b"404 page not found\n"),
    );
    response.headers_mut().insert(
        hyper::header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::normalize_base_path;

    #[test]
    fn base_paths() {
        assert_eq!(normalize_base_path(""), "");
        assert_eq!(normalize_base_path("/"), "");
        assert_eq!(normalize_base_path("mon"), "/mon");
        assert_eq!(normalize_base_path("/mon/"), "/mon");
    }
}
